// Max-min fair bandwidth sharing (water-filling), a pure function kept out of the engine.
//
//   flows = {{0}, {0, 1}};  capacity = {10, 4}
//   MaxMinRates(flows, capacity) -> {6, 4}: flow 1 is held to 4 by link 1, flow 0 takes the rest.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace parasim::sim {

// `flow_links[i]` lists the links flow i crosses; `capacity[l]` is link l's rate.
// Returns each flow's rate. A flow that crosses no link gets +infinity.
std::vector<double> MaxMinRates(const std::vector<std::span<const uint32_t>>& flow_links,
                                std::span<const double> capacity);

// The same computation with reusable scratch space (no allocation once warmed up), for the
// engine's hot path.
class MaxMinSolver {
 public:
  void Solve(const std::vector<std::span<const uint32_t>>& flow_links,
             std::span<const double> capacity, std::vector<double>* rate);

 private:
  std::vector<double> remaining_;
  std::vector<int> unfrozen_on_link_;
  std::vector<char> frozen_;
  std::vector<uint32_t> touched_;
};

}  // namespace parasim::sim
