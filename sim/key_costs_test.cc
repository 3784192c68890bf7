#include "sim/key_costs.h"

#include <doctest/doctest.h>

#include <vector>

namespace parasim::sim {
namespace {

// A table that counts what it is asked.
class CountingCost : public TableCost {
 public:
  Duration ComputeDuration(uint32_t key) const override {
    ++asked[key];
    return TableCost::ComputeDuration(key);
  }
  FlowCost Flow(uint32_t key) const override {
    ++asked[key];
    return TableCost::Flow(key);
  }
  mutable std::vector<int> asked = std::vector<int>(8, 0);
};

TEST_CASE("each key's costs are asked once, the first time it comes up") {
  CountingCost cost;
  const uint32_t gemm = cost.AddCompute(Duration::Microseconds(7), 1.3);
  const uint32_t send = cost.AddFlow({Duration::Microseconds(5), Bytes::MB(2)});
  const uint32_t fast = cost.AddCompute(Duration::Nanoseconds(3), 0.5);
  KeyCosts keys(cost);
  for (int i = 0; i < 3; ++i) {
    keys.Learn(gemm, /*compute=*/true);
    keys.Learn(send, /*compute=*/false);
  }
  CHECK(cost.asked[gemm] == 1);
  CHECK(cost.asked[send] == 1);
  CHECK(keys.duration_ps(gemm) == 7'000'000);
  CHECK(keys.slowdown(gemm) == doctest::Approx(1.3));
  CHECK(keys.flow(send).latency == Duration::Microseconds(5));
  CHECK(keys.flow(send).bytes.bytes() == doctest::Approx(2e6));
  keys.Learn(fast, /*compute=*/true);  // a key past those known grows the tables
  CHECK(keys.duration_ps(fast) == 3'000);
  CHECK(keys.slowdown(fast) == 1.0);  // a contended slowdown below 1 counts as none
  CHECK(keys.state_bytes() > 0);
}

}  // namespace
}  // namespace parasim::sim
