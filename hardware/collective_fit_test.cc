// The collective families of the fit, without a GPU: points the cost model prices with known
// alphas and betas, per fabric and per case, are fitted back through each algorithm's terms
// (hardware/collective_algorithm.h).
#include "hardware/collective_fit.h"

#include <doctest/doctest.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "hardware/cost_model.h"
#include "hardware/fit_testing.h"
#include "hardware/profile.h"

namespace parasim {
namespace {

// The collective families alone on `m`, from `cluster`'s catalog parameters.
FitResult FitCollectivesOf(const Measurements& m, const ClusterSpec& cluster) {
  return RunFit(m, cluster, {FitCollectives});
}

const FabricSpec::CollectiveFit* FindCase(const FitResult& r, const std::string& fabric,
                                          const FabricSpec::CollectiveFit& want) {
  for (const auto& f : r.profile.fabrics) {
    if (f.id != fabric) continue;
    for (const auto& c : f.collectives) {
      if (c.op == want.op && c.algo == want.algo && c.ranks == want.ranks &&
          c.per_node == want.per_node) {
        return &c;
      }
    }
  }
  return nullptr;
}

TEST_CASE("per collective x algorithm x group fits recover each case's own alpha and beta") {
  // On NVLink, all-reduce, all-gather and reduce-scatter each run at their own alpha and beta:
  // one alpha-beta for the fabric cannot express that, one per case can.
  ClusterSpec truth = H100Cluster(1);
  truth.intra.collectives = {
      {Collective::kAllReduce, Algo::kRing, 8, 8, 0.80, Duration::Microseconds(2)},
      {Collective::kAllGather, Algo::kRing, 8, 8, 0.60, Duration::Microseconds(3)},
      {Collective::kReduceScatter, Algo::kRing, 8, 8, 0.70, Duration::Microseconds(1.5)},
  };
  Measurements m = Synthetic(truth);
  m.gemm.clear();
  m.memory.clear();
  std::erase_if(m.collectives, [](const CollectivePoint& k) { return k.per_node < k.ranks; });
  const FitResult r = FitCollectivesOf(m, H100Cluster(1));
  for (const auto& want : truth.intra.collectives) {
    CAPTURE(CollectiveName(want.op));
    const auto* got = FindCase(r, "nvlink4-h100", want);
    REQUIRE(got != nullptr);
    CHECK(got->efficiency == doctest::Approx(want.efficiency).epsilon(0.01));
    CHECK(got->latency.microseconds() ==
          doctest::Approx(want.latency.microseconds()).epsilon(0.01));
  }
  bool fabric_wide_worse = false;
  for (const auto& f : r.families) {
    CAPTURE(f.family);
    if (f.family.rfind("  ", 0) == 0) CHECK(f.mape < 0.01);
    if (f.family == "collectives nvlink4-h100") fabric_wide_worse = f.mape > 0.02;
  }
  CHECK(fabric_wide_worse);

  // Across 4 nodes, all-to-all runs at its own alpha and beta; the other cases keep the fabric's.
  ClusterSpec truth4 = H100Cluster(4);
  const FabricSpec::CollectiveFit a2a{Collective::kAllToAll,     Algo::kDirect, 32, 8, 0.50,
                                      Duration::Microseconds(20)};
  truth4.inter.collectives = {a2a};
  Measurements m4 = Synthetic(truth4);
  m4.gemm.clear();
  m4.memory.clear();
  const FitResult r4 = FitCollectivesOf(m4, H100Cluster(4));
  const auto* got = FindCase(r4, "ib-ndr-400g", a2a);
  REQUIRE(got != nullptr);
  CHECK(got->efficiency == doctest::Approx(0.50).epsilon(0.01));
  CHECK(got->latency.microseconds() == doctest::Approx(20).epsilon(0.01));
  for (const auto& f : r4.families) {
    CAPTURE(f.family);
    if (f.family.rfind("  ", 0) == 0) CHECK(f.mape < 0.01);
  }
  // Applied to a cluster, the profile reproduces every measured point within 1%.
  ClusterSpec applied = H100Cluster(4);
  REQUIRE(ApplyCalibrationProfile(r4.profile, &applied).ok());
  applied.gpu.sustained_factor = 1.0;
  CostModel cm(applied, Dtype::kBf16);
  for (const auto& k : m4.collectives) {
    CAPTURE(CollectiveName(k.op));
    CAPTURE(k.ranks);
    CAPTURE(k.bytes.bytes());
    CHECK(cm.CollectiveTime(k.op, k.bytes, {k.ranks, k.per_node}).time.seconds() ==
          doctest::Approx(k.time.seconds()).epsilon(0.01));
  }
}

TEST_CASE("points of every algorithm fit back the fabric's alpha and beta through its terms") {
  // Across 4 nodes, each case priced by the algorithm the cost model picks: ring and tree
  // all-reduce, PAT all-gather and reduce-scatter one GPU per node, direct all-to-all and
  // send/recv. One alpha-beta for the NICs explains them all.
  ClusterSpec truth = H100Cluster(4);
  truth.inter.efficiency = 0.62;
  truth.inter.latency = Duration::Microseconds(11);
  truth.gpu.sustained_factor = 1.0;
  CostModel cm(truth, Dtype::kBf16);
  Measurements m;
  m.file = "all.yaml";
  struct Shape {
    Collective op;
    int64_t ranks, per_node;
  };
  for (const Shape& s : std::vector<Shape>{{Collective::kAllReduce, 32, 8},
                                           {Collective::kAllReduce, 4, 1},
                                           {Collective::kAllGather, 32, 8},
                                           {Collective::kAllGather, 4, 1},
                                           {Collective::kReduceScatter, 4, 1},
                                           {Collective::kAllToAll, 32, 8},
                                           {Collective::kBroadcast, 32, 8},
                                           {Collective::kSendRecv, 2, 1}}) {
    for (double kib = 1; kib <= 4 * 1024 * 1024; kib *= 8) {
      const Bytes b = Bytes::KiB(kib);
      m.collectives.push_back({s.op, "", s.ranks, s.per_node, b,
                               cm.CollectiveTime(s.op, b, {s.ranks, s.per_node}).time});
    }
  }
  const FitResult r = FitCollectivesOf(m, H100Cluster(4));
  REQUIRE(r.profile.fabrics.size() == 1);
  const FabricFit& ib = r.profile.fabrics[0];
  CHECK(ib.id == "ib-ndr-400g");
  CHECK(*ib.efficiency == doctest::Approx(0.62).epsilon(0.01));
  CHECK(ib.latency->microseconds() == doctest::Approx(11).epsilon(0.01));
  // Every algorithm was used, and each case's own fit finds the same alpha and beta.
  std::set<Algo> used;
  for (const auto& c : ib.collectives) {
    CAPTURE(CollectiveName(c.op));
    CAPTURE(AlgoName(c.algo));
    used.insert(c.algo);
    CHECK(c.efficiency == doctest::Approx(0.62).epsilon(0.01));
  }
  // The hierarchical all-reduce is no case's cheapest since the tree is priced as NCCL prices
  // it (a tree over the nodes, a chain in each): the same NVLink steps, fewer network ones, and
  // the same bytes over the node's NICs (its terms are fitted back on their own in
  // collective_algorithm_test).
  for (std::string_view name : AlgoNames()) {
    CAPTURE(name);
    CHECK(used.count(*ParseAlgo(name)) == (name == "hierarchical" ? 0 : 1));
  }
  for (const auto& f : r.families) {
    CAPTURE(f.family);
    CHECK(f.mape < 0.01);
  }
}

TEST_CASE("one-rank points are skipped, and cases with too few points keep the fabric's fit") {
  Measurements m;
  m.file = "few.yaml";
  const CostModel cm(H100Cluster(1), Dtype::kBf16);
  for (double mib : {1.0, 16.0, 256.0}) {
    const Bytes b = Bytes::MiB(mib);
    m.collectives.push_back({Collective::kAllReduce, "", 8, 8, b,
                             cm.CollectiveTime(Collective::kAllReduce, b, {8, 8}).time});
  }
  m.collectives.push_back({Collective::kAllGather, "", 8, 8, Bytes::MiB(4),
                           cm.CollectiveTime(Collective::kAllGather, Bytes::MiB(4), {8, 8}).time});
  m.collectives.push_back(
      {Collective::kAllGather, "", 1, 1, Bytes::MiB(4), Duration::Microseconds(3)});
  const FitResult r = FitCollectivesOf(m, H100Cluster(1));
  REQUIRE(r.profile.fabrics.size() == 1);
  CHECK(r.profile.fabrics[0].collectives.size() == 1);  // the all-reduce: 3 points, 3 sizes
  REQUIRE(r.skipped.size() == 2);
  CHECK(r.skipped[0] == "all_gather 1 ranks (1 per node) 4.0 MiB: one rank moves nothing");
  CHECK(
      r.skipped[1] ==
      "nvlink4-h100 all_gather ring x8/8: 1 point(s) at 1 size(s); the fabric-wide fit prices it");
}

TEST_CASE(
    "nccl-tests' send/recv ring spanning nodes is a pair's transfer on the inter-node fabric") {
  // sendrecv_perf on 16 ranks, 8 a node: each rank sends to the next, so ranks 7 -> 8 and 15 -> 0
  // cross nodes and bound the run. Once fitted as one NVLink transfer (an 0.09 bus efficiency
  // that then priced every TP collective), it is a two-rank inter-node pair.
  ClusterSpec truth = H100Cluster(2);
  truth.inter.efficiency = 0.8;
  truth.inter.latency = Duration::Microseconds(20);
  const CostModel cm(truth, Dtype::kBf16);
  Measurements m;
  m.file = "sendrecv_perf.log";
  for (double mib : {1.0, 16.0, 256.0, 1024.0}) {
    const Bytes b = Bytes::MiB(mib);
    m.collectives.push_back({Collective::kSendRecv, "", 16, 8, b,
                             cm.CollectiveTime(Collective::kSendRecv, b, {2, 1}).time});
  }
  CHECK(m.collectives[0].CrossesNodes());
  const FitResult r = FitCollectivesOf(m, H100Cluster(2));
  REQUIRE(r.profile.fabrics.size() == 1);
  const auto& fab = r.profile.fabrics[0];
  CHECK(fab.id == "ib-ndr-400g");
  CHECK(fab.efficiency == doctest::Approx(0.8).epsilon(0.01));
  REQUIRE(fab.collectives.size() == 1);
  CHECK(fab.collectives[0].ranks == 2);  // the pair the cost model prices a send/recv as
  CHECK(fab.collectives[0].per_node == 1);
  // On one node the same ring is an NVLink pair.
  CollectivePoint one{Collective::kSendRecv, "", 8, 8, Bytes::MiB(1), Duration::Microseconds(9)};
  CHECK_FALSE(one.CrossesNodes());
}

}  // namespace
}  // namespace parasim
