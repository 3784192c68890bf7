// A sweep killed with SIGKILL mid-run and resumed with --resume gives the same results (CSV and
// report) as an uninterrupted run; `run --json` is byte-identical across runs.
#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>

#include "tests/cli_runner.h"

namespace parasim {
namespace {

using testing::Runfile;
using testing::RunParasim;
using testing::Slurp;
using testing::WithoutTimings;

size_t Lines(const std::string& path) {
  const std::string t = Slurp(path);
  return static_cast<size_t>(std::count(t.begin(), t.end(), '\n'));
}

TEST_CASE("sweep --resume after kill -9 gives the results of an uninterrupted run") {
  const std::string dir = std::getenv("TEST_TMPDIR");
  const std::string scenario = Runfile("scenarios/gpt3-175b-1024-a100-sweep.yaml");
  auto whole = RunParasim("sweep --jobs 1 --out " + dir + "/whole.csv " + scenario);
  REQUIRE(whole.exit_code == 0);

  // Start the same sweep in the background and kill it once results are arriving.
  const std::string csv = dir + "/killed.csv";
  const std::string cmd = Runfile("tools/parasim") + " sweep --jobs 1 --out " + csv + " " +
                          scenario + " >/dev/null 2>&1 & echo $! > " + dir + "/pid";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const pid_t pid = static_cast<pid_t>(std::stol(Slurp(dir + "/pid")));
  bool killed = false;
  for (int i = 0; i < 6000; ++i) {
    if (Lines(csv) >= 6) {
      killed = ::kill(pid, SIGKILL) == 0;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE_MESSAGE(killed, "the sweep finished before it could be killed");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const size_t partial = Lines(csv);
  CHECK(partial >= 6);
  CHECK(partial < Lines(dir + "/whole.csv"));

  auto resumed = RunParasim("sweep --jobs 2 --resume --out " + csv + " " + scenario);
  REQUIRE(resumed.exit_code == 0);
  CHECK(Slurp(csv) == Slurp(dir + "/whole.csv"));
  CHECK(resumed.out == whole.out);  // the same ranking, Pareto front and advice
}

TEST_CASE("sweep --resume refuses results made with another calibration profile") {
  // The check of a results line covered the scenario's text and --set, not the profile it
  // names: an edited profile's sweep took the old results and ranked by them.
  const std::string dir = std::getenv("TEST_TMPDIR");
  const std::string scen = dir + "/resume-calibrated.yaml";
  const std::string prof = dir + "/resume-profile.yaml";
  std::ofstream(prof) << "gpu: h100-sxm5-80gb\ncompute: {gemm_efficiency: 0.5}\n";
  std::ofstream(scen) << "cluster: {gpu: h100-sxm5-80gb, calibration: resume-profile.yaml, nodes: "
                         "2, inter_node: ib-ndr-400g}\nmodel: llama3-8b\ntraining: {seq_len: "
                         "4096, global_batch: 32}\nsweep: {tp: [1, 2, 4], pp: [1, 2]}\n";
  const std::string csv = dir + "/resume-calibrated.csv";
  REQUIRE(RunParasim("sweep --jobs 1 --out " + csv + " " + scen).exit_code == 0);
  auto same = RunParasim("sweep --jobs 1 --resume --out " + csv + " " + scen);
  REQUIRE(same.exit_code == 0);
  CHECK(same.err.find("; 0 lines refused") != std::string::npos);
  std::ofstream(prof) << "gpu: h100-sxm5-80gb\ncompute: {gemm_efficiency: 0.6}\n";
  auto edited = RunParasim("sweep --jobs 1 --resume --out " + csv + " " + scen);
  REQUIRE(edited.exit_code == 0);
  CHECK(edited.err.find("resumed: 0 layouts taken") != std::string::npos);
}

TEST_CASE("sweep JSON is the same with --jobs 1 and --jobs 2 but for its wall-clock keys") {
  const std::string f = Runfile("scenarios/turing-530b-5128-a100-sweep.yaml");
  auto one = RunParasim("sweep --json --jobs 1 " + f);
  auto two = RunParasim("sweep --json --jobs 2 " + f);
  REQUIRE(one.exit_code == 0);
  REQUIRE(two.exit_code == 0);
  CHECK(WithoutTimings(one.out) == WithoutTimings(two.out));
  CHECK(WithoutTimings(one.out).size() + 40 < one.out.size());  // the keys were there
}

TEST_CASE("the same scenario gives byte-identical run JSON, with --full and at op level too") {
  const std::string f = Runfile("scenarios/llama3-70b-64-h100.yaml");
  for (const char* flags : {"", "--full", "--ops"}) {
    CAPTURE(flags);
    auto a = RunParasim(std::string("run --json ") + flags + " " + f);
    auto b = RunParasim(std::string("run --json ") + flags + " " + f);
    REQUIRE(a.exit_code == 0);
    CHECK(a.out == b.out);
  }
}

}  // namespace
}  // namespace parasim
