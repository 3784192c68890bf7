#include "hardware/cost_model.h"

#include <algorithm>
#include <cmath>

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

std::string_view AlgoName(Algo a) {
  switch (a) {
    case Algo::kRing:
      return "ring";
    case Algo::kTree:
      return "tree";
    case Algo::kHierarchical:
      return "hierarchical";
    case Algo::kDirect:
      return "direct";
  }
  return "?";
}

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
  return cluster_.gpu.gemm_efficiency * ShapeFactor(m, n, k) / shape_norm_;
}

Duration CostModel::GemmTime(int64_t m, int64_t n, int64_t k, int64_t batch) const {
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) return Duration::Zero();
  // A batched GEMM fills the GPU like one GEMM with `batch` times the rows.
  const double eff = GemmEfficiency(m * batch, n, k);
  const double flops = 2.0 * m * n * k * batch;
  const double bytes = DtypeBytes(precision_) * batch * (m * k + k * n + m * n);
  Duration compute = ComputeTime(Flops(flops), Peak() * (eff * cluster_.gpu.sustained_factor));
  Duration memory = MemoryTime(bytes);
  return Max(compute, memory) + Launch();
}

Duration CostModel::AttentionTime(double flops, double bytes, bool backward) const {
  const double eff = cluster_.gpu.gemm_efficiency / kAttentionReferenceGemmEfficiency *
                     (backward ? kAttentionBackwardEfficiency : kAttentionForwardEfficiency);
  Duration compute =
      ComputeTime(Flops(flops), Peak() * (std::min(eff, 0.95) * cluster_.gpu.sustained_factor));
  return Max(compute, MemoryTime(bytes)) + Launch();
}

Duration CostModel::MemoryTime(double bytes) const {
  if (bytes <= 0) return Duration::Zero();
  return TransferTime(Bytes(bytes), cluster_.gpu.hbm_bandwidth * (cluster_.gpu.memory_efficiency *
                                                                  cluster_.gpu.sustained_factor));
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
  Bandwidth nic = NicShare() / (g.beyond_pod ? cluster_.oversubscription : 1.0);
  const Duration a_intra = cluster_.intra.latency;
  const Duration a_inter = cluster_.inter.latency;
  out.inter_node = nodes > 1;

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
    out = finish(inter ? a_inter : a_intra, D, inter ? nic : intra, Algo::kDirect);
    out.inter_node = inter;
    return out;
  }
  const double factor = BusFactor(c, n);
  const double steps = c == Collective::kAllReduce ? 2.0 * (n - 1) : static_cast<double>(n - 1);
  if (nodes == 1) {
    return finish(a_intra * steps, factor * D, intra, Algo::kRing);
  }
  // Flat ring across nodes: every member's NIC share carries the ring; members on one node use
  // their own NICs in parallel, so the node boundary carries per_node x nic_share (DGX A100:
  // 8 x 24 = 192 GB/s bus bandwidth, as measured in nccl#812).
  Bandwidth ring_bw = Bandwidth(
      std::min(intra.bytes_per_second(), nic.bytes_per_second() * static_cast<double>(per_node)));
  if (c == Collective::kAllToAll) {
    // Each GPU sends (n - per_node)/n of D off the node through its NIC share, the rest on NVLink.
    double inter_bytes = D * static_cast<double>(n - per_node) / n;
    double intra_bytes = D * static_cast<double>(per_node - 1) / n;
    Duration t_inter = TransferTime(Bytes(inter_bytes), nic);
    Duration t_intra = TransferTime(Bytes(intra_bytes), intra);
    Duration lat = a_inter * static_cast<double>(nodes - 1) + a_intra;
    // Express as bytes over the NIC share so that replayed flows share it correctly.
    Duration t = Max(t_inter, t_intra);
    return finish(lat, t.seconds() * nic.bytes_per_second(), nic, Algo::kDirect);
  }
  CollectiveCost best = finish(a_inter * steps, factor * D, ring_bw, Algo::kRing);
  if (c == Collective::kAllReduce) {
    // Double binary tree: 2 log2(n) steps of latency at about the ring's bandwidth.
    CollectiveCost tree = finish(a_inter * (2 * std::ceil(std::log2(static_cast<double>(n)))),
                                 factor * D, ring_bw, Algo::kTree);
    if (tree.time < best.time) best = tree;
    if (per_node > 1) {
      // Reduce-scatter in the node, all-reduce of D/per_node across nodes, all-gather in node.
      const double g_ = static_cast<double>(per_node);
      Duration in_node =
          TransferTime(Bytes(2 * (g_ - 1) / g_ * D), intra) + a_intra * (2 * (g_ - 1));
      const double N = static_cast<double>(nodes);
      Duration across =
          TransferTime(Bytes(2 * (N - 1) / N * D / g_), nic) + a_inter * (2 * (N - 1));
      Duration t = in_node + across;
      if (t < best.time) {
        best = finish(a_inter * (2 * (N - 1)) + a_intra * (2 * (g_ - 1)), 0, ring_bw,
                      Algo::kHierarchical);
        best.time = t;
        best.bus_bytes = Bytes((t - best.latency).seconds() * ring_bw.bytes_per_second());
      }
    }
  }
  return best;
}

}  // namespace parasim
