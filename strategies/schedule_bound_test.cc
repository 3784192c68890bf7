// Schedule bound tests: the walk of a pipeline's orders at given durations gives the textbook
// 1F1B step, (m + p - 1) (F + B), and adds what transfers, reductions, the optimizer and ZeRO 3's
// gathers add; orders with a cycle give no bound.
#include "strategies/schedule_bound.h"

#include <doctest/doctest.h>

#include <vector>

namespace parasim {
namespace {

Duration S(double s) { return Duration::Seconds(s); }

// p stages of one chunk each, every unit F = 1 s and B = 2 s, nothing else.
ScheduleBoundInput Uniform(const PipelineSchedule& schedule, int p, int64_t m) {
  ScheduleBoundInput in{schedule};
  in.stages = p;
  in.micro_batches = m;
  in.route = p;
  in.times.assign(p, {UnitDurations{S(1), S(2), Duration::Zero(), S(2)}});
  in.comm.assign(p, {ChunkComm{}});
  in.into_f.assign(p, Duration::Zero());
  in.into_b.assign(p, Duration::Zero());
  in.optimizer.assign(p, Duration::Zero());
  return in;
}

std::vector<std::vector<Unit>> Orders(ScheduleId id, int p, int64_t m) {
  Layout l;
  l.pp = p;
  l.schedule = id;
  return *SharedLayoutOrders(l, {p, 1, m});
}

TEST_CASE("1F1B and GPipe at uniform durations: (m + p - 1) (F + B)") {
  for (ScheduleId id : {kSchedule1F1B, kScheduleGpipe}) {
    for (int p : {1, 2, 4}) {
      for (int64_t m : {1, 4, 9}) {
        CAPTURE(p);
        CAPTURE(m);
        const ScheduleBoundInput in = Uniform(ScheduleOf(id), p, m);
        CHECK(WalkScheduleBound(in, Orders(id, p, m)) == S(3.0 * static_cast<double>(m + p - 1)));
      }
    }
  }
}

TEST_CASE("transfers between stages, reductions and the optimizer lengthen the step") {
  const PipelineSchedule& s = ScheduleOf(kSchedule1F1B);
  const auto order = Orders(kSchedule1F1B, 2, 4);
  ScheduleBoundInput in = Uniform(s, 2, 4);
  // Half a second each way between the stages: stage 0's backwards wait for the round trip.
  // Stage 0 runs F0 F1 B0 F2 B1 F3 B2 B3; its last backward ends at 17 s (worked by hand).
  in.into_f[1] = in.into_b[0] = S(0.5);
  CHECK(WalkScheduleBound(in, order) == S(17));
  // The last micro-batch's backward reduces the gradients (4 s, from its start), then the
  // optimizer (1 s) follows everything.
  in.dp_reduces = true;
  in.last_micro_batch = 3;
  for (auto& stage : in.comm) stage[0].reduce_last = S(4);
  CHECK(WalkScheduleBound(in, order) == S(17 + 4));
  in.optimizer = {S(1), S(1)};
  CHECK(WalkScheduleBound(in, order) == S(17 + 4 + 1));
  // Reducing after every micro-batch: the reductions queue, 8 of them a stage.
  in.reduces_every_micro_batch = true;
  CHECK(WalkScheduleBound(in, order) > S(17 + 4 + 1));
}

TEST_CASE("ZeRO 3: each unit waits for its first gather, and the gathers queue") {
  const PipelineSchedule& s = ScheduleOf(kSchedule1F1B);
  const auto order = Orders(kSchedule1F1B, 1, 2);
  ScheduleBoundInput in = Uniform(s, 1, 2);
  CHECK(WalkScheduleBound(in, order) == S(6));
  in.per_layer = true;
  // Two segments a chunk, 1 s of gathers each; F waits for its first, B for its last.
  in.comm[0][0].gather = S(2);
  in.comm[0][0].gather_f = in.comm[0][0].gather_b = S(1);
  // One stage runs F0 B0 F1 B1: F0 [1, 2]; B0 waits for its gathers to 3, [3, 5]; F1 [5, 6];
  // B1 [7, 9].
  CHECK(WalkScheduleBound(in, order) == S(9));
}

TEST_CASE("orders with a cycle give no bound") {
  const std::vector<std::vector<Unit>> order = {
      {{Phase::kB, 0, 0}, {Phase::kF, 0, 0}},
      {{Phase::kF, 0, 0}, {Phase::kB, 0, 0}},
  };
  const ScheduleBoundInput in = Uniform(ScheduleOf(kSchedule1F1B), 2, 1);
  CHECK(WalkScheduleBound(in, order) == Duration::Zero());
}

}  // namespace
}  // namespace parasim
