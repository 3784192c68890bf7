// `mpirun -np 2 parasim sweep` (Open MPI, installed by tools/bazel) gives what one process gives:
// the same JSON less its wall-clock keys, the same text and the same results CSV, also when it
// resumes; errors come once, from rank 0, with exit code 2.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "tests/cli_runner.h"

namespace parasim {
namespace {

using testing::CliResult;
using testing::Runfile;
using testing::RunParasim;
using testing::RunShell;
using testing::Slurp;
using testing::WithoutTimings;

// Two ranks on this machine, however many cores it has. Open MPI refuses root unless told twice
// (CI containers run as root); leak checking is off because Open MPI's own allocations at
// MPI_Finalize are not parasim's (the one-process runs keep it on).
CliResult MpiParasim(const std::string& args) {
  return RunShell(
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
      "ASAN_OPTIONS=detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS} "
      "mpirun -np 2 --oversubscribe " +
      Runfile("tools/parasim") + " " + args);
}

// The sweep's count lines on stderr (grid_points ... replayed).
std::string Counts(const std::string& err) {
  std::string out, line;
  std::istringstream in(err);
  while (std::getline(in, line)) {
    for (const char* k :
         {"grid_points:", "valid_layouts:", "memory_rejected:", "pruned:", "replayed:"}) {
      if (line.rfind(k, 0) == 0) out += line + "\n";
    }
  }
  return out;
}

TEST_CASE("mpirun is there (tools/bazel installs openmpi-bin) and parasim was built with MPI") {
  const CliResult which = RunShell("command -v mpirun");
  REQUIRE_MESSAGE(which.exit_code == 0, "no mpirun on PATH: install openmpi-bin");
  // Launched by mpirun, a parasim built without MPI says so and exits 2.
  const CliResult v = MpiParasim("sweep --help");
  CHECK_MESSAGE(v.err.find("built without MPI") == std::string::npos, v.err);
  CHECK(v.exit_code == 0);
}

TEST_CASE("two ranks sweep to the same JSON, text and CSV as one process") {
  const std::string dir = std::getenv("TEST_TMPDIR");
  const std::string f = Runfile("scenarios/turing-530b-5128-a100-sweep.yaml");
  const CliResult one = RunParasim("sweep --json --jobs 1 --out " + dir + "/one.csv " + f);
  const CliResult two = MpiParasim("sweep --json --jobs 1 --out " + dir + "/two.csv " + f);
  REQUIRE(one.exit_code == 0);
  REQUIRE_MESSAGE(two.exit_code == 0, two.err);
  CHECK(WithoutTimings(two.out) == WithoutTimings(one.out));
  CHECK(WithoutTimings(one.out).size() + 40 < one.out.size());  // the keys were there
  CHECK(Slurp(dir + "/two.csv") == Slurp(dir + "/one.csv"));
  // The counts on stderr, once (rank 0), are one process's.
  CHECK(Counts(two.err) == Counts(one.err));
  CHECK(Counts(one.err).find("replayed: ") != std::string::npos);

  const CliResult text_one = RunParasim("sweep --jobs 2 " + f);
  const CliResult text_two = MpiParasim("sweep --jobs 1 " + f);
  REQUIRE(text_two.exit_code == 0);
  CHECK(text_two.out == text_one.out);
}

// Stdout of a text sweep without its first line (the counts) and without the front's
// positions in the ranking of the replayed layouts ("#30"), which depend on how many were.
std::string Ranking(const std::string& out) {
  std::string kept, line;
  std::istringstream in(out.substr(out.find('\n') + 1));
  while (std::getline(in, line)) {
    if (line.rfind("  #", 0) == 0) line = line.substr(line.find(' ', 3));
    kept += line + "\n";
  }
  return kept;
}

TEST_CASE("--batch: two ranks match one process at the same batch; the ranking does not move") {
  const std::string f = Runfile("scenarios/gpt3-175b-1024-a100-sweep.yaml");
  const CliResult base = RunParasim("sweep --jobs 2 " + f);
  const CliResult one = RunParasim("sweep --jobs 1 --batch 2 " + f);
  const CliResult two = MpiParasim("sweep --jobs 1 --batch 2 " + f);
  REQUIRE(base.exit_code == 0);
  REQUIRE(one.exit_code == 0);
  REQUIRE_MESSAGE(two.exit_code == 0, two.err);
  CHECK(two.out == one.out);
  CHECK(Counts(two.err) == Counts(one.err));
  CHECK(Ranking(one.out) == Ranking(base.out));  // top 10, front, advice
  CHECK(Counts(one.err) != Counts(base.err));    // fewer replays between prunings
}

TEST_CASE("two ranks resume a cut-short results file to the uninterrupted run's") {
  const std::string dir = std::getenv("TEST_TMPDIR");
  const std::string f = Runfile("scenarios/gpt3-175b-1024-a100-sweep.yaml");
  const CliResult whole = RunParasim("sweep --jobs 1 --out " + dir + "/whole.csv " + f);
  REQUIRE(whole.exit_code == 0);
  const std::string all = Slurp(dir + "/whole.csv");
  REQUIRE(all.size() > 4000);
  // The first 3,000 bytes, as a kill would leave it: a torn last line included.
  {
    std::ofstream cut(dir + "/cut.csv");
    cut << all.substr(0, 3000);
  }
  const CliResult resumed = MpiParasim("sweep --jobs 1 --resume --out " + dir + "/cut.csv " + f);
  REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.err);
  CHECK(Slurp(dir + "/cut.csv") == all);
  CHECK(resumed.out == whole.out);
}

TEST_CASE("under mpirun, errors come once from rank 0 with exit code 2") {
  const std::string f = Runfile("scenarios/turing-530b-5128-a100-sweep.yaml");
  // Another verb is refused.
  const CliResult run = MpiParasim("run " + f);
  CHECK(run.exit_code == 2);
  CHECK(run.err.find("only `sweep` runs under mpirun") != std::string::npos);
  // A results file that cannot be written: rank 0 finds out, every rank stops.
  const CliResult out = MpiParasim("sweep --out /nonexistent-dir/x.csv " + f);
  CHECK(out.exit_code == 2);
  const size_t at = out.err.find("cannot write the results file");
  CHECK(at != std::string::npos);
  CHECK(out.err.find("cannot write the results file", at + 1) == std::string::npos);
  CHECK(out.out.empty());
}

}  // namespace
}  // namespace parasim
