// Limits: huge clusters, models and sequences give a result with finite numbers (or a clear
// refusal), never an overflow, a NaN or a hang; a sweep of over 10^9 layouts is refused.
#include <doctest/doctest.h>

#include <string>

#include "tests/cli_runner.h"

namespace parasim {
namespace {

using testing::Runfile;
using testing::RunParasim;

double Field(const std::string& json, const std::string& key) {
  auto at = json.find("\"" + key + "\":");
  REQUIRE(at != std::string::npos);
  return std::stod(json.substr(at + key.size() + 3));
}

void CheckFinite(const std::string& json) {
  for (const char* bad : {"nan", "inf", "NaN", "Infinity", "e+308"}) {
    CAPTURE(bad);
    CHECK(json.find(bad) == std::string::npos);
  }
}

TEST_CASE("a million GPUs: a result with finite figures") {
  auto r = RunParasim("run --json " + Runfile("tests/limits/million-gpus.yaml"));
  REQUIRE(r.exit_code == 0);
  CheckFinite(r.out);
  CHECK(Field(r.out, "gpus") == 1000000);
  CHECK(Field(r.out, "step_time_s") > 1);
  CHECK(Field(r.out, "step_time_s") < 1e4);
  CHECK(Field(r.out, "mfu") > 0);
  CHECK(Field(r.out, "mfu") < 1);
}

TEST_CASE("a 100-trillion-parameter model: a result that says it does not fit") {
  auto r = RunParasim("run --json " + Runfile("tests/limits/model-100t-params.yaml"));
  REQUIRE(r.exit_code == 0);
  CheckFinite(r.out);
  CHECK(r.out.find("\"fits\": false") != std::string::npos);
  CHECK(Field(r.out, "step_time_s") > 100);
  auto mem = RunParasim("memory --json " + Runfile("tests/limits/model-100t-params.yaml"));
  REQUIRE(mem.exit_code == 0);
  CheckFinite(mem.out);
}

TEST_CASE("a 10-million-token sequence: a result with finite figures") {
  auto r = RunParasim("run --json " + Runfile("tests/limits/seq-10m-tokens.yaml"));
  REQUIRE(r.exit_code == 0);
  CheckFinite(r.out);
  CHECK(Field(r.out, "step_time_s") > 1);
  CHECK(Field(r.out, "tokens_per_s") > 0);
}

TEST_CASE("a sweep of over 10^9 layouts is refused with --max-layouts, not attempted") {
  auto r = RunParasim("sweep " + Runfile("tests/limits/sweep-1e9.yaml"));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--max-layouts") != std::string::npos);
  CHECK(r.err.find("tests/limits/sweep-1e9.yaml:7:3: error") != std::string::npos);
}

}  // namespace
}  // namespace parasim
