// One training step: lower model x layout onto the cluster's ranks as a sim::Program, replay it
// in the discrete-event engine, and summarise the timeline.
//
//   StatusOr<StepReport> r = SimulateStep(model, training, layout, cluster, {});
//   r->step_time_s, r->mfu, r->bubble_fraction, r->exposed.dp, r->peak_memory_bytes[stage]
//
// The lowering is made of one planner per concern (strategies/lowering.h lists them): the
// pipeline schedule (schedule.h, one class per schedule), the rank topology (topology.h), the
// layers with their TP/SP/CP/EP collectives (layer_lowering.h), data parallelism with ZeRO/FSDP,
// compression and the optimizer (dp_lowering.h), put together in schedule order with pipeline
// transfers and memory events (step_lowering.h); step_summary.h reads the replay back and
// step_advice.h adds the warnings.
//
// By default one representative rank per pipeline stage is replayed (DP and TP replicas behave
// alike); `full` expands every rank of the cluster, with collectives spanning their members.
#pragma once

#include "hardware/spec.h"
#include "models/model_spec.h"
#include "models/training.h"
#include "sim/engine.h"
#include "sim/status.h"
#include "strategies/layout.h"
#include "strategies/lowered_step.h"
#include "strategies/step_kernels.h"
#include "strategies/step_summary.h"

namespace parasim {

StatusOr<LoweredStep> LowerStep(const ModelSpec& model, const Training& training,
                                const Layout& layout, const ClusterSpec& cluster,
                                const StepOptions& options);

// Lower bounds on what SimulateStep reports, from the ops' priced durations and the
// schedule's orders alone (no tasks, no replay). The sweep skips the replay of layouts whose
// bounds cannot enter its ranking or its Pareto front.
struct StepBounds {
  // The busiest stage's compute with its pipeline fill and drain.
  double step_s = 0;
  // The fullest stage's states and buffers (`held_bytes`) plus the most activations its order
  // holds at once, a split backward keeping W's share until W (the replay adds recompute's
  // transient).
  double peak_bytes = 0;
};
// `held_bytes[s]`: stage s's states and buffers (EstimateMemory's StageMemory::held_bytes,
// which the replay allocates at the step start).
StatusOr<StepBounds> StepLowerBounds(const ModelSpec& model, const Training& training,
                                     const Layout& layout, const ClusterSpec& cluster,
                                     const std::vector<double>& held_bytes);
// A tighter lower bound on the replayed step than StepLowerBounds' (StepLowering::
// ScheduleBound, at least that one), at a cost linear in the step's units: for the layouts
// the first bound cannot rule out, before they are lowered. The layout must be one CheckLayout
// accepts (the sweep's are), as for LowerStep.
StatusOr<double> StepScheduleBound(const ModelSpec& model, const Training& training,
                                   const Layout& layout, const ClusterSpec& cluster);

// Replays and summarises a step LowerStep lowered (for the same arguments); `replay_ms` is
// the replay's alone, `summary_ms` the summary's.
StatusOr<StepReport> ReplayStep(LoweredStep low, const ModelSpec& model, const Training& training,
                                const Layout& layout, const ClusterSpec& cluster,
                                const StepOptions& options, LoweredStep* lowered = nullptr,
                                sim::Timeline* timeline = nullptr);

// For `run`: how many layers per chunk to recompute, when that changes whether the step fits
// or what it costs (`r` is the step's report). A step that does not fit: the fewest layers
// per chunk under full recompute (or the scenario's mode) with which it fits. A step that fits
// with a recompute mode: the fewest with which it still fits, when fewer than it recomputes
// now. The memory planner searches; the replay confirms (an empty result otherwise).
std::string RecomputeLayersAdvice(const ModelSpec& model, const Training& training,
                                  const Layout& layout, const ClusterSpec& cluster,
                                  const StepReport& r);

// For `run`: a ZeRO 2/3 step that reduces its gradients every micro-batch (grad_reduce: auto)
// and fits, replayed reducing once per step instead (whole gradients held: FSDP's no_sync);
// the advice when that also fits and is at least 1% shorter, else empty.
std::string GradReduceAdvice(const ModelSpec& model, const Training& training, const Layout& layout,
                             const ClusterSpec& cluster, const StepReport& r);

// For `run`: a ZeRO 3 step that fits, replayed holding its layers' gathered parameters longer
// (zero3_reshard backward, then step: fewer gathers, more memory); the advice for the shortest
// that also fits and is at least 1% shorter, else empty.
std::string Zero3ReshardAdvice(const ModelSpec& model, const Training& training,
                               const Layout& layout, const ClusterSpec& cluster,
                               const StepReport& r);

// For `run`: an MoE step whose experts are tensor-parallel as wide as attention (etp = tp > 1,
// with SP and EP), replayed with MoE parallel folding instead (etp: 1, the EP group over the
// TP ranks too: ep x tp with the experts' shards as they were, or the same ep with whole
// experts); the advice when one fits and is at least 1% shorter, else empty.
std::string FoldingAdvice(const ModelSpec& model, const Training& training, const Layout& layout,
                          const ClusterSpec& cluster, const StepReport& r);

// For `run`: a step whose expert GEMMs are issued one expert at a time after the routing's
// synchronisation (training.expert_gemm: per_expert), replayed with one grouped kernel per GEMM;
// the advice when that is at least 1% shorter (the host, not the GPU, sets the experts' pace),
// else empty. Memory does not change.
std::string GroupedGemmAdvice(const ModelSpec& model, const Training& training,
                              const Layout& layout, const ClusterSpec& cluster,
                              const StepReport& r);

// For `run`: a step whose loss runs pass by pass on fp32 logits (training.cross_entropy:
// unfused), replayed with the fused loss instead; the advice when that is at least 1% shorter
// (large vocabularies against the hidden size), else empty. The fused loss keeps less, so it
// fits where the step does.
std::string LossFusionAdvice(const ModelSpec& model, const Training& training, const Layout& layout,
                             const ClusterSpec& cluster, const StepReport& r);

// Every advice above for the step of report `r`, those that apply (run, diff and report give
// them as warnings).
std::vector<std::string> StepAdvice(const ModelSpec& model, const Training& training,
                                    const Layout& layout, const ClusterSpec& cluster,
                                    const StepReport& r);

// Lowers, replays and summarises. `lowered` and `timeline`, when given, receive the program
// and its timeline (for traces).
StatusOr<StepReport> SimulateStep(const ModelSpec& model, const Training& training,
                                  const Layout& layout, const ClusterSpec& cluster,
                                  const StepOptions& options, LoweredStep* lowered = nullptr,
                                  sim::Timeline* timeline = nullptr);

}  // namespace parasim
