// Memory per rank over a replay: applies a program's memory events as their tasks start and
// end, and keeps each rank's peak (and, when asked, every change as a time series).
//
//   MemoryTracker mem(program, /*record=*/false, &timeline);
//   mem.Apply(task, MemoryAt::kStart, now_ps);   // timeline.peak_memory[rank] follows
#pragma once

#include <cstdint>
#include <vector>

#include "sim/engine.h"
#include "sim/program.h"

namespace parasim::sim {

class MemoryTracker {
 public:
  // The program must be finalized (its memory events sorted by task).
  MemoryTracker(const Program& p, bool record, Timeline* tl);
  // The events of task `t` at `at`, at time `now` (picoseconds).
  void Apply(TaskId t, MemoryAt at, int64_t now);
  size_t state_bytes() const;

 private:
  const std::vector<MemoryEvent>& events_;
  std::vector<double> current_;      // per rank, bytes
  std::vector<uint8_t> has_memory_;  // per task
  bool record_;
  Timeline* tl_;
};

}  // namespace parasim::sim
