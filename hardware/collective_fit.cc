#include "hardware/collective_fit.h"

#include <fmt/core.h>

#include <algorithm>
#include <cassert>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "hardware/collective_algorithm.h"
#include "hardware/cost_model.h"
#include "sim/parse_units.h"

namespace parasim {
namespace {

using Points = std::vector<const CollectivePoint*>;

std::string Describe(const CollectivePoint& p) {
  return fmt::format("{} {} ranks ({} per node) {}{}{}", CollectiveName(p.op), p.ranks, p.per_node,
                     FormatBytes(p.bytes), p.in_place ? " in-place" : "",
                     p.where.empty() ? "" : " (" + p.where + ")");
}

int64_t PerNode(const CollectivePoint& k) { return std::clamp<int64_t>(k.per_node, 1, k.ranks); }

GroupPlacement Placement(const CollectivePoint& k, bool inter) {
  // A send/recv point is one pair's transfer (a ring's pairs run side by side): the cost model
  // prices a pair, on the inter-node fabric when its two ranks are on different nodes.
  if (k.op == Collective::kSendRecv) return GroupPlacement{2, inter ? 1 : 2, false};
  return GroupPlacement{k.ranks, inter ? PerNode(k) : k.ranks, false};
}

// The NIC efficiency below which every ring of `pts` that crosses nodes is priced at the NICs'
// rate rather than at NVLink's (AddTransfer: a node's ring runs at the slower of NVLink and its
// NICs' share x per_node), 1 where none would be NVLink-bound. Above it a point's time does not
// depend on the efficiency, so a fit that starts above it (the catalog's 0.97 on 8 x 400 Gb/s
// NICs beside NVLink's 370 GB/s) could not move it, and wrote the catalog's value as fitted.
double NicBoundBelow(const ClusterSpec& c, const Points& pts) {
  ClusterSpec at_one = c;
  at_one.inter.efficiency = 1.0;
  double below = 1.0;
  for (const CollectivePoint* k : pts) {
    const CollectiveCase kc = CollectiveCase::Of(k->op, k->bytes, Placement(*k, true));
    const CollectiveRates r = FabricRates(at_one, kc);
    const double nics = r.fabric.bytes_per_second() * static_cast<double>(kc.per_node);
    if (nics > r.nvlink.bytes_per_second())
      below = std::min(below, r.nvlink.bytes_per_second() / nics);
  }
  return below;
}

// Fits alpha and efficiency of the intra (inter = false) or inter fabric of `c` to `pts`, in
// place. With `algo` set, every point is priced with that algorithm (a per-case fit); else with
// the one the cost model picks, re-picked after each pass. Efficiency stays as it was when no
// point's time depends on it. Returns the values the last pass kept at their bounds.
std::vector<std::string> FitAlphaBeta(ClusterSpec* c, bool inter, const Points& pts,
                                      std::optional<Algo> algo) {
  std::vector<std::string> at_bound;
  FabricSpec& fab = inter ? c->inter : c->intra;
  // The NICs' fit starts where their rate sets the rings' time: a log as fast as NVLink then fits
  // an efficiency at that crossing, and a slower one its own.
  if (inter) fab.efficiency = std::min(fab.efficiency, 0.999 * NicBoundBelow(*c, pts));
  for (int pass = 0; pass < 3; ++pass) {
    at_bound.clear();
    CostModel cm(*c, Dtype::kBf16);
    std::vector<std::vector<double>> a;
    std::vector<double> y, t;
    bool any_x = false;
    for (const CollectivePoint* k : pts) {
      const GroupPlacement g = Placement(*k, inter);
      const Algo al = algo ? *algo : cm.CollectiveTime(k->op, k->bytes, g).algo;
      // The time is known + alpha x steps + nominal / efficiency: linear in alpha and
      // 1 / efficiency.
      const CollectiveCase kc = CollectiveCase::Of(k->op, k->bytes, g);
      assert(kc.inter == inter);  // FitCollectives sorts the points by the fabric they cross
      const CollectiveFeature f = FitFeature(*c, kc, al);
      any_x = any_x || f.nominal_s > 0;
      a.push_back({f.steps, f.nominal_s});
      y.push_back(k->time.seconds() - f.known_s);
      t.push_back(k->time.seconds());
    }
    if (!any_x) {
      for (auto& row : a) row.resize(1);
    }
    const std::vector<double> sol = SolveRelative(a, y, t);
    // A latency a hair below zero is noise on points the bandwidth term prices; below -0.1 us
    // per step the fit wants what the model cannot give.
    const double alpha = Bounded(sol[0] > -1e-7 ? std::max(0.0, sol[0]) : sol[0], 0.0, 1e300,
                                 "latency per step (s)", &at_bound);
    fab.latency = Duration::Seconds(alpha);
    if (any_x) {
      fab.efficiency = Bounded(sol[1] > 0 ? 1.0 / sol[1] : std::numeric_limits<double>::infinity(),
                               0.01, 1.0, "bus efficiency", &at_bound);
    }
  }
  return at_bound;
}

FamilyFit CollectiveQuality(const ClusterSpec& cc, bool inter, const Points& pts,
                            std::string family) {
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

struct CaseFit {
  FabricSpec::CollectiveFit fit;
  Points points;
  std::vector<std::string> at_bound;
};
using CaseFits = std::vector<CaseFit>;

// Per case: points grouped by the algorithm the fabric-wide fit prices them with.
CaseFits PerCase(FitContext* fc, bool inter, const Points& pts) {
  const ClusterSpec& c = fc->cluster;
  const FabricSpec& fab = inter ? c.inter : c.intra;
  CostModel cm(c, Dtype::kBf16);
  std::map<std::tuple<int, int, int64_t, int64_t>, Points> cases;
  for (const CollectivePoint* k : pts) {
    const GroupPlacement g = Placement(*k, inter);
    const Algo al = cm.CollectiveTime(k->op, k->bytes, g).algo;
    cases[{static_cast<int>(k->op), static_cast<int>(al), g.size, g.per_node}].push_back(k);
  }
  CaseFits fits;
  for (const auto& [key, group] : cases) {
    std::set<double> sizes;
    for (const CollectivePoint* k : group) sizes.insert(k->bytes.bytes());
    const auto [op, al, ranks, per_node] = key;
    const std::string name =
        fmt::format("{} {} {} x{}/{}", fab.id, CollectiveName(static_cast<Collective>(op)),
                    AlgoName(static_cast<Algo>(al)), ranks, per_node);
    if (group.size() < 3 || sizes.size() < 2) {
      fc->result.skipped.push_back(
          fmt::format("{}: {} point(s) at {} size(s); the fabric-wide fit prices it", name,
                      group.size(), sizes.size()));
      continue;
    }
    ClusterSpec one = c;
    std::vector<std::string> bounds = FitAlphaBeta(&one, inter, group, static_cast<Algo>(al));
    const FabricSpec& of = inter ? one.inter : one.intra;
    fits.push_back({{static_cast<Collective>(op), static_cast<Algo>(al), ranks, per_node,
                     of.efficiency, of.latency},
                    group,
                    std::move(bounds)});
  }
  return fits;
}

void Fabric(FitContext* fc, bool inter, const Points& pts) {
  if (pts.empty()) return;
  ClusterSpec& c = fc->cluster;
  FitResult& r = fc->result;
  std::vector<std::string> bounds = FitAlphaBeta(&c, inter, pts, std::nullopt);
  FabricSpec& fab = inter ? c.inter : c.intra;
  FabricFit ff{fab.id, fab.efficiency, fab.latency, {}};
  FamilyFit f = CollectiveQuality(c, inter, pts, fmt::format("collectives {}", fab.id));
  f.fitted = fmt::format("bus efficiency {:.4f}, latency {} per step", fab.efficiency,
                         FormatDuration(fab.latency));
  f.at_bound = std::move(bounds);
  r.families.push_back(f);
  CaseFits fits = PerCase(fc, inter, pts);
  for (const CaseFit& cf : fits) ff.collectives.push_back(cf.fit);
  ClusterSpec with = c;
  (inter ? with.inter : with.intra).collectives = ff.collectives;
  for (CaseFit& one : fits) {
    const FabricSpec::CollectiveFit& cf = one.fit;
    FamilyFit g = CollectiveQuality(with, inter, one.points,
                                    fmt::format("  {} {} {} x{}/{}", fab.id, CollectiveName(cf.op),
                                                AlgoName(cf.algo), cf.ranks, cf.per_node));
    g.fitted = fmt::format("bus efficiency {:.4f}, latency {} per step", cf.efficiency,
                           FormatDuration(cf.latency));
    g.at_bound = std::move(one.at_bound);
    r.families.push_back(g);
  }
  r.profile.fabrics.push_back(ff);
}

}  // namespace

void FitCollectives(FitContext* f) {
  Points intra_pts, inter_pts;
  for (const auto& m : f->measurements) {
    for (const auto& k : m.collectives) {
      if (k.ranks <= 1) {
        f->result.skipped.push_back(Describe(k) + ": one rank moves nothing");
      } else {
        (k.CrossesNodes() ? inter_pts : intra_pts).push_back(&k);
      }
    }
  }
  Fabric(f, false, intra_pts);
  Fabric(f, true, inter_pts);
}

}  // namespace parasim
