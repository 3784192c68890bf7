#include "hardware/fit.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "hardware/cost_model.h"
#include "sim/parse_units.h"

namespace parasim {
namespace {

// Least squares of y = A x on relative errors: each row divided by the measured time.
Eigen::VectorXd Solve(const std::vector<std::vector<double>>& a, const std::vector<double>& y,
                      const std::vector<double>& t) {
  const Eigen::Index n = static_cast<Eigen::Index>(y.size());
  const Eigen::Index k = static_cast<Eigen::Index>(a.empty() ? 0 : a[0].size());
  Eigen::MatrixXd m(n, k);
  Eigen::VectorXd b(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index j = 0; j < k; ++j) m(i, j) = a[i][j] / t[i];
    b(i) = y[i] / t[i];
  }
  return m.colPivHouseholderQr().solve(b);
}

FamilyFit Quality(std::string family, const std::vector<double>& measured,
                  const std::vector<double>& predicted, const std::vector<std::string>& names) {
  FamilyFit f;
  f.family = std::move(family);
  f.points = static_cast<int>(measured.size());
  if (measured.empty()) return f;
  double mean = 0;
  for (double x : measured) mean += x;
  mean /= static_cast<double>(measured.size());
  double ss_res = 0, ss_tot = 0, sum_abs = 0;
  for (size_t i = 0; i < measured.size(); ++i) {
    ss_res += (measured[i] - predicted[i]) * (measured[i] - predicted[i]);
    ss_tot += (measured[i] - mean) * (measured[i] - mean);
    const double e = predicted[i] / measured[i] - 1;
    sum_abs += std::abs(e);
    if (std::abs(e) >= std::abs(f.worst_error)) {
      f.worst_error = e;
      f.worst = names[i];
    }
  }
  f.r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : 1.0;
  f.mape = sum_abs / static_cast<double>(measured.size());
  return f;
}

double Steps(Collective c, int64_t n) {
  switch (c) {
    case Collective::kAllReduce:
      return 2.0 * static_cast<double>(n - 1);
    case Collective::kSendRecv:
      return 1.0;
    default:
      return static_cast<double>(n - 1);
  }
}

std::string Describe(const CollectivePoint& p) {
  return fmt::format("{} {} ranks ({} per node) {}", CollectiveName(p.op), p.ranks, p.per_node,
                     FormatBytes(p.bytes));
}

int64_t PerNode(const CollectivePoint& k) { return std::clamp<int64_t>(k.per_node, 1, k.ranks); }

// The cost model's time for point k is known + alpha x steps + x / efficiency (hardware/
// cost_model.cc, for the algorithm `algo`); alpha and 1/efficiency enter linearly.
struct Feature {
  double steps = 0, x = 0, known = 0;
};

Feature CollectiveFeature(const ClusterSpec& c, const CollectivePoint& k, bool inter, Algo algo) {
  const double D = k.bytes.bytes();
  const int64_t n = k.ranks;
  Feature f;
  f.steps = Steps(k.op, n);
  if (!inter) {
    const double bus = k.op == Collective::kSendRecv ? D : BusFactor(k.op, n) * D;
    f.x = bus / c.intra.bandwidth.bytes_per_second();
    return f;
  }
  // What CostModel::IntraBandwidth() gives, without building a cost model for every point.
  const double nvl = c.intra.bandwidth.bytes_per_second() * c.intra.efficiency;
  const double nic_nominal =
      c.inter.bandwidth.bytes_per_second() * c.nics() / std::max(1, c.gpus_per_node);
  const int64_t per_node = PerNode(k);
  const int64_t nodes = (n + per_node - 1) / per_node;
  if (k.op == Collective::kSendRecv) {
    f.x = D / nic_nominal;
  } else if (k.op == Collective::kAllToAll) {
    f.steps = static_cast<double>(nodes - 1);
    f.x = D * static_cast<double>(n - per_node) / n / nic_nominal;
    f.known = c.intra.latency.seconds();
  } else if (algo == Algo::kHierarchical) {
    const double gg = static_cast<double>(per_node), N = static_cast<double>(nodes);
    f.known = 2 * (gg - 1) / gg * D / nvl + c.intra.latency.seconds() * 2 * (gg - 1);
    f.steps = 2 * (N - 1);
    f.x = 2 * (N - 1) / N * D / gg / nic_nominal;
  } else {
    const double depth = std::ceil(std::log2(static_cast<double>(n)));
    if (algo == Algo::kTree) {
      f.steps = 2 * depth;
    } else if (algo == Algo::kPat) {
      f.steps = depth;
    } else {
      // A ring crosses the network (nodes - 1) times per pass; its other steps are NVLink's.
      f.steps = Steps(k.op, nodes);
      f.known = c.intra.latency.seconds() * (Steps(k.op, n) - f.steps);
    }
    // A flat ring (and a tree or PAT) runs at the slower of NVLink and the node's NICs in use.
    const double bus = BusFactor(k.op, n) * D;
    const double nic_now = nic_nominal * c.inter.efficiency * static_cast<double>(per_node);
    if (nvl < nic_now) {
      f.known += bus / nvl;
    } else {
      f.x = bus / (nic_nominal * static_cast<double>(per_node));
    }
  }
  return f;
}

// Fits alpha and efficiency of the intra (inter = false) or inter fabric of `c` to `pts`, in
// place. With `algo` set, every point is priced with that algorithm (a per-case fit); else with
// the one the cost model picks, re-picked after each pass. Efficiency stays as it was when no
// point's time depends on it.
void FitAlphaBeta(ClusterSpec* c, bool inter, const std::vector<const CollectivePoint*>& pts,
                  std::optional<Algo> algo) {
  FabricSpec& fab = inter ? c->inter : c->intra;
  for (int pass = 0; pass < 3; ++pass) {
    CostModel cm(*c, Dtype::kBf16);
    std::vector<std::vector<double>> a;
    std::vector<double> y, t;
    bool any_x = false;
    for (const CollectivePoint* k : pts) {
      const GroupPlacement g{k->ranks, inter ? PerNode(*k) : k->ranks, false};
      const Algo al = algo ? *algo : cm.CollectiveTime(k->op, k->bytes, g).algo;
      const Feature f = CollectiveFeature(*c, *k, inter, al);
      any_x = any_x || f.x > 0;
      a.push_back({f.steps, f.x});
      y.push_back(k->time.seconds() - f.known);
      t.push_back(k->time.seconds());
    }
    if (!any_x) {
      for (auto& row : a) row.resize(1);
    }
    Eigen::VectorXd sol = Solve(a, y, t);
    fab.latency = Duration::Seconds(std::max(0.0, sol(0)));
    if (any_x) fab.efficiency = std::clamp(sol(1) > 0 ? 1.0 / sol(1) : 1.0, 0.01, 1.0);
  }
}

// One fitter per measurement family. Each reads the measurements, refines the cluster `c` it
// prices with (later families see earlier fits: collectives after the launch overhead, the
// inter-node fabric after the intra-node one) and adds its parameters to the profile and its
// quality to the result.
class Fitter {
 public:
  Fitter(const std::vector<Measurements>& ms, const ClusterSpec& cluster) : ms_(ms), c(cluster) {
    c.gpu.sustained_factor = 1.0;  // microbenchmarks run kernels alone
  }
  Status Sources();
  void Launch();
  void Gemms(bool fp8);
  void Memory();
  void Attention(bool fused);
  void Collectives();
  void HostCopies();
  void Contention();
  void Sustained();
  FitResult Take() { return std::move(r); }
  bool Empty() const { return r.families.empty(); }

 private:
  std::optional<double> AttentionDirection(const char* kind, bool bwd);
  void AttentionCheck(const char* kind, bool fitted_any, const AttentionEfficiency& eff);
  void Fabric(bool inter, const std::vector<const CollectivePoint*>& pts);
  std::vector<std::pair<FabricSpec::CollectiveFit, std::vector<const CollectivePoint*>>> PerCase(
      bool inter, const std::vector<const CollectivePoint*>& pts);
  FamilyFit CollectiveQuality(const ClusterSpec& cc, bool inter,
                              const std::vector<const CollectivePoint*>& pts,
                              std::string family) const;
  double launch() const { return c.gpu.launch_overhead.seconds(); }

  const std::vector<Measurements>& ms_;
  ClusterSpec c;
  FitResult r;
  CalibrationProfile& p = r.profile;
};

GroupPlacement Placement(const CollectivePoint& k, bool inter) {
  return GroupPlacement{k.ranks, inter ? PerNode(k) : k.ranks, false};
}

Status Fitter::Sources() {
  p.gpu = c.gpu.id;
  std::vector<std::string> sources;
  for (const auto& m : ms_) {
    if (!m.gpu.empty() && m.gpu != c.gpu.id) {
      return InvalidArgument(
          fmt::format("{}:1:1: error: gpu: measured on '{}' but fitting for '{}'; pass --gpu {}",
                      m.file, m.gpu, c.gpu.id, m.gpu));
    }
    sources.push_back(m.file.substr(m.file.find_last_of('/') + 1));
  }
  p.source = fmt::format("parasim fit of {}", fmt::format("{}", fmt::join(sources, ", ")));
  if (!ms_.empty() && !ms_[0].device.empty()) p.source += fmt::format(" ({})", ms_[0].device);
  return Status::Ok();
}

// Launch overhead: the median of the measured empty-kernel launches.
void Fitter::Launch() {
  std::vector<double> launches;
  for (const auto& m : ms_) {
    if (m.launch > Duration::Zero()) launches.push_back(m.launch.seconds());
  }
  if (launches.empty()) return;
  std::sort(launches.begin(), launches.end());
  p.launch_overhead = Duration::Seconds(launches[launches.size() / 2]);
  c.gpu.launch_overhead = *p.launch_overhead;
}

// GEMM efficiency: t - launch = FLOPs / (peak x shape) x (1 / e): one scalar per precision
// class (16-bit, fp8) for the shape curve, and every measured shape's own efficiency, which
// the cost model uses for exactly that shape (calibrate --scenario measures the step's own).
void Fitter::Gemms(bool fp8) {
  const Dtype peak_dtype = fp8 ? Dtype::kFp8 : Dtype::kBf16;
  const double peak = c.gpu.Peak(peak_dtype).flops_per_second();
  CostModel base(c, Dtype::kBf16);
  std::vector<std::vector<double>> a;
  std::vector<double> y, t;
  std::vector<const GemmPoint*> used;
  for (const auto& m : ms_) {
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
      const double kernel = g.time.seconds() - launch();
      if (kernel <= 0) {
        r.skipped.push_back(fmt::format("gemm {}x{}x{}: {} is within the launch overhead", g.m, g.n,
                                        g.k, FormatDuration(g.time)));
        continue;
      }
      a.push_back({flops / (peak * base.ShapeCurve(g.m, g.n, g.k))});
      y.push_back(kernel);
      t.push_back(g.time.seconds());
      used.push_back(&g);
      p.gemm_shapes.push_back(
          {g.dtype, g.m, g.n, g.k, std::clamp(flops / (peak * kernel), 0.001, 1.0)});
    }
  }
  if (a.empty()) return;
  Eigen::VectorXd x = Solve(a, y, t);
  const double e = std::clamp(1.0 / x(0), 0.01, 1.0);
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
  for (const GemmPoint* g : used) {
    pred.push_back(fitted.GemmTime(g->m, g->n, g->k).seconds());
    meas.push_back(g->time.seconds());
    names.push_back(fmt::format("{}x{}x{}", g->m, g->n, g->k));
  }
  FamilyFit f = Quality(fp8 ? "gemm fp8 (shape curve)" : "gemm (shape curve)", meas, pred, names);
  f.fitted = fmt::format("{} {:.4f}; {} shapes kept exactly",
                         fp8 ? "gemm_efficiency_fp8" : "gemm_efficiency", e, used.size());
  r.families.push_back(f);
}

// Memory-bound efficiency: t - launch = bytes / HBM x (1 / m), over every streaming kernel;
// the quality is reported per kernel too (element-wise, softmax and layernorm are what a step
// runs; copy and triad the best case).
void Fitter::Memory() {
  std::vector<std::vector<double>> a;
  std::vector<double> y, t;
  std::vector<const MemoryPoint*> used;
  for (const auto& m : ms_) {
    for (const auto& k : m.memory) {
      a.push_back({k.bytes.bytes() / c.gpu.hbm_bandwidth.bytes_per_second()});
      y.push_back(k.time.seconds() - launch());
      t.push_back(k.time.seconds());
      used.push_back(&k);
    }
  }
  if (a.empty()) return;
  Eigen::VectorXd x = Solve(a, y, t);
  p.memory_efficiency = std::clamp(1.0 / x(0), 0.01, 1.0);
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
    const std::string name = fmt::format("{} {}", k->kernel, FormatBytes(k->bytes));
    for (Points* pts : {&all, &by_kernel[k->kernel]}) {
      pts->pred.push_back(pr);
      pts->meas.push_back(k->time.seconds());
      pts->names.push_back(name);
      pts->bytes += k->bytes.bytes();
      pts->kernel_seconds += k->time.seconds() - launch();
    }
  }
  FamilyFit f = Quality("memory", all.meas, all.pred, all.names);
  f.fitted = fmt::format("memory_efficiency {:.4f}", *p.memory_efficiency);
  r.families.push_back(f);
  if (by_kernel.size() > 1) {
    for (const auto& [kernel, pts] : by_kernel) {
      FamilyFit fk = Quality("  memory " + kernel, pts.meas, pts.pred, pts.names);
      fk.fitted = fmt::format("alone it would be {:.4f}",
                              pts.kernel_seconds > 0 ? pts.bytes / pts.kernel_seconds /
                                                           c.gpu.hbm_bandwidth.bytes_per_second()
                                                     : 0.0);
      r.families.push_back(fk);
    }
  }
}

// Attention cores, per kind and direction: compute-bound points fit the efficiency (vs the
// 16-bit peak) that CostModel::AttentionTime uses; memory-bound ones cannot tell it.
std::optional<double> Fitter::AttentionDirection(const char* kind, bool bwd) {
  std::vector<std::vector<double>> a;
  std::vector<double> y, t;
  const double peak = c.gpu.Peak(Dtype::kBf16).flops_per_second();
  CostModel cm(c, Dtype::kBf16);
  for (const auto& m : ms_) {
    for (const auto& at : m.attention) {
      if (at.kind != kind) continue;
      const Duration time = bwd ? at.backward : at.forward;
      if (time <= Duration::Zero()) continue;
      const double flops = at.ForwardFlops().flops() * (bwd ? 2 : 1);
      const double memory = cm.MemoryTime(at.HbmBytes(bwd)).seconds();
      const double kernel = time.seconds() - launch();
      const std::string name = fmt::format("{} {} b{} s{} d{}", kind, bwd ? "bwd" : "fwd", at.batch,
                                           at.seq, at.head_dim);
      if (kernel <= memory * 1.05) {
        r.skipped.push_back(name + ": memory-bound, it cannot tell the compute efficiency");
        continue;
      }
      a.push_back({flops / peak});
      y.push_back(kernel);
      t.push_back(time.seconds());
    }
  }
  if (a.empty()) return std::nullopt;
  Eigen::VectorXd x = Solve(a, y, t);
  return std::clamp(1.0 / x(0), 0.01, 1.0);
}

void Fitter::Attention(bool fused) {
  const char* kind = fused ? "flash" : "standard";
  AttentionEfficiency eff;
  bool any = false;
  for (bool bwd : {false, true}) {
    if (auto e = AttentionDirection(kind, bwd)) {
      (bwd ? eff.backward : eff.forward) = *e;
      any = true;
    }
  }
  // A direction without compute-bound points keeps the derived value; a kind with none at all
  // is still checked against the model (materialised attention is memory-bound at head_dim
  // 128 on an H100: 8 bytes of scores per 4 d FLOPs).
  if (any) {
    CostModel derived(c, Dtype::kBf16);
    if (eff.forward <= 0) eff.forward = derived.AttentionEfficiency(false, fused);
    if (eff.backward <= 0) eff.backward = derived.AttentionEfficiency(true, fused);
    (fused ? p.attention_flash : p.attention_standard) = eff;
    (fused ? c.gpu.attention_flash : c.gpu.attention_standard) = eff;
  }
  AttentionCheck(kind, any, eff);
}

void Fitter::AttentionCheck(const char* kind, bool fitted_any, const AttentionEfficiency& eff) {
  const bool fused = std::string(kind) == "flash";
  CostModel fitted(c, Dtype::kBf16);
  std::vector<double> pred, meas;
  std::vector<std::string> names;
  for (const auto& m : ms_) {
    for (const auto& at : m.attention) {
      if (at.kind != kind) continue;
      for (bool bwd : {false, true}) {
        const Duration time = bwd ? at.backward : at.forward;
        if (time <= Duration::Zero()) continue;
        pred.push_back(
            fitted.AttentionTime(at.ForwardFlops() * (bwd ? 2 : 1), at.HbmBytes(bwd), bwd, fused)
                .seconds());
        meas.push_back(time.seconds());
        names.push_back(
            fmt::format("{} b{} s{} d{}", bwd ? "bwd" : "fwd", at.batch, at.seq, at.head_dim));
      }
    }
  }
  if (meas.empty()) return;
  FamilyFit f = Quality(fmt::format("attention {}", kind), meas, pred, names);
  f.fitted = fitted_any ? fmt::format("forward {:.4f}, backward {:.4f} of the 16-bit peak",
                                      eff.forward, eff.backward)
                        : "nothing fitted: every point is memory-bound (a check of the byte count)";
  r.families.push_back(f);
}

// Collectives: single-node points fit the intra-node fabric, multi-node points the
// inter-node fabric (after the intra-node one, which hierarchical algorithms also use). One
// alpha-beta per fabric first, then one per collective x algorithm x group shape that has
// enough points (3 or more, at 2 or more sizes): those go into the profile beside it.
void Fitter::Collectives() {
  std::vector<const CollectivePoint*> intra_pts, inter_pts;
  for (const auto& m : ms_) {
    for (const auto& k : m.collectives) {
      if (k.ranks <= 1) {
        r.skipped.push_back(Describe(k) + ": one rank moves nothing");
      } else if (k.per_node >= k.ranks && k.op != Collective::kSendRecv) {
        intra_pts.push_back(&k);
      } else if (k.op == Collective::kSendRecv && k.per_node >= 2) {
        intra_pts.push_back(&k);
      } else {
        inter_pts.push_back(&k);
      }
    }
  }
  Fabric(false, intra_pts);
  Fabric(true, inter_pts);
}

FamilyFit Fitter::CollectiveQuality(const ClusterSpec& cc, bool inter,
                                    const std::vector<const CollectivePoint*>& pts,
                                    std::string family) const {
  CostModel fitted(cc, Dtype::kBf16);
  std::vector<double> pred, meas;
  std::vector<std::string> names;
  for (const CollectivePoint* k : pts) {
    pred.push_back(fitted.CollectiveTime(k->op, k->bytes, Placement(*k, inter)).time.seconds());
    meas.push_back(k->time.seconds());
    names.push_back(Describe(*k));
  }
  return Quality(std::move(family), meas, pred, names);
}

void Fitter::Fabric(bool inter, const std::vector<const CollectivePoint*>& pts) {
  if (pts.empty()) return;
  FitAlphaBeta(&c, inter, pts, std::nullopt);
  FabricSpec& fab = inter ? c.inter : c.intra;
  FabricFit ff{fab.id, fab.efficiency, fab.latency, {}};
  FamilyFit f = CollectiveQuality(c, inter, pts, fmt::format("collectives {}", fab.id));
  f.fitted = fmt::format("bus efficiency {:.4f}, latency {} per step", fab.efficiency,
                         FormatDuration(fab.latency));
  r.families.push_back(f);
  const auto fits = PerCase(inter, pts);
  for (const auto& [cf, group] : fits) ff.collectives.push_back(cf);
  ClusterSpec with = c;
  (inter ? with.inter : with.intra).collectives = ff.collectives;
  for (const auto& [cf, group] : fits) {
    FamilyFit g = CollectiveQuality(with, inter, group,
                                    fmt::format("  {} {} {} x{}/{}", fab.id, CollectiveName(cf.op),
                                                AlgoName(cf.algo), cf.ranks, cf.per_node));
    g.fitted = fmt::format("bus efficiency {:.4f}, latency {} per step", cf.efficiency,
                           FormatDuration(cf.latency));
    r.families.push_back(g);
  }
  p.fabrics.push_back(ff);
}

// Per case: points grouped by the algorithm the fabric-wide fit prices them with.
std::vector<std::pair<FabricSpec::CollectiveFit, std::vector<const CollectivePoint*>>>
Fitter::PerCase(bool inter, const std::vector<const CollectivePoint*>& pts) {
  const FabricSpec& fab = inter ? c.inter : c.intra;
  CostModel cm(c, Dtype::kBf16);
  std::map<std::tuple<int, int, int64_t, int64_t>, std::vector<const CollectivePoint*>> cases;
  for (const CollectivePoint* k : pts) {
    const GroupPlacement g = Placement(*k, inter);
    const Algo al = cm.CollectiveTime(k->op, k->bytes, g).algo;
    cases[{static_cast<int>(k->op), static_cast<int>(al), k->ranks, g.per_node}].push_back(k);
  }
  std::vector<std::pair<FabricSpec::CollectiveFit, std::vector<const CollectivePoint*>>> fits;
  for (const auto& [key, group] : cases) {
    std::set<double> sizes;
    for (const CollectivePoint* k : group) sizes.insert(k->bytes.bytes());
    const auto [op, al, ranks, per_node] = key;
    const std::string name =
        fmt::format("{} {} {} x{}/{}", fab.id, CollectiveName(static_cast<Collective>(op)),
                    AlgoName(static_cast<Algo>(al)), ranks, per_node);
    if (group.size() < 3 || sizes.size() < 2) {
      r.skipped.push_back(
          fmt::format("{}: {} point(s) at {} size(s); the fabric-wide fit prices it", name,
                      group.size(), sizes.size()));
      continue;
    }
    ClusterSpec one = c;
    FitAlphaBeta(&one, inter, group, static_cast<Algo>(al));
    const FabricSpec& of = inter ? one.inter : one.intra;
    fits.push_back({{static_cast<Collective>(op), static_cast<Algo>(al), ranks, per_node,
                     of.efficiency, of.latency},
                    group});
  }
  return fits;
}

// Host <-> GPU copies: latency + bytes / bandwidth per direction. Reported, not in the profile:
// parasim does not model offloading (yet), so nothing would use them.
void Fitter::HostCopies() {
  for (const char* dir : {"h2d", "d2h"}) {
    std::vector<std::vector<double>> a;
    std::vector<double> y, t, meas;
    std::vector<std::string> names;
    for (const auto& m : ms_) {
      for (const auto& h : m.host_copies) {
        if (h.direction != dir) continue;
        a.push_back({1.0, h.bytes.bytes()});
        y.push_back(h.time.seconds());
        t.push_back(h.time.seconds());
        names.push_back(fmt::format("{} {}", dir, FormatBytes(h.bytes)));
      }
    }
    if (a.size() < 2) continue;
    Eigen::VectorXd x = Solve(a, y, t);
    std::vector<double> pred;
    for (const auto& row : a) pred.push_back(x(0) + x(1) * row[1]);
    FamilyFit f = Quality(fmt::format("host copies {}", dir), y, pred, names);
    f.fitted = fmt::format("{} at latency {} (reported only: no offload model uses it)",
                           x(1) > 0 ? FormatBandwidth(Bandwidth(1.0 / x(1))) : std::string("?"),
                           FormatDuration(Duration::Seconds(std::max(0.0, x(0)))));
    r.families.push_back(f);
  }
}

// Contention: the mean slowdown, beside the communication stand-in, of the GEMMs (compute) and
// of the copy (memory-bound), at the stand-in's SM count nearest 16 (NCCL's usual channel count
// on a DGX; hardware/spec.h kDefaultContendedCompute) while it spins, as a collective waiting on
// the network does.
void Fitter::Contention() {
  int64_t best = 0;
  for (const auto& m : ms_) {
    for (const auto& k : m.contention) {
      if (k.background == "spin" && (best == 0 || std::abs(k.blocks - 16) < std::abs(best - 16))) {
        best = k.blocks;
      }
    }
  }
  if (best == 0) return;
  for (const char* victim : {"gemm", "copy"}) {
    std::vector<double> alone, with;
    std::vector<std::string> names;
    double slow = 0;
    for (const auto& m : ms_) {
      for (const auto& k : m.contention) {
        if (k.victim != victim || k.background != "spin" || k.blocks != best) continue;
        alone.push_back(k.alone.seconds());
        with.push_back(k.with.seconds());
        slow += k.Slowdown();
        names.push_back(k.victim == "gemm" ? fmt::format("gemm {}x{}x{}", k.m, k.n, k.k)
                                           : fmt::format("copy {}", FormatBytes(k.bytes)));
      }
    }
    if (alone.empty()) continue;
    slow = std::max(1.0, slow / static_cast<double>(alone.size()));
    std::vector<double> pred;
    for (double a : alone) pred.push_back(a * slow);
    const bool gemm = std::string(victim) == "gemm";
    FamilyFit f =
        Quality(fmt::format("contention {}", gemm ? "compute" : "memory"), with, pred, names);
    f.fitted = fmt::format("{} {:.3g}x beside a collective on {} SMs",
                           gemm ? "contended_compute" : "contended_memory", slow, best);
    (gemm ? p.contended_compute : p.contended_memory) = slow;
    r.families.push_back(f);
  }
}

// Sustained clocks: how much slower back-to-back GEMMs run at the end of a long run than in its
// first second (reported only: the sustained factor is fitted to measured steps, fit --runs).
void Fitter::Sustained() {
  for (const auto& m : ms_) {
    for (const auto& s : m.sustained) {
      FamilyFit f;
      f.family = "sustained clocks";
      f.points = 1;
      f.r2 = 1;
      f.fitted = fmt::format(
          "{}x{}x{} GEMMs: {:.3g} of the first second's rate after {:.0f} s (reported only)", s.m,
          s.n, s.k, s.first.seconds() / s.last.seconds(), s.seconds);
      r.families.push_back(f);
    }
  }
}

}  // namespace

StatusOr<FitResult> FitMeasurements(const std::vector<Measurements>& ms,
                                    const ClusterSpec& cluster) {
  Fitter fit(ms, cluster);
  if (Status s = fit.Sources(); !s.ok()) return s;
  fit.Launch();
  fit.Gemms(false);
  fit.Gemms(true);
  fit.Memory();
  fit.Attention(false);
  fit.Attention(true);
  fit.Collectives();
  fit.HostCopies();
  fit.Contention();
  fit.Sustained();
  if (fit.Empty()) {
    return InvalidArgument(
        "fit: the measurements hold no GEMM, memory, collective or contention points");
  }
  return fit.Take();
}

}  // namespace parasim
