#include "hardware/fit.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

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

}  // namespace

StatusOr<FitResult> FitMeasurements(const std::vector<Measurements>& ms,
                                    const ClusterSpec& cluster) {
  FitResult r;
  ClusterSpec c = cluster;
  c.gpu.sustained_factor = 1.0;  // microbenchmarks run kernels alone
  CalibrationProfile& p = r.profile;
  p.gpu = c.gpu.id;
  std::vector<std::string> sources;
  for (const auto& m : ms) {
    if (!m.gpu.empty() && m.gpu != c.gpu.id) {
      return InvalidArgument(
          fmt::format("{}:1:1: error: gpu: measured on '{}' but fitting for '{}'; pass --gpu {}",
                      m.file, m.gpu, c.gpu.id, m.gpu));
    }
    sources.push_back(m.file.substr(m.file.find_last_of('/') + 1));
  }
  p.source = fmt::format("parasim fit of {}", fmt::format("{}", fmt::join(sources, ", ")));
  if (!ms.empty() && !ms[0].device.empty()) p.source += fmt::format(" ({})", ms[0].device);

  // Launch overhead: the median of the measured empty-kernel launches.
  std::vector<double> launches;
  for (const auto& m : ms) {
    if (m.launch > Duration::Zero()) launches.push_back(m.launch.seconds());
  }
  if (!launches.empty()) {
    std::sort(launches.begin(), launches.end());
    p.launch_overhead = Duration::Seconds(launches[launches.size() / 2]);
    c.gpu.launch_overhead = *p.launch_overhead;
  }
  const double launch = c.gpu.launch_overhead.seconds();

  // GEMM efficiency: t - launch = FLOPs / (peak x shape) x (1 / e), compute-bound points.
  {
    CostModel base(c, Dtype::kBf16);
    std::vector<std::vector<double>> a;
    std::vector<double> y, t;
    std::vector<const GemmPoint*> used;
    for (const auto& m : ms) {
      for (const auto& g : m.gemm) {
        if (g.dtype != Dtype::kBf16 && g.dtype != Dtype::kFp16) {
          r.skipped.push_back(fmt::format("gemm {} {}x{}x{}: only 16-bit GEMMs set the efficiency",
                                          DtypeName(g.dtype), g.m, g.n, g.k));
          continue;
        }
        const double shape = base.GemmEfficiency(g.m, g.n, g.k) / c.gpu.gemm_efficiency;
        const double flops = 2.0 * g.m * g.n * g.k;
        a.push_back({flops / (c.gpu.Peak(Dtype::kBf16).flops_per_second() * shape)});
        y.push_back(g.time.seconds() - launch);
        t.push_back(g.time.seconds());
        used.push_back(&g);
      }
    }
    if (!a.empty()) {
      Eigen::VectorXd x = Solve(a, y, t);
      p.gemm_efficiency = std::clamp(1.0 / x(0), 0.01, 1.0);
      c.gpu.gemm_efficiency = *p.gemm_efficiency;
      CostModel fitted(c, Dtype::kBf16);
      std::vector<double> pred, meas;
      std::vector<std::string> names;
      for (const GemmPoint* g : used) {
        pred.push_back(fitted.GemmTime(g->m, g->n, g->k).seconds());
        meas.push_back(g->time.seconds());
        names.push_back(fmt::format("{}x{}x{}", g->m, g->n, g->k));
      }
      FamilyFit f = Quality("gemm", meas, pred, names);
      f.fitted = fmt::format("gemm_efficiency {:.4f}", *p.gemm_efficiency);
      r.families.push_back(f);
    }
  }
  // Memory-bound efficiency: t - launch = bytes / HBM x (1 / m).
  {
    std::vector<std::vector<double>> a;
    std::vector<double> y, t;
    std::vector<const MemoryPoint*> used;
    for (const auto& m : ms) {
      for (const auto& k : m.memory) {
        a.push_back({k.bytes.bytes() / c.gpu.hbm_bandwidth.bytes_per_second()});
        y.push_back(k.time.seconds() - launch);
        t.push_back(k.time.seconds());
        used.push_back(&k);
      }
    }
    if (!a.empty()) {
      Eigen::VectorXd x = Solve(a, y, t);
      p.memory_efficiency = std::clamp(1.0 / x(0), 0.01, 1.0);
      c.gpu.memory_efficiency = *p.memory_efficiency;
      CostModel fitted(c, Dtype::kBf16);
      std::vector<double> pred, meas;
      std::vector<std::string> names;
      for (const MemoryPoint* k : used) {
        pred.push_back((fitted.MemoryTime(k->bytes.bytes()) + fitted.Launch()).seconds());
        meas.push_back(k->time.seconds());
        names.push_back(fmt::format("{} {}", k->kernel, FormatBytes(k->bytes)));
      }
      FamilyFit f = Quality("memory", meas, pred, names);
      f.fitted = fmt::format("memory_efficiency {:.4f}", *p.memory_efficiency);
      r.families.push_back(f);
    }
  }
  // Collectives: single-node points fit the intra-node fabric, multi-node points the
  // inter-node fabric (after the intra-node one, which hierarchical algorithms also use).
  std::vector<const CollectivePoint*> intra_pts, inter_pts;
  for (const auto& m : ms) {
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
  auto fit_fabric = [&](bool inter, const std::vector<const CollectivePoint*>& pts) {
    if (pts.empty()) return;
    FabricSpec& fab = inter ? c.inter : c.intra;
    // Two passes: features follow the algorithm the cost model picks with the current values.
    for (int pass = 0; pass < 3; ++pass) {
      CostModel cm(c, Dtype::kBf16);
      std::vector<std::vector<double>> a;
      std::vector<double> y, t;
      const double nic_nominal =
          c.inter.bandwidth.bytes_per_second() * c.nics() / std::max(1, c.gpus_per_node);
      for (const CollectivePoint* k : pts) {
        const double D = k->bytes.bytes();
        const int64_t n = k->ranks;
        const GroupPlacement g{n, inter ? k->per_node : n, false};
        if (!inter) {
          const double bw = c.intra.bandwidth.bytes_per_second();
          const double bus = k->op == Collective::kSendRecv ? D : BusFactor(k->op, n) * D;
          a.push_back({Steps(k->op, n), bus / bw});
          y.push_back(k->time.seconds());
          t.push_back(k->time.seconds());
          continue;
        }
        const CollectiveCost cc = cm.CollectiveTime(k->op, k->bytes, g);
        const int64_t per_node = std::max<int64_t>(1, std::min(k->per_node, n));
        const int64_t nodes = (n + per_node - 1) / per_node;
        double steps = Steps(k->op, n), x = 0, known = 0;
        if (k->op == Collective::kSendRecv) {
          x = D / nic_nominal;
        } else if (k->op == Collective::kAllToAll) {
          steps = static_cast<double>(nodes - 1);
          x = D * static_cast<double>(n - per_node) / n / nic_nominal;
          known = c.intra.latency.seconds();
        } else if (cc.algo == Algo::kHierarchical) {
          const double gg = static_cast<double>(per_node), N = static_cast<double>(nodes);
          known = 2 * (gg - 1) / gg * D / cm.IntraBandwidth().bytes_per_second() +
                  c.intra.latency.seconds() * 2 * (gg - 1);
          steps = 2 * (N - 1);
          x = 2 * (N - 1) / N * D / gg / nic_nominal;
        } else {
          if (cc.algo == Algo::kTree) steps = 2 * std::ceil(std::log2(static_cast<double>(n)));
          // A flat ring runs at the slower of NVLink and the node's NICs in use.
          const double bus = BusFactor(k->op, n) * D;
          const double nic_now = nic_nominal * fab.efficiency * static_cast<double>(per_node);
          const double nvl = cm.IntraBandwidth().bytes_per_second();
          if (nvl < nic_now) {
            known = bus / nvl;
          } else {
            x = bus / (nic_nominal * static_cast<double>(per_node));
          }
        }
        a.push_back({steps, x});
        y.push_back(k->time.seconds() - known);
        t.push_back(k->time.seconds());
      }
      Eigen::VectorXd sol = Solve(a, y, t);
      fab.latency = Duration::Seconds(std::max(0.0, sol(0)));
      fab.efficiency = std::clamp(sol(1) > 0 ? 1.0 / sol(1) : 1.0, 0.01, 1.0);
    }
    FabricFit ff{fab.id, fab.efficiency, fab.latency};
    p.fabrics.push_back(ff);
    CostModel fitted(c, Dtype::kBf16);
    std::vector<double> pred, meas;
    std::vector<std::string> names;
    for (const CollectivePoint* k : pts) {
      const GroupPlacement g{k->ranks, inter ? k->per_node : k->ranks, false};
      pred.push_back(fitted.CollectiveTime(k->op, k->bytes, g).time.seconds());
      meas.push_back(k->time.seconds());
      names.push_back(Describe(*k));
    }
    FamilyFit f = Quality(fmt::format("collectives {}", fab.id), meas, pred, names);
    f.fitted = fmt::format("bus efficiency {:.4f}, latency {} per step", fab.efficiency,
                           FormatDuration(fab.latency));
    r.families.push_back(f);
  };
  fit_fabric(false, intra_pts);
  fit_fabric(true, inter_pts);
  if (r.families.empty()) {
    return InvalidArgument("fit: the measurements hold no GEMM, memory or collective points");
  }
  return r;
}

}  // namespace parasim
