#include "hardware/cost_model.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "sim/enum_names.h"

namespace parasim {
namespace {

// Output tile of a large cuBLAS/CUTLASS kernel (128 x 128: the CTA tile of the CUTLASS and
// cuBLAS Ampere/Hopper bf16 kernels chosen for large problems) and the dimension at which a GEMM
// dimension runs at half efficiency through pipeline fill and memory traffic (a smooth
// x / (x + 64) penalty: an estimate, half the tile edge, since small-K and small-M GEMMs are
// memory-bound in practice; `parasim fit` replaces the efficiency curve with measurements).
constexpr double kTile = 128;
constexpr double kHalfDim = 64;

}  // namespace

namespace {
constexpr EnumNames<Algo, 4> kAlgos("algorithm", {{{Algo::kRing, "ring"},
                                                   {Algo::kTree, "tree"},
                                                   {Algo::kHierarchical, "hierarchical"},
                                                   {Algo::kDirect, "direct"}}});
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
  base_gemm_efficiency_ = precision == Dtype::kFp8 && cluster.gpu.gemm_efficiency_fp8 > 0
                              ? cluster.gpu.gemm_efficiency_fp8
                              : cluster.gpu.gemm_efficiency;
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
  const double tiles = std::ceil(m / kTile) * std::ceil(n / kTile);
  const double waves = std::ceil(tiles / sms);
  const double wave_eff = tiles / (waves * sms);
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
  const double eff = AttentionEfficiency(backward, fused);
  Duration compute = ComputeTime(flops, Peak() * (eff * cluster_.gpu.sustained_factor));
  return Max(compute, MemoryTime(bytes)) + Launch();
}

Duration CostModel::MemoryTime(Bytes bytes) const {
  return TransferTime(bytes, cluster_.gpu.hbm_bandwidth *
                                 (cluster_.gpu.memory_efficiency * cluster_.gpu.sustained_factor));
}

Bandwidth CostModel::IntraBandwidth() const {
  return cluster_.intra.bandwidth * cluster_.intra.efficiency;
}

Bandwidth CostModel::NicShare() const {
  return cluster_.inter.bandwidth *
         (cluster_.inter.efficiency * cluster_.nics() / std::max(1, cluster_.gpus_per_node));
}

CollectiveCost CostModel::CollectiveTime(Collective c, Bytes data, GroupPlacement g) const {
  CollectiveCost out;
  const int64_t n = std::max<int64_t>(1, g.size);
  if (n <= 1 && c != Collective::kSendRecv) return out;
  const int64_t per_node = std::clamp<int64_t>(g.per_node, 1, n);
  const int64_t nodes = (n + per_node - 1) / per_node;
  const double D = data.bytes();
  const Bandwidth intra = IntraBandwidth();
  const double pod = g.beyond_pod ? cluster_.oversubscription : 1.0;
  const Bandwidth nic = NicShare() / pod;
  const Duration a_intra = cluster_.intra.latency;
  const Duration a_inter = cluster_.inter.latency;
  out.inter_node = nodes > 1;
  // A profile's fit for this collective, algorithm and group shape replaces the fabric's alpha
  // and efficiency for that case (hardware/spec.h, FabricSpec::collectives).
  struct Params {
    Bandwidth bw;
    Duration alpha;
  };
  auto intra_for = [&](Algo algo) {
    const auto* f = cluster_.intra.FindCollective(c, algo, n, per_node);
    return f ? Params{cluster_.intra.bandwidth * f->efficiency, f->latency}
             : Params{intra, a_intra};
  };
  auto inter_for = [&](Algo algo) {
    const auto* f = cluster_.inter.FindCollective(c, algo, n, per_node);
    if (!f) return Params{nic, a_inter};
    return Params{cluster_.inter.bandwidth *
                      (f->efficiency * cluster_.nics() / std::max(1, cluster_.gpus_per_node) / pod),
                  f->latency};
  };

  auto finish = [&](Duration latency, double bus_bytes, Bandwidth bw, Algo algo) {
    CollectiveCost r;
    r.latency = latency;
    r.bus_bytes = Bytes(bus_bytes);
    r.bus_bandwidth = bw;
    r.time = latency + TransferTime(Bytes(bus_bytes), bw);
    r.inter_node = nodes > 1;
    r.algo = algo;
    return r;
  };

  if (c == Collective::kSendRecv) {
    // Point-to-point between two ranks: over NVLink when on one node, else over the NIC share.
    bool inter = per_node <= 1 && n > 1;
    const Params p = inter ? inter_for(Algo::kDirect) : intra_for(Algo::kDirect);
    out = finish(p.alpha, D, p.bw, Algo::kDirect);
    out.inter_node = inter;
    return out;
  }
  const double factor = BusFactor(c, n);
  const double steps = c == Collective::kAllReduce ? 2.0 * (n - 1) : static_cast<double>(n - 1);
  if (nodes == 1) {
    const Params p = intra_for(Algo::kRing);
    return finish(p.alpha * steps, factor * D, p.bw, Algo::kRing);
  }
  // Flat ring across nodes: every member's NIC share carries the ring; members on one node use
  // their own NICs in parallel, so the node boundary carries per_node x nic_share (DGX A100:
  // 8 x 24 = 192 GB/s bus bandwidth, as measured in nccl#812).
  auto ring_bw = [&](const Params& p) {
    return Bandwidth(std::min(intra.bytes_per_second(),
                              p.bw.bytes_per_second() * static_cast<double>(per_node)));
  };
  if (c == Collective::kAllToAll) {
    // Each GPU sends (n - per_node)/n of D off the node through its NIC share, the rest on NVLink.
    const Params p = inter_for(Algo::kDirect);
    double inter_bytes = D * static_cast<double>(n - per_node) / n;
    double intra_bytes = D * static_cast<double>(per_node - 1) / n;
    Duration t_inter = TransferTime(Bytes(inter_bytes), p.bw);
    Duration t_intra = TransferTime(Bytes(intra_bytes), intra);
    Duration lat = p.alpha * static_cast<double>(nodes - 1) + a_intra;
    // Express as bytes over the NIC share so that replayed flows share it correctly.
    Duration t = Max(t_inter, t_intra);
    return finish(lat, t.seconds() * p.bw.bytes_per_second(), p.bw, Algo::kDirect);
  }
  const Params ring = inter_for(Algo::kRing);
  CollectiveCost best = finish(ring.alpha * steps, factor * D, ring_bw(ring), Algo::kRing);
  if (c == Collective::kAllReduce) {
    // Double binary tree: 2 log2(n) steps of latency at about the ring's bandwidth.
    const Params tp = inter_for(Algo::kTree);
    CollectiveCost tree = finish(tp.alpha * (2 * std::ceil(std::log2(static_cast<double>(n)))),
                                 factor * D, ring_bw(tp), Algo::kTree);
    if (tree.time < best.time) best = tree;
    if (per_node > 1) {
      // Reduce-scatter in the node, all-reduce of D/per_node across nodes, all-gather in node.
      const Params hp = inter_for(Algo::kHierarchical);
      const double g_ = static_cast<double>(per_node);
      Duration in_node =
          TransferTime(Bytes(2 * (g_ - 1) / g_ * D), intra) + a_intra * (2 * (g_ - 1));
      const double N = static_cast<double>(nodes);
      Duration across =
          TransferTime(Bytes(2 * (N - 1) / N * D / g_), hp.bw) + hp.alpha * (2 * (N - 1));
      Duration t = in_node + across;
      if (t < best.time) {
        const Bandwidth rb = ring_bw(hp);
        best =
            finish(hp.alpha * (2 * (N - 1)) + a_intra * (2 * (g_ - 1)), 0, rb, Algo::kHierarchical);
        best.time = t;
        best.bus_bytes = Bytes((t - best.latency).seconds() * rb.bytes_per_second());
      }
    }
  }
  return best;
}

}  // namespace parasim
