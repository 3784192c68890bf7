#include "hardware/collective_algorithm.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "sim/enum_names.h"

namespace parasim {
namespace {

constexpr EnumNames<Algo, 5> kAlgos("algorithm", {{{Algo::kRing, "ring"},
                                                   {Algo::kTree, "tree"},
                                                   {Algo::kHierarchical, "hierarchical"},
                                                   {Algo::kDirect, "direct"},
                                                   {Algo::kPat, "pat"}}});
constexpr EnumNames<Collective, 6> kCollectives("collective",
                                                {{{Collective::kAllReduce, "all_reduce"},
                                                  {Collective::kReduceScatter, "reduce_scatter"},
                                                  {Collective::kAllGather, "all_gather"},
                                                  {Collective::kAllToAll, "alltoall"},
                                                  {Collective::kBroadcast, "broadcast"},
                                                  {Collective::kSendRecv, "sendrecv"}}});

// Algorithm steps of a pass over `ranks` (all-reduce makes two passes).
double Steps(Collective c, int64_t ranks) {
  return c == Collective::kAllReduce ? 2.0 * static_cast<double>(ranks - 1)
                                     : static_cast<double>(ranks - 1);
}

double TreeDepth(const CollectiveCase& k) {
  return std::ceil(std::log2(static_cast<double>(k.ranks)));
}

// NCCL's log2i: floor(log2 n), n >= 1.
double Log2i(int64_t n) {
  double l = 0;
  while (n >>= 1) ++l;
  return l;
}

CollectiveTerms OneTransfer(double steps, double nvlink_steps, double bytes, Link link) {
  CollectiveTerms t;
  t.steps = steps;
  t.nvlink_steps = nvlink_steps;
  t.transfers[0] = {bytes, link};
  return t;
}

// Ring: every collective but send/recv, except an all-to-all across nodes. Within a node it is
// NVLink's alone; across nodes it crosses the network (nodes - 1) times per pass, and its other
// steps are NVLink's.
bool RingRuns(const CollectiveCase& k) {
  if (k.op == Collective::kSendRecv || k.ranks <= 1) return false;
  return !(k.op == Collective::kAllToAll && k.inter);
}
CollectiveTerms RingTerms(const CollectiveCase& k) {
  const double bus = BusFactor(k.op, k.ranks) * k.bytes;
  if (!k.inter) return OneTransfer(Steps(k.op, k.ranks), 0, bus, Link::kFabric);
  const double inter_steps = Steps(k.op, k.nodes);
  return OneTransfer(inter_steps, Steps(k.op, k.ranks) - inter_steps, bus, Link::kRing);
}

// Tree: all-reduce across nodes, a double binary tree over the nodes and a chain through each
// node's GPUs, up and down: 2 log2(nodes) network steps and 2 (per_node - 1) NVLink steps, as
// NCCL's own model prices it (src/graph/tuning.cc: 2 ((nRanks / nNodes - 1) intraLat +
// log2i(nNodes) interLat)). It had taken 2 log2(n) network steps over all n ranks and none on
// NVLink: 144 GPUs of two NVL72 racks then all-reduced faster than the 72 of one, by its ring.
bool TreeRuns(const CollectiveCase& k) { return k.op == Collective::kAllReduce && k.inter; }
CollectiveTerms TreeTerms(const CollectiveCase& k) {
  return OneTransfer(2 * Log2i(k.nodes), 2 * static_cast<double>(k.per_node - 1),
                     BusFactor(k.op, k.ranks) * k.bytes, Link::kRing);
}

// Hierarchical all-reduce: reduce-scatter in the node, all-reduce across nodes, all-gather in
// the node; the bus bandwidth it reports is the ring's.
bool HierarchicalRuns(const CollectiveCase& k) { return TreeRuns(k) && k.per_node > 1; }
CollectiveTerms HierarchicalTerms(const CollectiveCase& k) {
  const double g = static_cast<double>(k.per_node), N = static_cast<double>(k.nodes);
  CollectiveTerms t;
  t.steps = 2 * (N - 1);
  t.nvlink_steps = 2 * (g - 1);
  t.transfers = {
      {{2 * (g - 1) / g * k.bytes, Link::kNvlink}, {2 * (N - 1) / N * k.bytes / g, Link::kFabric}}};
  t.num_transfers = 2;
  t.reported = Link::kRing;
  return t;
}

// Direct: send/recv between two ranks (over NVLink on one node, else over the NIC share), and
// all-to-all across nodes: each GPU sends (n - per_node)/n of D off the node through its NIC
// share while (per_node - 1)/n of it goes over NVLink, the longer of the two counting; it is
// reported as bytes over the NIC share so that replayed flows share it correctly.
bool DirectRuns(const CollectiveCase& k) {
  return k.op == Collective::kSendRecv || (k.op == Collective::kAllToAll && k.inter);
}
CollectiveTerms DirectTerms(const CollectiveCase& k) {
  if (k.op == Collective::kSendRecv) return OneTransfer(1, 0, k.bytes, Link::kFabric);
  const double n = static_cast<double>(k.ranks);
  CollectiveTerms t;
  t.steps = static_cast<double>(k.nodes - 1);
  t.nvlink_steps = 1;
  t.transfers = {
      {{k.bytes * k.network_share * static_cast<double>(k.ranks - k.per_node) / n, Link::kFabric},
       {k.bytes * static_cast<double>(k.per_node - 1) / n, Link::kNvlink}}};
  t.num_transfers = 2;
  t.overlap = true;
  return t;
}

// PAT: all-gather and reduce-scatter across nodes with one GPU per node, log2(n) network steps.
bool PatRuns(const CollectiveCase& k) {
  return (k.op == Collective::kAllGather || k.op == Collective::kReduceScatter) && k.inter &&
         k.per_node == 1;
}
CollectiveTerms PatTerms(const CollectiveCase& k) {
  return OneTransfer(TreeDepth(k), 0, BusFactor(k.op, k.ranks) * k.bytes, Link::kRing);
}

// Indexed by Algo.
constexpr CollectiveAlgorithm kAlgorithms[] = {
    {Algo::kRing, RingRuns, RingTerms},
    {Algo::kTree, TreeRuns, TreeTerms},
    {Algo::kHierarchical, HierarchicalRuns, HierarchicalTerms},
    {Algo::kDirect, DirectRuns, DirectTerms},
    {Algo::kPat, PatRuns, PatTerms},
};
constexpr bool InAlgoOrder() {
  for (size_t i = 0; i < std::size(kAlgorithms); ++i) {
    if (static_cast<size_t>(kAlgorithms[i].algo) != i) return false;
  }
  return true;
}
static_assert(InAlgoOrder(), "kAlgorithms is indexed by Algo");

Bandwidth RateOf(Link link, const CollectiveCase& k, const CollectiveRates& r) {
  switch (link) {
    case Link::kFabric:
      return r.fabric;
    case Link::kNvlink:
      return r.nvlink;
    case Link::kRing:
      return Bandwidth(std::min(r.nvlink.bytes_per_second(),
                                r.fabric.bytes_per_second() * static_cast<double>(k.per_node)));
  }
  return r.fabric;
}

Duration TimeOf(const Transfer& x, const CollectiveCase& k, const CollectiveRates& r) {
  return TransferTime(Bytes(x.bytes), RateOf(x.link, k, r));
}

// Adds one transfer to `f`: over a rate fixed while the crossed fabric is fitted, to the known
// part; over the crossed fabric, to the nominal seconds.
void AddTransfer(const Transfer& x, const CollectiveCase& k, const CollectiveRates& r,
                 Bandwidth nominal, CollectiveFeature* f) {
  const double per_node = static_cast<double>(k.per_node);
  const bool nvlink = x.link == Link::kNvlink ||
                      (x.link == Link::kRing &&
                       r.nvlink.bytes_per_second() < r.fabric.bytes_per_second() * per_node);
  if (nvlink) {
    f->known_s += x.bytes / r.nvlink.bytes_per_second();
  } else if (x.link == Link::kRing) {
    f->nominal_s += x.bytes / (nominal.bytes_per_second() * per_node);
  } else {
    f->nominal_s += x.bytes / nominal.bytes_per_second();
  }
}

}  // namespace

std::string_view AlgoName(Algo a) { return kAlgos.Name(a); }
StatusOr<Algo> ParseAlgo(std::string_view s) { return kAlgos.Parse(s); }
std::vector<std::string_view> AlgoNames() { return kAlgos.Names(); }
std::string_view CollectiveName(Collective c) { return kCollectives.Name(c); }
StatusOr<Collective> ParseCollective(std::string_view s) { return kCollectives.Parse(s); }
std::vector<std::string_view> CollectiveNames() { return kCollectives.Names(); }

double BusFactor(Collective c, int64_t n) {
  if (n <= 1) return 0;
  const double nn = static_cast<double>(n);
  switch (c) {
    case Collective::kAllReduce:
      return 2 * (nn - 1) / nn;
    case Collective::kReduceScatter:
    case Collective::kAllGather:
    case Collective::kAllToAll:
      return (nn - 1) / nn;
    case Collective::kBroadcast:
    case Collective::kSendRecv:
      return 1;
  }
  return 1;
}

CollectiveCase CollectiveCase::Of(Collective op, Bytes data, GroupPlacement g,
                                  double network_share) {
  CollectiveCase k;
  k.op = op;
  k.bytes = data.bytes();
  k.ranks = std::max<int64_t>(1, g.size);
  k.per_node = std::clamp<int64_t>(g.per_node, 1, k.ranks);
  k.nodes = (k.ranks + k.per_node - 1) / k.per_node;
  k.network_share = network_share;
  k.beyond_pod = g.beyond_pod;
  k.inter = op == Collective::kSendRecv ? k.per_node <= 1 && k.ranks > 1 : k.nodes > 1;
  return k;
}

const CollectiveAlgorithm* FindCollectiveAlgorithm(Algo a) {
  const size_t i = static_cast<size_t>(a);
  return i < std::size(kAlgorithms) ? &kAlgorithms[i] : nullptr;
}

CollectiveCost PriceTerms(const CollectiveTerms& t, const CollectiveCase& k,
                          const CollectiveRates& r, Algo algo) {
  CollectiveCost out;
  out.latency = r.alpha * t.steps + r.nvlink_latency * t.nvlink_steps;
  out.inter_node = k.inter;
  out.algo = algo;
  if (t.num_transfers == 1) {
    out.bus_bytes = Bytes(t.transfers[0].bytes);
    out.bus_bandwidth = RateOf(t.transfers[0].link, k, r);
    out.time = out.latency + TransferTime(out.bus_bytes, out.bus_bandwidth);
    return out;
  }
  const Duration a = TimeOf(t.transfers[0], k, r), b = TimeOf(t.transfers[1], k, r);
  out.bus_bandwidth = RateOf(t.reported, k, r);
  if (t.overlap) {
    // The longer transfer as bytes at the reported rate.
    out.bus_bytes = Bytes(Max(a, b).seconds() * out.bus_bandwidth.bytes_per_second());
    out.time = out.latency + TransferTime(out.bus_bytes, out.bus_bandwidth);
  } else {
    out.time = out.latency + (a + b);
    out.bus_bytes =
        Bytes((out.time - out.latency).seconds() * out.bus_bandwidth.bytes_per_second());
  }
  return out;
}

CollectiveFeature FeatureOfTerms(const CollectiveTerms& t, const CollectiveCase& k,
                                 const CollectiveRates& r, Bandwidth nominal) {
  CollectiveFeature f;
  f.steps = t.steps;
  f.known_s = r.nvlink_latency.seconds() * t.nvlink_steps;
  if (t.overlap) {
    // Only the transfer that takes longer at `r` counts.
    const bool second = TimeOf(t.transfers[0], k, r) < TimeOf(t.transfers[1], k, r);
    AddTransfer(t.transfers[second ? 1 : 0], k, r, nominal, &f);
    return f;
  }
  for (int i = 0; i < t.num_transfers; ++i) AddTransfer(t.transfers[i], k, r, nominal, &f);
  return f;
}

Bandwidth AchievedIntraBandwidth(const ClusterSpec& c) {
  return c.intra.bandwidth * c.intra.efficiency;
}

Bandwidth AchievedNicShare(const ClusterSpec& c) {
  return c.inter.bandwidth * (c.inter.efficiency * c.nics() / std::max(1, c.gpus_per_node));
}

namespace {
double PodFactor(const ClusterSpec& c, const CollectiveCase& k) {
  return k.beyond_pod ? c.oversubscription : 1.0;
}
}  // namespace

CollectiveRates FabricRates(const ClusterSpec& c, const CollectiveCase& k) {
  CollectiveRates r;
  r.nvlink = AchievedIntraBandwidth(c);
  r.nvlink_latency = c.intra.latency;
  r.alpha = k.inter ? c.inter.latency : c.intra.latency;
  r.fabric = k.inter ? AchievedNicShare(c) / PodFactor(c, k) : r.nvlink;
  return r;
}

CollectiveRates RatesFor(const ClusterSpec& c, const CollectiveCase& k, Algo algo) {
  CollectiveRates r = FabricRates(c, k);
  const FabricSpec& fabric = k.inter ? c.inter : c.intra;
  const FabricSpec::CollectiveFit* f = fabric.FindCollective(k.op, algo, k.ranks, k.per_node);
  if (f == nullptr) return r;
  r.alpha = f->latency;
  r.fabric = k.inter ? c.inter.bandwidth * (f->efficiency * c.nics() /
                                            std::max(1, c.gpus_per_node) / PodFactor(c, k))
                     : c.intra.bandwidth * f->efficiency;
  return r;
}

Bandwidth NominalBandwidth(const ClusterSpec& c, bool inter) {
  if (!inter) return c.intra.bandwidth;
  return Bandwidth(c.inter.bandwidth.bytes_per_second() * c.nics() / std::max(1, c.gpus_per_node));
}

CollectiveCost PriceWith(const ClusterSpec& c, const CollectiveCase& k, Algo algo) {
  const CollectiveAlgorithm* a = FindCollectiveAlgorithm(algo);
  assert(a != nullptr && a->runs(k));
  return PriceTerms(a->terms(k), k, RatesFor(c, k, algo), algo);
}

CollectiveCost PriceCollective(const ClusterSpec& c, const CollectiveCase& k) {
  CollectiveCost best;
  bool any = false;
  for (const CollectiveAlgorithm& a : kAlgorithms) {
    if (!a.runs(k)) continue;
    const CollectiveCost x = PriceTerms(a.terms(k), k, RatesFor(c, k, a.algo), a.algo);
    if (!any || x.time < best.time) best = x;
    any = true;
  }
  return best;
}

CollectiveFeature FitFeature(const ClusterSpec& c, const CollectiveCase& k, Algo algo) {
  const CollectiveAlgorithm* a = FindCollectiveAlgorithm(algo);
  assert(a != nullptr);
  const Bandwidth nominal = NominalBandwidth(c, k.inter) / (k.inter ? PodFactor(c, k) : 1.0);
  return FeatureOfTerms(a->terms(k), k, FabricRates(c, k), nominal);
}

}  // namespace parasim
