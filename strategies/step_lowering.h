// Step lowering: the planners of lowering.h put together. States are allocated at the step
// start; every stage's units run in the schedule's order (strategies/schedule.h), emitted
// stage by stage so that a unit comes after the unit it receives from; each forward and
// backward takes its parameter gathers and gradient reductions from the data-parallel planner
// and its tasks from the layer planner; activations and their gradients go stage to stage as
// flows; the step ends with the deferred reductions and the optimizer step.
#pragma once

#include <span>
#include <vector>

#include "sim/status.h"
#include "strategies/dp_lowering.h"
#include "strategies/layer_lowering.h"
#include "strategies/lowering.h"
#include "strategies/schedule_bound.h"
#include "strategies/topology.h"

namespace parasim {

class StepLowering {
 public:
  explicit StepLowering(LoweringContext& ctx)
      : ctx_(ctx),
        topo_(ctx),
        layers_(ctx, topo_),
        dp_(ctx, topo_, layers_),
        activation_bytes_(ActivationBytesOf(ctx)) {}

  Status Run();
  // A lower bound on the replayed step (no tasks are emitted; see StepTimeLowerBound).
  Duration LowerBound();
  // Per stage, a lower bound on the replayed activations at the stage's peak: its order walked
  // with each chunk's activations held from F to B (call after LowerBound, which builds the
  // chunks).
  std::vector<double> ActivationLowerBounds() const;
  // Per stage, the memory at its first backward with recompute's transient on top, from the
  // bytes each stage holds all step (`held`); 0 without recompute.
  std::vector<double> FirstBackwardPeaks(const std::vector<double>& held) const;
  // A tighter lower bound (call after LowerBound): the stages' orders replayed unit by unit,
  // each unit at its LowerBound duration on its stage's compute stream, after the unit it
  // receives from and that transfer, and after the data-parallel gathers it waits for; each
  // stage's reductions one after another from the units that issue them; then the optimizer
  // after both. Every collective and transfer at its time alone on the fabric, no contention.
  // The cost is linear in the step's units (the walk: schedule_bound.h).
  Duration ScheduleBound() const;

 private:
  // A chunk's units as LowerBound times them (UnitDurations: compute and blocking
  // collectives). bw, the backward and W as one unit, is priced op by op only with
  // `whole_backward` (the schedule bound's merged units); else it is b + w.
  UnitDurations DurationsOf(const Chunk& ch, bool whole_backward) const;
  // The data-parallel collectives of chunk c of stage s as its units issue them, and each
  // virtual stage's transfers into its F and B: ScheduleBound's input (schedule_bound.h).
  ChunkComm ChunkCommOf(int s, int c) const;
  void TransferTimes(std::vector<Duration>* into_f, std::vector<Duration>* into_b) const;
  // The mean over every stage's chunks, for the ideal bubble's F, B and W (LoweredStep).
  void RecordUnitTimes();
  void AllocateStates();
  // Every stage's units in the schedule's order, with the steady-state shift (step_shift.h)
  // where the step has one.
  Status EmitSchedule();
  void EmitUnit(int stage, const Unit& u);
  // A forward and a backward as one F&B unit (Unit::pair), with the backward's W when
  // `with_w`: their steps alternate on the compute stream and each one's EP all-to-alls run
  // beside the other's compute. Falls back to the units one after another where the pair
  // would meet a per-layer gather or a gradient reduction.
  void EmitPair(int stage, const Unit& f, const Unit& b, const Unit* w);
  void EmitForward(int stage, const Unit& u);
  void EmitBackward(int stage, const Unit& u);
  // The weight gradient of a split backward (schedules with splits_backward()).
  void EmitWeightGradient(int stage, const Unit& u);
  // What ends a forward (its activations held from each replica's `first` task; its output
  // sent on) and a backward (the recompute transient; its activations freed, but for what W
  // needs when `keep_w`; its gradient sent back).
  void EndForward(int stage, const Unit& u, const std::vector<sim::TaskId>& first);
  void EndBackward(int stage, const Unit& u, const std::vector<sim::TaskId>& first, bool keep_w);
  // The bytes of one micro-batch's activations (or their gradients) between stages.
  Bytes ActivationBytes() const { return activation_bytes_; }
  static Bytes ActivationBytesOf(const LoweringContext& ctx);
  // Activations (forward) or their gradients (backward) of one micro-batch to stage `to`.
  void Send(int from, int to, Phase ph, std::span<sim::TaskId> into);
  // Where the schedule's host waits at each pipeline exchange
  // (PipelineSchedule::host_syncs_at_transfers): each replica of stage `s`, before it issues a
  // unit that receives `in`, waits for that transfer and its GPU's work (its own send, which
  // torch.cuda.synchronize waits for too, is the peer's receive and ends with it: left out, so
  // that the two ranks of an exchange do not leave it at the very same instant every period).
  void HostWaitsForTransfer(int s, std::span<const sim::TaskId> in);
  // Index of (virtual stage g, micro-batch mb) in the transfer tables.
  size_t Slot(int g, int64_t mb) const { return static_cast<size_t>(g) * ctx_.micro_batches + mb; }

  LoweringContext& ctx_;
  RankTopology topo_;
  LayerLowering layers_;
  DataParallelLowering dp_;
  const Bytes activation_bytes_;  // ActivationBytes, the same for every transfer of the step
  // Pipeline transfers into each unit, by Slot(virtual stage, mb) then replica (every stage
  // has `replicas_` of them), kNone where none.
  std::vector<sim::TaskId> fwd_in_, bwd_in_;
  size_t replicas_ = 1;
  std::vector<sim::TaskId> firsts_;  // scratch: each replica's first task of a unit
  std::span<sim::TaskId> FwdIn(size_t slot) {
    return {fwd_in_.data() + slot * replicas_, replicas_};
  }
  std::span<sim::TaskId> BwdIn(size_t slot) {
    return {bwd_in_.data() + slot * replicas_, replicas_};
  }
};

}  // namespace parasim
