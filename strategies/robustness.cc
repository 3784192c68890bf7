#include "strategies/robustness.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>

#include "hardware/cost_model.h"
#include "strategies/step.h"

namespace parasim {

namespace {

// The factors, each kind down and up, from the spread of the measurements behind the kind's
// defaults (docs/MODEL.md, "How far a sweep's answer holds"):
// - GEMMs x0.90 / x1.10: the sustained factors `parasim fit --runs` finds per validation file,
//   0.776 (Megatron-LM's H100 weak scaling with its TP overlap stated; 0.810 as copied) to 0.903
//   (Korthikanti Table 5), around the catalog's 0.852 (A100, fitted on SC21) and 0.826 (H100,
//   measured): -6% to +10%.
// - Attention x0.70 / x1.50: cuDNN's fused attention recorded on an H100 over shapes at 0.26-0.52
//   of peak forward against the catalog's 0.440 (0.59-1.18x), and 0.39-0.49 backward in this
//   stack's steps against 0.269 (1.45-1.82x) (hardware/profiles/.../attention-cudnn.yaml,
//   tools/gpu_check/megatron-step-2026-11-26.jsonl).
// - Memory-bound kernels x0.90 / x1.10: streaming copies and adds at 2.86-3.05 TB/s on an H100
//   (tools/gpu_check/memory-bound-h100-2026-11-26.jsonl), 0.85-0.91 of peak against the
//   catalog's 0.866 (-2% to +5%), widened since the element-wise SM rates are measured on
//   Hopper alone and taken per SM elsewhere.
// - Scale-up fabric x0.77 / x1.30: NVLink SHARP all-reduces reach about 480 GB/s bus bandwidth
//   on 8 H100 against the ring's 370 (NVIDIA/nccl-tests#212, NVIDIA/nccl#1442: "a 30%
//   improvement"), which the catalog takes; the same ratio down, for collectives that run
//   beside compute on fewer channels.
// - Scale-out fabric x0.78 / x1.28: SC21's runs, fitted with the fabric free, put InfiniBand at
//   0.754 of its rate against nccl-tests' 0.96 (x0.79; docs/MODEL.md, "Fitting to measured
//   runs"); up to line rate at most, which only the estimated fabrics (RoCE, Ethernet) approach.
// - Per-kernel overheads x0.5 / x2: the host issued a kernel in 11.3-17.5 us without autograd
//   and 21-29 us with it (moe_issue_bench.py, moe_step_check.py; the default 25.7), and
//   Transformer Engine's per-expert issue fits Megatron-Bridge's Blackwell MoE rows at 42-56 us.
const std::vector<Swing> kSwings = {
    {SwingKind::kGemm, 0.90, {}},      {SwingKind::kGemm, 1.10, {}},
    {SwingKind::kAttention, 0.70, {}}, {SwingKind::kAttention, 1.50, {}},
    {SwingKind::kMemory, 0.90, {}},    {SwingKind::kMemory, 1.10, {}},
    {SwingKind::kIntra, 0.77, {}},     {SwingKind::kIntra, 1.30, {}},
    {SwingKind::kInter, 0.78, {}},     {SwingKind::kInter, 1.28, {}},
    {SwingKind::kHost, 0.5, {}},       {SwingKind::kHost, 2.0, {}},
};

// One GPU type's kernels together, x0.88 / x1.12: how far one GPU type's dense rows miss together
// in the validation files. B200 and GB200 at their datasheet peaks with the H100's efficiencies
// run Megatron-Bridge's dense FP8 rows 7-13% fast; the H100's dense rows of the same tables run
// from 4% fast to 11% slow (Megatron-FSDP's Llama 3 8B row, 24% slow, aside), and its 2024
// weak-scaling rows from 10% fast to 12% slow; GB300 ran Llama 3 8B 19% faster than GB200 at
// the same catalog peaks (docs/MODEL.md, "Megatron-Bridge on B200 and GB200").
constexpr double kGpuSwingDown = 0.88, kGpuSwingUp = 1.12;

// A family of rates a calibration profile measured on the cluster swings x0.97 / x1.03: the
// spread of one measurement across parts, the sustained GEMM rates of two H100 machines at 656
// and 688.5 TFLOP/s (tools/gpu_check/gemm-sustained-h100-2026-11-26.jsonl and the 2026-11-22
// profile), +-2.4% about their mean.
constexpr double kMeasuredSwing = 0.03;

// The cost model's own cap on attention efficiencies (CostModel::AttentionEfficiency).
constexpr double kAttentionCap = 0.95;
// NVLink SHARP's all-reduce bus bandwidth over NVLink4's line rate, 480 / 450 GB/s
// (NVIDIA/nccl-tests#212): the most a scale-up fabric's efficiency reaches.
constexpr double kIntraCap = 480.0 / 450.0;

std::string Change(double from, double to) {
  return from == to ? fmt::format("{:.3g} (at its cap)", from)
                    : fmt::format("{:.3g} -> {:.3g}", from, to);
}

double Scaled(double v, double f, double cap) { return std::min(v * f, std::max(v, cap)); }

void SwingFabric(FabricSpec* fab, double f, double cap, std::string* applied) {
  const double was = fab->efficiency;
  fab->efficiency = Scaled(was, f, cap);
  for (FabricSpec::CollectiveFit& c : fab->collectives) c.efficiency = Scaled(c.efficiency, f, cap);
  *applied = fmt::format("{} efficiency {}", fab->id, Change(was, fab->efficiency));
}

}  // namespace

const std::vector<Swing>& DefaultSwings() { return kSwings; }

std::vector<Swing> GpuSwings(const std::string& gpu) {
  return {{SwingKind::kKernels, kGpuSwingDown, gpu}, {SwingKind::kKernels, kGpuSwingUp, gpu}};
}

// Each kind's name in the text, its key in --json, how to measure it, and which of a profile's
// measurements covers it, in SwingKind's order. `calibrate` times one node (tools/calibrate); a
// fabric between nodes is measured by nccl-tests across two of them, whose log `parasim fit`
// reads.
struct KindFacts {
  std::string_view name, key, measure;
  bool ClusterSpec::Measured::*measured;
};
constexpr std::array<KindFacts, kNumSwingKinds> kKinds = {{
    {"GEMMs", "gemm", "parasim calibrate --only gemm,sustained", &ClusterSpec::Measured::gemm},
    {"attention", "attention", "parasim calibrate --only attention",
     &ClusterSpec::Measured::attention},
    {"memory-bound kernels", "memory", "parasim calibrate --only memory",
     &ClusterSpec::Measured::memory},
    {"scale-up fabric", "intra", "parasim calibrate --only collectives",
     &ClusterSpec::Measured::intra},
    {"scale-out fabric", "inter", "nccl-tests across two nodes, then parasim fit on its log",
     &ClusterSpec::Measured::inter},
    {"per-kernel overheads", "host",
     "parasim calibrate --only host, or fit --runs --params host_op_time on measured steps",
     &ClusterSpec::Measured::host},
    {"kernels", "kernels", "parasim calibrate on that GPU, or fit --runs on its measured steps",
     &ClusterSpec::Measured::gemm},
}};

std::string_view SwingName(SwingKind k) { return kKinds[static_cast<size_t>(k)].name; }
std::string_view SwingKey(SwingKind k) { return kKinds[static_cast<size_t>(k)].key; }
SwingKind SwingKindOf(std::string_view key) {
  for (size_t k = 0; k < kKinds.size(); ++k) {
    if (kKinds[k].key == key) return static_cast<SwingKind>(k);
  }
  return SwingKind::kKernels;
}

std::string SwingLabel(const Swing& s) {
  return s.gpu.empty() ? std::string(SwingName(s.kind)) : s.gpu + " kernels";
}
std::string SwingText(const Swing& s) { return fmt::format("{} x{:.2f}", SwingLabel(s), s.factor); }
std::string_view SwingMeasure(SwingKind k) { return kKinds[static_cast<size_t>(k)].measure; }

ClusterSpec Swung(const ClusterSpec& cluster, const Swing& swing, std::string* applied) {
  ClusterSpec c = cluster;
  if (!swing.gpu.empty() && swing.gpu != cluster.gpu.id) return c;
  GpuSpec& g = c.gpu;
  // Attention the catalog leaves to the GEMM efficiency, made explicit at the unswung value.
  const CostModel unswung(cluster, Dtype::kBf16);
  for (bool fused : {true, false}) {
    AttentionEfficiency& a = fused ? g.attention_flash : g.attention_standard;
    if (a.forward <= 0) a.forward = unswung.AttentionEfficiency(false, fused);
    if (a.backward <= 0) a.backward = unswung.AttentionEfficiency(true, fused);
  }
  const bool measured = cluster.measured.*kKinds[static_cast<size_t>(swing.kind)].measured;
  const double f = !measured          ? swing.factor
                   : swing.factor < 1 ? 1 - kMeasuredSwing
                                      : 1 + kMeasuredSwing;
  std::string what;
  switch (swing.kind) {
    case SwingKind::kGemm: {
      const double was = g.gemm_efficiency;
      g.gemm_efficiency = Scaled(was, f, 1.0);
      if (g.gemm_efficiency_fp8 > 0) g.gemm_efficiency_fp8 = Scaled(g.gemm_efficiency_fp8, f, 1.0);
      for (GemmShapeFit& s : g.gemm_shapes) s.efficiency = Scaled(s.efficiency, f, 1.0);
      what = fmt::format("GEMM efficiency {}", Change(was, g.gemm_efficiency));
      break;
    }
    case SwingKind::kAttention: {
      const double was = g.attention_flash.forward;
      for (AttentionEfficiency* a :
           {&g.attention_flash, &g.attention_standard, &g.attention_flash2}) {
        if (a->forward <= 0) continue;  // FlashAttention 2 left to the fused figure: swung there
        a->forward = Scaled(a->forward, f, kAttentionCap);
        a->backward = Scaled(a->backward, f, kAttentionCap);
      }
      what = fmt::format("fused attention forward {}", Change(was, g.attention_flash.forward));
      break;
    }
    case SwingKind::kMemory: {
      const double was = g.memory_efficiency;
      g.memory_efficiency = Scaled(was, f, 1.0);
      g.elementwise_rates = g.elementwise_rates.Scaled(f);
      what = fmt::format("HBM efficiency {}", Change(was, g.memory_efficiency));
      break;
    }
    case SwingKind::kIntra:
      SwingFabric(&c.intra, f, kIntraCap, &what);
      break;
    case SwingKind::kInter:
      SwingFabric(&c.inter, f, 1.0, &what);
      break;
    case SwingKind::kHost: {
      const Duration was = g.host_op_time;
      g.host_op_time = g.host_op_time * f;
      g.launch_overhead = g.launch_overhead * f;
      what = fmt::format("host issue {:.3g} -> {:.3g} us a kernel", was.seconds() * 1e6,
                         g.host_op_time.seconds() * 1e6);
      break;
    }
    case SwingKind::kKernels: {
      const double was = g.sustained_factor;
      g.sustained_factor = was * f;
      what = fmt::format("sustained factor {}", Change(was, g.sustained_factor));
      break;
    }
  }
  if (measured) what += fmt::format(" (calibrated: x{:.2f})", f);
  if (applied != nullptr) *applied = std::move(what);
  return c;
}

std::vector<Swing> SwingsFor(const std::vector<const ClusterSpec*>& clusters,
                             const std::vector<Swing>& swings) {
  bool scale_out = false;
  std::vector<std::string> gpus;
  for (const ClusterSpec* c : clusters) {
    scale_out = scale_out || c->gpus() > c->domain();
    if (std::find(gpus.begin(), gpus.end(), c->gpu.id) == gpus.end()) gpus.push_back(c->gpu.id);
  }
  std::vector<Swing> out;
  for (const Swing& w : swings) {
    if (w.kind != SwingKind::kInter || scale_out) out.push_back(w);
  }
  if (gpus.size() > 1) {
    for (const std::string& g : gpus) {
      for (Swing& w : GpuSwings(g)) out.push_back(std::move(w));
    }
  }
  return out;
}

StatusOr<StepReport> SwungStep(const Scenario& s, const Swing& swing) {
  StepOptions so;
  so.critical_path = false;
  return SimulateStep(s.model, s.training, s.layout, Swung(s.cluster, swing), so);
}

StatusOr<Robustness> SweepRobustness(const Scenario& base, const SweepOutcome& outcome,
                                     const RobustnessOptions& options) {
  Robustness r;
  const Objective obj = base.sweep ? base.sweep->objective : Objective::kThroughput;
  const int top = base.sweep ? base.sweep->top : 10;
  const size_t first_n =
      std::min<size_t>(outcome.ranked.size(), static_cast<size_t>(std::max(1, top)));
  for (size_t i = 0; i < first_n; ++i) r.ranked.push_back(i);
  // A co-design sweep's answer is a cluster: each cluster's best layout is a leader too.
  std::vector<bool> has(base.sweep ? base.sweep->hardware.size() : 0, false);
  for (size_t i = 0; i < outcome.ranked.size(); ++i) {
    const size_t h = outcome.ranked[i].hardware;
    if (h >= has.size() || has[h]) continue;
    has[h] = true;
    if (i >= first_n) r.ranked.push_back(i);
  }
  if (obj == Objective::kMemory || r.ranked.size() < 2) {
    r.ranked.clear();
    return r;
  }
  r.leaders = r.ranked.size();
  r.top = first_n;
  std::vector<const ClusterSpec*> clusters;
  for (size_t i : r.ranked) clusters.push_back(&ClusterOf(base, outcome.ranked[i]));
  const std::vector<Swing> swings = SwingsFor(clusters, options.swings);
  const size_t n = r.leaders, k = swings.size();
  // Every (swing, leader) replay on the sweep's threads.
  std::vector<SweepEntry> swung(k * n);
  std::vector<size_t> items(k * n);
  for (size_t i = 0; i < items.size(); ++i) items[i] = i;
  PARASIM_RETURN_IF_ERROR(ParallelFor(items, options.jobs, [&](size_t i) -> Status {
    const SweepEntry& e = outcome.ranked[r.ranked[i % n]];
    PARASIM_ASSIGN_OR_RETURN(StepReport rep, SwungStep(WithLayout(base, e), swings[i / n]));
    SweepEntry s = EntryOf(e.layout, e.training, rep);
    s.fits = e.fits;  // rates alone move: memory is the unswung replay's
    s.hardware = e.hardware;
    s.cost_per_s = e.cost_per_s;
    FillGoodput(base, &s);
    swung[i] = std::move(s);
    return Status::Ok();
  }));
  for (size_t w = 0; w < k; ++w) {
    SwingOutcome o;
    o.swing = swings[w];
    // What it changes, on the first leader's cluster it moves.
    for (size_t i : r.ranked) {
      const ClusterSpec& c = ClusterOf(base, outcome.ranked[i]);
      if (o.swing.gpu.empty() || c.gpu.id == o.swing.gpu) {
        Swung(c, o.swing, &o.applied);
        break;
      }
    }
    std::vector<double> cost(n);
    for (size_t i = 0; i < n; ++i) {
      cost[i] = ObjectiveCost(base, swung[w * n + i]);
      o.step_s.push_back(swung[w * n + i].step_time_s);
    }
    o.first = static_cast<size_t>(std::min_element(cost.begin(), cost.end()) - cost.begin());
    o.behind = cost[0] / cost[o.first] - 1;
    o.holds = o.behind <= kRankTie;
    r.held += o.holds;
    r.swings.push_back(std::move(o));
  }
  return r;
}

}  // namespace parasim
