// Hardware descriptions: a GPU, a fabric (intra- or inter-node), and a cluster built of them.
//
//   PARASIM_ASSIGN_OR_RETURN(HardwareCatalog cat, LoadHardwareCatalog());
//   const GpuSpec* h100 = cat.FindGpu("h100-sxm5-80gb");
//   FlopRate peak = h100->Peak(Dtype::kBf16);   // 989.4 TFLOP/s
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/status.h"
#include "sim/units.h"
#include "sim/yaml_context.h"

namespace parasim {

enum class Dtype { kFp32, kTf32, kFp16, kBf16, kFp8 };
inline constexpr int kNumDtypes = 5;

std::string_view DtypeName(Dtype d);
StatusOr<Dtype> ParseDtype(std::string_view s);
std::vector<std::string_view> DtypeNames();  // fp32, tf32, fp16, bf16, fp8
// Storage bytes per element (tf32 is stored as fp32).
double DtypeBytes(Dtype d);

// Kernels run slower inside a training step than benchmarked alone: clocks settle lower under
// sustained power draw and the host leaves gaps between launches (contention with collectives is
// its own term, kDefaultContendedCompute below). One factor per GPU scales the rates of all
// compute and memory-bound kernels. A catalog entry may state its own (hardware/catalog/gpus.yaml:
// the A100s carry the fit on the training subset of tests/validation/subsets.yaml, SC21 Table 1,
// 0.856); every other GPU takes this default, measured on an H100 SXM here
// (hardware/profiles/h100-sxm5-80gb-2026-11-22-measurements/contention.yaml): an 8192^3 bf16
// GEMM took 1383 us in a short burst and 1675 us after 30 s of GEMMs back to back, 0.826 of the
// burst's rate. Every Hopper file stays held out; `parasim fit --runs` of the H100 weak-scaling
// runs alone gives 0.817, within 1.2% of it. Newer GPUs draw more power still (700-1400 W), so
// a Hopper measurement is the closer prior for them than an A100 fit. A calibration profile may
// replace it (compute.sustained_factor).
inline constexpr double kDefaultSustainedFactor = 0.826;

// How much longer kernels take while a communication kernel runs beside them on the same GPU
// (the engine applies it while a collective's task runs on the rank; sim/program.h StreamRole).
// A NCCL collective is a kernel of one block per channel that holds its SMs until it ends, so a
// GEMM overlapped with it gets fewer SMs and a persistent GEMM's last wave waits. Measured on an
// H100 SXM (tools/calibrate --only contention, 2026-11-22,
// hardware/profiles/h100-sxm5-80gb-2026-11-22-measurements/contention.yaml) beside a stand-in
// holding 16 of 132 SMs (NCCL's channel count on a DGX H100 is 16-32; DeepSeek-V3 gives its
// all-to-all 20 SMs): bf16 GEMMs of a TP-8 22B layer and 8192^3 ran 1.19-1.41x slower (mean
// 1.30); a 2 GiB copy 1.06x.
inline constexpr double kDefaultContendedCompute = 1.30;
inline constexpr double kDefaultContendedMemory = 1.06;

// An FP8 GEMM reaches a smaller fraction of its (twice as high) peak than a 16-bit one: FP8
// efficiency over 16-bit efficiency, each fitted (`parasim fit`, shape curve) to the same
// calibration runs so that clocks and host are alike, on an H100 SXM here:
// hardware/profiles/h100-sxm5-80gb-2026-11-22-measurements/, the nine GEMM files together,
// 864 16-bit and 384 FP8 cuBLASLt shapes (per-tensor scales, bf16 out): 0.6351 / 0.7437 =
// 0.854 (the files alone: 0.845-0.884). A GPU whose catalog entry states no
// gemm_efficiency_fp8 prices FP8 GEMMs at gemm_efficiency times this; the ratio is Hopper's,
// an assumption for other GPUs until a calibration profile replaces it.
inline constexpr double kFp8GemmEfficiencyRatio = 0.854;

// Host (CPU) time to issue one framework op from Python in a training step: the op's dispatch,
// autograd's bookkeeping, its launch and the interpreter around it. The host runs ahead of the
// GPU where it can, so the replay pays it only where it cannot: in a MoE layer whose experts
// Transformer Engine's GroupedLinear issues one at a time after the routing's
// device-to-host synchronisation (training.expert_gemm: per_expert; LayerLowering's
// HostBoundBlock). Measured here (2026-11-26, PyTorch 2.11, tools/gpu_check/):
// - moe_step_check.py on an H200 machine (moe-step-h200-2026-11-26.jsonl): 8 layers of a dense
//   MLP and 16 experts issued one at a time, trained with autograd; with a narrow dense MLP the
//   step is the host's, 21.2 us a kernel forward (900) and 28.7 backward (1,332): 25.7 over
//   the step, the value here (on an H100 machine, moe-step-h100-2026-11-26.jsonl: 24.8, 29.4
//   and 27.6);
// - moe_issue_bench.py on an H100 machine (moe-issue-h100-2026-11-26.jsonl): the same experts'
//   kernels issued without autograd, 11.3-17.5 us a kernel (median 15.3).
// That was the value here until 2026-11-29. Since then the host is a resource of the whole
// replay (strategies/topology.h, RankTopology::Issue: every kernel and collective is issued by
// it, strategies/host_ops.h counts them), and the default is the one fitted to Megatron-LM's
// CI runs on DGX H100 (Xeon 8480C hosts): the training subset of
// tests/validation/megatron-ci/host-bound.yaml on dgx_h100, 32 runs, `parasim fit --runs
// tests/validation/megatron-ci/host-bound.yaml --subset training --gpu h100-sxm5-80gb --params
// host_op_time,host_micro_batch_time,host_step_time` (MAPE 22.7%; held out, 55 runs, 22.9%).
// It is 1.34x the microbenchmark's 25.7 us, over Megatron-LM's op counts rather than a bare
// expert loop. x86 servers without a fit of their own (H200, H800, B200, ...) take it; the
// catalog's A100 and Grace (GB200, GB300) entries carry their own fits.
inline constexpr double kDefaultHostOpTimeUs = 34.34;

// Host time a training loop spends per micro-batch on each pipeline stage beside the ops it
// issues (the schedule's Python, the data batch and its TP broadcast, the loss function's
// bookkeeping), and per step (the optimizer's Python, the gradient norm's and the loss scale's
// reads, logging and the timers). Fitted with kDefaultHostOpTimeUs, on the same runs
// (docs/MODEL.md, "The host").
inline constexpr double kDefaultHostMicroBatchUs = 507.5;
inline constexpr double kDefaultHostStepUs = 42880;

// Collective operations and the algorithms the cost model prices them with (hardware/cost_model.h).
enum class Collective { kAllReduce, kReduceScatter, kAllGather, kAllToAll, kBroadcast, kSendRecv };
enum class Algo { kRing, kTree, kHierarchical, kDirect, kPat };

// One measured GEMM shape from a calibration profile: its efficiency (achieved FLOP/s over the
// dtype's peak, the kernel alone, launch excluded). Exact shapes override the shape curve.
struct GemmShapeFit {
  Dtype dtype = Dtype::kBf16;
  int64_t m = 0, n = 0, k = 0;
  double efficiency = 0;
};

// Attention kernel efficiencies (fraction of the 16-bit peak, the kernel alone); 0 = derived
// from the GEMM efficiency (hardware/cost_model.h) until a profile measures them.
struct AttentionEfficiency {
  double forward = 0;
  double backward = 0;
};

// How fast a GPU's SMs do the per-element work of the memory-bound kernels that have some, in
// elements a second at the clocks a short run holds (the sustained factor scales them as it
// scales every other rate). Such a kernel takes the longer of its HBM traffic and its elements
// at this rate; 0: not measured, its bytes alone price it. A kernel's elements are those of its
// output (an activation's T x ffn, a norm's and a dropout's T x hidden).
struct ElementwiseRates {
  double activation_forward = 0;   // GeLU (tanh) forward; SwiGLU is taken as it
  double activation_backward = 0;  // its input gradient
  double norm_forward = 0;         // LayerNorm forward; RMSNorm is taken as it
  double dropout_forward = 0;      // dropout and its residual add (random numbers per element)
  // One pass of PyTorch's unvectorized element-wise kernel over fp32 (a broadcast in-place
  // operation, a dtype-converting copy): the unfused cross-entropy's (kLossPasses).
  double loss_pass = 0;
  bool any() const {
    return activation_forward > 0 || activation_backward > 0 || norm_forward > 0 ||
           dropout_forward > 0 || loss_pass > 0;
  }
  // Every rate times `f` (a profile fitted to a recorded step's element-wise time).
  ElementwiseRates Scaled(double f) const {
    return {activation_forward * f, activation_backward * f, norm_forward * f, dropout_forward * f,
            loss_pass * f};
  }
  bool operator==(const ElementwiseRates&) const = default;
};

// Each rate's key, in the catalog's and in a profile's `elementwise_rates`, and its member.
struct ElementwiseRateKey {
  std::string_view key;
  double ElementwiseRates::*rate;
};
inline constexpr std::array<ElementwiseRateKey, 5> kElementwiseRateKeys = {{
    {"activation_forward", &ElementwiseRates::activation_forward},
    {"activation_backward", &ElementwiseRates::activation_backward},
    {"norm_forward", &ElementwiseRates::norm_forward},
    {"dropout_forward", &ElementwiseRates::dropout_forward},
    {"loss_pass", &ElementwiseRates::loss_pass},
}};

struct GpuSpec {
  std::string id;
  std::string name;
  Bytes memory;
  Bandwidth hbm_bandwidth;
  std::array<FlopRate, kNumDtypes> peak{};  // zero where the GPU has no such unit
  int sms = 0;  // streaming multiprocessors: the wave grid of GEMM tiles
  // CUDA compute capability (8.0 Ampere, 9.0 Hopper, 10.0 Blackwell); 0 where the GPU is not
  // NVIDIA's. Libraries size their workspaces by it (strategies/workspaces.h).
  double compute_capability = 0;
  // The names the CUDA driver reports for this GPU (cudaDeviceProp::name, nvidia-smi), so a
  // calibration run or an nccl-tests log names its catalog entry.
  std::vector<std::string> device_names;
  // Where the values came from: a scenario's inline mapping, or the keys a mapping extending a
  // catalog entry set (the others are the catalog's).
  bool inline_spec = false;
  std::vector<std::string> scenario_keys;
  // The server it usually comes in (DGX/HGX): GPUs per node and the catalog fabrics inside and
  // between nodes. `parasim fit` assumes it unless told otherwise.
  struct Server {
    int gpus = 0;
    std::string intra, inter;
  } server;
  double gemm_efficiency = 0.8;    // best achieved fraction of peak for a large GEMM
  double memory_efficiency = 0.8;  // achieved fraction of HBM bandwidth, streaming
  Duration launch_overhead = Duration::Microseconds(4);
  Duration host_op_time = Duration::Microseconds(kDefaultHostOpTimeUs);  // see the constant
  Duration host_micro_batch_time = Duration::Microseconds(kDefaultHostMicroBatchUs);
  Duration host_step_time = Duration::Microseconds(kDefaultHostStepUs);
  double sustained_factor = kDefaultSustainedFactor;  // in-step kernel rates vs alone
  // Slowdown beside a running collective: GEMMs and attention; memory-bound kernels.
  double contended_compute = kDefaultContendedCompute;
  double contended_memory = kDefaultContendedMemory;
  // Tensor cores that apply MXFP8's per-32 E8M0 scales themselves (training.fp8_recipe: mxfp8).
  bool mxfp8 = false;
  ElementwiseRates elementwise_rates;  // measured on Hopper, per SM elsewhere (none: bandwidth)
  // From a calibration profile only (none in the catalog):
  double gemm_efficiency_fp8 = 0;         // large fp8 GEMMs vs the fp8 peak; 0: Fp8GemmEfficiency()
  std::vector<GemmShapeFit> gemm_shapes;  // exact measured shapes
  AttentionEfficiency attention_standard;  // materialised softmax (attention: standard)
  AttentionEfficiency attention_flash;     // fused kernels (attention: flash)
  // FlashAttention-2's kernels, where Transformer Engine cannot run cuDNN's fused attention and
  // falls back to them (CostModel::AttentionKernel::kFlash2); unset: attention_flash.
  AttentionEfficiency attention_flash2;

  FlopRate Peak(Dtype d) const { return peak[static_cast<int>(d)]; }
  // Large FP8 GEMMs' fraction of the fp8 peak: a profile's measured one, else gemm_efficiency x
  // kFp8GemmEfficiencyRatio.
  double Fp8GemmEfficiency() const {
    return gemm_efficiency_fp8 > 0 ? gemm_efficiency_fp8
                                   : gemm_efficiency * kFp8GemmEfficiencyRatio;
  }
};

enum class FabricKind { kIntra, kInter };

struct FabricSpec {
  std::string id;
  FabricKind kind = FabricKind::kIntra;
  Bandwidth bandwidth;      // per direction, per GPU (intra) or per NIC (inter)
  Duration latency;         // per algorithm step
  double efficiency = 1.0;  // achieved busbw / bandwidth for large collectives
  // Where the values came from: a scenario's inline mapping, or the keys a mapping extending a
  // catalog entry set (the others are the catalog's).
  bool inline_spec = false;
  std::vector<std::string> scenario_keys;
  // From a calibration profile: alpha and beta fitted for one collective, algorithm and group
  // shape on this fabric; they replace `latency` and `efficiency` for that case alone.
  struct CollectiveFit {
    Collective op = Collective::kAllReduce;
    Algo algo = Algo::kRing;
    int64_t ranks = 0;
    int64_t per_node = 0;
    double efficiency = 1.0;
    Duration latency;
  };
  std::vector<CollectiveFit> collectives;
  // The fit for (op, algo, ranks, per_node), or null.
  const CollectiveFit* FindCollective(Collective op, Algo algo, int64_t ranks,
                                      int64_t per_node) const;
};

struct ClusterSpec {
  GpuSpec gpu;
  int64_t nodes = 1;
  int gpus_per_node = 8;
  FabricSpec intra;
  FabricSpec inter;
  int nics_per_node = 0;  // 0 = gpus_per_node
  // GPUs that share one NVLink fabric (the scale-up domain): 72 for GB200 NVL72, whose compute
  // trays hold 4 GPUs each. Groups inside one domain pay the intra-node fabric; groups that
  // cross domains pay the NICs. 0 = gpus_per_node (a node is its own domain).
  int nvlink_domain = 0;
  double oversubscription = 1.0;
  int64_t pod_gpus = 0;                 // 0 = the whole cluster is one full-bisection pod
  std::string calibration;              // path of a fitted profile, "" when none
  std::vector<std::string> calibrated;  // values the profile replaced, for the report
  // Which families of rates that profile measured on this cluster (ApplyCalibrationProfile):
  // `sweep --robust` swings those by a measurement's spread, not the catalog's.
  struct Measured {
    bool gemm = false;       // gemm_efficiency (and FP8's, shapes), sustained_factor
    bool attention = false;  // attention_flash / attention_standard
    bool memory = false;     // memory_efficiency, elementwise_rates
    bool intra = false;      // the scale-up fabric's efficiency or collective fits
    bool inter = false;      // the scale-out fabric's
    bool host = false;       // launch_overhead, host_op_time, host_micro_batch_time, host_step_time
  } measured;
  double gpu_hour_cost = 0;  // optional price per GPU-hour for the cost objective

  int64_t gpus() const { return nodes * gpus_per_node; }
  int nics() const { return nics_per_node > 0 ? nics_per_node : gpus_per_node; }
  int domain() const { return nvlink_domain > 0 ? nvlink_domain : gpus_per_node; }
};

struct HardwareCatalog {
  std::vector<GpuSpec> gpus;
  std::vector<FabricSpec> fabrics;
  const GpuSpec* FindGpu(std::string_view id) const;
  // The GPU whose device_names hold `device` exactly (surrounding spaces ignored), or null.
  const GpuSpec* FindGpuByDevice(std::string_view device) const;
  const FabricSpec* FindFabric(std::string_view id) const;
  std::vector<std::string_view> GpuIds() const;
  std::vector<std::string_view> FabricIds() const;
};

// Parses the catalogs embedded in the binary (hardware/catalog/*.yaml).
StatusOr<HardwareCatalog> LoadHardwareCatalog();

// Where a catalog value comes from: the comment on its line in hardware/catalog/gpus.yaml or
// fabrics.yaml ("memory" of "a100-sxm4-80gb": "nvidia-smi total for A100 80GB"), in file order.
struct ValueSource {
  std::string entry, key, source;
};
std::vector<ValueSource> GpuSources();
std::vector<ValueSource> FabricSources();

// Field parsers shared by the catalog and inline scenario mappings.
// Reads `key: {forward: F, backward: B}` (fractions of the 16-bit peak) from `m` into *out when
// present; both directions are required.
Status ReadAttentionEfficiency(const MapReader& m, const char* key, AttentionEfficiency* out);
// `key: {activation_forward, activation_backward, norm_forward, dropout_forward, loss_pass}`
// (elements a second; each optional) over `*out`.
Status ReadElementwiseRates(const MapReader& m, const char* key, ElementwiseRates* out);
// An inline GPU or fabric mapping. With `base` (a catalog entry the mapping `extends`) every key
// is optional and a key given replaces the base's value (a listed peak format replaces that
// format's peak; `device_names` replaces the list); the id stays the base's, as calibration
// profiles and prices name it, and the name lists what was changed. The mapping may then hold
// `extends`, which the caller reads.
StatusOr<GpuSpec> ParseGpuSpec(const YamlContext& ctx, const YAML::Node& node, std::string path,
                               std::string id, const GpuSpec* base = nullptr);
StatusOr<FabricSpec> ParseFabricSpec(const YamlContext& ctx, const YAML::Node& node,
                                     std::string path, std::string id,
                                     const FabricSpec* base = nullptr);

}  // namespace parasim
