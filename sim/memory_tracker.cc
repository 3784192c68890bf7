#include "sim/memory_tracker.h"

#include <algorithm>

namespace parasim::sim {

MemoryTracker::MemoryTracker(const Program& p, bool record, Timeline* tl)
    : events_(p.memory_events()),
      current_(p.num_ranks(), 0.0),
      has_memory_(p.num_tasks(), 0),
      record_(record),
      tl_(tl) {
  for (const auto& m : events_) has_memory_[m.task] = 1;
}

void MemoryTracker::Apply(TaskId t, MemoryAt at, int64_t now) {
  if (!has_memory_[t]) return;
  auto it = std::lower_bound(events_.begin(), events_.end(), t,
                             [](const MemoryEvent& m, TaskId x) { return m.task < x; });
  for (; it != events_.end() && it->task == t; ++it) {
    if (it->at != at) continue;
    double& cur = current_[it->rank];
    cur += it->bytes;
    if (cur > tl_->peak_memory[it->rank]) {
      tl_->peak_memory[it->rank] = cur;
      tl_->peak_time[it->rank] = Duration::Picoseconds(now);
    }
    if (record_) tl_->memory.push_back({Duration::Picoseconds(now), it->rank, cur});
  }
}

size_t MemoryTracker::state_bytes() const { return has_memory_.capacity(); }

}  // namespace parasim::sim
