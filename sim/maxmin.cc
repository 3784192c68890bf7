#include "sim/maxmin.h"

#include <limits>

namespace parasim::sim {

std::vector<double> MaxMinRates(const std::vector<std::span<const uint32_t>>& flow_links,
                                std::span<const double> capacity) {
  MaxMinSolver solver;
  std::vector<double> rate;
  solver.Solve(flow_links, capacity, &rate);
  return rate;
}

void MaxMinSolver::Solve(const std::vector<std::span<const uint32_t>>& flow_links,
                         std::span<const double> capacity, std::vector<double>* rate_out) {
  const size_t nf = flow_links.size();
  const double kInf = std::numeric_limits<double>::infinity();
  std::vector<double>& rate = *rate_out;
  rate.assign(nf, kInf);
  // Only the links the flows cross are touched: a replay solves one small component at a time
  // on a network of many links. unfrozen_on_link_ is all zeros between calls.
  if (unfrozen_on_link_.size() < capacity.size()) {
    unfrozen_on_link_.resize(capacity.size(), 0);
    remaining_.resize(capacity.size(), 0.0);
  }
  frozen_.assign(nf, 0);
  touched_.clear();
  size_t left = 0;
  for (size_t f = 0; f < nf; ++f) {
    if (flow_links[f].empty()) {
      frozen_[f] = 1;
      continue;
    }
    ++left;
    for (uint32_t l : flow_links[f]) {
      if (unfrozen_on_link_[l]++ == 0) {
        touched_.push_back(l);
        remaining_[l] = capacity[l];
      }
    }
  }
  while (left > 0) {
    // The most constrained link sets the next fair share.
    double share = kInf;
    uint32_t bottleneck = 0;
    bool found = false;
    for (uint32_t l : touched_) {
      if (unfrozen_on_link_[l] == 0) continue;
      double s = remaining_[l] / unfrozen_on_link_[l];
      if (s < share) {
        share = s;
        bottleneck = l;
        found = true;
      }
    }
    if (!found) break;
    for (size_t f = 0; f < nf; ++f) {
      if (frozen_[f]) continue;
      bool crosses = false;
      for (uint32_t l : flow_links[f]) crosses |= (l == bottleneck);
      if (!crosses) continue;
      frozen_[f] = 1;
      --left;
      rate[f] = share;
      for (uint32_t l : flow_links[f]) {
        remaining_[l] -= share;
        if (remaining_[l] < 0) remaining_[l] = 0;
        --unfrozen_on_link_[l];
      }
    }
  }
  for (uint32_t l : touched_) unfrozen_on_link_[l] = 0;
}

}  // namespace parasim::sim
