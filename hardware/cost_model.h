// Cost model: how long compute and collectives take on a cluster.
//
//   CostModel cm(cluster, Dtype::kBf16);
//   Duration g = cm.GemmTime(4096, 4096, 4096);                  // roofline with shape efficiency
//   CollectiveCost c = cm.CollectiveTime(Collective::kAllReduce, Bytes::GB(1),
//                                         {.size = 16, .per_node = 8});
//
// Compute: time = max(FLOPs / (peak x efficiency(shape)), bytes / (HBM x memory efficiency))
// + launch overhead. GEMM efficiency = the GPU's measured large-GEMM efficiency x wave
// quantisation on its SMs x small-dimension penalties, normalised to 1 at 8192^3 (the shape the
// catalog's efficiency was measured at).
// Collectives: alpha-beta per algorithm (ring, tree, hierarchical, direct, PAT), NCCL
// bus-bandwidth semantics, a node's NICs shared by the GPUs that cross the network at once; each
// algorithm is one object in hardware/collective_algorithm.h, which the fitter reads too. That
// header also holds the collectives' vocabulary used with this one (AlgoName, CollectiveName,
// BusFactor, GroupPlacement, CollectiveCost).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "hardware/collective_algorithm.h"
#include "hardware/spec.h"
#include "sim/status.h"
#include "sim/units.h"

namespace parasim {

// cuBLASLt's FP8 GEMMs take dimensions that are multiples of 16 (cuBLAS documentation,
// cublasLtMatmul's FP8 requirements; tools/calibrate/gemm.cc times no others), so a serving engine
// pads a GEMM's rows to the multiple of 16 at or above them.
inline constexpr int64_t kFp8GemmRows = 16;
inline int64_t Fp8PaddedRows(int64_t m) {
  return (m + kFp8GemmRows - 1) / kFp8GemmRows * kFp8GemmRows;
}

// The kernels that run an attention core: the GPU's fused attention (cuDNN's under Transformer
// Engine, GpuSpec::attention_flash), FlashAttention-2's where Transformer Engine falls back to
// them (GpuSpec::attention_flash2), or the materialised softmax (attention_standard).
enum class AttentionKernel { kFused, kFlash2, kStandard };

class CostModel {
 public:
  CostModel(const ClusterSpec& cluster, Dtype precision);

  // The efficiency of an m x n x k GEMM against the dense peak: a profile's measured shape
  // exactly; between two measured shapes of the same n and k (a serving calibration times a
  // ladder of row counts), their efficiencies' logarithms interpolated in log m, which is exact
  // both where the GEMM reads its weights at a fixed rate (efficiency in proportion to m) and on
  // its compute plateau (constant); for FP8, rows that are not a multiple of 16 at the time of
  // the multiple above them; else the shape curve. `measured` false: the curve alone (a GEMM
  // unlike the ones measured, such as one reading weights narrower than its compute format).
  double GemmEfficiency(int64_t m, int64_t n, int64_t k, bool measured = true) const;
  Duration GemmTime(int64_t m, int64_t n, int64_t k, int64_t batch = 1) const;
  // The GEMM roofline GemmTime applies, for a caller that counts its own FLOPs and bytes (a
  // serving GEMM's fractional rows, quantised operands): `flops` at the shape efficiency of
  // `m` x `n` x `k` (m: the rows stacked) times the sustained factor times `peak_scale`, or
  // `bytes` at the HBM rate, whichever is slower, plus the launch.
  Duration RooflineTime(int64_t m, int64_t n, int64_t k, Flops flops, Bytes bytes,
                        double peak_scale = 1.0, bool measured = true) const;
  // The shape curve alone (wave quantisation x small-dimension penalties), 1 at 8192^3.
  double ShapeCurve(int64_t m, int64_t n, int64_t k) const;
  // Fused attention (flash) or materialised attention: FLOPs at the attention efficiency, or
  // memory-bound, whichever is slower. A profile's measured efficiency for that kind wins.
  Duration AttentionTime(Flops flops, Bytes bytes, bool backward, bool fused = true) const;
  Duration AttentionTime(Flops flops, Bytes bytes, bool backward, AttentionKernel kernel) const;
  double AttentionEfficiency(bool backward, bool fused) const;
  double AttentionEfficiency(bool backward, AttentionKernel kernel) const;
  Duration MemoryTime(Bytes bytes) const;
  // A memory-bound kernel with per-element work: the longer of its HBM traffic and its
  // `elements` at `rate` a second (GpuSpec::ElementwiseRates; 0: its traffic alone), the
  // sustained factor applied to both. No launch overhead.
  Duration ElementwiseTime(Bytes bytes, double elements, double rate) const;
  Duration Launch() const { return cluster_.gpu.launch_overhead; }

  // `network_share` scales the bytes an all-to-all sends off the node: below 1 when routing
  // sends a token once per node over the network and fans it out on NVLink there
  // (MoeSpec::node_limit); other collectives ignore it.
  CollectiveCost CollectiveTime(Collective c, Bytes data, GroupPlacement g,
                                double network_share = 1.0) const;

  // Per-GPU bandwidths used by the replay's links.
  Bandwidth IntraBandwidth() const;  // achieved, one direction
  Bandwidth NicShare() const;        // a GPU's share of its node's NICs, achieved
  FlopRate Peak() const { return cluster_.gpu.Peak(precision_); }
  const ClusterSpec& cluster() const { return cluster_; }

 private:
  ClusterSpec cluster_;
  Dtype precision_;
  double shape_norm_;            // shape factor at 8192^3, where gemm_efficiency was measured
  double base_gemm_efficiency_;  // gemm_efficiency, or the fp8 one for fp8 training
  // Measured efficiencies of this precision (the other 16-bit type filling gaps), by (n, k) and
  // then m: exact shapes, and the row counts interpolated between.
  std::map<std::pair<int64_t, int64_t>, std::map<int64_t, double>> measured_rows_;
  double ShapeFactor(int64_t m, int64_t n, int64_t k) const;
  // A measured shape's efficiency, or one interpolated between two measured row counts.
  std::optional<double> MeasuredEfficiency(int64_t m, int64_t n, int64_t k) const;
};

// Efficiency of fused (flash) attention kernels as a fraction of the 16-bit peak:
// FlashAttention-2 reports 50-73% of peak forward and lower backward on A100 (Dao 2023, Fig. 5);
// we take 0.60 forward and 0.50 backward.
inline constexpr double kAttentionForwardEfficiency = 0.60;
inline constexpr double kAttentionBackwardEfficiency = 0.50;
// Those fractions were measured on A100, whose large-GEMM efficiency is 0.813 (cuBLASLt fp16
// 8192^3 at 253.7 TFLOP/s, KNOWLEDGE.md); other GPUs scale them by their own GEMM efficiency.
inline constexpr double kAttentionReferenceGemmEfficiency = 0.813;

}  // namespace parasim
