#include "strategies/scale.h"

#include <fmt/core.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "models/model_spec.h"
#include "strategies/goodput.h"
#include "strategies/layout_format.h"
#include "strategies/memory.h"

namespace parasim {

double AmdahlSpeedup(double p, double n) { return 1.0 / ((1.0 - p) + p / n); }

double FitAmdahl(const std::vector<double>& n, const std::vector<double>& s) {
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
  return std::clamp(p(0), 0.0, 1.0);
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
    pt.goodput_efficiency = pt.efficiency * pt.goodput / first->goodput;
    pt.karp_flatt = KarpFlatt(pt.speedup, r);
    rel.push_back(r);
    speedup.push_back(pt.speedup);
  }
  out->parallel_fraction = rel.size() >= 2 ? FitAmdahl(rel, speedup) : 1.0;
}

}  // namespace

StatusOr<ScaleOutcome> RunScale(const Scenario& base, const std::vector<int64_t>& gpus, bool weak,
                                const SweepOptions& options) {
  ScaleOutcome out;
  out.weak = weak;
  const SweepSpec spec = ScaleSweep(base);
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

bool Fits(const Scenario& s, const Layout& l, double* peak = nullptr) {
  Training t = s.training;
  // Memory is judged per micro-batch in flight; the global batch only sets how many.
  t.global_batch = std::max<int64_t>(t.micro_batch * l.dp * l.pp, t.micro_batch * l.dp);
  MemoryReport m = EstimateMemory(s.model, t, l, s.cluster);
  if (peak) {
    *peak = 0;
    for (const auto& st : m.stages) *peak = std::max(*peak, st.total());
  }
  return m.fits;
}

// One sentence: whether to distribute at all, and why.
std::string Verdict(const Scenario& s, const Advice& a, double params, double best_days) {
  const bool small = params < 7e9 || s.training.finetune != FinetuneKind::kNone;
  const double gib = Bytes::GiB(1).bytes();
  if (a.fits_one_gpu && small) {
    return fmt::format(
        "Fits on one GPU ({:.1f} of {:.0f} GiB): don't distribute the model. {} Use plain data "
        "parallelism (DDP) only to finish sooner{}.",
        a.one_gpu_peak_bytes / gib, s.cluster.gpu.memory.bytes() / gib,
        s.training.finetune != FinetuneKind::kNone ? "Fine-tuning with LoRA/QLoRA needs no model "
                                                     "parallelism."
                                                   : "A model this size needs no TP or PP.",
        a.one_gpu_days > 0 ? fmt::format(" (one GPU: {:.1f} days)", a.one_gpu_days) : "");
  }
  if (a.fits_one_gpu) {
    return fmt::format(
        "Fits on one GPU ({:.1f} of {:.0f} GiB), but {}; distribute with data parallelism "
        "first.",
        a.one_gpu_peak_bytes / gib, s.cluster.gpu.memory.bytes() / gib,
        a.one_gpu_days > 0
            ? fmt::format("training would take {:.0f} days on it{}", a.one_gpu_days,
                          best_days > 0 ? fmt::format(" vs {:.1f} on the cluster", best_days) : "")
            : "one GPU is slow for a model this size");
  }
  const StateBytes rule = StateBytesPerParam(s.training);
  return fmt::format(
      "Does not fit on one GPU: {:.1f} GiB needed of {:.0f} GiB (model states {:.0f} bytes per "
      "parameter x {:.2f}B parameters, plus activations). Shard it: see the minimum GPUs per "
      "strategy below.",
      a.one_gpu_peak_bytes / gib, s.cluster.gpu.memory.bytes() / gib,
      rule.weights + rule.grads + rule.optimizer, params / 1e9);
}

// The fewest GPUs that hold the model under each strategy (powers of two, up to 64K GPUs).
std::vector<StrategyMinimum> Minimums(const Scenario& s) {
  std::vector<StrategyMinimum> out;
  const int gpn = s.cluster.gpus_per_node;
  auto search = [&](const char* name, auto make) {
    StrategyMinimum m{name, 0, ""};
    for (int64_t n = 1; n <= 65536; n *= 2) {
      Layout l;
      if (!make(n, &l)) continue;
      if (Fits(s, l)) {
        m.gpus = n;
        m.layout = FormatLayout(l, s.training, LayoutStyle::kShort);
        break;
      }
    }
    out.push_back(m);
  };
  const int layers = s.model.layers;
  search("DP", [&](int64_t n, Layout* l) {
    l->dp = n;
    return n == 1;  // plain DP replicates everything: more GPUs do not help memory
  });
  search("ZeRO-3", [&](int64_t n, Layout* l) {
    l->dp = n;
    l->zero = 3;
    return true;
  });
  search("TP", [&](int64_t n, Layout* l) {
    l->tp = static_cast<int>(n);
    l->sp = n > 1;
    return n <= gpn && s.model.heads % n == 0;
  });
  search("PP", [&](int64_t n, Layout* l) {
    l->pp = static_cast<int>(n);
    return n <= layers;
  });
  search("TP x PP", [&](int64_t n, Layout* l) {
    l->tp = static_cast<int>(std::min<int64_t>(n, gpn));
    l->sp = l->tp > 1;
    l->pp = static_cast<int>(n / l->tp);
    return s.model.heads % l->tp == 0 && l->pp <= layers;
  });
  search("TP x PP + ZeRO-1", [&](int64_t n, Layout* l) {
    // Optimizer states sharded over 8 data-parallel replicas.
    if (n < 8) return false;
    l->dp = 8;
    l->zero = 1;
    l->tp = static_cast<int>(std::min<int64_t>(n / 8, gpn));
    l->sp = l->tp > 1;
    l->pp = static_cast<int>(n / 8 / l->tp);
    return s.model.heads % l->tp == 0 && l->pp <= layers;
  });
  return out;
}

}  // namespace

Advice Advise(const Scenario& s, double best_days) {
  Advice a;
  Layout one;
  one.zero = 0;
  a.fits_one_gpu = Fits(s, one, &a.one_gpu_peak_bytes);
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
