// Contract tests of the collective algorithms, run against every Algo the name table lists (a
// new algorithm is covered as soon as it has a name): each has a registry row that prices it and
// gives the fitter its features, the two agree on a grid of sizes and group shapes, and the
// pricer takes the cheapest algorithm that runs a case.
#include "hardware/collective_algorithm.h"

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "hardware/cost_model.h"

namespace parasim {
namespace {

std::vector<Algo> AllAlgos() {
  std::vector<Algo> out;
  for (std::string_view name : AlgoNames()) out.push_back(*ParseAlgo(name));
  return out;
}

std::vector<Collective> AllCollectives() {
  std::vector<Collective> out;
  for (std::string_view name : CollectiveNames()) out.push_back(*ParseCollective(name));
  return out;
}

// The registry row of `a`; the test stops when there is none.
const CollectiveAlgorithm& Row(Algo a) {
  const CollectiveAlgorithm* row = FindCollectiveAlgorithm(a);
  REQUIRE_MESSAGE(row != nullptr, "add the algorithm to kAlgorithms in collective_algorithm.cc");
  return *row;
}

ClusterSpec Cluster(const char* gpu, const char* intra, const char* inter, int nodes) {
  HardwareCatalog cat = *LoadHardwareCatalog();
  ClusterSpec c;
  c.gpu = *cat.FindGpu(gpu);
  c.intra = *cat.FindFabric(intra);
  c.inter = *cat.FindFabric(inter);
  c.nodes = nodes;
  c.gpus_per_node = 8;
  return c;
}

// Clusters whose rates take every branch: NVLink faster than a node's NICs (H100), a ring bound
// by NVLink and an all-to-all by its NVLink part (NVLink slowed below the NICs), and fewer NICs
// than GPUs with an oversubscribed pod.
std::vector<ClusterSpec> Clusters() {
  ClusterSpec h100 = Cluster("h100-sxm5-80gb", "nvlink4-h100", "ib-ndr-400g", 64);
  h100.intra.efficiency = 0.71;
  h100.intra.latency = Duration::Microseconds(2.5);
  h100.inter.efficiency = 0.83;
  h100.inter.latency = Duration::Microseconds(9);
  ClusterSpec slow_nvlink = h100;
  slow_nvlink.intra.bandwidth = Bandwidth::GBps(20);
  ClusterSpec a100 = Cluster("a100-sxm4-80gb", "nvlink3-a100", "ib-hdr-200g", 64);
  a100.nics_per_node = 4;
  a100.oversubscription = 2;
  return {h100, slow_nvlink, a100};
}

// Every case of the grid: each collective, 1 KiB to 8 GiB, groups of 2 to 512 ranks at 1 to 8
// a node, inside and beyond the pod, with an all-to-all's network share below 1 too.
std::vector<CollectiveCase> Cases() {
  std::vector<CollectiveCase> out;
  for (Collective op : AllCollectives()) {
    for (double bytes : {1024.0, 1048576.0, 64.0 * (1 << 20), 8.0 * (1 << 30)}) {
      for (int64_t ranks : {2, 3, 8, 16, 24, 64, 512}) {
        for (int64_t per_node : {1, 2, 4, 8}) {
          for (bool beyond_pod : {false, true}) {
            const GroupPlacement g{ranks, per_node, beyond_pod};
            out.push_back(CollectiveCase::Of(op, Bytes(bytes), g));
            if (op == Collective::kAllToAll) {
              out.push_back(CollectiveCase::Of(op, Bytes(bytes), g, 0.4));
            }
          }
        }
      }
    }
  }
  return out;
}

TEST_CASE("every algorithm has a registry row that prices it and gives the fitter its features") {
  const std::vector<CollectiveCase> cases = Cases();
  const ClusterSpec cluster = Clusters()[0];
  for (Algo a : AllAlgos()) {
    CAPTURE(AlgoName(a));
    const CollectiveAlgorithm* row = &Row(a);
    CHECK(row->algo == a);
    REQUIRE((row->runs != nullptr));
    REQUIRE((row->terms != nullptr));
    // It runs some case, and there it has a time and a fit feature that depends on the fabric.
    int runs = 0;
    for (const CollectiveCase& k : cases) {
      if (!row->runs(k)) continue;
      ++runs;
      const CollectiveTerms t = row->terms(k);
      CHECK(t.num_transfers >= 1);
      CHECK(t.num_transfers <= static_cast<int>(t.transfers.size()));
      const CollectiveFeature f = FitFeature(cluster, k, a);
      CHECK(f.steps + f.nominal_s > 0);
    }
    CHECK(runs > 0);
  }
}

TEST_CASE("each algorithm's fit feature reproduces its price on a grid of sizes and groups") {
  // price = known + steps x alpha + nominal / efficiency, alpha and efficiency being those of
  // the fabric the case crosses; to the picosecond rounding of the pricer's terms.
  int overlapped_nvlink = 0, ring_nvlink = 0;
  const std::vector<CollectiveCase> cases = Cases();
  for (const ClusterSpec& c : Clusters()) {
    CAPTURE(c.gpu.id);
    CAPTURE(c.intra.bandwidth.gbps());
    for (Algo a : AllAlgos()) {
      CAPTURE(AlgoName(a));
      const CollectiveAlgorithm& row = Row(a);
      int checked = 0;
      for (const CollectiveCase& k : cases) {
        if (!row.runs(k)) continue;
        CAPTURE(CollectiveName(k.op));
        CAPTURE(k.bytes);
        CAPTURE(k.ranks);
        CAPTURE(k.per_node);
        CAPTURE(k.network_share);
        CAPTURE(k.beyond_pod);
        const CollectiveCost price = PriceWith(c, k, a);
        const CollectiveFeature f = FitFeature(c, k, a);
        const FabricSpec& fabric = k.inter ? c.inter : c.intra;
        const double line =
            f.known_s + f.steps * fabric.latency.seconds() + f.nominal_s / fabric.efficiency;
        CHECK(std::abs(line - price.time.seconds()) <= 1e-9 * price.time.seconds() + 4e-12);
        if (f.nominal_s == 0 && k.op == Collective::kAllToAll && k.inter) ++overlapped_nvlink;
        if (f.nominal_s == 0 && a != Algo::kDirect && k.inter) ++ring_nvlink;
        ++checked;
      }
      CHECK(checked > 0);
    }
  }
  // The grid took the branches where NVLink, not the NICs, sets the time.
  CHECK(overlapped_nvlink > 0);
  CHECK(ring_nvlink > 0);
}

TEST_CASE("the pricer takes the cheapest algorithm that runs a case, the first of equals") {
  const std::vector<CollectiveCase> cases = Cases();
  for (const ClusterSpec& c : Clusters()) {
    const CostModel cm(c, Dtype::kBf16);
    for (const CollectiveCase& k : cases) {
      CAPTURE(CollectiveName(k.op));
      CAPTURE(k.ranks);
      CAPTURE(k.per_node);
      CAPTURE(k.bytes);
      const CollectiveCost got = cm.CollectiveTime(
          k.op, Bytes(k.bytes), {k.ranks, k.per_node, k.beyond_pod}, k.network_share);
      bool any = false;
      for (Algo a : AllAlgos()) {
        if (!Row(a).runs(k)) continue;
        const CollectiveCost x = PriceWith(c, k, a);
        CHECK(got.time <= x.time);
        if (!any) CHECK((got.algo == a || got.time < x.time));
        any = true;
      }
      if (!any) CHECK(got.time == Duration::Zero());
      CHECK(got.inter_node == k.inter);
    }
  }
}

TEST_CASE("cases: one rank costs nothing but a send/recv; a send/recv crosses nodes one a node") {
  const ClusterSpec c = Clusters()[0];
  const CollectiveCase one = CollectiveCase::Of(Collective::kAllReduce, Bytes::MiB(1), {1, 1});
  CHECK(PriceCollective(c, one).time == Duration::Zero());
  const CollectiveCase self = CollectiveCase::Of(Collective::kSendRecv, Bytes::MiB(1), {1, 1});
  CHECK_FALSE(self.inter);
  CHECK(PriceCollective(c, self).algo == Algo::kDirect);
  CHECK(PriceCollective(c, self).time > Duration::Zero());
  const CollectiveCase pair = CollectiveCase::Of(Collective::kSendRecv, Bytes::MiB(1), {2, 1});
  CHECK(pair.inter);
  CHECK(pair.nodes == 2);
  // Three ranks two a node: the group spans two nodes, but a send/recv's pair shares one.
  const CollectiveCase three = CollectiveCase::Of(Collective::kSendRecv, Bytes::MiB(1), {3, 2});
  CHECK(three.nodes == 2);
  CHECK_FALSE(three.inter);
  const CollectiveCase clamped = CollectiveCase::Of(Collective::kAllGather, Bytes::MiB(1), {4, 9});
  CHECK(clamped.per_node == 4);
  CHECK_FALSE(clamped.inter);
}

TEST_CASE("the tree: a double binary tree over the nodes, a chain through each node's GPUs") {
  // NCCL's own model (src/graph/tuning.cc): 2 log2i(nodes) network steps and 2 (per_node - 1)
  // NVLink steps; it had been 2 log2(ranks) network steps and none on NVLink.
  const CollectiveCase dgx = CollectiveCase::Of(Collective::kAllReduce, Bytes::KiB(64), {128, 8});
  const CollectiveTerms t = Row(Algo::kTree).terms(dgx);
  CHECK(t.steps == 8);  // 2 x log2(16 nodes)
  CHECK(t.nvlink_steps == 14);
  const CollectiveCase three = CollectiveCase::Of(Collective::kAllReduce, Bytes::KiB(64), {24, 8});
  CHECK(Row(Algo::kTree).terms(three).steps == 2);  // log2i(3) = 1, as NCCL rounds it
  // Two NVL72 racks all-reduce no faster than one: the chain through a rack is as long as the
  // rack's ring (144 GPUs had been priced 2 x 8 network steps, under one rack's 142 on NVLink).
  ClusterSpec gb = Cluster("gb200", "nvlink5", "ib-ndr-400g", 36);
  gb.gpus_per_node = 4;
  for (double kib : {8.0, 64.0, 1024.0}) {
    CAPTURE(kib);
    const Bytes d = Bytes::KiB(kib);
    const CollectiveCost one =
        PriceCollective(gb, CollectiveCase::Of(Collective::kAllReduce, d, {72, 72}));
    const CollectiveCost two =
        PriceCollective(gb, CollectiveCase::Of(Collective::kAllReduce, d, {144, 72}));
    CHECK(two.time >= one.time);
  }
}

TEST_CASE("a profile's fit for a case replaces the fabric's alpha and beta for that case alone") {
  ClusterSpec c = Clusters()[0];
  c.inter.collectives = {
      {Collective::kAllReduce, Algo::kTree, 16, 8, 0.5, Duration::Microseconds(30)}};
  const CollectiveCase k = CollectiveCase::Of(Collective::kAllReduce, Bytes::MiB(1), {16, 8});
  const CollectiveRates tree = RatesFor(c, k, Algo::kTree);
  CHECK(tree.alpha == Duration::Microseconds(30));
  CHECK(tree.fabric.bytes_per_second() ==
        doctest::Approx(NominalBandwidth(c, true).bytes_per_second() * 0.5));
  const CollectiveRates ring = RatesFor(c, k, Algo::kRing);
  CHECK(ring.alpha == c.inter.latency);
  CHECK(ring.fabric.bytes_per_second() == doctest::Approx(AchievedNicShare(c).bytes_per_second()));
  // The fitter reads the fabric-wide rates: it fits them.
  CHECK(FabricRates(c, k).alpha == c.inter.latency);
}

}  // namespace
}  // namespace parasim
