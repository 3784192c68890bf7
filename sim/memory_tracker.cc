#include "sim/memory_tracker.h"

#include <algorithm>

namespace parasim::sim {

MemoryTracker::MemoryTracker(const Program& p, bool record, Timeline* tl)
    : events_(p.memory_events()),
      current_(p.num_ranks(), 0.0),
      block_((p.num_tasks() + kBlock - 1) / kBlock + 1, static_cast<uint32_t>(events_.size())),
      offset_(p.num_tasks(), kNone),
      record_(record),
      tl_(tl) {
  // Events are sorted by task: the first at or past each block's first task starts the block.
  size_t next = 0;  // the next block whose start is unset
  for (size_t i = 0; i < events_.size(); ++i) {
    const TaskId t = events_[i].task;
    for (; next <= t / kBlock; ++next) block_[next] = static_cast<uint32_t>(i);
    if (i == 0 || events_[i - 1].task != t) {
      const size_t off = i - block_[t / kBlock];
      offset_[t] = off < kFar ? static_cast<uint8_t>(off) : kFar;
    }
  }
}

size_t MemoryTracker::First(TaskId t) const {
  const size_t b = t / kBlock;
  if (offset_[t] != kFar) return block_[b] + offset_[t];
  return static_cast<size_t>(
      std::lower_bound(events_.begin() + block_[b], events_.begin() + block_[b + 1], t,
                       [](const MemoryEvent& m, TaskId x) { return m.task < x; }) -
      events_.begin());
}

void MemoryTracker::ApplyEvents(TaskId t, MemoryAt at, int64_t now) {
  for (size_t i = First(t); i < events_.size() && events_[i].task == t; ++i) {
    const MemoryEvent& m = events_[i];
    if (m.at != at) continue;
    double& cur = current_[m.rank];
    cur += m.bytes;
    if (cur > tl_->peak_memory[m.rank]) {
      tl_->peak_memory[m.rank] = cur;
      tl_->peak_time[m.rank] = Duration::Picoseconds(now);
    }
    if (record_) tl_->memory.push_back({Duration::Picoseconds(now), m.rank, cur});
  }
}

size_t MemoryTracker::state_bytes() const {
  return offset_.capacity() + block_.capacity() * sizeof(uint32_t);
}

}  // namespace parasim::sim
