// Issue 60's targets on the Megatron-LM CI corpus's held-out runs above the host-bound group, as
// `parasim validate --subset held_out` reports them (docs/MODEL.md, "The host"). A test of its own:
// under ASan its replays take minutes, beside validation_test's.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tests/cli_runner.h"

namespace parasim {
namespace {

using testing::Runfile;
using testing::RunParasim;

TEST_CASE("megatron-ci: held-out step time above the host-bound group, per GPU and per family") {
  // Issue 60's targets: MAPE at most 10% for each GPU type and for dense and MoE runs, no case
  // worse than 25%. 2026-12-01: A100 3.84%, H100 8.37%, GB200 3.86%, dense 4.54%, MoE 6.79%,
  // worst -21.0%; dense was 10.53% and GB200 9.85% while the GB200 GPT 7B run's attention ran at
  // cuDNN's rate (-21.7%; Transformer Engine runs FlashAttention 2 there: its deterministic mode
  // with Megatron-Core's default attention dropout).
  std::map<std::string, std::vector<double>> by_group;
  double worst = 0, gpt7b_gb200 = -1;
  for (const char* gpu : {"a100", "h100", "gb200"}) {
    for (const char* family : {"dense", "moe", "hybrid"}) {
      const std::string f =
          Runfile(std::string("tests/validation/megatron-ci/") + gpu + "-" + family + ".yaml");
      if (!std::filesystem::exists(f)) continue;
      auto r = RunParasim("validate --json --subset held_out " + f);
      REQUIRE(r.exit_code == 0);
      for (size_t at = r.out.find("\"status\": \"ok\""); at != std::string::npos;
           at = r.out.find("\"status\": \"ok\"", at + 1)) {
        const size_t e = r.out.find("\"error\": ", at);
        REQUIRE(e != std::string::npos);
        const double err = std::abs(std::stod(r.out.substr(e + 9)));
        const size_t name = r.out.rfind("\"name\": \"", at);
        if (r.out.compare(name + 9, 50, "gpt/gpt3_7b_tp1_pp4_memory_speed (dgx_gb200, dev)\"") ==
            0) {
          gpt7b_gb200 = err;
        }
        by_group[gpu].push_back(err);
        by_group[family].push_back(err);
        worst = std::max(worst, err);
      }
    }
  }
  for (const char* g : {"a100", "h100", "gb200", "dense", "moe"}) {
    CAPTURE(g);
    const std::vector<double>& v = by_group[g];
    REQUIRE(!v.empty());
    double sum = 0;
    for (double e : v) sum += e;
    CHECK(sum / static_cast<double>(v.size()) <= 0.10);
  }
  CHECK(by_group["dense"].size() + by_group["moe"].size() >= 10);
  CHECK(worst <= 0.25);
  // The GB200 GPT 7B run itself (-3.7%; -21.7% at cuDNN's attention rate).
  REQUIRE(gpt7b_gb200 >= 0);
  CHECK(gpt7b_gb200 <= 0.10);
}

}  // namespace
}  // namespace parasim
