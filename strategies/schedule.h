// Pipeline schedules: the order in which each pipeline stage runs its units, a unit being the
// forward or backward pass of one model chunk for one micro-batch. Each schedule is a planner
// of its own, in its own file (schedule_gpipe.cc, schedule_1f1b.cc, schedule_interleaved.cc):
// it returns the unit order per stage, the micro-batches a stage holds in flight at its peak
// and any constraint on the layout. The step lowering (step.h) replays whatever order it
// returns, so a new schedule is a new class registered in schedule.cc's table (or, for an
// extension or a test, with RegisterSchedule at run time), never a new formula elsewhere.
//
//   const PipelineSchedule& s = ScheduleOf(layout.schedule);
//   PipelineShape shape{.stages = 4, .chunks = ChunksOf(layout), .micro_batches = 8};
//   for (const Unit& u : s.Order(shape, /*stage=*/0)) { ... }
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/training.h"
#include "sim/status.h"
#include "strategies/layout.h"

namespace parasim {

// kF forward, kB backward; kR (recompute before backward) is added by the lowering. A schedule
// that splits the backward (splits_backward()) runs kB as the input gradient only and kW, the
// weight gradient, as a unit of its own (Qi et al., ICLR 2024).
enum class Phase : uint8_t { kF, kB, kR, kW };

struct Unit {
  Phase phase;
  int chunk;   // model chunk of the stage (virtual stage), 0 unless the schedule interleaves
  int64_t mb;  // micro-batch
  // A kF that runs as one F&B unit with the kB after it (and that kB's kW when it follows):
  // DualPipe's overlapped forward and backward of two micro-batches, each one's all-to-alls
  // hidden behind the other's compute (DeepSeek-V3 technical report, sec. 3.2.1, Figure 4).
  bool pair = false;
  bool operator==(const Unit&) const = default;
};

// A chunk's unit times, for the ideal bubble: its forward, its input-gradient backward (with
// the recompute before it) and its weight gradient (what a split backward's W runs), in any one
// unit. Equal by default: the published formulas' F = B = W.
struct UnitTimes {
  double f = 1, b = 1, w = 1;
};

struct PipelineShape {
  int stages = 1;             // p
  int chunks = 1;             // model chunks per stage (v)
  int64_t micro_batches = 1;  // m
  // A split backward: the share of a micro-batch's activations W holds after B (0 to 1), for
  // InFlight; the order does not depend on it.
  double w_hold = 0;
  // Interleaving: the micro-batches a model chunk runs in a row before the next chunk's turn
  // (Megatron-Core's microbatch_group_size_per_vp_stage, Layout::microbatch_group); 0 = stages.
  int64_t group = 0;
};

class PipelineSchedule {
 public:
  virtual ~PipelineSchedule() = default;
  // The name a scenario writes (`parallelism.schedule`).
  virtual std::string_view name() const = 0;
  // Other spellings the loader accepts.
  virtual std::vector<std::string_view> aliases() const { return {}; }
  // Whether the schedule runs several model chunks per stage (`parallelism.virtual_stages`).
  virtual bool interleaves() const { return false; }
  // Whether the schedule runs two model chunks per stage in a V (ZB-V, DualPipe-V): chunk 0
  // runs down the stages and chunk 1 back up, so stage s holds virtual stages s and 2p-1-s,
  // the embedding and the LM head share stage 0, and the turn on the last stage is local.
  // Without a V, virtual stage g sits on stage g % p as its chunk g / p (round robin).
  virtual bool v_shape() const { return false; }
  // Whether the schedule runs two copies of the model in opposite directions (DualPipe): chunk 0
  // holds model stage s and runs half the micro-batches down the stages, chunk 1 holds model
  // stage p-1-s of a second copy and runs the other half up them. Virtual stages are placed as
  // in a V (chunk 1 of stage s is p + p-1-s), but each micro-batch's route is one direction's p
  // of them (RouteLength), and every stage holds two stages' parameters.
  virtual bool bidirectional() const { return false; }
  // Two chunks per stage placed as in a V (v_shape or bidirectional): chunk 1 of stage s is
  // virtual stage 2p-1-s.
  bool mirrored() const { return v_shape() || bidirectional(); }
  // Whether Order holds a kW unit for every (chunk, mb), after its kB.
  virtual bool splits_backward() const { return false; }
  // Whether the two chunks of a V must hold equal layers (ZB-V's schedule assumes equal
  // chunks; DualPipe-V splits a stage's layers as they go).
  virtual bool equal_chunks() const { return false; }
  // Whether Order pairs forwards with backwards (Unit::pair) to overlap their communication.
  virtual bool pairs_forward_backward() const { return false; }
  // Whether the host waits for the GPU at every pipeline exchange (Megatron-LM's
  // non-interleaved 1F1B batches each send and receive and then calls
  // torch.cuda.synchronize: megatron/core/pipeline_parallel/p2p_communication.py, batch_p2p_sync,
  // on whenever overlap_p2p_comm is off, as it is outside the interleaved schedule), so a
  // unit that receives is issued only once its input has arrived and the rank's GPU is idle.
  virtual bool host_syncs_at_transfers() const { return false; }
  // Units of stage `stage` in the order it runs them; every (phase, chunk, mb) exactly once
  // (kW only when the schedule splits the backward).
  virtual std::vector<Unit> Order(const PipelineShape& shape, int stage) const = 0;
  // Every stage's order (Order for each stage, unless a schedule derives them all at once).
  virtual std::vector<std::vector<Unit>> Orders(const PipelineShape& shape) const;
  // Micro-batches whose activations stage `stage` holds at once at its peak.
  virtual double InFlight(const PipelineShape& shape, int stage) const = 0;
  // Every stage's InFlight (InFlight for each stage, unless a schedule derives them all at
  // once, as one whose memory follows its orders does).
  virtual std::vector<double> InFlights(const PipelineShape& shape) const;
  // The schedule's bubble over compute time in the ideal case (equal stages, free transfers),
  // printed beside the one measured in the replay: (p-1)/(v m) unless overridden. Schedules
  // that split the backward or pair units take the chunk's unit times `t`.
  virtual double IdealBubble(const PipelineShape& shape, const UnitTimes& t) const;
  // That bubble's formula, for people: "(p-1)/m".
  virtual std::string IdealBubbleFormula(const PipelineShape& shape) const;
  // Whether IdealBubble depends on the unit times (else they are not printed with it).
  virtual bool ideal_takes_unit_times() const { return false; }
  // Why the shape cannot run this schedule, or "" when it can.
  virtual std::string Constraint(const PipelineShape& shape) const;
};

// The registry of schedules. The built-ins hold fixed ids (strategies/layout.h: kScheduleGpipe,
// kSchedule1F1B, kScheduleInterleaved); sweeps enumerate AllSchedules() in id order.
const PipelineSchedule& ScheduleOf(ScheduleId id);
std::string_view ScheduleName(ScheduleId id);
// An interleaving schedule with one model chunk a stage is 1F1B, as Megatron-LM runs it
// without virtual stages: `l` folded onto it (the sweep's NormaliseLayout and a scenario's
// fixed layout alike).
void FoldSingleChunkInterleaving(Layout* l);
// By name or alias; the error lists every accepted name.
StatusOr<ScheduleId> FindSchedule(std::string_view name);
// "gpipe | 1f1b | ..." for messages.
std::string ScheduleNames();
std::vector<ScheduleId> AllSchedules();
// Adds a schedule (before any sweep starts: the registry is not locked); returns its id.
ScheduleId RegisterSchedule(std::unique_ptr<PipelineSchedule> schedule);

// `shape` with the layout's interleaving group (Layout::microbatch_group) where it names none.
PipelineShape WithGroup(const Layout& layout, PipelineShape shape);
// The units a layout runs per stage: its schedule's orders (in the layout's micro-batch
// groups), with overlap.ep's F&B pairs (strategies/layout.h) where the schedule has none of its
// own.
std::vector<std::vector<Unit>> LayoutOrders(const Layout& layout, const PipelineShape& shape);
// The same orders, built once per (schedule, overlap.ep, stages, chunks, micro-batches, group) and
// shared across layouts and threads: a sweep's layouts take a few hundred such shapes.
std::shared_ptr<const std::vector<std::vector<Unit>>> SharedLayoutOrders(
    const Layout& layout, const PipelineShape& shape);
// The schedule's activations in flight per stage (InFlights) for `layout.schedule`, computed
// once per (schedule, stages, chunks, micro-batches, w_hold) and shared like SharedLayoutOrders:
// zero-bubble and DualPipe schedules walk every stage's order to find them.
std::shared_ptr<const std::vector<double>> SharedInFlights(const Layout& layout,
                                                           const PipelineShape& shape);
// Where a walk of a stage's order (PeakActivationBytes) can peak: the states after each unit,
// a state being each chunk's count of micro-batches held whole (F less B) and, when the order
// has W units, held for W only (B less W), less every state that another holds at least as
// many of in every count. Every chunk's bytes being nonnegative, the walk's peak is the largest
// of these states' totals. An order whose states outnumber kMaxPeakStates (interleaved 1F1B's
// steady state moves its held micro-batches from chunk to chunk) keeps none: it is walked.
inline constexpr size_t kMaxPeakStates = 8;
struct PeakStates {
  int chunks = 0;
  bool has_w = false;           // counts held for W
  bool walk = false;            // too many states: walk the order instead
  std::vector<int64_t> counts;  // per state: held whole per chunk, then held for W per chunk
  // The forwards before the order's first backward (or the F&B pair that runs it), in runs of
  // (chunk, how many) in order, and that backward's chunk (-1: none).
  std::vector<std::pair<int, int64_t>> before_first_b;
  int first_b_chunk = -1;
};
PeakStates PeakStatesOf(const std::vector<Unit>& order, int chunks);
// Every stage's PeakStates for `layout`'s orders, built once per shape like SharedLayoutOrders
// (a few states per stage, where the orders are 3 x chunks x micro-batches units a stage).
std::shared_ptr<const std::vector<PeakStates>> SharedPeakStates(const Layout& layout,
                                                                const PipelineShape& shape);
// PeakActivationBytes(order, chunk_bytes, chunk_w_bytes) from `states`, the same value when
// every byte count is a whole number and every total stays below 2^52 (each step of the walk is
// then exact in double precision); nullopt otherwise, for the caller to walk the order.
std::optional<double> PeakActivationBytes(const PeakStates& states,
                                          const std::vector<double>& chunk_bytes,
                                          const std::vector<double>& chunk_w_bytes);
// Each stage's activation peak for `layout`'s orders with given bytes per chunk (the walk of
// PeakActivationBytes below): from the shape's shared peak states where they give the walk's
// value exactly, else the stage's order walked unit by unit. Both tables are fetched on first
// need.
class StagePeaks {
 public:
  StagePeaks(const Layout& layout, const PipelineShape& shape) : layout_(layout), shape_(shape) {}
  double Of(int stage, const std::vector<double>& chunk_bytes,
            const std::vector<double>& chunk_w_bytes);

 private:
  const Layout& layout_;
  const PipelineShape shape_;
  std::shared_ptr<const std::vector<PeakStates>> states_;
  std::shared_ptr<const std::vector<std::vector<Unit>>> orders_;
};
// Whether order[at] runs as one F&B unit with the B after it (Unit::pair), as EmitSchedule
// emits it and the bounds walk it.
inline bool RunsAsPair(const std::vector<Unit>& order, size_t at) {
  return order[at].pair && at + 1 < order.size() && order[at + 1].phase == Phase::kB;
}
// Whether the layout runs F&B pairs: its schedule's own, or overlap.ep's.
bool PairsForwardBackward(const Layout& layout);

// Model chunks per stage a layout runs: 2 for a V or two directions, virtual_stages when its
// schedule interleaves, else 1.
int ChunksOf(const Layout& layout);
// Virtual stages a micro-batch passes through: p * chunks, or p for a bidirectional schedule
// (virtual stage g is then step g % p of its direction's route).
int RouteLength(const PipelineSchedule& schedule, int stages, int chunks);
// Micro-batches each chunk runs: m, or m / 2 per direction for a bidirectional schedule
// (Order's units then number their micro-batches 0 .. m/2 - 1 per chunk).
int64_t ChunkMicroBatches(const PipelineSchedule& schedule, int64_t micro_batches);

// One virtual stage's layers, a run in model order, and whether it holds the embedding or the
// LM head (the first and the last virtual stage of its route).
struct ChunkSpan {
  int first = 0, layers = 0;
  bool embedding = false, head = false;
};
// Every virtual stage's span, g = 0 .. pp * ChunksOf(layout) - 1 (PlaceOf names its stage and
// chunk): the chunks of a route take the layers in order, ChunkLayers' counts (StageLayers' for
// a bidirectional schedule, whose two routes each run the whole model).
std::vector<ChunkSpan> ChunkSpans(const Layout& layout, int layers);

// Per model layer, whether `training.recompute` reruns it: every layer, or with
// recompute_layers = N the first N of each model chunk (ChunkSpans). All false without a
// recompute mode.
std::vector<char> RecomputedLayers(const Layout& layout, const Training& training, int layers);

// Where the schedule places model chunks: the virtual stage (position in model order) that
// chunk `chunk` of stage `stage` holds, and back.
// (Inline, and chunk 0 before asking the schedule: the lowering asks for every unit.)
inline int VirtualStageOf(const PipelineSchedule& schedule, int stages, int stage, int chunk) {
  if (chunk == 0) return stage;
  if (chunk == 1 && schedule.mirrored()) return 2 * stages - 1 - stage;
  return chunk * stages + stage;
}
struct ChunkPlace {
  int stage = 0;
  int chunk = 0;
};
inline ChunkPlace PlaceOf(const PipelineSchedule& schedule, int stages, int virtual_stage) {
  if (virtual_stage < stages) return {virtual_stage, 0};
  if (schedule.mirrored()) return {2 * stages - 1 - virtual_stage, 1};
  return {virtual_stage % stages, virtual_stage / stages};
}

// Micro-batches whose activations a stage holds at its peak when it runs `order` (a stage's
// activations for one micro-batch being `chunks` chunks'): an F holds one chunk's, a B frees
// it but for w_hold of it when the backward is split, and the W frees that. Memory follows the
// stage's own order, whatever the timing.
double PeakInFlight(const std::vector<Unit>& order, int chunks, double w_hold);
// The same walk with each chunk's activations in bytes (`chunk_bytes[chunk]`): the peak bytes
// a stage holds when its chunks differ (a V's stage 0 holds the embedding's chunk and the LM
// head's, whose logits are held only between the head's forward and its backward).
double PeakActivationBytes(const std::vector<Unit>& order, const std::vector<double>& chunk_bytes,
                           double w_hold);
// The same walk with the bytes each chunk's B keeps for its W given (`chunk_w_bytes[chunk]`,
// more than the chunk's activations when full recompute rebuilds W's inputs).
double PeakActivationBytes(const std::vector<Unit>& order, const std::vector<double>& chunk_bytes,
                           const std::vector<double>& chunk_w_bytes);

}  // namespace parasim
