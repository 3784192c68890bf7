// Collective algorithms, one object each: an algorithm's time for a collective is written once,
// as a sum of terms (CollectiveTerms), which the pricer evaluates at the fabrics' rates
// (PriceCollective, behind CostModel::CollectiveTime) and the fitter reads as a line in the
// crossed fabric's alpha and 1 / efficiency (FitFeature, `parasim fit`). An algorithm is a
// registry row in collective_algorithm.cc: the cases it runs and its terms; the pricer and the
// fitter have no formula of their own, so they cannot disagree, and collective_algorithm_test
// fails for an Algo without a row.
//
//   const CollectiveCase k = CollectiveCase::Of(Collective::kAllReduce, Bytes::GiB(1), {16, 8});
//   CollectiveCost best = PriceCollective(cluster, k);              // the cheapest that runs
//   CollectiveCost tree = PriceWith(cluster, k, Algo::kTree);       // one algorithm
//   CollectiveFeature f = FitFeature(cluster, k, Algo::kTree);
//   // tree.time ~= f.known_s + f.steps x alpha + f.nominal_s / efficiency (of the NICs here)
//
// The algorithms follow NCCL's own model (src/graph/tuning.cc, NCCL 2.18-2.23), with the
// fabric's alpha and bus efficiency, or a profile's fit for the exact case:
//   ring:   (n-1) steps (AG, RS; 2(n-1) for AR), of which only (nodes-1) (2(nodes-1)) cross a
//           node boundary: a ring visits every GPU of a node before leaving it, so the other
//           steps pay NVLink latency. Every member's NIC share carries the ring (multi-channel).
//   tree:   all-reduce only, at about the ring's bandwidth: a double binary tree over the nodes
//           (2 log2 nodes network steps) and a chain through each node (2 (per_node-1) NVLink).
//   hierarchical all-reduce: reduce-scatter in the node, all-reduce across nodes, all-gather in
//           the node.
//   PAT:    all-gather and reduce-scatter with one GPU per node (NCCL 2.23+, "parallel
//           aggregated trees"): log2(n) network steps at the ring's bandwidth.
//   direct: send/recv, and all-to-all across nodes (every pair at once).
// The cheapest algorithm that runs a case wins, as NCCL's tuner picks by its own cost model.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "hardware/spec.h"
#include "sim/status.h"
#include "sim/units.h"

namespace parasim {

std::string_view AlgoName(Algo a);
StatusOr<Algo> ParseAlgo(std::string_view s);   // ring, tree, hierarchical, direct, pat
std::string_view CollectiveName(Collective c);  // all_reduce, all_gather, ... (nccl-tests names)
StatusOr<Collective> ParseCollective(std::string_view s);
std::vector<std::string_view> AlgoNames();
std::vector<std::string_view> CollectiveNames();

// Bus-bandwidth factor of NCCL's nccl-tests: busbw = algbw x factor.
double BusFactor(Collective c, int64_t n);

// Where a communication group's members sit: `size` ranks, `per_node` of them on each node.
struct GroupPlacement {
  int64_t size = 1;
  int64_t per_node = 1;
  bool beyond_pod = false;  // crosses the full-bisection pod boundary (oversubscribed)
};

struct CollectiveCost {
  Duration time;            // total, alone on the fabric
  Duration latency;         // the alpha part
  Bytes bus_bytes;          // bytes over the bottleneck per GPU (NCCL busbw x time)
  Bandwidth bus_bandwidth;  // achieved bus bandwidth of the bottleneck
  bool inter_node = false;
  Algo algo = Algo::kRing;
};

// One collective to price: the operation, its data and its group's shape.
struct CollectiveCase {
  Collective op = Collective::kAllReduce;
  double bytes = 0;      // D, per GPU
  int64_t ranks = 1;     // n
  int64_t per_node = 1;  // in [1, n]
  int64_t nodes = 1;     // ceil(n / per_node)
  // All-to-all: the share of its off-node bytes the network carries (below 1 when routing sends
  // a token once per node and fans it out on NVLink there; MoeSpec::node_limit).
  double network_share = 1.0;
  bool beyond_pod = false;
  // The case crosses the network: its fabric (the one priced and fitted) is the NICs, else
  // NVLink. A send/recv crosses it when its ranks sit one per node.
  bool inter = false;

  static CollectiveCase Of(Collective op, Bytes data, GroupPlacement g, double network_share = 1.0);
};

// The rate a part of an algorithm's data moves at.
enum class Link {
  kFabric,  // the crossed fabric's per-GPU bandwidth at its efficiency (NICs, or NVLink in a node)
  kNvlink,  // NVLink inside each node of a case that crosses nodes (fixed when the NICs are fit)
  // The slower of NVLink and per_node NIC shares: a flat ring leaves a node through every
  // member's NIC share in parallel, so the node boundary carries per_node x nic_share (DGX
  // A100: 8 x 24 = 192 GB/s bus bandwidth, as measured in nccl#812), and runs no faster than
  // NVLink.
  kRing,
};

struct Transfer {
  double bytes = 0;
  Link link = Link::kFabric;
};

// One algorithm's time for one case:
//   time = alpha x steps + NVLink latency x nvlink_steps + the transfers' times,
// the transfers summed, or overlapped (the longest counts). alpha is the crossed fabric's
// latency per step.
struct CollectiveTerms {
  double steps = 0;
  double nvlink_steps = 0;
  std::array<Transfer, 2> transfers{};
  int num_transfers = 1;
  bool overlap = false;
  // The bus bandwidth reported for two transfers (their time is replayed as bytes at it).
  Link reported = Link::kFabric;
};

// The rates a case is priced at.
struct CollectiveRates {
  Duration alpha;           // the crossed fabric's latency per step
  Bandwidth fabric;         // its per-GPU bandwidth at its efficiency
  Duration nvlink_latency;  // NVLink's latency per step
  Bandwidth nvlink;         // NVLink's achieved bandwidth per GPU, one direction
};

// What the fitter solves for a case:
//   time = known_s + steps x alpha + nominal_s / efficiency,
// alpha and efficiency being the crossed fabric's (seconds throughout).
struct CollectiveFeature {
  double known_s = 0;    // the part that depends on neither
  double steps = 0;      // alpha's coefficient
  double nominal_s = 0;  // the transfer at efficiency 1: 1 / efficiency's coefficient
};

// A registry row: whether the algorithm runs a case, and its terms there.
struct CollectiveAlgorithm {
  Algo algo = Algo::kRing;
  bool (*runs)(const CollectiveCase& k) = nullptr;
  CollectiveTerms (*terms)(const CollectiveCase& k) = nullptr;
};

// The row of `a`, or null when the registry has none.
const CollectiveAlgorithm* FindCollectiveAlgorithm(Algo a);

// The terms evaluated at `r`: the time in integer picoseconds, its latency, and the bus bytes
// and bandwidth the replay moves it as.
CollectiveCost PriceTerms(const CollectiveTerms& t, const CollectiveCase& k,
                          const CollectiveRates& r, Algo algo);
// The terms as a line in the crossed fabric's alpha and 1 / efficiency at `r`, `nominal` being
// its bandwidth at efficiency 1 (r.fabric = nominal x efficiency). A min or max between rates
// (kRing, overlapped transfers) takes the branch that `r` makes the slower.
CollectiveFeature FeatureOfTerms(const CollectiveTerms& t, const CollectiveCase& k,
                                 const CollectiveRates& r, Bandwidth nominal);

// A GPU's achieved NVLink bandwidth (one direction), and its achieved share of its node's NICs.
Bandwidth AchievedIntraBandwidth(const ClusterSpec& c);
Bandwidth AchievedNicShare(const ClusterSpec& c);
// The fabric-wide rates of the fabric `k` crosses (an oversubscribed pod divides the NICs').
CollectiveRates FabricRates(const ClusterSpec& c, const CollectiveCase& k);
// Those, with a profile's fit for (op, algo, ranks, per_node) in place of the fabric's alpha
// and efficiency where the fabric has one (FabricSpec::collectives).
CollectiveRates RatesFor(const ClusterSpec& c, const CollectiveCase& k, Algo algo);
// The crossed fabric's per-GPU bandwidth at efficiency 1: NVLink's, or a GPU's share of its
// node's NICs.
Bandwidth NominalBandwidth(const ClusterSpec& c, bool inter);

// `k` priced with `algo` at RatesFor; the algorithm must run `k`.
CollectiveCost PriceWith(const ClusterSpec& c, const CollectiveCase& k, Algo algo);
// The cheapest algorithm that runs `k` (on a tie, the first in Algo order), priced; nothing
// runs a collective of one rank, which costs nothing.
CollectiveCost PriceCollective(const ClusterSpec& c, const CollectiveCase& k);
// `k` under `algo` as the fitter sees it, at the cluster's fabric-wide rates.
CollectiveFeature FitFeature(const ClusterSpec& c, const CollectiveCase& k, Algo algo);

}  // namespace parasim
