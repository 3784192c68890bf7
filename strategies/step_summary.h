// Reads a replayed step back into a StepReport: step time, throughput, model and hardware FLOP
// rates (MFU, HFU), the measured bubble per stage beside the schedule's ideal one, exposed
// communication per kind, compute per stage, the busiest stage's step part by part, peak memory
// per stage from the replay, time and cost to train, and the critical path in a sentence.
// Warnings come from step_advice.h.
//
// The bubble, defined once: a stage's bubble is the time inside the step (0 to the step time)
// during which its GPU runs nothing (no compute, no communication of its own) and waits on no
// pipeline transfer it receives, over the step time. `bubble_fraction` is the mean over stages.
// The schedule's ideal is stated on the same basis: its idle over work x (e.g. (p-1)/m) as a
// share of a step made of that idle and that work, x / (1 + x).
//
// The busiest stage's step, part by part (`parts`), is a partition: every instant of the step
// counts once, as compute if the stage computes, else as the first kind of communication
// running (TP, CP, EP, pipeline transfers received, DP with its copies and compression), else
// as the stage's bubble; the parts add up to the step time.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hardware/spec.h"
#include "models/model_spec.h"
#include "models/training.h"
#include "sim/engine.h"
#include "strategies/layout.h"
#include "strategies/lowered_step.h"
#include "strategies/schedule.h"

namespace parasim {

struct ExposedComm {
  // Seconds per step a kind of communication runs while the GPU computes nothing.
  double tp = 0, cp = 0, ep = 0, pp = 0, dp = 0;
  double total() const { return tp + cp + ep + pp + dp; }
  // Seconds per step the host (CPU) issues work while the GPU runs nothing at all, neither
  // compute nor communication: the step is the host's (RankTopology::Issue). Not in total().
  double host = 0;
};

// What a step's time is made of, as the replay measured it: the busiest stage's compute, its
// pipeline bubble, and each kind of exposed communication. The sweep's bottleneck and "why the
// runners-up lose", the diff and the report's "where the step time goes" all read this list.
enum class StepPart : uint8_t { kCompute, kBubble, kTp, kCp, kEp, kPp, kDp, kHost };
inline constexpr int kNumStepParts = 8;
struct StepPartTime {
  StepPart part;
  double s;
};
std::string_view StepPartName(StepPart p);  // "compute (busiest stage)", "gradient sync (DP)"
std::string_view StepPartKey(StepPart p);   // its JSON key: "compute", "bubble", "tp", ... "dp"
// The parts from a stage's compute, its bubble (seconds) and exposed communication.
std::array<StepPartTime, kNumStepParts> StepParts(double compute_s, double bubble_s,
                                                  const ExposedComm& exposed);

struct StepReport {
  double step_time_s = 0;
  int64_t micro_batches = 0;
  double tokens_per_s = 0;
  double model_flops_per_step = 0;  // model FLOPs (no recompute), whole cluster
  double hw_flops_per_step = 0;     // executed FLOPs including recompute
  double tflops_per_gpu = 0;        // model TFLOP/s per GPU
  double hw_tflops_per_gpu = 0;
  double mfu = 0;
  double hfu = 0;
  // Measured, per stage and the mean over stages: idle time inside the step over the step
  // time (the header's definition).
  double bubble_fraction = 0;
  std::vector<double> bubble_fraction_per_stage;
  // The schedule's ideal on the same basis, x / (1 + x), from its idle over work x
  // (`ideal_bubble_of_work`: (p-1)/(v m) for 1F1B-like ones).
  double ideal_bubble_fraction = 0;
  double ideal_bubble_of_work = 0;
  UnitTimes unit_times;                 // its F, B and W: a chunk's mean unit times, seconds
  ExposedComm exposed;                  // per kind, the largest over stages
  std::vector<double> stage_compute_s;  // forward/backward/recompute/optimizer per stage
  // The busiest stage (the most compute-stream work, optimizer aside) and its step part by
  // part, in StepPart order, seconds: a partition of the step (the header's definition).
  int busiest_stage = 0;
  std::array<double, kNumStepParts> parts_s = {};
  std::vector<double> peak_memory_bytes;  // per stage, from the replay
  // Of it, what PyTorch's allocator counts (torch.cuda.max_memory_allocated): the peak less
  // the reserve outside it (strategies/memory.h).
  std::vector<double> peak_allocated_bytes;
  double capacity_bytes = 0;
  bool fits = true;
  double time_to_train_s = 0;  // when training.tokens is given
  double gpu_hours = 0;
  double cost = 0;  // gpu_hours x cluster.gpu_hour_cost
  std::string critical_path;
  std::vector<std::string> warnings;
  size_t tasks = 0;
  uint64_t events = 0;
  uint64_t moves = 0;           // completions moved in place (sim::Timeline::moves)
  uint64_t jumped_tasks = 0;    // tasks placed by the steady-state jump, not replayed one by one
  uint32_t period_anchors = 0;  // the anchors (stage 0's forwards) its period spanned
  double lower_ms = 0;          // building the program
  double replay_ms = 0;         // lowering plus engine replay (wall clock)
  double summary_ms = 0;        // summarising the replayed timeline, warnings included
};

// The busiest stage's compute (0 for an empty report).
double BusiestCompute(const StepReport& r);
// The busiest stage's step part by part (`parts_s`): they add up to the step time.
std::array<StepPartTime, kNumStepParts> StepParts(const StepReport& r);

// Everything but the warnings and the wall-clock fields.
StepReport Summarize(const LoweredStep& low, const sim::Timeline& tl, const ModelSpec& model,
                     const Training& training, const Layout& layout, const ClusterSpec& cluster,
                     const StepOptions& options);

// Sorted, merged time intervals (picoseconds).
using Intervals = std::vector<std::pair<int64_t, int64_t>>;
void Merge(Intervals* v);
// Length of `a` not covered by `b` (both merged), within [0, window).
int64_t Uncovered(const Intervals& a, const Intervals& b, int64_t window);

// "42%".
std::string Percent(double fraction);

}  // namespace parasim
