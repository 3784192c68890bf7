#include "strategies/scale.h"

#include <fmt/core.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "models/model_spec.h"
#include "sim/parse_units.h"
#include "strategies/goodput.h"
#include "strategies/layout_format.h"
#include "strategies/memory.h"

namespace parasim {

double AmdahlSpeedup(double p, double n) { return 1.0 / ((1.0 - p) + p / n); }

double FitAmdahl(const std::vector<double>& n, const std::vector<double>& s) {
  return std::clamp(FitAmdahlRaw(n, s), 0.0, 1.0);
}

double FitAmdahlRaw(const std::vector<double>& n, const std::vector<double>& s) {
  // 1/S = (1 - p) + p/n, i.e. (1/S - 1) = p (1/n - 1): one unknown, solved by least squares.
  const Eigen::Index k = static_cast<Eigen::Index>(std::min(n.size(), s.size()));
  Eigen::MatrixXd a(k, 1);
  Eigen::VectorXd b(k);
  for (Eigen::Index i = 0; i < k; ++i) {
    a(i, 0) = 1.0 / n[i] - 1.0;
    b(i) = 1.0 / s[i] - 1.0;
  }
  if (a.norm() == 0) return 1.0;
  Eigen::VectorXd p = a.colPivHouseholderQr().solve(b);
  return p(0);
}

double KarpFlatt(double s, double n) {
  if (n <= 1 || s <= 0) return 0;
  return (1.0 / s - 1.0 / n) / (1.0 - 1.0 / n);
}

StatusOr<ClusterSpec> Resize(const ClusterSpec& c, int64_t gpus) {
  ClusterSpec out = c;
  if (gpus <= 0) return InvalidArgument(fmt::format("--gpus: {} is not a GPU count", gpus));
  if (gpus < c.gpus_per_node) {
    out.nodes = 1;
    out.gpus_per_node = static_cast<int>(gpus);
    out.nics_per_node = 0;
  } else if (gpus % c.gpus_per_node == 0) {
    out.nodes = gpus / c.gpus_per_node;
    // A one-node scenario names no scale-out fabric: more nodes would talk over nothing (a
    // zero-bandwidth link, a saturated step time) instead of being refused.
    // (The loader's stand-in for a fabric not named is "none" at 1 B/s:
    // scenarios/cluster_block.cc.)
    if (out.nodes > 1 && (c.inter.id == "none" || c.inter.bandwidth.bytes_per_second() <= 1)) {
      return InvalidArgument(fmt::format(
          "--gpus: {} GPUs span {} nodes, but the scenario's cluster names no inter_node fabric "
          "to join them; add cluster.inter_node (a catalog fabric such as ib-ndr-400g) or stay "
          "within {} GPUs",
          gpus, out.nodes, c.gpus_per_node));
    }
  } else {
    return InvalidArgument(
        fmt::format("--gpus: {} GPUs is not a whole number of {}-GPU nodes; use a multiple of {}",
                    gpus, c.gpus_per_node, c.gpus_per_node));
  }
  return out;
}

namespace {

// The sweep a scaling study runs at every size: the scenario's sweep block, or TP, PP and DP
// (and EP for a MoE model) over every value with a few micro-batch, ZeRO and recompute
// choices; without a global batch axis (the study's constant, or scaled with the GPUs) and
// ranking one layout.
SweepSpec ScaleSweep(const Scenario& base) {
  SweepSpec spec;
  if (base.sweep) {
    spec = *base.sweep;
  } else {
    auto axis = [](std::vector<std::string> v) {
      SweepAxis a;
      a.values = std::move(v);
      return a;
    };
    SweepAxis auto_axis;
    auto_axis.is_auto = true;
    spec.axes = {{"tp", auto_axis},
                 {"pp", auto_axis},
                 {"dp", auto_axis},
                 {"micro_batch", axis({"1", "2"})},
                 {"zero", axis({"0", "1", "3"})},
                 {"recompute", auto_axis},
                 {"sp", axis({"true"})}};
    if (base.model.is_moe()) spec.axes.push_back({"ep", auto_axis});
  }
  // The global batch is the study's constant (strong) or scales with the GPUs (weak). A sweep
  // block's {max: N} is kept (per layout the largest multiple of dp x micro-batch up to N), since
  // GPU counts with odd factors admit no fixed batch.
  std::erase_if(spec.axes, [](const auto& a) { return a.first == "global_batch"; });
  spec.top = 1;
  return spec;
}

// Each point found against the first found: speedup, efficiency (with and without goodput) and
// the Karp-Flatt serial fraction; the Amdahl fit over them.
void CompareToFirst(ScaleOutcome* out) {
  std::vector<double> rel, speedup;
  const ScalePoint* first = nullptr;
  for (ScalePoint& pt : out->points) {
    if (!pt.found) continue;
    if (!first) first = &pt;
    const double r = static_cast<double>(pt.gpus) / static_cast<double>(first->gpus);
    pt.speedup = pt.report.tokens_per_s / first->report.tokens_per_s;
    pt.efficiency = pt.speedup / r;
    pt.goodput_efficiency = first->goodput > 0 ? pt.efficiency * pt.goodput / first->goodput : 0;
    // Karp-Flatt's serial fraction comes from Amdahl's law, about a fixed problem: none under
    // weak scaling (NaN; told as none).
    pt.karp_flatt = out->weak ? std::numeric_limits<double>::quiet_NaN() : KarpFlatt(pt.speedup, r);
    rel.push_back(r);
    speedup.push_back(pt.speedup);
  }
  // Amdahl's law is about a fixed problem on more workers (strong scaling), and one point
  // determines nothing.
  if (out->weak) {
    out->amdahl_skipped =
        "weak scaling grows the problem with the GPUs, and Amdahl's law is about a fixed one "
        "(strong scaling): read the efficiency column instead";
  } else if (rel.size() < 2) {
    out->amdahl_skipped = fmt::format(
        "it needs at least two GPU counts with a layout that fits; {} found", rel.size());
  } else {
    out->raw_parallel_fraction = FitAmdahlRaw(rel, speedup);
    out->parallel_fraction = std::clamp(out->raw_parallel_fraction, 0.0, 1.0);
    if (out->raw_parallel_fraction > 1) {
      out->amdahl_note = fmt::format(
          "the least-squares p is {:.4f}, above 1: the points scale superlinearly (a better layout "
          "or more memory a GPU at the larger sizes), which Amdahl's law does not describe; kept "
          "at 1",
          out->raw_parallel_fraction);
    } else if (out->raw_parallel_fraction < 0) {
      out->amdahl_note = fmt::format(
          "the least-squares p is {:.4f}, below 0: the step gets slower with more GPUs, which "
          "Amdahl's law does not describe; kept at 0",
          out->raw_parallel_fraction);
    }
  }
}

}  // namespace

StatusOr<ScaleOutcome> RunScale(const Scenario& base, const std::vector<int64_t>& gpus, bool weak,
                                const SweepOptions& options) {
  ScaleOutcome out;
  out.weak = weak;
  SweepSpec spec = ScaleSweep(base);
  // One cluster, resized; ranked by throughput (speedup and efficiency are throughput's).
  if (!spec.hardware.empty()) {
    spec.hardware.clear();
    out.notes.push_back(
        "the sweep block's cluster and model keys (a co-design sweep) are not taken: scale "
        "resizes the scenario's own cluster; `sweep` compares clusters");
  }
  if (spec.objective != Objective::kThroughput) {
    spec.objective = Objective::kThroughput;
    out.notes.push_back(
        "the sweep block's objective is not taken: scale ranks each size's layouts by "
        "throughput, as its speedup and efficiency count");
  }
  const int64_t gb_max = spec.global_batch_max;
  const double per_gpu =
      static_cast<double>(base.training.global_batch) / static_cast<double>(base.cluster.gpus());
  for (int64_t n : gpus) {
    ScalePoint pt;
    pt.gpus = n;
    Scenario s = base;
    PARASIM_ASSIGN_OR_RETURN(s.cluster, Resize(base.cluster, n));
    s.sweep = spec;
    s.dp_auto = true;
    const double grow = static_cast<double>(n) / static_cast<double>(base.cluster.gpus());
    if (weak) {
      s.training.global_batch = std::max<int64_t>(
          1, static_cast<int64_t>(std::llround(per_gpu * static_cast<double>(n))));
      if (gb_max > 0) {
        s.sweep->global_batch_max =
            std::max<int64_t>(1, static_cast<int64_t>(std::llround(gb_max * grow)));
      }
    }
    SweepOptions o = options;
    o.out_csv.clear();
    o.resume = false;
    PARASIM_ASSIGN_OR_RETURN(SweepOutcome r, RunSweep(s, o));
    if (r.ranked.empty()) {
      pt.reason = r.valid_layouts == 0 ? "no valid layout (the global batch does not divide)"
                                       : "no layout fits in memory";
    } else {
      pt.found = true;
      pt.best = r.ranked[0];
      pt.report = r.top_reports[0];
      Scenario at = s;
      at.layout = pt.best.layout;
      at.training = pt.best.training;
      pt.goodput = GoodputFactor(at, pt.report.step_time_s);
    }
    out.points.push_back(std::move(pt));
  }
  CompareToFirst(&out);
  return out;
}

namespace {

bool Fits(const Scenario& s, const Layout& l, double* peak = nullptr, double* capacity = nullptr) {
  Training t = s.training;
  // Memory is judged per micro-batch in flight; the global batch only sets how many.
  t.global_batch = std::max<int64_t>(t.micro_batch * l.dp * l.pp, t.micro_batch * l.dp);
  MemoryReport m = EstimateMemory(s.model, t, l, s.cluster);
  if (peak) {
    *peak = 0;
    for (const auto& st : m.stages) *peak = std::max(*peak, st.total());
  }
  if (capacity) *capacity = m.capacity_bytes;
  return m.fits;
}

// One sentence: whether to distribute at all, and why.
std::string Verdict(const Scenario& s, const Advice& a, double params, double best_days) {
  const bool small = params < 7e9 || s.training.finetune != FinetuneKind::kNone;
  const double gib = Bytes::GiB(1).bytes();
  if (a.fits_one_gpu && small) {
    return fmt::format(
        "Fits on one GPU ({:.1f} of {:.1f} GiB): don't distribute the model. {} Use plain data "
        "parallelism (DDP) only to finish sooner{}.",
        a.one_gpu_peak_bytes / gib, a.one_gpu_capacity_bytes / gib,
        s.training.finetune != FinetuneKind::kNone ? "Fine-tuning with LoRA/QLoRA needs no model "
                                                     "parallelism."
                                                   : "A model this size needs no TP or PP.",
        a.one_gpu_days > 0 ? fmt::format(" (one GPU: {:.1f} days)", a.one_gpu_days) : "");
  }
  if (a.fits_one_gpu) {
    return fmt::format(
        "Fits on one GPU ({:.1f} of {:.1f} GiB), but {}; distribute with data parallelism "
        "first.",
        a.one_gpu_peak_bytes / gib, a.one_gpu_capacity_bytes / gib,
        a.one_gpu_days > 0
            ? fmt::format("training would take {:.0f} days on it{}", a.one_gpu_days,
                          best_days > 0 ? fmt::format(" vs {:.1f} on the cluster", best_days) : "")
            : "one GPU is slow for a model this size");
  }
  const StateBytes rule = StateBytesPerParam(s.training);
  return fmt::format(
      "Does not fit on one GPU: {:.1f} GiB needed of {:.1f} GiB (model states {:.0f} bytes per "
      "parameter x {:.2f}B parameters, plus activations). Shard it: see the minimum GPUs per "
      "strategy below.",
      a.one_gpu_peak_bytes / gib, a.one_gpu_capacity_bytes / gib,
      rule.weights + rule.grads + rule.optimizer, params / 1e9);
}

// The fewest GPUs that hold the model under one strategy: for each GPU count (powers of two up
// to kMaxAdviceGpus), the strategy's candidate layouts in order, the first that fits, with the
// scenario's recompute or else with full recompute (the least activation memory: the strong-
// scaling table above sweeps it too, and a strategy said to fit nowhere at selective recompute,
// ZeRO-3 for Llama 3 70B at 8K tokens, fits 16 GPUs with it). When none fits, why: the largest
// layout tried, what it still needs per GPU, and the strategy's limit.
constexpr int64_t kMaxAdviceGpus = 65536;
using Candidates = std::function<std::vector<Layout>(int64_t gpus)>;

StrategyMinimum Search(const Scenario& s, const char* name, const std::string& limit,
                       const Candidates& candidates) {
  StrategyMinimum m{name, 0, "", ""};
  std::vector<Scenario> tries = {s};
  if (s.training.recompute != RecomputeKind::kFull || s.training.recompute_layers >= 0) {
    tries.push_back(s);
    tries.back().training.recompute = RecomputeKind::kFull;
    tries.back().training.recompute_layers = -1;
  }
  Layout largest;
  double largest_peak = -1;
  for (int64_t n = 1; n <= kMaxAdviceGpus; n *= 2) {
    for (const Layout& l : candidates(n)) {
      for (const Scenario& t : tries) {
        double peak = 0;
        if (Fits(t, l, &peak)) {
          m.gpus = n;
          m.layout = FormatLayout(l, t.training, LayoutStyle::kShort);
          return m;
        }
        largest = l;
        largest_peak = peak;
      }
    }
  }
  m.why_none =
      largest_peak < 0
          ? limit
          : fmt::format("{} still needs {} of {} per GPU; {}",
                        FormatLayout(largest, tries.back().training, LayoutStyle::kShort),
                        FormatBytes(Bytes(largest_peak)), FormatBytes(s.cluster.gpu.memory), limit);
  return m;
}

std::vector<StrategyMinimum> Minimums(const Scenario& s) {
  const int gpn = s.cluster.gpus_per_node;
  const int layers = s.model.layers;
  auto one = [](bool ok, Layout l) { return ok ? std::vector<Layout>{l} : std::vector<Layout>{}; };
  // TP within a node and dividing the heads, SP with it; PP the rest, up to a layer a stage.
  auto tp_pp = [&](int64_t n, int64_t dp, int zero) {
    Layout l;
    l.dp = dp;
    l.zero = zero;
    l.tp = static_cast<int>(std::min<int64_t>(n / dp, gpn));
    l.sp = l.tp > 1;
    l.pp = static_cast<int>(n / dp / l.tp);
    return one(s.model.TpSplits(l.tp) && l.pp <= layers, l);
  };
  std::vector<StrategyMinimum> out;
  out.push_back(Search(s, "DP", "plain DP replicates the whole model on every GPU", [&](int64_t n) {
    Layout l;
    return one(n == 1, l);  // more GPUs do not help memory
  }));
  out.push_back(Search(s, "ZeRO-3", fmt::format("ZeRO-3 was tried up to {} GPUs", kMaxAdviceGpus),
                       [&](int64_t n) {
                         Layout l;
                         l.dp = n;
                         l.zero = 3;
                         return one(true, l);
                       }));
  out.push_back(Search(
      s, "TP",
      fmt::format("TP stays within a node ({} GPUs) and divides the {} heads{}", gpn, s.model.heads,
                  s.model.has_mamba() ? " and the Mamba heads and groups" : ""),
      [&](int64_t n) {
        Layout l;
        l.tp = static_cast<int>(n);
        l.sp = n > 1;
        return one(n <= gpn && s.model.TpSplits(static_cast<int>(n)), l);
      }));
  out.push_back(Search(s, "PP", fmt::format("PP has at most one stage per layer ({})", layers),
                       [&](int64_t n) {
                         Layout l;
                         l.pp = static_cast<int>(n);
                         return one(n <= layers, l);
                       }));
  const std::string both_limit = fmt::format(
      "TP stays within a node ({} GPUs), PP has at most one stage per layer ({})", gpn, layers);
  out.push_back(Search(s, "TP x PP", both_limit, [&](int64_t n) { return tp_pp(n, 1, 0); }));
  // ZeRO-1 shards the optimizer states over the data-parallel replicas: every DP from 2 up,
  // the least DP (the most model parallelism) first.
  out.push_back(Search(s, "TP x PP + ZeRO-1", both_limit, [&](int64_t n) {
    std::vector<Layout> v;
    for (int64_t dp = 2; dp <= n; dp *= 2) {
      for (const Layout& l : tp_pp(n, dp, 1)) v.push_back(l);
    }
    return v;
  }));
  return out;
}

}  // namespace

Advice Advise(const Scenario& s, double best_days) {
  Advice a;
  Layout one;
  one.zero = 0;
  a.fits_one_gpu = Fits(s, one, &a.one_gpu_peak_bytes, &a.one_gpu_capacity_bytes);
  const double params = CountParams(s.model, s.training.seq_len).total;
  if (a.fits_one_gpu) {
    Scenario single = s;
    single.cluster = *Resize(s.cluster, 1);
    auto r = SimulateStep(s.model, s.training, one, single.cluster, {});
    if (r.ok()) {
      a.one_gpu_step_s = r->step_time_s;
      if (s.training.tokens > 0) a.one_gpu_days = s.training.tokens / r->tokens_per_s / 86400;
    }
  }
  a.verdict = Verdict(s, a, params, best_days);
  a.minimums = Minimums(s);
  return a;
}

}  // namespace parasim
