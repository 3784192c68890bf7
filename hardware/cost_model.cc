#include "hardware/cost_model.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <utility>

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
      measured_rows_[{g.n, g.k}][g.m] = g.efficiency;
    } else if (sibling) {
      measured_rows_[{g.n, g.k}].emplace(g.m, g.efficiency);
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

std::optional<double> CostModel::MeasuredEfficiency(int64_t m, int64_t n, int64_t k) const {
  auto rows = measured_rows_.find({n, k});
  if (rows == measured_rows_.end()) return std::nullopt;
  const std::map<int64_t, double>& by_m = rows->second;
  if (auto exact = by_m.find(m); exact != by_m.end()) return exact->second;
  auto hi = by_m.upper_bound(m);
  if (hi == by_m.begin() || hi == by_m.end()) return std::nullopt;
  auto lo = std::prev(hi);
  const double f = std::log(static_cast<double>(m) / static_cast<double>(lo->first)) /
                   std::log(static_cast<double>(hi->first) / static_cast<double>(lo->first));
  return std::exp(std::log(lo->second) + f * (std::log(hi->second) - std::log(lo->second)));
}

double CostModel::GemmEfficiency(int64_t m, int64_t n, int64_t k, bool measured) const {
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  if (measured && !measured_rows_.empty()) {
    // FP8 rows padded to a multiple of 16 (Fp8PaddedRows) cost what the padded GEMM measured (or
    // its interpolation), for fewer FLOPs.
    const int64_t rows = precision_ == Dtype::kFp8 ? Fp8PaddedRows(m) : m;
    if (std::optional<double> e = MeasuredEfficiency(rows, n, k)) {
      return *e * static_cast<double>(m) / static_cast<double>(rows);
    }
  }
  return base_gemm_efficiency_ * ShapeFactor(m, n, k) / shape_norm_;
}

Duration CostModel::GemmTime(int64_t m, int64_t n, int64_t k, int64_t batch) const {
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) return Duration::Zero();
  // A batched GEMM fills the GPU like one GEMM with `batch` times the rows.
  const Flops flops(2.0 * m * n * k * batch);
  const Bytes bytes(DtypeBytes(precision_) * batch * (m * k + k * n + m * n));
  return RooflineTime(m * batch, n, k, flops, bytes);
}

Duration CostModel::RooflineTime(int64_t m, int64_t n, int64_t k, Flops flops, Bytes bytes,
                                 double peak_scale, bool measured) const {
  const double eff = GemmEfficiency(m, n, k, measured);
  const Duration compute =
      ComputeTime(flops, Peak() * (eff * cluster_.gpu.sustained_factor * peak_scale));
  return Max(compute, MemoryTime(bytes)) + Launch();
}

double CostModel::AttentionEfficiency(bool backward, bool fused) const {
  return AttentionEfficiency(backward,
                             fused ? AttentionKernel::kFused : AttentionKernel::kStandard);
}

double CostModel::AttentionEfficiency(bool backward, AttentionKernel kernel) const {
  const GpuSpec& g = cluster_.gpu;
  if (kernel == AttentionKernel::kFlash2) {
    const double f2 = backward ? g.attention_flash2.backward : g.attention_flash2.forward;
    if (f2 > 0) return f2;
    kernel = AttentionKernel::kFused;  // no separate figure: the GPU's fused kernels'
  }
  const bool fused = kernel == AttentionKernel::kFused;
  const parasim::AttentionEfficiency& measured = fused ? g.attention_flash : g.attention_standard;
  const double m = backward ? measured.backward : measured.forward;
  if (m > 0) return m;
  const double eff = cluster_.gpu.gemm_efficiency / kAttentionReferenceGemmEfficiency *
                     (backward ? kAttentionBackwardEfficiency : kAttentionForwardEfficiency);
  return std::min(eff, 0.95);
}

Duration CostModel::AttentionTime(Flops flops, Bytes bytes, bool backward, bool fused) const {
  return AttentionTime(flops, bytes, backward,
                       fused ? AttentionKernel::kFused : AttentionKernel::kStandard);
}

Duration CostModel::AttentionTime(Flops flops, Bytes bytes, bool backward,
                                  AttentionKernel kernel) const {
  // The attention core runs in 16-bit under FP8 training too (Transformer Engine's FP8 covers
  // the Linears; DeepSeek-V3 keeps attention operators in bf16, Sec. 3.3), and its efficiencies
  // are fitted against the 16-bit peak.
  const double eff = AttentionEfficiency(backward, kernel);
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

Bandwidth CostModel::IntraBandwidth() const { return AchievedIntraBandwidth(cluster_); }

Bandwidth CostModel::NicShare() const { return AchievedNicShare(cluster_); }

CollectiveCost CostModel::CollectiveTime(Collective c, Bytes data, GroupPlacement g,
                                         double network_share) const {
  return PriceCollective(cluster_, CollectiveCase::Of(c, data, g, network_share));
}

}  // namespace parasim
