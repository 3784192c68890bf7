// A parallel layout: how the ranks of a cluster split one model (SCENARIO.md "parallelism").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/status.h"
#include "sim/units.h"

namespace parasim {

// A pipeline schedule: its index in the schedule registry (strategies/schedule.h), where the
// built-ins hold these fixed places.
using ScheduleId = uint8_t;
inline constexpr ScheduleId kScheduleGpipe = 0;
inline constexpr ScheduleId kSchedule1F1B = 1;
inline constexpr ScheduleId kScheduleInterleaved = 2;

enum class CompressionKind { kNone, kFp16, kInt8, kTopK, kPowerSgd };

// The dimensions of the rank grid (SCENARIO.md parallelism.order). EP is carved out of dp x cp,
// so its place in the order does not move a rank.
enum class RankDim : uint8_t { kTp, kCp, kEp, kDp, kPp };
std::string_view RankDimName(RankDim d);
// "[tp, cp, ep, dp, pp]": an order as parallelism.order reads it.
std::string OrderText(const std::vector<RankDim>& order);
// "topk:0.01", "powersgd:4", "fp16": a compression as parallelism.compression reads it.
std::string CompressionText(CompressionKind kind, double param);
StatusOr<RankDim> ParseRankDim(std::string_view s);
// tp, cp, ep, dp, pp: TP innermost so that it stays inside a node.
const std::vector<RankDim>& DefaultRankOrder();

struct Layout {
  int tp = 1;
  int pp = 1;
  int64_t dp = 1;
  int cp = 1;
  int ep = 1;
  // Expert tensor parallelism: the TP width of the experts' FFNs, 0 = tp (Megatron-Core's
  // expert_tensor_parallel_size, whose default is the tensor-parallel size). With MoE parallel
  // folding (Liu et al. 2025, arXiv 2504.14960; Megatron-Core's --expert-tensor-parallel-size)
  // the MoE layers regroup each pipeline stage's tp x cp x dp ranks as etp x ep x edp, etp
  // innermost, so that EP may span the TP ranks (Qwen3 235B on H100: TP2, EP32, ETP1).
  int etp = 0;
  bool sp = false;
  int zero = 0;
  ScheduleId schedule = kSchedule1F1B;
  int virtual_stages = 1;
  // Interleaved 1F1B: micro-batches each model chunk runs in a row before the next chunk's turn
  // (Megatron-Core's --microbatch-group-size-per-virtual-pipeline-stage); 0 = pp, the SC21
  // schedule. Any value from pp to the micro-batch count whose remainder is 0 or at least pp.
  int64_t microbatch_group = 0;
  std::vector<int> stage_layers;  // empty = even split, remainder spread
  // The embedding and the loss counted as a layer each in the pipeline split (Megatron-LM's
  // --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split): layers
  // plus those split evenly over the model chunks, the first chunk holding one layer fewer for
  // the embedding and the last one fewer for the loss (Llama 3 405B's 126 layers on PP16 x 8,
  // arXiv 2407.21783 sec. 3.3.2). parallelism.account_for: [embedding, loss].
  bool split_embedding = false;
  bool split_loss = false;
  bool overlap_dp = true;
  // Tensor-parallel collectives beside compute:
  // - kNone: every one blocks (Megatron-LM before its asynchronous TP all-reduce, as in SC21);
  // - kBackward: a column-parallel Linear's backward all-reduce (reduce-scatter with SP) runs
  //   beside its weight gradient, and with SP the re-gather of its input beside its input
  //   gradient (Megatron-LM's default, megatron/core/tensor_parallel/layers.py,
  //   LinearWithGradAccumulationAndAsyncCommunication; Korthikanti et al. 2022 Table 4: the
  //   backward of a 22B layer on TP8 takes 11.9 ms against a 7.7 ms forward);
  // - kAll: every TP collective hides behind its op's compute (Transformer Engine userbuffers,
  //   Megatron-Core --tp-comm-overlap).
  enum class TpOverlap : uint8_t { kNone, kBackward, kAll };
  TpOverlap overlap_tp = TpOverlap::kBackward;
  // EP all-to-alls of one micro-batch beside another's compute (Megatron-Core's
  // overlap_moe_expert_parallel_comm): a schedule without F&B pairs of its own pairs each
  // steady-state forward with the backward after it; one stage runs F0, (F1, B0), ..., B(m-1).
  bool overlap_ep = false;
  // When gradients are reduced over data parallelism with gradient accumulation:
  // - kAuto: as the frameworks do by default for the ZeRO stage: ZeRO 0/1 once, after the last
  //   micro-batch (PyTorch DDP under no_sync, Megatron-LM's DDP and distributed optimizer),
  //   ZeRO 2/3 after every micro-batch's backward (DeepSpeed ZeRO-2/3, PyTorch FSDP), which
  //   keeps only the shard of the accumulated gradients;
  // - kMicroBatch: after every micro-batch (DDP without no_sync: an all-reduce per backward);
  // - kStep: once, after the last micro-batch (ZeRO 2/3 under FSDP's no_sync or FSDP2's
  //   set_requires_gradient_sync(False) until the last: the accumulated gradients stay whole).
  enum class GradReduce : uint8_t { kAuto, kMicroBatch, kStep };
  GradReduce grad_reduce = GradReduce::kAuto;
  // How context parallelism brings every CP rank's keys and values to a rank's queries:
  // - kRing: passed around the ring block by block beside the attention of the block before
  //   (ring attention; Megatron-Core's default cp_comm_type p2p);
  // - kAllGather: gathered whole before the attention, and in the backward gathered again and
  //   their gradients reduce-scattered after it, none of it beside compute (Llama 3, arXiv
  //   2407.21783 sec. 3.3.2, whose exposed latency GQA's small K and V keep short;
  //   Megatron-Core's cp_comm_type all_gather).
  enum class CpComm : uint8_t { kRing, kAllGather };
  CpComm cp_comm = CpComm::kRing;
  // ZeRO 3 with per-parameter sharding copies what it gathers and reduces (true: PyTorch FSDP2,
  // DeepSpeed ZeRO-3): each layer's gathered parameters out of the all-gather buffer on the
  // compute stream, its gradients into the reduce-scatter's buffer first. false: flat
  // parameters that are views of the gather's output and gradients reduced in place (PyTorch
  // FSDP1's FlatParameter, Megatron-Core's FSDP buffers).
  bool zero3_copies = true;
  // When ZeRO 3 frees a layer's gathered parameters (reshards them):
  // - kForward: after each forward, gathered again for the backward, freed after it (PyTorch
  //   FSDP's reshard_after_forward, DeepSpeed ZeRO-3, Megatron-FSDP);
  // - kBackward: after each backward: gathered at each forward, held to its backward (FSDP's
  //   reshard_after_forward=False, torchtitan's fsdp_reshard_after_forward "never" without PP);
  // - kStep: at the step's end: gathered at a stage's first forward, held through the last
  //   backward (torch.distributed.pipelining's stages run FSDP2 modules with
  //   reshard_after_backward False until their one REDUCE_GRAD, after every micro-batch's
  //   backward,
  //   torch/distributed/pipelining/stage.py backward_maybe_with_nosync and perform_reduce_grad;
  //   torchtitan's default under PP adds reshard_after_forward=False,
  //   torchtitan/distributed/fsdp.py get_fsdp_reshard_after_forward_policy).
  enum class Zero3Reshard : uint8_t { kForward, kBackward, kStep };
  Zero3Reshard zero3_reshard = Zero3Reshard::kForward;
  // How ZeRO 1 (Megatron-Core's distributed optimizer) issues the parameter all-gathers of a
  // step's first forwards with overlap.dp (--overlap-param-gather), as its versions do:
  // - kChained: Megatron-Core 0.8 and before: the first at zero_grad, each next one when the
  //   forward reaches the bucket before it, model chunk after model chunk
  //   (distrib_optimizer.py _finish_param_sync_helper);
  // - kOnDemand: Megatron-Core 0.9 on, without interleaving or with --no-align-param-gather:
  //   each model chunk's first bucket when its first forward reaches it, waited for at once,
  //   then the next one bucket ahead within the chunk (param_and_grad_buffer.py
  //   finish_param_sync, next_param_gather_bucket_group);
  // - kAligned: Megatron-Core 0.9 on with interleaving (align_param_gather, its default there):
  //   model chunks 0 and 1 whole at the step start, chunk k >= 2 whole when the stage begins
  //   its forward number (k - 1) g - s (g the micro-batch group, s the stage), every stage at
  //   about the same time (schedules.py forward_step_helper_preprocess);
  // - kAtStart: every one issued at the step start, each first forward waiting for its own (as
  //   ZeRO 2's are): what a framework that overlaps them without such a limit would do;
  // - kAuto: the current Megatron-Core's for its schedules: kAligned under interleaved-1f1b
  //   with virtual stages, kOnDemand under 1f1b (and interleaved-1f1b with one); kAtStart
  //   under the schedules Megatron-Core does not run (gpipe, zero bubble, DualPipe), whose
  //   frameworks' gathers no source states.
  enum class ParamGather : uint8_t { kAuto, kAtStart, kChained, kOnDemand, kAligned };
  ParamGather param_gather = ParamGather::kAuto;
  // Gradient (and ZeRO parameter) bucket; zero: the framework's own, which depends on the
  // layout (DataBucketBytes, strategies/lowering.h).
  Bytes bucket;
  CompressionKind compression = CompressionKind::kNone;
  double compression_param = 0;  // top-k fraction or PowerSGD rank
  // Rank order of groups, innermost first (TP innermost so TP stays inside a node).
  // Dimensions the order leaves out go outermost, in this default order.
  std::vector<RankDim> order = DefaultRankOrder();

  int64_t gpus() const { return static_cast<int64_t>(tp) * pp * dp * cp; }
  // The experts' TP width (etp, or tp where unset).
  int expert_tp() const { return etp > 0 ? etp : tp; }
  // Ranks of a stage that hold the same experts (the expert-data-parallel width, edp):
  // tp x cp x dp / (etp x ep); ZeRO shards expert states over them.
  double expert_data_width() const {
    return static_cast<double>(tp) * cp * static_cast<double>(dp) / (expert_tp() * ep);
  }
  // Whether every micro-batch's backward reduces its gradients (grad_reduce, resolved).
  bool reduces_every_micro_batch() const {
    return grad_reduce == GradReduce::kAuto ? zero >= 2 : grad_reduce == GradReduce::kMicroBatch;
  }
  // Whether the accumulated gradients are kept as this rank's shard only (ZeRO 2/3 reducing
  // every micro-batch); else whole until the reduction.
  bool shards_gradients() const { return zero >= 2 && reduces_every_micro_batch(); }
  // What param_gather's kAuto means for this schedule, and param_gather with kAuto resolved.
  ParamGather auto_param_gather() const {
    if (schedule == kScheduleInterleaved && virtual_stages > 1) return ParamGather::kAligned;
    return schedule == kSchedule1F1B || schedule == kScheduleInterleaved ? ParamGather::kOnDemand
                                                                         : ParamGather::kAtStart;
  }
  ParamGather param_gather_resolved() const {
    return param_gather == ParamGather::kAuto ? auto_param_gather() : param_gather;
  }
  // Whether context parallelism gathers K and V whole (cp_comm, where there is an exchange).
  bool gathers_kv() const { return cp > 1 && cp_comm == CpComm::kAllGather; }
};

// parallelism.param_gather's names: auto, at_start, chained, on_demand, aligned.
std::string_view ParamGatherName(Layout::ParamGather g);
StatusOr<Layout::ParamGather> ParseParamGather(std::string_view s);
std::vector<std::string_view> ParamGatherNames();

// parallelism.zero3_reshard's names: forward, backward, step.
std::string_view Zero3ReshardName(Layout::Zero3Reshard r);
StatusOr<Layout::Zero3Reshard> ParseZero3Reshard(std::string_view s);
std::vector<std::string_view> Zero3ReshardNames();

// parallelism.grad_reduce's names: auto, micro_batch, step.
std::string_view GradReduceName(Layout::GradReduce g);
StatusOr<Layout::GradReduce> ParseGradReduce(std::string_view s);
std::vector<std::string_view> GradReduceNames();
// parallelism.cp_comm's names: ring, all_gather.
std::string_view CpCommName(Layout::CpComm c);
StatusOr<Layout::CpComm> ParseCpComm(std::string_view s);
std::vector<std::string_view> CpCommNames();

// Layers per pipeline stage: stage_layers when given; with split_embedding or split_loss the
// layers plus those ends split evenly, one fewer on the first or last stage; else an even split
// with the remainder spread over the middle stages (first and last stages hold the embedding
// and LM head).
std::vector<int> StageLayers(const Layout& l, int layers);

// Layers per model chunk, [stage][chunk], for `chunks` model chunks per stage (the layout's
// virtual stages when its schedule interleaves, else 1). Each stage's layers
// split as evenly as they go; where a stage's count does not divide, the first stage's short
// chunks come first and the last stage's come last, so a chunk left without layers is the one
// that holds only the embedding or only the LM head (Llama 3 405B, arXiv 2407.21783 sec. 3.3.2:
// 126 layers on PP16 with one layer per chunk, the first chunk holding only the embedding and
// the last only the output and loss). Empty chunks elsewhere are a layout error (plan.cc).
// In a V (`v_shape`) stage 0 holds both ends, the embedding in chunk 0 and the LM head in
// chunk 1; its extra layer goes to chunk 0, beside the lighter end.
std::vector<std::vector<int>> ChunkLayers(const Layout& l, int layers, int chunks,
                                          bool v_shape = false);

// PyTorch DDP's bucket_cap_mb = 25 (torch.nn.parallel.DistributedDataParallel default).
inline constexpr Bytes kDdpBucket = Bytes::MiB(25);

}  // namespace parasim
