#include "hardware/readers/bounded_input.h"

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <chrono>
#include <string>

#include "hardware/readers/test_files.h"

namespace parasim {
namespace {

std::string ReadThrough(BoundedInput* in, Status* error) {
  std::string out;
  char buf[4096];
  for (;;) {
    StatusOr<size_t> n = in->Read(buf, sizeof buf);
    if (!n.ok()) {
      *error = n.status();
      return out;
    }
    if (*n == 0) return out;
    out.append(buf, *n);
  }
}

TEST_CASE("plain and gzipped files read the same") {
  const std::string plain = testing::TempFile("plain.txt"), gz = testing::TempFile("plain.txt.gz");
  testing::WriteText(plain, "hello\nworld\n");
  testing::WriteGzip(gz, "hello\nworld\n");
  for (const std::string& p : {plain, gz}) {
    auto in = BoundedInput::Open(p, {});
    REQUIRE(in.ok());
    Status st;
    CHECK(ReadThrough(in->get(), &st) == "hello\nworld\n");
    CHECK(st.ok());
    CHECK((*in)->compressed() == (p == gz));
  }
}

TEST_CASE("what is not a regular file is refused before it is opened") {
  const std::string fifo = testing::TempFile("a.fifo");
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  struct Case {
    std::string path, says;
  };
  for (const Case& c : {Case{fifo, "a FIFO"}, Case{"/dev/zero", "a character device"},
                        Case{std::string(std::getenv("TEST_TMPDIR")), "a directory"},
                        Case{testing::TempFile("absent.json"), "No such file"}}) {
    auto in = BoundedInput::Open(c.path, {});
    REQUIRE_FALSE(in.ok());
    CHECK(in.status().message().find(c.path + ":1:1: error: ") == 0);
    CHECK(in.status().message().find(c.says) != std::string::npos);
  }
}

TEST_CASE("a gzip bomb is refused quickly") {
  // 4 GiB of spaces in about 4 MB of gzip members.
  const std::string bomb = testing::TempFile("bomb.json.gz");
  testing::WriteGzipBomb(bomb, "{\"traceEvents\": [", int64_t{4} << 30);
  const auto t0 = std::chrono::steady_clock::now();
  auto in = BoundedInput::Open(bomb, {});
  REQUIRE(in.ok());
  Status st;
  ReadThrough(in->get(), &st);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(st.message().find("a gzip bomb?") != std::string::npos);
  CHECK((*in)->bytes_read() < (int64_t{80} << 20));
  CHECK(s < 5);
}

TEST_CASE("the inflated size is capped") {
  const std::string big = testing::TempFile("big.txt");
  testing::WriteText(big, std::string(3000, 'x'));
  InputLimits limits;
  limits.max_bytes = 1000;
  auto in = BoundedInput::Open(big, limits);
  REQUIRE(in.ok());
  Status st;
  ReadThrough(in->get(), &st);
  CHECK(st.message().find(big + ":1:1: error: runs past") == 0);
  // The error stays.
  char c;
  CHECK_FALSE((*in)->Read(&c, 1).ok());
  limits.max_ratio = 0;
  CHECK_FALSE(BoundedInput::Open(big, limits).ok());
}

TEST_CASE("a corrupt gzip stream is an error with its offset") {
  const std::string gz = testing::TempFile("corrupt.gz");
  std::string bytes = testing::ReadAll(
      (testing::WriteGzip(gz, std::string(100000, 'a') + std::string(100000, 'b')), gz));
  std::string damaged = bytes;
  damaged[damaged.size() - 8] ^= 0x5A;  // the trailer's CRC-32
  testing::WriteText(gz, damaged);
  auto in = BoundedInput::Open(gz, {});
  REQUIRE(in.ok());
  Status st;
  ReadThrough(in->get(), &st);
  CHECK(st.message().find("gzip stream is corrupt") != std::string::npos);
  // Cut short, without garbage after.
  bytes.resize(bytes.size() / 2);
  testing::WriteText(gz, bytes);
  auto cut = BoundedInput::Open(gz, {});
  REQUIRE(cut.ok());
  Status st2;
  ReadThrough(cut->get(), &st2);
  CHECK(st2.message().find("ends early") != std::string::npos);
}

TEST_CASE("lines: CRLF, no final newline, and junk lines kept short") {
  const std::string p = testing::TempFile("lines.txt");
  testing::WriteText(p, "a\r\n\nb" + std::string(2'000'000, 'j') + "\nlast");
  auto in = BoundedInput::Open(p, {});
  REQUIRE(in.ok());
  LineReader lines(in->get(), 100);
  REQUIRE(lines.Next());
  CHECK(lines.line() == "a");
  REQUIRE(lines.Next());
  CHECK(lines.line().empty());
  REQUIRE(lines.Next());
  CHECK(lines.too_long());
  CHECK(lines.line().size() == 100);
  CHECK(lines.line_bytes() == 2'000'001);
  CHECK(lines.number() == 3);
  REQUIRE(lines.Next());
  CHECK(lines.line() == "last");
  CHECK_FALSE(lines.Next());
  CHECK(lines.status().ok());
}

}  // namespace
}  // namespace parasim
