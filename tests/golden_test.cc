// Golden outputs: `run --json`, `memory --json` and, for scenarios with a sweep block,
// `sweep --json` of every example scenario (of a serving scenario `serve --json`, and with a
// sweep block `serve --sweep --json`), compared byte for byte with tests/golden/ after the
// wall-clock keys are dropped from both. A change that moves a prediction fails here until
// tools/regen_golden.sh rewrites the files, and its commit says which moved and why.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli_runner.h"
#include "tests/sanitized.h"

namespace parasim {
namespace {

using testing::Runfile;
using testing::RunParasim;

// Keys whose values are measured on the wall clock, not predicted.
std::string DropWallClock(const std::string& json) {
  static const std::regex kWallClock(
      R"re(\n *"(elapsed_s|layouts_per_second|valid_layouts_per_second|replays_per_second)": [^,\n]*,?)re");
  return std::regex_replace(json, kWallClock, "");
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The first line where two texts differ, for the failure message.
std::string FirstDifference(const std::string& want, const std::string& got) {
  std::istringstream a(want), b(got);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool ea = !std::getline(a, la), eb = !std::getline(b, lb);
    if (ea && eb) return "identical";
    if (ea || eb || la != lb) {
      return "line " + std::to_string(line) + ": golden `" + (ea ? "<end>" : la) + "`, now `" +
             (eb ? "<end>" : lb) + "`";
    }
  }
}

// `verb` names the golden file (stem.verb.json); `command` is what runs, the verb by default.
void CheckGolden(const std::string& verb, const std::string& scenario, const std::string& stem,
                 std::string command = "") {
  const std::string golden_path = Runfile("tests/golden/" + stem + "." + verb + ".json");
  REQUIRE_MESSAGE(std::filesystem::exists(golden_path),
                  "no golden file " << golden_path << ": run tools/regen_golden.sh");
  if (command.empty()) command = verb;
  auto r = RunParasim(command + " --json " + scenario + (verb == "sweep" ? " --jobs 2" : ""));
  REQUIRE(r.exit_code == 0);
  const std::string want = DropWallClock(ReadFile(golden_path));
  const std::string got = DropWallClock(r.out);
  CHECK_MESSAGE(want == got, stem << "." << verb << ".json moved: " << FirstDifference(want, got)
                                  << " (tools/regen_golden.sh rewrites the golden files)");
}

TEST_CASE("every example scenario's run, memory and sweep JSON match the golden files") {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(Runfile("scenarios"))) {
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 9);
  for (const auto& f : files) {
    const std::string stem = f.stem().string();
    CAPTURE(stem);
    if (ReadFile(f.string()).find("\nserving:") != std::string::npos) {
      // A serving scenario: serve's JSON, and with a sweep block serve --sweep's.
      CheckGolden("serve", f.string(), stem);
      // The serving sweep (12 s here, 5 minutes under ASan) is sanitized by serving_sweep_test.
      if (ReadFile(f.string()).find("\nsweep:") != std::string::npos && !testing::kSanitized) {
        CheckGolden("serve-sweep", f.string(), stem, "serve --sweep --jobs 2");
      }
      continue;
    }
    CheckGolden("run", f.string(), stem);
    CheckGolden("memory", f.string(), stem);
    if (ReadFile(f.string()).find("\nsweep:") != std::string::npos) {
      CheckGolden("sweep", f.string(), stem);
    }
  }
}

TEST_CASE("the wall-clock filter drops only wall-clock keys") {
  const std::string in = "{\n  \"a\": 1,\n  \"elapsed_s\": 0.25,\n  \"b\": 2\n}";
  CHECK(DropWallClock(in) == "{\n  \"a\": 1,\n  \"b\": 2\n}");
}

}  // namespace
}  // namespace parasim
