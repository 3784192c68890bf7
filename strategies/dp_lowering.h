// Data-parallel lowering: gradient reduction across data-parallel ranks (all-reduce, or
// reduce-scatter under ZeRO >= 1, bucket by bucket, with optional compression), parameter
// all-gathers (ZeRO 1/2 ahead of the first forward, ZeRO 3 / FSDP before every layer's
// forward and backward), reductions deferred to after the pipeline flush when they do not
// overlap backward, and the optimizer step over this rank's shard of the states.
#pragma once

#include <functional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/flat_map.h"
#include "strategies/layer_lowering.h"
#include "strategies/lowering.h"
#include "strategies/topology.h"

namespace parasim {

class DataParallelLowering {
 public:
  DataParallelLowering(LoweringContext& ctx, RankTopology& topo, const LayerLowering& layers)
      : ctx_(ctx), topo_(topo), layers_(layers) {}

  // ZeRO 3 with data-parallel peers: parameters gathered before each layer's use.
  bool GathersPerLayer() const;
  // ZeRO 3, as parallelism.zero3_reshard frees them: whether the forward of micro-batch `mb`
  // gathers its layers (each one's, or the first's alone when they are held to the step's end),
  // and whether each backward gathers them again (they were freed after the forward).
  bool GathersForForward(int64_t mb) const;
  bool GathersForBackward() const;
  // How many times a step gathers each layer (zero where nothing is gathered layer by layer).
  double LayerGathersPerStep() const;
  // ZeRO 1/2 with data-parallel peers: updated parameters gathered at the step start.
  bool GathersAtStart() const;
  // Whether the backward of micro-batch `mb` reduces gradients (ZeRO >= 2: every one).
  bool Reduces(int64_t mb) const;

  // ZeRO 3, before pieces [first, last) of `ch` run: their gather, after the last gather's
  // copy-out, which the next compute task of each replica waits for, and FSDP2's copy of the
  // gathered parameters out of the all-gather buffer into each parameter (CopyOutTime), that
  // task.
  void GatherForCompute(int stage, const Chunk& ch, int first, int last);
  // Gradient reduction of pieces [first, last), each replica's after its entry of `after`;
  // immediately (overlap.dp) or after the pipeline flush.
  void Reduce(int stage, int chunk, int first, int last);

  // Where each replica of `stage` is in its list of reductions, before a backward issues its;
  // empty where backwards do not wait for their reductions (EndBackward).
  std::vector<size_t> ReductionMarks(int stage) const;
  // DeepSpeed ZeRO and PyTorch FSDP reduce every micro-batch's gradients as its backward
  // produces them, then end the backward waiting for them (DeepSpeed's
  // independent_gradient_partition_epilogue synchronizes its reduction stream, with
  // overlap_comm in stage_1_and_2.py, always in stage3.py; FSDP's _post_backward_final_callback
  // makes the compute stream wait for its post-backward stream): when every micro-batch
  // reduces, each replica's next compute-stream task waits for the reductions issued since
  // `marks`. Without pipeline parallelism only: DeepSpeed refuses ZeRO-2/3 with its pipeline
  // engine, torchtitan's FSDP under a pipeline reduces once per step, and Llama 3's
  // per-micro-batch reduce-scatters under PP16 overlap the pipeline (its 16K-GPU step of 6.7 s
  // predicts 10.2 s if every backward waits for them). Megatron's distributed optimizer
  // reduces once, after the last micro-batch, and only its optimizer step waits.
  void EndBackward(int stage, const std::vector<size_t>& marks);

  // ZeRO 1/2: issues the start gathers due at the step start (call once, before any unit): all
  // of them, or as parallelism.param_gather says (StartGatherMode).
  void IssueStartGathers();
  // Before each forward unit of `stage`, in the stage's order, once it has waited for its input:
  // under kAligned the whole model chunks due at this forward are gathered.
  void BeforeForward(int stage);
  // ZeRO 1/2, before the first forward of segment `segment` of chunk `chunk` of `stage`: the
  // next compute task of each replica waits for the segment's start gather (issued now where it
  // was not); chained or on demand the next bucket's gather is issued then, beside the forward.
  void WaitStartGather(int stage, int chunk, int segment);
  // The same for every segment of every chunk of `stage` (without overlap.dp).
  void WaitAllStartGathers(int stage);
  // Reductions that waited for the pipeline flush, then each stage's optimizer step.
  void Finish();

  // A lower bound on stage `stage`'s step from its data-parallel streams: the gathers the step
  // issues run one after another on the gather stream, the reductions on the reduce stream,
  // each at least as long as alone on the fabric (StepLowering::LowerBound's first tier).
  Duration StreamBound(int stage) const;
  // For StepLowering::ScheduleBound, each at least as long as the tasks it stands for take
  // alone on the fabric (zero where none are issued):
  // - the gather or reduction of pieces [first, last) of `ch` as Emit issues it, a
  //   reduction's compression pass included;
  Duration IssuedTime(const Chunk& ch, int first, int last, bool gather) const;
  // - ZeRO 3: the copy-out after the gather of pieces [first, last) on the compute stream
  //   (GatherForCompute; zero where nothing is gathered).
  Duration CopyOutTime(const Chunk& ch, int first, int last) const;
  // - ZeRO 1/2: how long the start gathers (IssueStartGathers, one after another on the
  //   gather stream) take until the first forward of chunk `chunk` may begin (from the step
  //   start), and how long that forward waits once it is otherwise ready (a gather issued on
  //   demand): the pair.
  std::pair<Duration, Duration> StartGatherWait(int stage, int chunk) const;
  // Whether each backward that reduces ends waiting for its reductions (EndBackward): the next
  // compute task of its stage waits for them.
  bool BackwardWaitsForReductions() const { return WaitsAtBackwardEnd() && ctx_.layout.overlap_dp; }
  // The optimizer's pass over stage `stage`'s shard of the states: the last task of each of its
  // ranks' compute streams, after every gradient reduction (and so after every collective).
  Duration OptimizerTime(int stage) const;

 private:
  struct WireCost {
    Collective coll;
    double per_elem;       // bytes on the wire per parameter
    double gather_factor;  // top-k: each rank's selection is all-gathered
    Duration compress;     // passes on the GPU before the collective (compression, copy-in)
  };
  WireCost CostOf(bool gather, double params) const;
  // ZeRO 3 sharded parameter by parameter (Layout::zero3_copies): its gathers and reductions
  // copy what they move (the copy-out in TimeParams, the copy-in in CostOf).
  bool CopiesPerParameter() const { return ctx_.layout.zero == 3 && ctx_.layout.zero3_copies; }
  // The collective over pieces [first, last) of `ch` (dense over DP, experts over expert-DP),
  // bucket by bucket: its time alone on the fabric, the latency part, whether it crosses nodes.
  struct Timed {
    WireCost wire;
    Duration time, latency;
    bool inter = false;
    Duration copy_out;               // ZeRO 3 gathers: FSDP2's copy-out on the compute stream
    uint32_t flow_key = sim::kNone;  // its flows' cost key, once one is emitted (Emit)
  };
  // Memoised by what it depends on (Params): every micro-batch reduces (ZeRO 2/3) or gathers
  // (ZeRO 3) the same segments, and the stages of a pipeline repeat the same few chunks.
  Timed TimeOf(const Chunk& ch, int first, int last, bool gather) const {
    return *TimedOf(ch, first, last, gather);
  }
  // The memo's entry (valid until the next one is added).
  Timed* TimedOf(const Chunk& ch, int first, int last, bool gather) const;
  // The range's dense and expert parameters, and whether gathered or reduced.
  struct Params {
    double dense, expert;
    bool gather;
    bool one_bucket;  // the chunk's one bucket (Chunk::one_bucket): one call, not split
    bool operator==(const Params&) const = default;
  };
  struct ParamsHash {
    size_t operator()(const Params& p) const {
      return std::hash<double>()(p.dense) * 31 + std::hash<double>()(p.expert) * 7 + p.gather +
             size_t{p.one_bucket} * 2;
    }
  };
  Timed TimeParams(const Params& p) const;
  // The flows, one per replica of `stage`, into emitted_ (returned).
  const std::vector<sim::TaskId>& Emit(int stage, const Chunk& ch, int first, int last, bool gather,
                                       const std::vector<sim::TaskId>& after);
  // `blocking`: the compute stream's next task waits for the reductions.
  void ReduceNow(int stage, const Chunk& ch, int first, int last, bool blocking = false);
  // Whether a backward that reduces ends waiting for its reductions (EndBackward).
  bool WaitsAtBackwardEnd() const;
  void OptimizerStep();

  struct Deferred {
    int stage, chunk, first, last;
  };
  LoweringContext& ctx_;
  RankTopology& topo_;
  const LayerLowering& layers_;
  // How the start gathers are issued: kAll at the step start (ZeRO 2, or without overlap);
  // ZeRO 1 with overlap as Layout::ParamGather says.
  enum class StartGathers : uint8_t { kAll, kChained, kOnDemand, kAligned };
  StartGathers StartGatherMode() const;
  // Issues the start gather of segment `segment` of chunk `chunk` of `stage`: at the step start,
  // or `beside` the compute stream's next task (after what that task waits for).
  void IssueStartGather(int stage, int chunk, int segment, bool beside);
  // How many start gathers `stage` has, and one's index among them (model chunk by model chunk,
  // each chunk's segments in forward order).
  int StartGatherCount(int stage) const;
  int IndexOf(int stage, int chunk, int segment) const;
  // [stage][chunk][segment][replica]; per stage which are issued (by index) and how many
  // forwards it has emitted.
  std::vector<std::vector<std::vector<std::vector<sim::TaskId>>>> start_gathers_;
  std::vector<std::vector<char>> start_issued_;
  std::vector<int64_t> forwards_;
  std::vector<Deferred> deferred_;
  // ZeRO 3: per stage and replica, what the next gather waits for (GatherForCompute): the
  // copy-out of the last gather, or without copies the compute issued before the last unit.
  std::vector<std::vector<sim::TaskId>> waits_;
  // Emit's scratch, kept between calls (a step emits thousands of gathers and reductions).
  std::vector<sim::TaskId> emitted_, after_, heads_, waits_for_;
  std::vector<Replica*> members_;
  mutable sim::FlatMap<Params, Timed, ParamsHash> by_params_;
};

}  // namespace parasim
