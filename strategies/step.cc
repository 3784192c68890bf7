#include "strategies/step.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "strategies/lowering.h"
#include "strategies/memory.h"
#include "strategies/schedule.h"
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
  const std::vector<double> first_b = lowering.FirstBackwardPeaks(held_bytes);
  for (size_t s = 0; s < held_bytes.size(); ++s) {
    b.peak_bytes = std::max({b.peak_bytes, held_bytes[s] + act[s], first_b[s]});
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

namespace {

// `run`'s advice for another setting `what` whose replay `alt` fits: its peak and how much
// shorter than `r` its step is, with `more` saying what else it changes.
std::string AlsoFits(std::string_view what, std::string_view more, const StepReport& alt,
                     const StepReport& r) {
  const double peak = *std::max_element(alt.peak_memory_bytes.begin(), alt.peak_memory_bytes.end());
  return fmt::format("{} also fits ({:.1f} GiB peak){}: step {:.3f} s, {:.1f}% shorter", what,
                     Bytes(peak).gib(), more, alt.step_time_s,
                     100 * (1 - alt.step_time_s / r.step_time_s));
}

// The replay of another setting (`t`, `l`) when it fits and is at least 1% shorter than `r`.
std::optional<StepReport> ShorterFit(const ModelSpec& model, const Training& t, const Layout& l,
                                     const ClusterSpec& cluster, const StepReport& r) {
  StatusOr<StepReport> alt = SimulateStep(model, t, l, cluster, StepOptions{});
  if (!alt.ok() || !alt->fits || alt->step_time_s > 0.99 * r.step_time_s) return std::nullopt;
  return *std::move(alt);
}

}  // namespace

std::string RecomputeLayersAdvice(const ModelSpec& model, const Training& training,
                                  const Layout& layout, const ClusterSpec& cluster,
                                  const StepReport& r) {
  int most = 0;  // layers of the fullest chunk
  for (const ChunkSpan& c : ChunkSpans(layout, model.layers)) most = std::max(most, c.layers);
  if (most < 1) return "";
  const bool none = training.recompute == RecomputeKind::kNone;
  const int now =
      none ? 0 : (training.recompute_layers < 0 ? most : std::min(training.recompute_layers, most));
  if (r.fits ? none : now >= most) return "";
  Training probe = training;
  if (none) probe.recompute = RecomputeKind::kFull;
  auto fits = [&](int n) {
    probe.recompute_layers = n;
    return EstimateMemory(model, probe, layout, cluster).fits;
  };
  // Fewer layers recomputed keep more: the planner's memory falls as n grows, so the fewest
  // that fit are found by bisection over (lo, hi].
  int lo = r.fits ? -1 : now, hi = r.fits ? now : most;
  if (!fits(hi)) return "";
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    (fits(mid) ? hi : lo) = mid;
  }
  if (r.fits && hi >= now) return "";
  probe.recompute_layers = hi;
  if (hi == 0) {
    probe.recompute = RecomputeKind::kNone;
    probe.recompute_layers = -1;
  }
  StatusOr<StepReport> alt = SimulateStep(model, probe, layout, cluster, StepOptions{});
  if (!alt.ok() || !alt->fits) return "";
  const std::string what = hi == 0 ? "recompute: none"
                                   : fmt::format("{}recompute_layers: {} (of {} per chunk)",
                                                 none ? "recompute: full with " : "", hi, most);
  if (!r.fits) {
    const double peak =
        *std::max_element(alt->peak_memory_bytes.begin(), alt->peak_memory_bytes.end());
    return fmt::format("{} fits: {:.1f} GiB peak, step {:.3f} s", what, Bytes(peak).gib(),
                       alt->step_time_s);
  }
  return AlsoFits(what, hi == 0 ? "" : " and recomputes less", *alt, r);
}

std::string GradReduceAdvice(const ModelSpec& model, const Training& training, const Layout& layout,
                             const ClusterSpec& cluster, const StepReport& r) {
  if (!r.fits || r.micro_batches <= 1 || !layout.shards_gradients() ||
      layout.grad_reduce != Layout::GradReduce::kAuto || layout.dp * layout.cp <= 1) {
    return "";
  }
  Layout probe = layout;
  probe.grad_reduce = Layout::GradReduce::kStep;
  const std::optional<StepReport> alt = ShorterFit(model, training, probe, cluster, r);
  if (!alt) return "";
  return AlsoFits("grad_reduce: step", " holding whole gradients until one reduction per step",
                  *alt, r);
}

std::string Zero3ReshardAdvice(const ModelSpec& model, const Training& training,
                               const Layout& layout, const ClusterSpec& cluster,
                               const StepReport& r) {
  using R = Layout::Zero3Reshard;
  if (!r.fits || layout.zero != 3 || layout.dp * layout.cp <= 1 ||
      layout.zero3_reshard == R::kStep) {
    return "";
  }
  std::optional<StepReport> best;
  R pick = layout.zero3_reshard;
  for (const R z : {R::kBackward, R::kStep}) {
    if (z <= layout.zero3_reshard) continue;  // held no longer than now
    Layout probe = layout;
    probe.zero3_reshard = z;
    std::optional<StepReport> alt = ShorterFit(model, training, probe, cluster, r);
    if (alt && (!best || alt->step_time_s < best->step_time_s)) {
      best = std::move(alt);
      pick = z;
    }
  }
  if (!best) return "";
  return AlsoFits(
      fmt::format("zero3_reshard: {}", Zero3ReshardName(pick)),
      pick == R::kStep
          ? " holding every layer's parameters gathered to the step's end (one gather "
            "a layer a step)"
          : " holding each layer's parameters gathered from its forward to its backward",
      *best, r);
}

std::string LossFusionAdvice(const ModelSpec& model, const Training& training, const Layout& layout,
                             const ClusterSpec& cluster, const StepReport& r) {
  if (!r.fits || training.fused_cross_entropy) return "";
  Training probe = training;
  probe.fused_cross_entropy = true;
  const std::optional<StepReport> alt = ShorterFit(model, probe, layout, cluster, r);
  if (!alt) return "";
  return AlsoFits("cross_entropy: fused", " and runs the loss as one fused kernel pair", *alt, r);
}

std::string GroupedGemmAdvice(const ModelSpec& model, const Training& training,
                              const Layout& layout, const ClusterSpec& cluster,
                              const StepReport& r) {
  if (!r.fits || !IssuesExpertsFromHost(model, training)) return "";
  Training probe = training;
  probe.per_expert_gemm = false;
  const std::optional<StepReport> alt = ShorterFit(model, probe, layout, cluster, r);
  if (!alt) return "";
  return AlsoFits("expert_gemm: grouped",
                  fmt::format(" with one kernel a GEMM, where the MoE layers now wait on the host "
                              "issuing their experts one at a time after the routing's "
                              "synchronisation ({:.1f} us an op, gpu host_op_time)",
                              cluster.gpu.host_op_time.microseconds()),
                  *alt, r);
}

std::string FoldingAdvice(const ModelSpec& model, const Training& training, const Layout& layout,
                          const ClusterSpec& cluster, const StepReport& r) {
  if (!model.is_moe() || layout.tp <= 1 || !layout.sp || layout.expert_tp() != layout.tp ||
      layout.ep <= 1) {
    return "";
  }
  const int64_t ranks = static_cast<int64_t>(layout.tp) * layout.cp * layout.dp;
  std::optional<StepReport> best;
  Layout best_layout;
  for (const int ep : {layout.ep * layout.tp, layout.ep}) {
    if (model.moe.experts % ep != 0 || ranks % ep != 0) continue;
    Layout probe = layout;
    probe.ep = ep;
    probe.etp = 1;
    StatusOr<StepReport> alt = SimulateStep(model, training, probe, cluster, StepOptions{});
    if (!alt.ok() || !alt->fits) continue;
    if (!best || alt->step_time_s < best->step_time_s) {
      best = *std::move(alt);
      best_layout = probe;
    }
  }
  if (!best || best->step_time_s > 0.99 * r.step_time_s) return "";
  return AlsoFits(
      fmt::format("etp: 1 with ep: {}", best_layout.ep),
      best_layout.ep == layout.ep
          ? " with whole experts and the EP group over the TP ranks (MoE parallel folding)"
          : " with the EP group over the TP ranks (MoE parallel folding)",
      *best, r);
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
  if (!low.shift.empty()) {
    ro.shift = &low.shift;
    ro.anchors = &low.anchors;
  }
  PARASIM_ASSIGN_OR_RETURN(sim::Timeline tl, engine.Run(low.program, low.costs, ro));
  const auto t1 = Clock::now();
  StepReport r = Summarize(low, tl, model, training, layout, cluster, options);
  r.warnings = StepWarnings(r, model, training, layout, cluster);
  r.replay_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  r.summary_ms = std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
  if (lowered) *lowered = std::move(low);
  if (timeline) *timeline = std::move(tl);
  return r;
}

StatusOr<StepReport> SimulateStep(const ModelSpec& model, const Training& training,
                                  const Layout& layout, const ClusterSpec& cluster,
                                  const StepOptions& options, LoweredStep* lowered,
                                  sim::Timeline* timeline) {
  // A layout on more GPUs than the cluster has would place ranks past its links: refused (the
  // loader, the commands and the sweep refuse every invalid layout, CheckLayout; a layout on
  // part of the cluster replays there, as the step tests and `scale` replay such).
  if (layout.gpus() > cluster.gpus()) {
    return InvalidArgument(
        fmt::format("parallelism.dp: tp*pp*dp*cp = {}*{}*{}*{} = {} GPUs, but the cluster has {}",
                    layout.tp, layout.pp, layout.dp, layout.cp, layout.gpus(), cluster.gpus()));
  }
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

std::vector<std::string> StepAdvice(const ModelSpec& model, const Training& training,
                                    const Layout& layout, const ClusterSpec& cluster,
                                    const StepReport& r) {
  std::vector<std::string> out;
  for (std::string advice : {RecomputeLayersAdvice(model, training, layout, cluster, r),
                             GradReduceAdvice(model, training, layout, cluster, r),
                             Zero3ReshardAdvice(model, training, layout, cluster, r),
                             FoldingAdvice(model, training, layout, cluster, r),
                             LossFusionAdvice(model, training, layout, cluster, r),
                             GroupedGemmAdvice(model, training, layout, cluster, r)}) {
    if (!advice.empty()) out.push_back(std::move(advice));
  }
  return out;
}

}  // namespace parasim
