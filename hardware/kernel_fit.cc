#include "hardware/kernel_fit.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hardware/cost_model.h"
#include "sim/parse_units.h"

namespace parasim {
namespace {

// Attention cores, per kind and direction: compute-bound points fit the efficiency (vs the
// 16-bit peak) that CostModel::AttentionTime uses; memory-bound ones cannot tell it.
std::optional<double> AttentionDirection(FitContext* f, const char* kind, bool bwd,
                                         std::vector<std::string>* at_bound) {
  const ClusterSpec& c = f->cluster;
  std::vector<std::vector<double>> a;
  std::vector<double> y, t;
  const double peak = c.gpu.Peak(Dtype::kBf16).flops_per_second();
  CostModel cm(c, Dtype::kBf16);
  for (const auto& m : f->measurements) {
    for (const auto& at : m.attention) {
      if (at.kind != kind) continue;
      const Duration time = bwd ? at.backward : at.forward;
      if (time <= Duration::Zero()) continue;
      const double flops = at.ForwardFlops().flops() * (bwd ? 2 : 1);
      const double memory = cm.MemoryTime(at.HbmBytes(bwd)).seconds();
      const double kernel = time.seconds() - f->launch_s();
      const std::string name = fmt::format("{} {} b{} s{} d{}", kind, bwd ? "bwd" : "fwd", at.batch,
                                           at.seq, at.head_dim);
      if (kernel <= memory * 1.05) {
        f->result.skipped.push_back(name + ": memory-bound, it cannot tell the compute efficiency");
        continue;
      }
      a.push_back({flops / peak});
      y.push_back(kernel);
      t.push_back(time.seconds());
    }
  }
  if (a.empty()) return std::nullopt;
  const std::vector<double> x = SolveRelative(a, y, t);
  return Bounded(1.0 / x[0], 0.01, 1.0,
                 fmt::format("attention {} {} efficiency", kind, bwd ? "backward" : "forward"),
                 at_bound);
}

void AttentionCheck(FitContext* f, const char* kind, bool fitted_any,
                    const AttentionEfficiency& eff, std::vector<std::string> at_bound) {
  const bool fused = std::string(kind) == "flash";
  CostModel fitted(f->cluster, Dtype::kBf16);
  std::vector<double> pred, meas;
  std::vector<std::string> names;
  for (const auto& m : f->measurements) {
    for (const auto& at : m.attention) {
      if (at.kind != kind) continue;
      for (bool bwd : {false, true}) {
        const Duration time = bwd ? at.backward : at.forward;
        if (time <= Duration::Zero()) continue;
        pred.push_back(
            fitted.AttentionTime(at.ForwardFlops() * (bwd ? 2 : 1), at.HbmBytes(bwd), bwd, fused)
                .seconds());
        meas.push_back(time.seconds());
        names.push_back(fmt::format("{} b{} s{} d{} ({})", bwd ? "bwd" : "fwd", at.batch, at.seq,
                                    at.head_dim, at.where));
      }
    }
  }
  if (meas.empty()) return;
  FamilyFit q = Quality(fmt::format("attention {}", kind), meas, pred, names);
  q.fitted = fitted_any ? fmt::format("forward {:.4f}, backward {:.4f} of the 16-bit peak",
                                      eff.forward, eff.backward)
                        : "nothing fitted: every point is memory-bound (a check of the byte count)";
  q.written = fitted_any;
  q.at_bound = std::move(at_bound);
  f->result.families.push_back(q);
}

// The GEMM points of one precision class, for the fit: the rows a (FLOPs / (peak x shape)),
// y (kernel time) and t (measured time); the points used; and each shape's own efficiency into
// the profile. Points of no class, of no peak or within the launch overhead are skipped.
struct GemmRows {
  std::vector<std::vector<double>> a;
  std::vector<double> y, t;
  std::vector<const GemmPoint*> used;
  std::vector<std::string> at_bound;
  int memory_bound = 0;  // shapes kept exactly but left out of the curve's fit
};

GemmRows CollectGemms(FitContext* f, bool fp8, Dtype peak_dtype) {
  const ClusterSpec& c = f->cluster;
  FitResult& r = f->result;
  const double peak = c.gpu.Peak(peak_dtype).flops_per_second();
  CostModel base(c, Dtype::kBf16);
  GemmRows rows;
  for (const auto& m : f->measurements) {
    for (const auto& g : m.gemm) {
      const bool is_fp8 = g.dtype == Dtype::kFp8;
      const bool sixteen = g.dtype == Dtype::kBf16 || g.dtype == Dtype::kFp16;
      if (fp8 ? !is_fp8 : !sixteen) {
        if (!fp8 && !is_fp8) {
          r.skipped.push_back(fmt::format("gemm {} {}x{}x{}: only 16-bit and fp8 GEMMs are fitted",
                                          DtypeName(g.dtype), g.m, g.n, g.k));
        }
        continue;
      }
      if (peak <= 0) {
        r.skipped.push_back(fmt::format("gemm {} {}x{}x{}: {} has no {} peak in the catalog",
                                        DtypeName(g.dtype), g.m, g.n, g.k, c.gpu.id,
                                        DtypeName(peak_dtype)));
        continue;
      }
      const double flops = 2.0 * g.m * g.n * g.k;
      const double kernel = g.time.seconds() - f->launch_s();
      if (kernel <= 0) {
        r.skipped.push_back(fmt::format("gemm {}x{}x{}: {} is within the launch overhead", g.m, g.n,
                                        g.k, FormatDuration(g.time)));
        continue;
      }
      // A GEMM whose operands take longer to stream at the catalog's HBM rate than its FLOPs
      // take at the large-GEMM efficiency known now (the catalog's; for fp8, the fp8 one, which
      // may follow the 16-bit value just fitted) cannot tell the compute efficiency: a decode
      // step's few rows against a whole weight matrix. It is kept as a measured shape, which the
      // cost model uses exactly and between row counts, and left out of the curve.
      const double eff = fp8 ? c.gpu.Fp8GemmEfficiency() : c.gpu.gemm_efficiency;
      const double compute = flops / (peak * eff * c.gpu.sustained_factor);
      const Bytes operands(DtypeBytes(g.dtype) * static_cast<double>(g.m * g.k + g.k * g.n) +
                           2.0 * static_cast<double>(g.m * g.n));
      if (base.MemoryTime(operands).seconds() >= compute) {
        ++rows.memory_bound;
      } else {
        rows.a.push_back({flops / (peak * base.ShapeCurve(g.m, g.n, g.k))});
        rows.y.push_back(kernel);
        rows.t.push_back(g.time.seconds());
        rows.used.push_back(&g);
      }
      r.profile.gemm_shapes.push_back(
          {g.dtype, g.m, g.n, g.k,
           Bounded(flops / (peak * kernel), 0.001, 1.0,
                   fmt::format("the efficiency of {}x{}x{} ({})", g.m, g.n, g.k, g.where),
                   &rows.at_bound)});
    }
  }
  return rows;
}

}  // namespace

void FitLaunch(FitContext* f) {
  std::vector<double> launches;
  for (const auto& m : f->measurements) {
    if (m.launch > Duration::Zero()) launches.push_back(m.launch.seconds());
  }
  if (launches.empty()) return;
  std::sort(launches.begin(), launches.end());
  f->result.profile.launch_overhead = Duration::Seconds(launches[launches.size() / 2]);
  f->cluster.gpu.launch_overhead = *f->result.profile.launch_overhead;
}

// One scalar per precision class (16-bit, fp8) for the shape curve, and every measured shape's
// own efficiency, which the cost model uses for exactly that shape (calibrate --scenario
// measures the step's own).
void FitGemms(FitContext* f, bool fp8) {
  const Dtype peak_dtype = fp8 ? Dtype::kFp8 : Dtype::kBf16;
  GemmRows rows = CollectGemms(f, fp8, peak_dtype);
  if (rows.a.empty()) {
    if (rows.memory_bound > 0) {
      f->result.skipped.push_back(fmt::format(
          "gemm{}: all {} shapes are bound by their operands' traffic: kept exactly, no "
          "efficiency fitted",
          fp8 ? " fp8" : "", rows.memory_bound));
    }
    // Kept shapes whose efficiency was clamped are said even without a family to say them.
    for (std::string& b : rows.at_bound) f->result.skipped.push_back(std::move(b));
    return;
  }
  const std::vector<double> x = SolveRelative(rows.a, rows.y, rows.t);
  const double e = Bounded(1.0 / x[0], 0.01, 1.0, fp8 ? "gemm_efficiency_fp8" : "gemm_efficiency",
                           &rows.at_bound);
  CalibrationProfile& p = f->result.profile;
  ClusterSpec& c = f->cluster;
  ClusterSpec curve = c;
  if (fp8) {
    p.gemm_efficiency_fp8 = e;
    c.gpu.gemm_efficiency_fp8 = e;
    curve.gpu.gemm_efficiency_fp8 = e;
  } else {
    p.gemm_efficiency = e;
    c.gpu.gemm_efficiency = e;
    curve.gpu.gemm_efficiency = e;
  }
  CostModel fitted(curve, peak_dtype);
  std::vector<double> pred, meas;
  std::vector<std::string> names;
  for (const GemmPoint* g : rows.used) {
    pred.push_back(fitted.GemmTime(g->m, g->n, g->k).seconds());
    meas.push_back(g->time.seconds());
    names.push_back(fmt::format("{}x{}x{} ({})", g->m, g->n, g->k, g->where));
  }
  FamilyFit q = Quality(fp8 ? "gemm fp8 (shape curve)" : "gemm (shape curve)", meas, pred, names);
  q.fitted = fmt::format("{} {:.4f}; {} shapes kept exactly",
                         fp8 ? "gemm_efficiency_fp8" : "gemm_efficiency", e,
                         rows.used.size() + static_cast<size_t>(rows.memory_bound));
  if (rows.memory_bound > 0) {
    q.fitted += fmt::format(" ({} of them bound by their operands' traffic: not in the curve)",
                            rows.memory_bound);
  }
  q.at_bound = std::move(rows.at_bound);
  f->result.families.push_back(q);
}

// The quality is reported per kernel too (element-wise, softmax and layernorm are what a step
// runs; copy and triad the best case).
void FitMemory(FitContext* f) {
  ClusterSpec& c = f->cluster;
  CalibrationProfile& p = f->result.profile;
  std::vector<std::vector<double>> a;
  std::vector<double> y, t;
  std::vector<const MemoryPoint*> used;
  for (const auto& m : f->measurements) {
    for (const auto& k : m.memory) {
      a.push_back({k.bytes.bytes() / c.gpu.hbm_bandwidth.bytes_per_second()});
      y.push_back(k.time.seconds() - f->launch_s());
      t.push_back(k.time.seconds());
      used.push_back(&k);
    }
  }
  if (a.empty()) return;
  const std::vector<double> x = SolveRelative(a, y, t);
  std::vector<std::string> at_bound;
  p.memory_efficiency = Bounded(1.0 / x[0], 0.01, 1.0, "memory_efficiency", &at_bound);
  c.gpu.memory_efficiency = *p.memory_efficiency;
  CostModel fitted(c, Dtype::kBf16);
  struct Points {
    std::vector<double> pred, meas;
    std::vector<std::string> names;
    double bytes = 0, kernel_seconds = 0;  // for the kernel's own efficiency
  };
  Points all;
  std::map<std::string, Points> by_kernel;
  for (const MemoryPoint* k : used) {
    const double pr = (fitted.MemoryTime(k->bytes) + fitted.Launch()).seconds();
    const std::string name = fmt::format("{} {} ({})", k->kernel, FormatBytes(k->bytes), k->where);
    for (Points* pts : {&all, &by_kernel[k->kernel]}) {
      pts->pred.push_back(pr);
      pts->meas.push_back(k->time.seconds());
      pts->names.push_back(name);
      pts->bytes += k->bytes.bytes();
      pts->kernel_seconds += k->time.seconds() - f->launch_s();
    }
  }
  FamilyFit q = Quality("memory", all.meas, all.pred, all.names);
  q.fitted = fmt::format("memory_efficiency {:.4f}", *p.memory_efficiency);
  q.at_bound = std::move(at_bound);
  f->result.families.push_back(q);
  if (by_kernel.size() > 1) {
    for (const auto& [kernel, pts] : by_kernel) {
      FamilyFit fk = Quality("  memory " + kernel, pts.meas, pts.pred, pts.names);
      fk.fitted = fmt::format("alone it would be {:.4f}",
                              pts.kernel_seconds > 0 ? pts.bytes / pts.kernel_seconds /
                                                           c.gpu.hbm_bandwidth.bytes_per_second()
                                                     : 0.0);
      fk.written = false;
      f->result.families.push_back(fk);
    }
  }
}

void FitAttention(FitContext* f, bool fused) {
  const char* kind = fused ? "flash" : "standard";
  AttentionEfficiency eff;
  bool any = false;
  std::vector<std::string> at_bound;
  for (bool bwd : {false, true}) {
    if (auto e = AttentionDirection(f, kind, bwd, &at_bound)) {
      (bwd ? eff.backward : eff.forward) = *e;
      any = true;
    }
  }
  // A direction without compute-bound points keeps the derived value; a kind with none at all
  // is still checked against the model (materialised attention is memory-bound at head_dim
  // 128 on an H100: 8 bytes of scores per 4 d FLOPs).
  if (any) {
    ClusterSpec& c = f->cluster;
    CostModel derived(c, Dtype::kBf16);
    if (eff.forward <= 0) eff.forward = derived.AttentionEfficiency(false, fused);
    if (eff.backward <= 0) eff.backward = derived.AttentionEfficiency(true, fused);
    (fused ? f->result.profile.attention_flash : f->result.profile.attention_standard) = eff;
    (fused ? c.gpu.attention_flash : c.gpu.attention_standard) = eff;
  }
  AttentionCheck(f, kind, any, eff, std::move(at_bound));
}

}  // namespace parasim
