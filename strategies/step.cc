#include "strategies/step.h"

#include <fmt/core.h>

#include <chrono>

#include "strategies/lowering.h"
#include "strategies/step_advice.h"
#include "strategies/step_lowering.h"

namespace parasim {

StatusOr<LoweredStep> LowerStep(const ModelSpec& model, const Training& training,
                                const Layout& layout, const ClusterSpec& cluster,
                                const StepOptions& options) {
  if (options.full && layout.gpus() > kMaxFullRanks) {
    return InvalidArgument(fmt::format(
        "--full replays every rank and is meant for small clusters: {} GPUs is more than {}; "
        "drop --full (the default replays one rank per pipeline stage)",
        layout.gpus(), kMaxFullRanks));
  }
  LoweredStep out;
  // A thread lowers layouts one after another (a sweep): the last one's size is a fair guess
  // at this one's, and reserving it spares growing the program's vectors step by step.
  thread_local struct { size_t tasks = 0, edges = 0, memory = 0; } last;
  out.program.Reserve(last.tasks, last.edges, last.memory);
  LoweringContext ctx(model, training, layout, cluster, options, &out);
  StepLowering lowering(ctx);
  PARASIM_RETURN_IF_ERROR(lowering.Run());
  last = {out.program.num_tasks(), out.program.num_edges(), out.program.memory_events().size()};
  return out;
}

StatusOr<StepBounds> StepLowerBounds(const ModelSpec& model, const Training& training,
                                     const Layout& layout, const ClusterSpec& cluster,
                                     const std::vector<double>& held_bytes) {
  if (held_bytes.size() != static_cast<size_t>(layout.pp)) {
    return Internal(fmt::format("StepLowerBounds: {} stages' held bytes for pp {}",
                                held_bytes.size(), layout.pp));
  }
  LoweredStep out;
  const StepOptions options;  // the context keeps a reference: it must outlive it
  LoweringContext ctx(model, training, layout, cluster, options, &out);
  StepLowering lowering(ctx);
  StepBounds b;
  b.step_s = lowering.LowerBound().seconds();
  const std::vector<double> act = lowering.ActivationLowerBounds();
  for (size_t s = 0; s < held_bytes.size(); ++s) {
    b.peak_bytes = std::max(b.peak_bytes, held_bytes[s] + act[s]);
  }
  return b;
}

StatusOr<double> StepScheduleBound(const ModelSpec& model, const Training& training,
                                   const Layout& layout, const ClusterSpec& cluster) {
  LoweredStep out;
  const StepOptions options;  // the context keeps a reference: it must outlive it
  LoweringContext ctx(model, training, layout, cluster, options, &out);
  StepLowering lowering(ctx);
  const Duration first = lowering.LowerBound();
  return Max(first, lowering.ScheduleBound()).seconds();
}

StatusOr<StepReport> ReplayStep(LoweredStep low, const ModelSpec& model, const Training& training,
                                const Layout& layout, const ClusterSpec& cluster,
                                const StepOptions& options, LoweredStep* lowered,
                                sim::Timeline* timeline) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  sim::Engine engine;
  sim::RunOptions ro;
  ro.record_memory = options.record_memory;
  ro.critical_path = options.critical_path;
  PARASIM_ASSIGN_OR_RETURN(sim::Timeline tl, engine.Run(low.program, low.costs, ro));
  const auto t1 = Clock::now();
  StepReport r = Summarize(low, tl, model, training, layout, cluster, options);
  r.warnings = StepWarnings(r, model, training, layout, cluster);
  r.replay_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  if (lowered) *lowered = std::move(low);
  if (timeline) *timeline = std::move(tl);
  return r;
}

StatusOr<StepReport> SimulateStep(const ModelSpec& model, const Training& training,
                                  const Layout& layout, const ClusterSpec& cluster,
                                  const StepOptions& options, LoweredStep* lowered,
                                  sim::Timeline* timeline) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  PARASIM_ASSIGN_OR_RETURN(LoweredStep low, LowerStep(model, training, layout, cluster, options));
  const auto t1 = Clock::now();
  PARASIM_ASSIGN_OR_RETURN(StepReport r, ReplayStep(std::move(low), model, training, layout,
                                                    cluster, options, lowered, timeline));
  r.lower_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  r.replay_ms += r.lower_ms;
  return r;
}

}  // namespace parasim
