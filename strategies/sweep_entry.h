// One layout's outcome in a sweep, and the one list of what a sweep finds about a layout, as
// against what names it. The grid gives an entry its key, layout, training, cluster (hardware)
// and that cluster's price (cost_per_s); everything else is found: by the memory planner and
// the lower bounds (screening), by the replay, or by the pruning decision. The results file,
// the exchange between processes and a replay's hand-over to its listed entry all go through
// ForEachFound (and the file's figures through ForEachFigure), so a field added to SweepEntry
// is added there once.
//
//   SweepEntry listed = ...;                      // from the grid
//   SweepEntry r = EntryOf(layout, training, report);
//   CopyFound(r, &listed);                        // the replay's figures, flags and note
#pragma once

#include <cstddef>
#include <string>

#include "models/training.h"
#include "strategies/layout.h"
#include "strategies/step_summary.h"

namespace parasim {

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

// The throughput an entry keeps through failures, checkpoints and stragglers.
inline double KeptTokensPerS(const SweepEntry& e) { return e.tokens_per_s * e.goodput; }

// The note of a layout the sweep did not replay because its bounds cannot enter the ranking.
inline constexpr const char* kPrunedNote = "pruned (cannot enter the top or the front):";

// Calls f on the figures a replay measures, in the results file's column order (step time to
// the busiest stage's compute), of one entry or of several in step: f(a.step_time_s,
// b.step_time_s), ...
template <typename F, typename... E>
void ForEachFigure(F&& f, E&... e) {
  f(e.step_time_s...);
  f(e.tokens_per_s...);
  f(e.mfu...);
  f(e.bubble...);
  f(e.exposed.tp...);
  f(e.exposed.cp...);
  f(e.exposed.ep...);
  f(e.exposed.pp...);
  f(e.exposed.dp...);
  f(e.peak_memory_bytes...);
  f(e.compute_s...);
}
inline constexpr int kNumFigures = 11;

// Calls f on every field a sweep finds about a layout (everything but what the grid gives it:
// key, layout, training, hardware and cost_per_s), of one entry or of several in step.
template <typename F, typename... E>
void ForEachFound(F&& f, E&... e) {
  f(e.fits...);
  f(e.replayed...);
  f(e.pruned...);
  ForEachFigure(f, e...);
  f(e.bound_s...);
  f(e.min_peak_bytes...);
  f(e.goodput...);
  f(e.reason...);
}

// Copies what `from` found about its layout onto `to`, which keeps what the grid gave it.
void CopyFound(const SweepEntry& from, SweepEntry* to);

// A replayed layout's entry: its step report's figures (busiest stage's compute, worst peak).
SweepEntry EntryOf(const Layout& layout, const Training& training, const StepReport& r);

}  // namespace parasim
