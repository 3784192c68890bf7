// StepLowering's lower bounds on each stage's activation memory, from its order of units
// (ActivationLowerBounds, FirstBackwardPeaks): apart from step_lowering.cc, which emits the step.
#include <vector>

#include "strategies/memory.h"
#include "strategies/step_lowering.h"
#include "strategies/unit_walk.h"

namespace parasim {

std::vector<double> StepLowering::ActivationLowerBounds() const {
  // EndForward holds a chunk's `act` from the forward's first task and EndBackward frees it
  // at the backward's end, less what a split backward keeps for W (`act_w`, freed at W's
  // end), with recompute's transient on top; each rank runs its stage's order on one compute
  // stream, so the walk in that order, held at each unit's boundary, is never above the
  // replay.
  const int p = ctx_.layout.pp;
  const bool split = ctx_.schedule.splits_backward();
  // The walk is taken from each stage's peak states (the same value, exactly, when the bytes
  // are whole numbers), else walked unit by unit.
  StagePeaks peaks(ctx_.layout, PipelineShape{p, ctx_.chunks, ctx_.micro_batches});
  std::vector<double> out(p, 0.0);
  std::vector<double> bytes, w;
  for (int s = 0; s < p; ++s) {
    bytes.clear();
    w.clear();
    for (const Chunk& ch : layers_.chunks(s)) {
      bytes.push_back(ch.act);
      w.push_back(split ? ch.act_w : 0.0);
    }
    out[s] = peaks.Of(s, bytes, w);
  }
  return out;
}

std::vector<double> StepLowering::FirstBackwardPeaks(const std::vector<double>& held) const {
  // Recompute rebuilds a layer's dropped activations on top of what the stage holds
  // (EndBackward: act_full_max from the backward's first task to its last), which the walk of
  // ActivationLowerBounds, held at unit boundaries, leaves out. At a stage's first backward
  // nothing has been freed: the states from the start, then every forward before it in the
  // order (each began before it on the stage's stream; an F&B pair's forward only adds), then
  // the transient. Summed in that order, as the replay's memory tracker adds them, the level
  // is never above the replay's (a rounded sum grows with each term); 1F1B-like orders peak
  // there.
  const int p = ctx_.layout.pp;
  std::vector<double> out(p, 0.0);
  if (ctx_.training.recompute == RecomputeKind::kNone) return out;
  const auto states = SharedPeakStates(ctx_.layout, {p, ctx_.chunks, ctx_.micro_batches});
  for (int s = 0; s < p; ++s) {
    const PeakStates& st = (*states)[s];
    if (st.first_b_chunk < 0) continue;
    const double transient = layers_.chunk(s, st.first_b_chunk).act_full_max;
    if (!(transient > 0)) continue;
    double level = held[static_cast<size_t>(s)];
    for (const auto& [chunk, n] : st.before_first_b) {
      const double act = layers_.chunk(s, chunk).act;
      for (int64_t k = 0; k < n; ++k) level += act;
    }
    out[s] = level + transient;
  }
  return out;
}

}  // namespace parasim
