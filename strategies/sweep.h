// The sweep planner: enumerate the layouts of a scenario's sweep block, prune the impossible ones
// cheaply (divisibility, memory), replay every survivor in the engine, and rank them.
//
//   SweepOptions o{.jobs = 2};
//   StatusOr<SweepOutcome> r = RunSweep(scenario, o);
//   r->ranked[0]  // the best layout by the objective, with its replayed report
//
// `auto` means every valid value of a key: tp the powers of two up to a node (TP stays within a
// node unless a list asks for more), pp every divisor of the GPU count up to the layer count,
// dp what the GPU count leaves, cp powers of two up to 16, ep the divisors of the expert count,
// micro_batch 1..16 in powers of two, virtual stages 1..8 (interleaved only), every schedule,
// ZeRO stage, recompute mode and sp on/off (when tp > 1).
//
// RunSweep puts the parts together, each in its own file:
//   sweep_grid.h      the grid: its axes, its points folded and checked, one entry per layout
//   sweep_screen.h    the memory planner and the lower bounds; pruning by them
//   sweep_replay.h    each layout tried in stages and decided in batches
//   sweep_executor.h  threads, and processes under mpirun
//   sweep_results.h   the results file and --resume
//   sweep_rank.h      the ranking by the objective, and the Pareto front
//   sweep_explain.h   bottlenecks, and why a layout loses, in words
//   sweep_codesign.h  the clusters and models compared, cost per token, goodput
//   sweep_entry.h     one layout's outcome, and the one list of what is found about it
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/status.h"
#include "strategies/goodput.h"
#include "strategies/plan.h"
#include "strategies/processes.h"
#include "strategies/step.h"
#include "strategies/sweep_codesign.h"
#include "strategies/sweep_entry.h"
#include "strategies/sweep_executor.h"
#include "strategies/sweep_explain.h"
#include "strategies/sweep_rank.h"

namespace parasim {

struct SweepOptions {
  int jobs = 1;
  std::string out_csv;  // results as they arrive (one line per layout); "" = none
  bool resume = false;  // skip layouts already in out_csv
  // The scenario's fingerprint (a hash of its text and overrides): every line of out_csv carries
  // a check made with it, and --resume takes only the lines whose check holds
  // (strategies/sweep_results.h).
  uint64_t fingerprint = 0;
  int64_t max_layouts = 10'000'000;
  // Replay every layout that fits the memory planner, instead of skipping those whose lower
  // bounds (step time and peak memory) cannot enter the top or the Pareto front.
  bool exhaustive = false;
  // Replays decided together (each batch against the pruning state the earlier ones left).
  // Across processes, the most workers that replay at once; in one process, threads try
  // layouts of later batches while a batch's replays finish. Part of the outcome, like the
  // grid: the counts of pruned and replayed layouts depend on it, the ranking and the Pareto
  // front do not.
  int batch = 16;
  // Called from worker threads with (done, total) after each layout; may be empty.
  std::function<void(int64_t, int64_t)> progress;
  // The processes the sweep is spread over (mpirun; strategies/processes.h), null = this one.
  // Each process runs RunSweep; the outcome is the same as one process's, and rank 0's alone
  // carries the leaders' reports and writes out_csv.
  const Processes* processes = nullptr;
};

struct SweepOutcome {
  // What became of the grid: a point is rejected by divisibility or folded onto another point
  // (sp without TP, one model chunk with interleaving, ...); a valid layout is rejected by the
  // memory planner, pruned (its lower bounds on step time and peak memory cannot enter the
  // first `top` or the Pareto front among the layouts replayed before it), or replayed in the
  // engine, where it fits or peaks over memory.
  int64_t grid_points = 0;      // points of the sweep grid
  int64_t valid_layouts = 0;    // distinct layouts passing the divisibility checks
  int64_t memory_rejected = 0;  // valid, but over memory by the planner: not replayed
  int64_t pruned = 0;           // valid and within memory, but not replayed
  int64_t replayed = 0;         // replayed in the engine
  int64_t feasible = 0;         // replayed and within memory: the ranked ones
  int64_t resumed = 0;          // taken from an earlier run's CSV
  int64_t resume_refused = 0;   // lines of that CSV whose check failed: decided again
  double elapsed_s = 0;
  // Where the wall clock went (printed on stderr; not in --json, which keeps wall-clock keys
  // to elapsed_s and the two rates): building the grid and its layouts; the memory planner and
  // first-tier bounds for every layout; the replays (and the trials pruned among them); the
  // leaders' full reports and the CSV.
  double enumerate_s = 0, screen_s = 0, replay_s = 0, report_s = 0;
  double valid_layouts_per_second = 0;
  double replays_per_second = 0;
  std::vector<SweepEntry> ranked;  // feasible, best first
  // Replayed, but over memory in the replay (not ranked), in the grid's order: with `ranked`,
  // every layout the sweep replayed.
  std::vector<SweepEntry> replayed_over_memory;
  SweepEntry leanest;  // when nothing fits: the valid layout closest to fitting (its reason)
  // Indices into ranked, fastest first: throughput vs peak memory, or (co-design sweeps)
  // throughput vs cost per token. No other layout is both faster and lower on the other axis.
  std::vector<size_t> pareto;
  std::vector<StepReport> top_reports;  // full reports of the first `top` ranked layouts
  // Where the scenario models goodput: each leader's goodput model as `run` computes it (its
  // report's time to train, GPU-hours and cost already through it, as `run` prints them).
  std::vector<std::optional<GoodputReport>> top_goodput;
  int64_t base_global_batch = 0;
};

StatusOr<SweepOutcome> RunSweep(const Scenario& base, const SweepOptions& options);

}  // namespace parasim
