// What a replay is asked for and what it gives back: RunOptions in, a Timeline out
// (sim/engine.h replays; sim/trace.h writes a timeline as a Chrome trace).
//
//   Timeline tl = *Engine().Run(program, costs, RunOptions{.critical_path = false});
//   tl.makespan, tl.start[t], tl.end[t], tl.busy[stream], tl.LinkUtilisation(program, link)
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/huge_pages.h"
#include "sim/program.h"
#include "sim/units.h"

namespace parasim::sim {

struct RunOptions {
  bool record_memory = false;  // keep every memory change as a time series
  bool critical_path = true;
  // Per program rank, how much longer its compute-role streams' tasks take than their cost
  // (a straggling GPU: 1.05 = 5% slower); empty = every rank at 1. Communication is unchanged.
  std::vector<double> rank_slowdown = {};
  // Steady-state periodicity, both or neither. shift[t] is the task that plays t's part one
  // period (a micro-batch) later, kNone where none; anchors are tasks, each playing the part
  // of the one before, where the replay compares its state with the one it had at the
  // previous anchor (or, when a state comes back only after k anchors, k anchors before, with
  // the shift composed k times). When the two are the same but for the shift and the time
  // between them, and the program is the same shape for every task that the period touched
  // over the periods ahead (each one's cost, stream, route, category, label, memory events,
  // dependencies and place in its streams, checked here), the replay places those periods'
  // tasks from the one it replayed and goes on from there: the timeline is the full replay's,
  // bit for bit. Unused with record_memory or tasks on several streams.
  const HugePageVector<TaskId>* shift = nullptr;
  const std::vector<TaskId>* anchors = nullptr;
  // Where the replay writes the wall-clock seconds of its setup (its per-task state laid out,
  // its memory touched for the first time) and of its event loop (null: not timed). For the
  // engine benchmark, which reports them apart.
  struct Timing {
    double setup_s = 0, loop_s = 0;
  };
  Timing* timing = nullptr;
};

struct MemorySample {
  Duration time;
  uint32_t rank;
  double bytes;
};

struct Timeline {
  Duration makespan;
  HugePageVector<Duration> start;     // per task
  HugePageVector<Duration> end;       // per task
  std::vector<double> peak_memory;    // per rank, bytes (relative to the rank's initial 0)
  std::vector<Duration> peak_time;    // per rank, when the peak was first reached
  std::vector<Duration> busy;         // per stream
  std::vector<double> link_bytes;     // per link, bytes moved
  std::vector<MemorySample> memory;   // when record_memory
  std::vector<TaskId> critical_path;  // from the first task to the last to finish
  uint64_t events = 0;  // events handled (those of periods placed included); each does something
  uint64_t moves = 0;   // completions moved in place, a flow re-shared or a kernel slowed (ditto)
  uint64_t jumped_tasks = 0;    // tasks placed from a replayed period (RunOptions::shift)
  uint32_t period_anchors = 0;  // anchors the placed period spanned (0: none placed)
  size_t state_bytes = 0;       // engine runtime state (vectors' capacities)

  // Utilisation of link l over the makespan (0..1).
  double LinkUtilisation(const Program& p, LinkId l) const;
};

}  // namespace parasim::sim
