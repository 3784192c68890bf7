#include "tools/trace_compare.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>
#include <utility>

#include "hardware/cost_model.h"
#include "models/layer_graph.h"
#include "sim/enum_names.h"
#include "strategies/memory.h"
#include "strategies/step_kernels.h"

namespace parasim {
namespace {

constexpr EnumNames<KernelKind, kNumKernelKinds> kKernelKinds(
    "kernel kind", {{{KernelKind::kGemm, "GEMM"},
                     {KernelKind::kAttention, "attention"},
                     {KernelKind::kElementwise, "element-wise"},
                     {KernelKind::kCommunication, "communication"}}});

int64_t Nanos(double seconds) { return static_cast<int64_t>(std::llround(seconds * 1e9)); }

// Where an op of the graph sits, for the replay's families.
struct OpInfo {
  OpKind kind = OpKind::kMemoryBound;
  bool layer = false;   // in a layer of the stack (ModelGraph::Layers)
  bool expert = false;  // a routed expert's op
};

std::unordered_map<std::string, OpInfo> OpsOf(const Scenario& s) {
  std::unordered_map<std::string, OpInfo> ops;
  auto graph = SharedModelGraph(s.model, RankShape(s.training, s.layout));
  for (const Block* b : {&graph->embedding, &graph->head, &graph->mtp}) {
    for (size_t i = 0; i < b->size(); ++i) {
      ops[b->op(i).name] = {b->op(i).kind, false, b->op(i).expert};
    }
  }
  for (const Block* b : graph->Layers()) {
    for (size_t i = 0; i < b->size(); ++i) {
      ops[b->op(i).name] = {b->op(i).kind, true, b->op(i).expert};
    }
  }
  return ops;
}

// A replayed task's kind and family; nullopt when `layers_only` leaves it out.
std::optional<std::pair<KernelKind, std::string>> TaskKind(
    TaskCat cat, const std::string& label, const std::unordered_map<std::string, OpInfo>& ops,
    bool layers_only) {
  if (cat == TaskCat::kHost) return std::nullopt;  // CPU time, no kernel
  if (cat >= TaskCat::kTp && cat <= TaskCat::kDp) {
    if (layers_only && (cat == TaskCat::kPp || cat == TaskCat::kDp)) return std::nullopt;
    return std::pair{KernelKind::kCommunication, std::string(TaskCatName(cat))};
  }
  if (cat == TaskCat::kOptimizer || cat == TaskCat::kDpCopy || cat == TaskCat::kCompress) {
    if (layers_only) return std::nullopt;
    return std::pair{KernelKind::kElementwise, std::string(TaskCatName(cat))};
  }
  // Compute tasks are labelled "F name", "B name", "W name" or "R name" (the op's name).
  auto it = label.size() > 2 && label[1] == ' ' ? ops.find(label.substr(2)) : ops.end();
  if (it == ops.end()) {
    if (layers_only) return std::nullopt;
    return std::pair{KernelKind::kElementwise, std::string("other")};
  }
  const OpInfo& op = it->second;
  if (layers_only && !op.layer) return std::nullopt;
  if (op.kind == OpKind::kGemm) {
    return std::pair{KernelKind::kGemm, std::string(op.expert  ? "routed experts"
                                                    : op.layer ? "dense"
                                                               : "LM head")};
  }
  if (op.kind == OpKind::kAttention) return std::pair{KernelKind::kAttention, "attention"};
  return std::pair{KernelKind::kElementwise,
                   std::string(op.layer ? "layers" : "embedding/head/loss")};
}

// The span, idle time and overlap of the replay's counted tasks (`counted`). Idle is the time
// within their span that no task of the rank covers (`every`): tasks left out (--layers) are
// neither counted nor idle, so the span is the counted tasks' busy time plus that idle.
void Finish(std::vector<Interval> counted, std::vector<Interval> every, std::vector<Interval> comm,
            std::vector<Interval> compute, KindTimes* k) {
  if (counted.empty()) return;
  const std::vector<Interval> merged = MergeIntervals(std::move(counted));
  const Interval range{merged.front().start_ns, merged.back().end_ns};
  const int64_t busy_any = IntersectionLength(MergeIntervals(std::move(every)), {range});
  const int64_t idle = range.end_ns - range.start_ns - busy_any;
  k->idle_s = static_cast<double>(idle) * 1e-9;
  k->span_s = static_cast<double>(CoveredLength(merged) + idle) * 1e-9;
  k->overlap = MeasureOverlap(std::move(comm), std::move(compute));
}

}  // namespace

std::string_view KernelKindName(KernelKind k) { return kKernelKinds.Name(k); }

KernelKind KindOf(KernelClass c) {
  switch (c) {
    case KernelClass::kGemm:
      return KernelKind::kGemm;
    case KernelClass::kAttention:
      return KernelKind::kAttention;
    case KernelClass::kCommunication:
      return KernelKind::kCommunication;
    default:
      return KernelKind::kElementwise;
  }
}

void KindTimes::Add(const KindTimes& o) {
  for (int k = 0; k < kNumKernelKinds; ++k) {
    seconds[k] += o.seconds[k];
    count[k] += o.count[k];
    for (const auto& [f, v] : o.families[k]) families[k][f] += v;
  }
  span_s += o.span_s;
  idle_s += o.idle_s;
  overlap.comm_ns += o.overlap.comm_ns;
  overlap.compute_ns += o.overlap.compute_ns;
  overlap.overlapped_ns += o.overlap.overlapped_ns;
  overlap.exposed_ns += o.overlap.exposed_ns;
}

void KindTimes::Scale(double f) {
  for (int k = 0; k < kNumKernelKinds; ++k) {
    seconds[k] *= f;
    count[k] *= f;
    for (auto& [name, v] : families[k]) v *= f;
  }
  span_s *= f;
  idle_s *= f;
  auto scaled = [f](int64_t ns) { return static_cast<int64_t>(std::llround(ns * f)); };
  overlap.comm_ns = scaled(overlap.comm_ns);
  overlap.compute_ns = scaled(overlap.compute_ns);
  overlap.overlapped_ns = scaled(overlap.overlapped_ns);
  overlap.exposed_ns = overlap.comm_ns - overlap.overlapped_ns;
}

KindTimes MeasuredKinds(const TraceSummary& s) {
  KindTimes k;
  for (int c = 0; c < kNumKernelClasses; ++c) {
    const int kind = static_cast<int>(KindOf(static_cast<KernelClass>(c)));
    k.seconds[kind] += static_cast<double>(s.measured.time_ns[c]) * 1e-9;
    k.count[kind] += s.measured.count[c];
  }
  const double steps = static_cast<double>(std::max<size_t>(1, s.steps_chosen.size()));
  for (const KernelListing& row : s.kernels) {
    k.families[static_cast<int>(KindOf(row.kind))][row.family] +=
        static_cast<double>(row.time_ns) * 1e-9 / steps;
  }
  k.span_s = static_cast<double>(s.measured.span_ns) * 1e-9;
  k.idle_s = static_cast<double>(s.measured.idle_ns) * 1e-9;
  k.overlap = s.measured.overlap;
  return k;
}

KindTimes PredictedKinds(const Scenario& s, const LoweredStep& low, const sim::Timeline& tl,
                         int stage, bool layers_only) {
  const std::unordered_map<std::string, OpInfo> ops = OpsOf(s);
  const sim::Program& p = low.program;
  const uint32_t rank = low.stage_rank[stage];
  KindTimes k;
  std::vector<Interval> all, every, comm, compute;
  for (sim::TaskId t = 0; t < p.num_tasks(); ++t) {
    if (p.stream_rank(p.stream(t)) != rank) continue;
    const double a = tl.start[t].seconds(), d = tl.end[t].seconds() - a;
    if (d <= 0) continue;
    const auto cat = static_cast<TaskCat>(p.category(t));
    // The host's time is the CPU's: the GPU waiting on it is idle, as a trace shows it (it had
    // been neither, so that a host-bound replay's span fell short of its step).
    if (cat == TaskCat::kHost) continue;
    every.push_back({Nanos(a), Nanos(a + d)});
    const auto kind = TaskKind(cat, p.label_text(p.label(t)), ops, layers_only);
    if (!kind) continue;
    const int i = static_cast<int>(kind->first);
    k.seconds[i] += d;
    k.count[i] += 1;
    k.families[i][kind->second] += d;
    const Interval iv{Nanos(a), Nanos(a + d)};
    all.push_back(iv);
    (kind->first == KernelKind::kCommunication ? comm : compute).push_back(iv);
  }
  Finish(std::move(all), std::move(every), std::move(comm), std::move(compute), &k);
  return k;
}

std::vector<std::string> MissingKinds(const KindTimes& measured, const KindTimes& predicted) {
  std::vector<std::string> out;
  for (int i = 0; i < kNumKernelKinds; ++i) {
    const auto k = static_cast<KernelKind>(i);
    const double m = measured.seconds[i], p = predicted.seconds[i];
    if (m <= 0 && p > 0) {
      out.push_back(fmt::format(
          "{}: the trace has no {} kernels (0 ns) where the replay has {:.3f} ms: if the job ran "
          "them, the kernel table files them under another kind (compare --kernels lists each "
          "kernel's kind; --kernel-classes FILE moves them)",
          KernelKindName(k), KernelKindName(k), p * 1e3));
    } else if (p <= 0 && m > 0) {
      out.push_back(fmt::format(
          "{}: the trace has {:.3f} ms of {} kernels where the replay has none: the scenario "
          "does not run what the trace ran (or the kernel table files kernels here that belong "
          "elsewhere: compare --kernels)",
          KernelKindName(k), m * 1e3, KernelKindName(k)));
    }
  }
  return out;
}

namespace {

// Scales model efficiencies by a kind's replayed over measured time, keeping what it refuses.
class Scaler {
 public:
  // `launch`: what each replayed GEMM and attention kernel adds beside its efficiency's time
  // (CostModel::RooflineTime, AttentionTime), which the efficiency does not scale.
  Scaler(const KindTimes& m, const KindTimes& p, double launch_s, TraceProfile* out)
      : m_(m), p_(p), launch_s_(launch_s), out_(out) {}

  std::optional<double> Ratio(KernelKind k) const {
    double m = m_.Seconds(k), p = p_.Seconds(k);
    if (m <= 0 || p <= 0) return std::nullopt;
    // The replayed kernels' launches set apart on both sides, so that the scaled efficiency
    // replays the measured time (it had scaled them too: GEMMs 0.9% short of the trace).
    if (k == KernelKind::kGemm || k == KernelKind::kAttention) {
      const double fixed = p_.count[static_cast<int>(k)] * launch_s_;
      if (p > fixed && m > fixed) {
        p -= fixed;
        m -= fixed;
      }
    }
    return p / m;
  }

  // `model` x the ratio, or nullopt (said) when the kind has no time on a side; a value outside
  // (0.01, 1] is kept clamped and refused with its reason.
  std::optional<double> Scaled(KernelKind k, double model, std::string_view key) {
    const std::optional<double> r = Ratio(k);
    if (!r) {
      out_->notes.push_back(fmt::format("{} not written: {} has {} time", key, KernelKindName(k),
                                        m_.Seconds(k) <= 0 ? "no measured" : "no replayed"));
      return std::nullopt;
    }
    if (model <= 0) return std::nullopt;
    const double v = model * *r;
    if (v > 1.0) {
      out_->refused.push_back(fmt::format(
          "{} would be {:.3g} (the model's {:.3g} x replayed/measured {} time {:.3g}), above 1: "
          "the trace's {} kernels took {:.3f} ms where the GPU's peak needs {:.3f} ms at least. "
          "Kernels of this kind are likely filed under another (compare --kernels lists each "
          "kernel's kind), or the trace ran less work than the scenario (another precision, "
          "micro-batch or layout)",
          key, v, model, KernelKindName(k), *r, KernelKindName(k), m_.Seconds(k) * 1e3,
          p_.Seconds(k) * model * 1e3));
    } else if (v < 0.01) {
      out_->refused.push_back(fmt::format(
          "{} would be {:.3g} (the model's {:.3g} x replayed/measured {} time {:.3g}), below "
          "0.01: the trace's {} kernels took {:.3f} ms, {:.0f}x the replay's; the trace likely "
          "holds more work than the scenario (more steps, micro-batches or layers), or kernels "
          "of other kinds filed here (compare --kernels)",
          key, v, model, KernelKindName(k), *r, KernelKindName(k), m_.Seconds(k) * 1e3, 1 / *r));
    }
    return std::clamp(v, 0.01, 1.0);
  }

 private:
  const KindTimes& m_;
  const KindTimes& p_;
  double launch_s_;
  TraceProfile* out_;
};

}  // namespace

TraceProfile ProfileFromTrace(const Scenario& s, const KindTimes& measured,
                              const KindTimes& predicted, const std::string& trace) {
  TraceProfile out;
  CalibrationProfile& prof = out.profile;
  prof.gpu = s.cluster.gpu.id;
  prof.source =
      fmt::format("parasim compare --trace {} (measured / replayed time per kind)", trace);
  Scaler scale(measured, predicted, s.cluster.gpu.launch_overhead.seconds(), &out);
  const GpuSpec& g = s.cluster.gpu;
  // FP8 training runs its GEMMs at the FP8 efficiency (hardware/cost_model.cc): that is the one
  // the trace measures.
  if (s.training.precision == Dtype::kFp8) {
    prof.gemm_efficiency_fp8 =
        scale.Scaled(KernelKind::kGemm, g.Fp8GemmEfficiency(), "gemm_efficiency_fp8");
  } else {
    prof.gemm_efficiency = scale.Scaled(KernelKind::kGemm, g.gemm_efficiency, "gemm_efficiency");
  }
  prof.memory_efficiency =
      scale.Scaled(KernelKind::kElementwise, g.memory_efficiency, "memory_efficiency");
  // The element-wise kernels the SMs bound scale with the same ratio, their rates unbounded.
  if (const std::optional<double> r = scale.Ratio(KernelKind::kElementwise);
      r && g.elementwise_rates.any()) {
    prof.elementwise_rates = g.elementwise_rates.Scaled(*r);
  }
  const CostModel cost(s.cluster, s.training.precision);
  // The kernels the replay priced the trace's attention with: their figure is the one measured.
  const AttentionKernel k = TrainingAttentionKernel(s.training, s.model, s.cluster.gpu);
  auto fwd = scale.Scaled(KernelKind::kAttention, cost.AttentionEfficiency(false, k),
                          "attention forward efficiency");
  std::optional<double> bwd;
  if (fwd) {
    bwd = scale.Scaled(KernelKind::kAttention, cost.AttentionEfficiency(true, k),
                       "attention backward efficiency");
  }
  if (fwd && bwd) {
    const AttentionEfficiency a{*fwd, *bwd};
    (k == AttentionKernel::kFused    ? prof.attention_flash
     : k == AttentionKernel::kFlash2 ? prof.attention_flash2
                                     : prof.attention_standard) = a;
  }
  return out;
}

}  // namespace parasim
