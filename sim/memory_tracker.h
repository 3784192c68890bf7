// Memory per rank over a replay: applies a program's memory events as their tasks start and
// end, and keeps each rank's peak (and, when asked, every change as a time series).
//
//   MemoryTracker mem(program, /*record=*/false, &timeline);
//   mem.Apply(task, MemoryAt::kStart, now_ps);   // timeline.peak_memory[rank] follows
#pragma once

#include <cstdint>
#include <vector>

#include "sim/program.h"
#include "sim/timeline.h"

namespace parasim::sim {

class MemoryTracker {
 public:
  // The program must be finalized (its memory events sorted by task).
  MemoryTracker(const Program& p, bool record, Timeline* tl);
  // The events of task `t` at `at`, at time `now` (picoseconds).
  void Apply(TaskId t, MemoryAt at, int64_t now) {
    // Most tasks have no memory event: answered here, without the call.
    if (offset_[t] != kNone) ApplyEvents(t, at, now);
  }
  size_t state_bytes() const;
  // Each rank's bytes now.
  const std::vector<double>& levels() const { return current_; }

 private:
  // Where a task's events start in events_ (sorted by task), in O(1) and about a byte per task:
  // the first event of each block of kBlock tasks, and per task the offset of its first event
  // from its block's (kNone: no events; kFar: past 253, found by a search within the block).
  static constexpr uint32_t kBlock = 64;
  static constexpr uint8_t kNone = 255, kFar = 254;
  size_t First(TaskId t) const;
  void ApplyEvents(TaskId t, MemoryAt at, int64_t now);

  const HugePageVector<MemoryEvent>& events_;
  std::vector<double> current_;  // per rank, bytes
  std::vector<uint32_t> block_;  // per block of kBlock tasks, and one past the last
  std::vector<uint8_t> offset_;  // per task
  bool record_;
  Timeline* tl_;
};

}  // namespace parasim::sim
