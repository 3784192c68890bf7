// What an op of a layer graph is (models/op_graph.h orders them into a Block): its GEMM shape,
// FLOPs forward and backward, HBM bytes, parameters, the tensors it saves for backward, the
// collective after it; the rank shape a graph is built for; and the rules read off one op or the
// model for one (recompute, FP8 bytes, flash attention's share). Without Boost.Graph's headers,
// which cost about two seconds of compile in each file that includes them (g++ 12; 2026-12-02):
// a header that names a Block by reference declares it from here.
//
//   if (Recomputes(op, RecomputeKind::kSelective)) ...          // rerun in backward
//   double fp8 = Fp8ElementBytes(Fp8Recipe::kBlockwise);        // 1 + 4/128 bytes an element
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/model_spec.h"
#include "models/training.h"

namespace parasim {

struct Block;  // models/op_graph.h: a layer's ops in order

enum class OpKind : uint8_t { kGemm, kAttention, kMemoryBound };
// The per-element work of a memory-bound pass, priced at the GPU's rate for it
// (GpuSpec::ElementwiseRates); kStream: none that a GPU's SMs cannot keep up with (copies,
// casts, adds, scatters). kLossPasses: Megatron-LM's unfused cross-entropy, several kernels of
// which some (Op::fwd_sm_passes) PyTorch runs unvectorized.
enum class ElementMath : uint8_t { kStream, kActivation, kNorm, kDropout, kLossPasses };
enum class CommKind : uint8_t { kNone, kAllReduce, kReduceScatter, kAllGather, kAllToAll };
// kEtp: the experts' tensor-parallel group (GraphShape::etp), the TP group itself when etp = tp.
enum class GroupKind : uint8_t { kTp, kCp, kEp, kDp, kPp, kEtp };

std::string_view CommName(CommKind c);
std::string_view GroupName(GroupKind g);

struct CommSpec {
  CommKind kind = CommKind::kNone;
  GroupKind group = GroupKind::kTp;
  double bytes = 0;           // the collective's full buffer size D (NCCL "size")
  bool overlappable = false;  // may run concurrently with the op's own compute (ring attention)
  // Backward only, on a column-parallel Linear: launched once the op's input gradient is
  // computed and run beside its weight gradient; with `regather` (SP keeps the Linear's input
  // sharded) an all-gather of the same buffer first runs beside the input gradient. Megatron-LM
  // does both by default: megatron/core/tensor_parallel/layers.py,
  // LinearWithGradAccumulationAndAsyncCommunication.backward.
  bool beside_wgrad = false;
  bool regather = false;
};

struct SavedTensor {
  std::string name;
  double bytes = 0;
  bool attention_core = false;  // dropped (recomputed) by selective recompute
  // The share of `bytes` kept under recompute: deepseek (0: rebuilt in backward).
  double deepseek = 1.0;
};

struct Op {
  std::string name;
  OpKind kind = OpKind::kMemoryBound;
  // GEMM shape: `batch` independent (m x k) * (k x n) products.
  int64_t m = 0, n = 0, k = 0, batch = 1;
  Flops fwd_flops;  // matmul FLOPs (model FLOPs)
  Flops bwd_flops;
  Bytes fwd_bytes;  // HBM traffic of memory-bound ops (read + write)
  Bytes bwd_bytes;
  // Memory-bound ops: the elements each pass works on, and what work (ElementMath). Under
  // kLossPasses, `*_sm_passes` kernels over the elements move `*_sm_bytes` of the traffic at the
  // SMs' pace; the rest of it streams.
  double elements = 0;
  ElementMath fwd_math = ElementMath::kStream;
  ElementMath bwd_math = ElementMath::kStream;
  double fwd_sm_passes = 0, bwd_sm_passes = 0;
  double fwd_sm_bytes = 0, bwd_sm_bytes = 0;
  double causal_fraction = 1.0;  // fraction of attention FLOPs executed (flash skips masked blocks)
  double params = 0;             // parameters held by this rank
  bool expert = false;           // parameters sharded by EP
  bool in_attention_core = false;
  bool deepseek_recompute = false;  // rerun in backward under recompute: deepseek
  // The output columns of each matmul (aten.mm) a framework issues for this GEMM, in order,
  // when it fuses several (Q, K and V; SwiGLU's gate and up projections); empty: one.
  std::vector<double> mm_cols;
  // recompute: selective-op (MarkSelectiveOp): the output bytes this op keeps instead of
  // rerunning (its odd-numbered matmuls', or the attention core's), and the share of its
  // forward it reruns in backward.
  double op_kept_bytes = 0;
  double op_rerun = 1;
  bool fp8 = false;   // a Linear run as an FP8 GEMM (GraphShape::fp8), with its casts
  CommSpec fwd_comm;  // collective after the op in forward
  CommSpec bwd_comm;  // collective after the op's gradient in backward
  std::vector<SavedTensor> saved;
  // Bytes the op holds while it runs, forward or backward, beyond what it saves: its input and
  // output alive at once where it copies, its temporaries. Freed when it ends.
  double transient = 0;
};

struct GraphShape {
  int64_t micro_batch = 1;
  int64_t seq_len = 2048;
  int tp = 1;
  bool sp = false;
  int cp = 1;
  int ep = 1;
  int etp = 0;           // the experts' TP width (Layout::etp); 0: tp
  double act_bytes = 2;  // bytes per activation element (16-bit)
  AttentionKind attention = AttentionKind::kFlash;
  bool fused_cross_entropy = false;  // Training::fused_cross_entropy
  // FP8 training's recipe (precision: fp8); none for 16- and 32-bit training.
  std::optional<Fp8Recipe> fp8 = std::nullopt;
  int dropout = -1;  // -1: derived (GELU/LayerNorm models use dropout, SwiGLU models not)
  // The materialised softmax's dropout (Training::attention_dropout > 0); -1: as `dropout`.
  int attention_dropout = -1;
  // Context parallelism's K and V gathered whole before the attention (Layout::CpComm), not
  // passed around a ring beside it.
  bool cp_all_gather = false;
  // The MoE dispatcher's second permutation: the received copies sorted by local expert and
  // back (Megatron-Core's alltoall dispatcher); a serving engine's fused MoE kernel sorts once,
  // in the dispatch's own permutation.
  bool expert_sort = true;
  bool operator==(const GraphShape&) const = default;
};

// The share of a layer's attention matrix (queries x keys, seq x seq) a flash kernel computes,
// averaged over the model's layers: half for causal attention, less on layers of local
// attention (ModelSpec::window). Every layer shares one graph, so the average prices the model's
// attention whole.
double FlashComputedShare(const ModelSpec& m, int64_t seq);
// Bytes per element of an FP8 tensor under recipe `r` (E4M3 and its scales).
double Fp8ElementBytes(Fp8Recipe r);
// Bytes per parameter of Transformer Engine's FP8 copy of an FP8 GEMM's weight, on a GPU of
// compute capability `cc`: the copy Megatron-Core keeps between micro-batches (its
// is_first_microbatch cache), or the weight itself under training.fp8_param_gather. Row-wise
// data for the forward's GEMM, and a column-wise copy for the backward's where one is stored:
// MXFP8 and blockwise scale each direction apart, and a per-tensor scale needs a transposed
// copy on GPUs whose FP8 GEMMs take only the TN layout (Hopper, Ada, compute capability 12.x).
double Fp8WeightCopyBytes(Fp8Recipe r, double cc);
// Whether recompute mode `r` reruns `op` of a transformer layer in backward: every op (full),
// the attention core (selective), the norms, MLA up-projections and expert SwiGLU (deepseek).
bool Recomputes(const Op& op, RecomputeKind r);
// The share of `op`'s forward that recompute mode `r` reruns: 0 or 1, but a part of a fused
// matmul under selective-op.
double RecomputeShare(const Op& op, RecomputeKind r);

}  // namespace parasim
