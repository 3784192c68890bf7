#include "strategies/schedule_bound.h"

#include "strategies/unit_walk.h"

namespace parasim {
namespace {

// The walk's state: per slot (virtual stage x micro-batch) when its F and B end, and per stage
// when its compute stream, its reductions and its gathers are free.
class ScheduleWalk {
 public:
  ScheduleWalk(const ScheduleBoundInput& in, const std::vector<std::vector<Unit>>& order)
      : in_(in),
        order_(order),
        f_end_(Slot(in.stages * in.chunks, 0)),
        b_end_(f_end_.size()),
        done_{in.route, in.micro_batches, std::vector<char>(f_end_.size(), 0),
              std::vector<char>(f_end_.size(), 0)},
        stage_end_(in.stages),
        reduce_end_(in.stages),
        gather_end_(in.stages) {}

  Duration Run() {
    const bool walked = WalkOrders(
        order_, in_.schedule, done_,
        [&](int s, size_t at, int g, size_t idx) -> size_t { return Take(s, at, g, idx); });
    if (!walked) return Duration::Zero();  // EmitSchedule reports the cycle
    Duration bound;
    for (int s = 0; s < in_.stages; ++s) {
      // The optimizer step follows the stage's units and every reduction.
      bound = Max(bound, Max(stage_end_[s], reduce_end_[s]) + in_.optimizer[s]);
    }
    return bound;
  }

 private:
  size_t Slot(int g, int64_t mb) const {
    return static_cast<size_t>(g) * in_.micro_batches + static_cast<size_t>(mb);
  }
  // What a unit receives from on another stage: the forward before it, the backward after it.
  Duration FAfter(int g, size_t idx) const {
    return g % in_.route == 0 ? Duration::Zero() : f_end_[idx - in_.micro_batches] + in_.into_f[g];
  }
  Duration BAfter(int g, size_t idx) const {
    return g % in_.route == in_.route - 1 ? f_end_[idx]
                                          : b_end_[idx + in_.micro_batches] + in_.into_b[g];
  }
  // ZeRO 3: whether the unit gathers its layers (and copies them out).
  bool Gathers(const Unit& u, bool forward) const {
    if (!in_.per_layer) return false;
    return forward ? in_.gathers_every_forward || u.mb == 0 : in_.gathers_backward;
  }
  Duration CopyOut(int s, const Unit& u, bool forward) const {
    return Gathers(u, forward) ? in_.comm[s][u.chunk].copy : Duration::Zero();
  }
  // ZeRO 3: the unit's gathers go on the gather stream as it is emitted (they wait for nothing
  // else), and its first task waits for the first of them.
  Duration Gathered(int s, const Unit& u, bool forward) {
    if (!Gathers(u, forward)) return Duration::Zero();
    const ChunkComm& cc = in_.comm[s][u.chunk];
    const Duration first = gather_end_[s] + (forward ? cc.gather_f : cc.gather_b);
    gather_end_[s] += cc.gather;
    return first;
  }
  // A unit that reduces issues its reductions from its start, the last at its end.
  void Reduces(int s, const Unit& u, Duration start, Duration end) {
    if (!in_.Reduces(u.mb)) return;
    const ChunkComm& cc = in_.comm[s][u.chunk];
    reduce_end_[s] = Max(Max(reduce_end_[s], start) + cc.reduce_rest, end) + cc.reduce_last;
    if (in_.waits) stage_end_[s] = Max(stage_end_[s], reduce_end_[s]);
  }

  void Forward(int s, const Unit& u, int g, size_t idx) {
    const ChunkComm& cc = in_.comm[s][u.chunk];
    Duration start = Max(Max(stage_end_[s], FAfter(g, idx)), Gathered(s, u, true));
    if (u.mb == 0) start = Max(start, cc.start_wait) + cc.start_after;
    f_end_[idx] = start + in_.times[s][u.chunk].f + CopyOut(s, u, true);
    stage_end_[s] = f_end_[idx];
    done_.f[idx] = 1;
  }
  void WeightGradient(int s, const Unit& u, size_t idx) {
    const Duration start = Max(stage_end_[s], b_end_[idx]);
    stage_end_[s] = start + in_.times[s][u.chunk].w;
    Reduces(s, u, start, stage_end_[s]);
  }
  void Backward(int s, const Unit& u, int g, size_t idx) {
    const Duration start = Max(Max(stage_end_[s], BAfter(g, idx)), Gathered(s, u, false));
    b_end_[idx] = start + in_.times[s][u.chunk].b + CopyOut(s, u, false);
    stage_end_[s] = b_end_[idx];
    done_.b[idx] = 1;
    if (!in_.split) Reduces(s, u, start, b_end_[idx]);
  }
  // The B of an F&B unit (virtual stage gb, slot bidx), with its W when `with_w`. The gradient
  // goes on after B (EmitPair emits B then W, unless F&B pairs overlap an EP all-to-all: then
  // after the whole backward, later still), and the stage after W.
  void PairedBackward(int s, const Unit& b, int gb, size_t bidx, bool with_w) {
    const UnitDurations& tb = in_.times[s][b.chunk];
    const Duration b_start = Max(Max(stage_end_[s], BAfter(gb, bidx)), Gathered(s, b, false));
    const Duration copy = CopyOut(s, b, false);
    b_end_[bidx] = b_start + copy + (with_w ? Min(tb.b, tb.bw) : tb.b);
    stage_end_[s] = b_start + copy + (with_w ? tb.bw : tb.b);
    done_.b[bidx] = 1;
    if (with_w || !in_.split) Reduces(s, b, b_start, stage_end_[s]);
  }

  // Runs order[s][at]: one unit, or an F&B unit with its B (and the B's W when it follows),
  // once both are ready (as EmitSchedule emits it); how many units it took.
  size_t Take(int s, size_t at, int g, size_t idx) {
    const std::vector<Unit>& o = order_[s];
    const Unit& u = o[at];
    const bool pair = RunsAsPair(o, at);
    const int gb = pair ? VirtualStageOf(in_.schedule, in_.stages, s, o[at + 1].chunk) : 0;
    const size_t bidx = pair ? Slot(gb, o[at + 1].mb) : 0;
    if (pair && !done_.BackwardReady(gb, bidx)) return 0;
    if (u.phase == Phase::kF) {
      Forward(s, u, g, idx);
    } else if (u.phase == Phase::kW) {
      WeightGradient(s, u, idx);
    } else {
      Backward(s, u, g, idx);
    }
    if (!pair) return 1;
    const Unit& b = o[at + 1];
    const bool with_w = at + 2 < o.size() && o[at + 2].phase == Phase::kW &&
                        o[at + 2].chunk == b.chunk && o[at + 2].mb == b.mb;
    PairedBackward(s, b, gb, bidx, with_w);
    return with_w ? 3 : 2;
  }

  const ScheduleBoundInput& in_;
  const std::vector<std::vector<Unit>>& order_;
  std::vector<Duration> f_end_, b_end_;
  UnitsDone done_;
  // Per stage: its compute stream, and its data-parallel reduce and gather streams, each
  // running its tasks one after another.
  std::vector<Duration> stage_end_, reduce_end_, gather_end_;
};

}  // namespace

Duration WalkScheduleBound(const ScheduleBoundInput& in,
                           const std::vector<std::vector<Unit>>& order) {
  return ScheduleWalk(in, order).Run();
}

}  // namespace parasim
