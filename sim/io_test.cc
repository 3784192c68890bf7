// Reading refuses what is not a regular file and stops at its size limit; writing is atomic,
// checked, and refuses to land on an input.
#include "sim/io.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace parasim {
namespace {

std::string Temp(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

bool Has(const Status& st, const std::string& text) {
  return st.message().find(text) != std::string::npos;
}

TEST_CASE("ReadFile: regular files only, within the limit") {
  const std::string dir = Temp("io_dir"), fifo = Temp("io_fifo"), file = Temp("io_file");
  std::filesystem::create_directories(dir);
  ::mkfifo(fifo.c_str(), 0644);
  std::ofstream(file) << std::string(1000, 'x');
  struct Case {
    std::string path, says;
  };
  for (const Case& c : {Case{dir, "is a directory, not a regular file"},
                        Case{fifo, "is a FIFO (named pipe), not a regular file"},
                        Case{"/dev/zero", "is a character device, not a regular file"},
                        Case{Temp("missing"), "cannot open the file: No such file"}}) {
    CAPTURE(c.path);
    const StatusOr<std::string> r = ReadFile(c.path);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().exit_code() == 2);
    CHECK(Has(r.status(), c.path + ":1:1: error: " + c.says));
  }
  CHECK(ReadFile(file)->size() == 1000);
  CHECK(ReadFile(file, 1000).ok());
  const StatusOr<std::string> big = ReadFile(file, 999);
  REQUIRE_FALSE(big.ok());
  CHECK(Has(big.status(), "the file is over"));
}

TEST_CASE("WriteFileAtomic: renamed into place; a failed write is an error; devices in place") {
  const std::string path = Temp("io_out.txt");
  REQUIRE(WriteFileAtomic(path, "hello\n").ok());
  CHECK(*ReadFile(path) == "hello\n");
  CHECK_FALSE(std::filesystem::exists(path + ".tmp." + std::to_string(::getpid())));
  // /dev/full takes no byte: ENOSPC, exit 1, and the device is still a device.
  const Status full = WriteFileAtomic("/dev/full", "x");
  CHECK(full.exit_code() == 1);
  CHECK(Has(full, "/dev/full:1:1: error: cannot write the file: No space left on device"));
  struct stat st {};
  REQUIRE(::stat("/dev/full", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  CHECK(WriteFileAtomic("/dev/null", "discarded").ok());
  const Status dir = WriteFileAtomic(Temp(""), "x");
  CHECK(dir.exit_code() == 2);
  CHECK(Has(dir, "is a directory"));
  CHECK(WriteFileAtomic(Temp("no/such/dir/x"), "x").exit_code() == 2);
}

TEST_CASE("an output never replaces a file this command read, however it was named") {
  ForgetReads();
  const std::string profile = Temp("read-profile.yaml");
  std::ofstream(profile) << "gpu: h100\n";
  REQUIRE(ReadFile(profile).ok());  // a scenario's calibration profile, say
  const Status st = WriteFileAtomic(profile, "trace");
  CHECK(st.message() == profile + ":1:1: error: would overwrite " + profile +
                            ", which this command read as an input (a file its scenario names "
                            "counts); write the output to another file");
  CHECK(*ReadFile(profile) == "gpu: h100\n");
  // Spelled otherwise (a link) it is the same file.
  const std::string link = Temp("read-profile-link.yaml");
  std::filesystem::remove(link);
  std::filesystem::create_symlink(profile, link);
  CHECK_FALSE(WriteFileAtomic(link, "x").ok());
  CHECK_FALSE(RefuseRewritingInput(link).ok());
  // A file the command updates on purpose (sweep --resume's results), and the next command.
  AllowRewrite(profile);
  CHECK(WriteFileAtomic(profile, "gpu: b200\n").ok());
  REQUIRE(ReadFile(profile).ok());
  ForgetReads();
  CHECK(WriteFileAtomic(profile, "gpu: a100\n").ok());
  CHECK(WriteFileAtomic(Temp("never-read.yaml"), "x").ok());
}

TEST_CASE("RefuseOverwrite: the same file however spelled") {
  const std::string in = Temp("io_in.yaml");
  std::ofstream(in) << "x: 1\n";
  const std::string dotted = Temp("./io_in.yaml");
  const Status st = RefuseOverwrite(dotted, "--out", {in});
  CHECK(st.exit_code() == 2);
  CHECK(Has(st, dotted + ":1:1: error: --out would overwrite " + in));
  std::filesystem::create_symlink(in, Temp("io_link.yaml"));
  CHECK_FALSE(RefuseOverwrite(Temp("io_link.yaml"), "--out", {in}).ok());
  CHECK(RefuseOverwrite(Temp("io_other.yaml"), "--out", {in}).ok());
  CHECK(RefuseOverwrite("", "--out", {in}).ok());
}

}  // namespace
}  // namespace parasim
