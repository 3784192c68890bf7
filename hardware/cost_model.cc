#include "hardware/cost_model.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "sim/enum_names.h"

namespace parasim {
namespace {

// Output tiles of the large cuBLAS/CUTLASS kernels a GEMM's wave quantisation is judged by: the
// 128 x 128 CTA tile of the Ampere/Hopper bf16 kernels chosen for large problems, and the
// 128 x 64 and 64 x 128 ones the heuristics take when the big tile leaves a wave part-empty. The
// smaller tiles are kept because the H100 measurements in hardware/profiles/h100-sxm5-80gb-
// 2026-11-22-measurements (123 bf16 shapes with dimensions a multiple of 64 and at least 20
// GFLOP) say so: with them the spread of log(predicted / measured) efficiency falls from 0.113
// to 0.089; adding 128 x 256 and 256 x 128 changes nothing (docs/MODEL.md, "GEMM efficiency").
// And the dimension at which a GEMM dimension runs at half efficiency through pipeline fill and
// memory traffic (a smooth x / (x + 64) penalty: half the tile edge; on the same measurements
// 64 fits as well as 128 and better than 256; `parasim fit` replaces the curve with
// measurements).
constexpr std::pair<double, double> kTiles[] = {{128, 128}, {128, 64}, {64, 128}};
constexpr double kHalfDim = 64;

}  // namespace

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

CostModel::CostModel(const ClusterSpec& cluster, Dtype precision)
    : cluster_(cluster), precision_(precision) {
  shape_norm_ = ShapeFactor(8192, 8192, 8192);
  base_gemm_efficiency_ =
      precision == Dtype::kFp8 ? cluster.gpu.Fp8GemmEfficiency() : cluster.gpu.gemm_efficiency;
  for (const GemmShapeFit& g : cluster.gpu.gemm_shapes) {
    // Exact dtype first; the other 16-bit type (same tensor-core rate) fills the gaps.
    const bool sixteen = [](Dtype d) { return d == Dtype::kBf16 || d == Dtype::kFp16; }(g.dtype);
    const bool sibling = sixteen && (precision == Dtype::kBf16 || precision == Dtype::kFp16);
    if (g.dtype == precision) {
      measured_shapes_[{g.m, g.n, g.k}] = g.efficiency;
    } else if (sibling) {
      measured_shapes_.emplace(std::tuple{g.m, g.n, g.k}, g.efficiency);
    }
  }
}

double CostModel::ShapeCurve(int64_t m, int64_t n, int64_t k) const {
  return ShapeFactor(m, n, k) / shape_norm_;
}

double CostModel::ShapeFactor(int64_t m, int64_t n, int64_t k) const {
  const double sms = std::max(1, cluster_.gpu.sms);
  // The best-filled last wave among the tiles (the filled fraction of all waves' slots). A GEMM
  // of less than one wave of 128x128 tiles is off the curve either way (cuBLAS splits K there):
  // docs/MODEL.md, "GEMM efficiency".
  double wave_eff = 0;
  for (const auto& [tile_m, tile_n] : kTiles) {
    const double tiles = std::ceil(m / tile_m) * std::ceil(n / tile_n);
    const double waves = std::ceil(tiles / sms);
    wave_eff = std::max(wave_eff, tiles / (waves * sms));
  }
  auto dim = [](double x) { return x / (x + kHalfDim); };
  return wave_eff * dim(static_cast<double>(m)) * dim(static_cast<double>(n)) *
         dim(static_cast<double>(k));
}

double CostModel::GemmEfficiency(int64_t m, int64_t n, int64_t k) const {
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  if (!measured_shapes_.empty()) {
    auto it = measured_shapes_.find({m, n, k});
    if (it != measured_shapes_.end()) return it->second;
  }
  return base_gemm_efficiency_ * ShapeFactor(m, n, k) / shape_norm_;
}

Duration CostModel::GemmTime(int64_t m, int64_t n, int64_t k, int64_t batch) const {
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) return Duration::Zero();
  // A batched GEMM fills the GPU like one GEMM with `batch` times the rows.
  const double eff = GemmEfficiency(m * batch, n, k);
  const Flops flops(2.0 * m * n * k * batch);
  const Bytes bytes(DtypeBytes(precision_) * batch * (m * k + k * n + m * n));
  Duration compute = ComputeTime(flops, Peak() * (eff * cluster_.gpu.sustained_factor));
  Duration memory = MemoryTime(bytes);
  return Max(compute, memory) + Launch();
}

double CostModel::AttentionEfficiency(bool backward, bool fused) const {
  const parasim::AttentionEfficiency& measured =
      fused ? cluster_.gpu.attention_flash : cluster_.gpu.attention_standard;
  const double m = backward ? measured.backward : measured.forward;
  if (m > 0) return m;
  const double eff = cluster_.gpu.gemm_efficiency / kAttentionReferenceGemmEfficiency *
                     (backward ? kAttentionBackwardEfficiency : kAttentionForwardEfficiency);
  return std::min(eff, 0.95);
}

Duration CostModel::AttentionTime(Flops flops, Bytes bytes, bool backward, bool fused) const {
  // The attention core runs in 16-bit under FP8 training too (Transformer Engine's FP8 covers
  // the Linears; DeepSeek-V3 keeps attention operators in bf16, Sec. 3.3), and its efficiencies
  // are fitted against the 16-bit peak.
  const double eff = AttentionEfficiency(backward, fused);
  const FlopRate peak = precision_ == Dtype::kFp8 ? cluster_.gpu.Peak(Dtype::kBf16) : Peak();
  Duration compute = ComputeTime(flops, peak * (eff * cluster_.gpu.sustained_factor));
  return Max(compute, MemoryTime(bytes)) + Launch();
}

Duration CostModel::MemoryTime(Bytes bytes) const {
  return TransferTime(bytes, cluster_.gpu.hbm_bandwidth *
                                 (cluster_.gpu.memory_efficiency * cluster_.gpu.sustained_factor));
}

Duration CostModel::ElementwiseTime(Bytes bytes, double elements, double rate) const {
  const Duration traffic = MemoryTime(bytes);
  if (rate <= 0 || elements <= 0) return traffic;
  return Max(traffic, Duration::Seconds(elements / (rate * cluster_.gpu.sustained_factor)));
}

Bandwidth CostModel::IntraBandwidth() const {
  return cluster_.intra.bandwidth * cluster_.intra.efficiency;
}

Bandwidth CostModel::NicShare() const {
  return cluster_.inter.bandwidth *
         (cluster_.inter.efficiency * cluster_.nics() / std::max(1, cluster_.gpus_per_node));
}

namespace {

// Alpha-beta parameters of one fabric for one case.
struct AlphaBeta {
  Bandwidth bw;
  Duration alpha;
};

}  // namespace

// How NCCL prices and picks its algorithms (src/graph/tuning.cc, NCCL 2.18-2.23), here with
// the fabric's alpha and bus efficiency, or a profile's fit for the exact case:
//   ring:   (n-1) steps (AG, RS; 2(n-1) for AR), of which only (nodes-1) (2(nodes-1)) cross a
//           node boundary: a ring visits every GPU of a node before leaving it, so the other
//           steps pay NVLink latency. Every member's NIC share carries the ring (multi-channel).
//   tree:   all-reduce only, 2 log2(n) steps at about the ring's bandwidth (double binary tree).
//   hierarchical all-reduce: reduce-scatter in the node, all-reduce across nodes, all-gather in
//           the node.
//   PAT:    all-gather and reduce-scatter with one GPU per node (NCCL 2.23+, "parallel
//           aggregated trees"): log2(n) network steps at the ring's bandwidth.
// The cheapest applicable algorithm wins, as NCCL's tuner picks by its own cost model.
class CollectivePricer {
 public:
  CollectivePricer(const CostModel& cm, const ClusterSpec& cl, Collective c, Bytes data,
                   GroupPlacement g, double network_share)
      : cl_(cl), c_(c), D_(data.bytes()), network_share_(network_share) {
    n_ = std::max<int64_t>(1, g.size);
    per_node_ = std::clamp<int64_t>(g.per_node, 1, n_);
    nodes_ = (n_ + per_node_ - 1) / per_node_;
    intra_ = cm.IntraBandwidth();
    pod_ = g.beyond_pod ? cl.oversubscription : 1.0;
    nic_ = cm.NicShare() / pod_;
  }

  CollectiveCost Price() const {
    if (c_ == Collective::kSendRecv) return SendRecv();
    if (n_ <= 1) return CollectiveCost{};
    if (nodes_ == 1) {
      const AlphaBeta p = Intra(Algo::kRing);
      return Finish(p.alpha * Steps(n_), BusFactor(c_, n_) * D_, p.bw, Algo::kRing);
    }
    if (c_ == Collective::kAllToAll) return AllToAll();
    CollectiveCost best = Ring();
    auto keep = [&](const CollectiveCost& x) {
      if (x.time < best.time) best = x;
    };
    if (c_ == Collective::kAllReduce) {
      keep(Tree());
      if (per_node_ > 1) keep(Hierarchical());
    }
    if ((c_ == Collective::kAllGather || c_ == Collective::kReduceScatter) && per_node_ == 1) {
      keep(Pat());
    }
    return best;
  }

 private:
  double Steps(int64_t ranks) const {
    return c_ == Collective::kAllReduce ? 2.0 * static_cast<double>(ranks - 1)
                                        : static_cast<double>(ranks - 1);
  }

  // A profile's fit for this collective, algorithm and group shape replaces the fabric's alpha
  // and efficiency for that case (hardware/spec.h, FabricSpec::collectives).
  AlphaBeta Intra(Algo algo) const {
    const auto* f = cl_.intra.FindCollective(c_, algo, n_, per_node_);
    return f ? AlphaBeta{cl_.intra.bandwidth * f->efficiency, f->latency}
             : AlphaBeta{intra_, cl_.intra.latency};
  }
  AlphaBeta Inter(Algo algo) const {
    const auto* f = cl_.inter.FindCollective(c_, algo, n_, per_node_);
    if (!f) return AlphaBeta{nic_, cl_.inter.latency};
    return AlphaBeta{
        cl_.inter.bandwidth * (f->efficiency * cl_.nics() / std::max(1, cl_.gpus_per_node) / pod_),
        f->latency};
  }
  // A flat ring leaves a node through every member's NIC share in parallel, so the node
  // boundary carries per_node x nic_share (DGX A100: 8 x 24 = 192 GB/s bus bandwidth, as
  // measured in nccl#812), and runs no faster than NVLink.
  Bandwidth RingBandwidth(const AlphaBeta& p) const {
    return Bandwidth(std::min(intra_.bytes_per_second(),
                              p.bw.bytes_per_second() * static_cast<double>(per_node_)));
  }

  CollectiveCost Finish(Duration latency, double bus_bytes, Bandwidth bw, Algo algo) const {
    CollectiveCost r;
    r.latency = latency;
    r.bus_bytes = Bytes(bus_bytes);
    r.bus_bandwidth = bw;
    r.time = latency + TransferTime(Bytes(bus_bytes), bw);
    r.inter_node = nodes_ > 1;
    r.algo = algo;
    return r;
  }

  // Point-to-point between two ranks: over NVLink when on one node, else over the NIC share.
  CollectiveCost SendRecv() const {
    const bool inter = per_node_ <= 1 && n_ > 1;
    const AlphaBeta p = inter ? Inter(Algo::kDirect) : Intra(Algo::kDirect);
    CollectiveCost out = Finish(p.alpha, D_, p.bw, Algo::kDirect);
    out.inter_node = inter;
    return out;
  }

  // Each GPU sends (n - per_node)/n of D off the node through its NIC share, the rest on NVLink;
  // expressed as bytes over the NIC share so that replayed flows share it correctly.
  CollectiveCost AllToAll() const {
    const AlphaBeta p = Inter(Algo::kDirect);
    const double n = static_cast<double>(n_);
    const Duration t_inter =
        TransferTime(Bytes(D_ * network_share_ * static_cast<double>(n_ - per_node_) / n), p.bw);
    const Duration t_intra =
        TransferTime(Bytes(D_ * static_cast<double>(per_node_ - 1) / n), intra_);
    const Duration lat = p.alpha * static_cast<double>(nodes_ - 1) + cl_.intra.latency;
    const Duration t = Max(t_inter, t_intra);
    return Finish(lat, t.seconds() * p.bw.bytes_per_second(), p.bw, Algo::kDirect);
  }

  CollectiveCost Ring() const {
    const AlphaBeta p = Inter(Algo::kRing);
    const double inter_steps = Steps(nodes_);
    const Duration lat = p.alpha * inter_steps + cl_.intra.latency * (Steps(n_) - inter_steps);
    return Finish(lat, BusFactor(c_, n_) * D_, RingBandwidth(p), Algo::kRing);
  }

  CollectiveCost Tree() const {
    const AlphaBeta p = Inter(Algo::kTree);
    const double depth = std::ceil(std::log2(static_cast<double>(n_)));
    return Finish(p.alpha * (2 * depth), BusFactor(c_, n_) * D_, RingBandwidth(p), Algo::kTree);
  }

  CollectiveCost Pat() const {
    const AlphaBeta p = Inter(Algo::kPat);
    const double depth = std::ceil(std::log2(static_cast<double>(n_)));
    return Finish(p.alpha * depth, BusFactor(c_, n_) * D_, RingBandwidth(p), Algo::kPat);
  }

  CollectiveCost Hierarchical() const {
    const AlphaBeta p = Inter(Algo::kHierarchical);
    const double g = static_cast<double>(per_node_), N = static_cast<double>(nodes_);
    const Duration in_node =
        TransferTime(Bytes(2 * (g - 1) / g * D_), intra_) + cl_.intra.latency * (2 * (g - 1));
    const Duration across =
        TransferTime(Bytes(2 * (N - 1) / N * D_ / g), p.bw) + p.alpha * (2 * (N - 1));
    const Bandwidth rb = RingBandwidth(p);
    CollectiveCost r = Finish(p.alpha * (2 * (N - 1)) + cl_.intra.latency * (2 * (g - 1)), 0, rb,
                              Algo::kHierarchical);
    r.time = in_node + across;
    r.bus_bytes = Bytes((r.time - r.latency).seconds() * rb.bytes_per_second());
    return r;
  }

  const ClusterSpec& cl_;
  Collective c_;
  double D_;
  double network_share_ = 1.0;
  int64_t n_ = 1, per_node_ = 1, nodes_ = 1;
  Bandwidth intra_, nic_;
  double pod_ = 1;
};

CollectiveCost CostModel::CollectiveTime(Collective c, Bytes data, GroupPlacement g,
                                         double network_share) const {
  return CollectivePricer(*this, cluster_, c, data, g, network_share).Price();
}

}  // namespace parasim
