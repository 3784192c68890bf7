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
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/status.h"
#include "strategies/plan.h"
#include "strategies/processes.h"
#include "strategies/step.h"

namespace parasim {

// Closer than 2% a sequence, two measured layouts count as equally fast (validate's ranking,
// scenarios/validate.h; the sweep's ties with its first layout, and --robust): the choice gains a
// planner little, and single published runs (throughputs rounded to three or four figures, some
// read from charts) do not order them reliably. Megatron-Bridge's 25.11 and 26.02 rows of Llama
// 3 70B on 64 H100, one layout at global batches of 128 and 256, are 1.2% apart a sequence
// (tests/validation/regimes/megatron-bridge-h100.yaml).
inline constexpr double kRankTie = 0.02;

struct SweepOptions {
  int jobs = 1;
  std::string out_csv;  // results as they arrive (one line per layout); "" = none
  bool resume = false;  // skip layouts already in out_csv
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

// One layout's outcome, as ranked and as written to the CSV.
struct SweepEntry {
  // Canonical layout text, e.g. "tp8 pp8 dp16 cp1 ep1 sp0 zero1 1f1b v1 mb1 gb1536 full".
  std::string key;
  Layout layout;
  Training training;
  bool fits = false;
  std::string reason;  // why it was not replayed (memory), "" when replayed
  double step_time_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;
  double bubble = 0;
  ExposedComm exposed;
  double peak_memory_bytes = 0;  // the largest over stages
  double compute_s = 0;          // the busiest stage's compute
  bool replayed = false;         // replayed in the engine (else rejected by the memory planner)
  bool pruned = false;  // fits the planner, but its bounds cannot enter the ranking: not replayed
  // Lower bound on the replayed step (StepLowerBounds, raised by sim::MakespanLowerBound once
  // lowered); 0 = none.
  double bound_s = 0;
  // Lower bound on the replayed peak: a stage's states, plus (when pruning) the activations
  // its schedule's order holds at once.
  double min_peak_bytes = 0;
  // Fraction of the failure-free throughput kept through failures, checkpoints and stragglers
  // (GoodputFactor), for the time_to_train and cost objectives; 1 otherwise.
  double goodput = 1;
  // Co-design sweeps: the cluster and model it runs on (an index into the sweep's hardware; 0
  // otherwise), and what that cluster costs per second: GPUs x price per GPU-hour / 3600, or
  // GPU-hours per second when not every cluster of the sweep is priced.
  size_t hardware = 0;
  double cost_per_s = 0;
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
  double elapsed_s = 0;
  // Where the wall clock went (printed on stderr; not in --json, which keeps wall-clock keys
  // to elapsed_s and the two rates): building the grid and its layouts; the memory planner and
  // first-tier bounds for every layout; the replays (and the trials pruned among them); the
  // leaders' full reports and the CSV.
  double enumerate_s = 0, screen_s = 0, replay_s = 0, report_s = 0;
  double valid_layouts_per_second = 0;
  double replays_per_second = 0;
  std::vector<SweepEntry> ranked;  // feasible, best first
  SweepEntry leanest;  // when nothing fits: the valid layout closest to fitting (its reason)
  // Indices into ranked, fastest first: throughput vs peak memory, or (co-design sweeps)
  // throughput vs cost per token. No other layout is both faster and lower on the other axis.
  std::vector<size_t> pareto;
  std::vector<StepReport> top_reports;  // full reports of the first `top` ranked layouts
  int64_t base_global_batch = 0;
};

StatusOr<SweepOutcome> RunSweep(const Scenario& base, const SweepOptions& options);

// The base scenario with an entry's layout and training (and a co-design sweep's cluster and
// model) applied.
Scenario WithLayout(const Scenario& base, const SweepEntry& e);
// The cluster an entry runs on: a co-design sweep's, else the base scenario's.
const ClusterSpec& ClusterOf(const Scenario& base, const SweepEntry& e);
// The throughput an entry keeps through failures, checkpoints and stragglers.
inline double KeptTokensPerS(const SweepEntry& e) { return e.tokens_per_s * e.goodput; }
// What the sweep's objective ranks an entry by, lower first: money (or GPU-hours) a token for
// `cost`, seconds a token kept otherwise; infinite for an entry that keeps no tokens. Not for
// the memory objective.
double ObjectiveCost(const Scenario& base, const SweepEntry& e);
// Whether every cluster a co-design sweep compares has a price (cost_per_s is then money).
bool SweepPriced(const Scenario& base);
// What one token costs on an entry's layout: money (or GPU-hours, unpriced) per token, through
// failures when the sweep models goodput.
double CostPerToken(const SweepEntry& e);

// Runs fn(i) for every i in `items` on `jobs` threads; the first error wins.
Status ParallelFor(const std::vector<size_t>& items, int jobs,
                   const std::function<Status(size_t)>& fn);
// Sets a fitting entry's goodput (the time_to_train and cost objectives of a scenario that
// models failures) from its step time; leaves it at 1 otherwise.
void FillGoodput(const Scenario& base, SweepEntry* e);

// The largest non-compute share of a step, in words ("exposed TP communication (12%)").
std::string Bottleneck(const StepReport& r);
// A replayed layout's entry: its step report's figures (busiest stage's compute, worst peak).
SweepEntry EntryOf(const Layout& layout, const Training& training, const StepReport& r);

// Why `entry` loses to `best`, in words.
std::string WhyBehind(const SweepEntry& entry, const SweepEntry& best);

}  // namespace parasim
