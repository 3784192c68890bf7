// Each cost key's costs, asked of a CostProvider once: the first time a task with the key
// comes up. A compute key gives its duration (picoseconds) and its slowdown beside a collective
// (at least 1), a flow key its latency and bytes. The replay (sim/engine.cc) and the makespan
// lower bound (sim/lower_bound.h) share it.
//
//   KeyCosts keys(costs);
//   keys.Learn(p.cost_key(t), p.kind(t) == TaskKind::kCompute);   // inline once known
//   int64_t d = keys.duration_ps(p.cost_key(t));
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/program.h"

namespace parasim::sim {

class KeyCosts {
 public:
  explicit KeyCosts(const CostProvider& costs) : costs_(costs) {}
  // Makes `key` known, as the key of a compute task or of a flow.
  void Learn(uint32_t key, bool compute) {
    if (key < known_.size() && known_[key]) return;  // most calls: answered inline
    Ask(key, compute);
  }
  int64_t duration_ps(uint32_t key) const { return duration_ps_[key]; }
  double slowdown(uint32_t key) const { return slowdown_[key]; }
  const FlowCost& flow(uint32_t key) const { return flow_[key]; }
  size_t state_bytes() const {
    return known_.capacity() + duration_ps_.capacity() * sizeof(int64_t) +
           flow_.capacity() * sizeof(FlowCost) + slowdown_.capacity() * sizeof(double);
  }

 private:
  // The provider's costs of a key not asked before (out of line: the hot path is Learn's check).
  [[gnu::noinline]] void Ask(uint32_t key, bool compute) {
    if (key >= known_.size()) {
      known_.resize(key + 1, 0);
      duration_ps_.resize(key + 1, 0);
      flow_.resize(key + 1);
      slowdown_.resize(key + 1, 1.0);
    }
    // A cost past the longest replay (kMaxReplayPs) is held just past it: the replay then
    // stops there with an error rather than adding times that could wrap.
    constexpr int64_t kPast = kMaxReplayPs + 1;
    if (compute) {
      duration_ps_[key] = std::clamp<int64_t>(costs_.ComputeDuration(key).picoseconds(), 0, kPast);
      slowdown_[key] = std::max(1.0, costs_.ContendedSlowdown(key));
    } else {
      flow_[key] = costs_.Flow(key);
      Duration& lat = flow_[key].latency;
      lat = Duration::Picoseconds(std::clamp<int64_t>(lat.picoseconds(), 0, kPast));
    }
    known_[key] = 1;
  }
  const CostProvider& costs_;
  std::vector<uint8_t> known_;
  std::vector<int64_t> duration_ps_;
  std::vector<FlowCost> flow_;
  std::vector<double> slowdown_;
};

}  // namespace parasim::sim
