// The replay's steady-state jump (sim::RunOptions::shift, LoweredStep::shift): for every
// schedule and the data-parallel, recompute, tensor- and expert-parallel variants around it, the
// timeline with the jump is the full replay's, bit for bit: every task's start and end, each
// rank's peak and when it was reached, each stream's busy time, each link's bytes, the events
// and the critical path.
#include <doctest/doctest.h>
#include <fmt/core.h>

#include <string>

#include "sim/engine.h"
#include "strategies/schedule.h"
#include "strategies/step.h"
#include "strategies/step_test_bench.h"

namespace parasim {
namespace {

using testing::Bench;

// Replays `b`'s layout with and without the jump and compares; returns the tasks the jump
// placed.
uint64_t SameWithJump(const Bench& b, StepOptions options = {}, uint32_t* anchors = nullptr) {
  REQUIRE_MESSAGE(b.PlanError().empty(), b.PlanError());
  auto low = LowerStep(b.model, b.t, b.l, b.cluster, options);
  REQUIRE_MESSAGE(low.ok(), low.status().message());
  sim::Engine engine;
  auto full = engine.Run(low->program, low->costs, {});
  REQUIRE(full.ok());
  sim::RunOptions o;
  o.shift = &low->shift;
  o.anchors = &low->anchors;
  auto jumped = engine.Run(low->program, low->costs, o);
  REQUIRE(jumped.ok());
  CHECK(jumped->makespan == full->makespan);
  size_t differ = 0;
  for (sim::TaskId t = 0; t < low->program.num_tasks(); ++t) {
    differ += jumped->start[t] != full->start[t] || jumped->end[t] != full->end[t];
  }
  CHECK(differ == 0);
  CHECK(jumped->peak_memory == full->peak_memory);
  CHECK(jumped->peak_time == full->peak_time);
  CHECK(jumped->busy == full->busy);
  CHECK(jumped->link_bytes == full->link_bytes);
  CHECK(jumped->events == full->events);
  CHECK(jumped->critical_path == full->critical_path);
  if (anchors != nullptr) *anchors = jumped->period_anchors;
  return jumped->jumped_tasks;
}

// Llama 2 7B on 16 A100, PP4 DP4, 32 micro-batches of one 2K sequence per pipeline.
Bench Base() {
  Bench b(16);
  b.l.pp = 4;
  b.l.dp = 4;
  b.t.global_batch = 4 * 32;
  return b;
}

TEST_CASE("the steady-state jump replays every schedule exactly") {
  for (std::string_view name :
       {"gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "zb-h2", "zb-v", "dualpipe", "dualpipe-v"}) {
    CAPTURE(name);
    Bench b = Base();
    b.t.global_batch = 4 * 64;
    b.l.schedule = *FindSchedule(name);
    if (name == "interleaved-1f1b") b.l.virtual_stages = 2;
    const uint64_t placed = SameWithJump(b);
    // GPipe holds every micro-batch's activations until its backwards: no two forwards leave
    // the same state, so nothing is placed. The others reach a steady state.
    if (name == "gpipe") {
      CHECK(placed == 0);
    } else {
      CHECK(placed > 0);
    }
  }
}

TEST_CASE("the steady-state jump is exact for interleaving in micro-batch groups") {
  // 144 micro-batches on 4 stages, two chunks each, in groups of 6 and of 8 (each its period).
  for (int64_t group : {6, 8}) {
    CAPTURE(group);
    Bench b = Base();
    b.t.global_batch = 4 * 144;
    b.l.schedule = kScheduleInterleaved;
    b.l.virtual_stages = 2;
    b.l.microbatch_group = group;
    CHECK(SameWithJump(b) > 0);
  }
}

TEST_CASE("the steady-state jump is exact with ZeRO, recompute, TP and the DP overlap") {
  for (int zero = 0; zero <= 3; ++zero) {
    for (RecomputeKind rc :
         {RecomputeKind::kNone, RecomputeKind::kFull, RecomputeKind::kSelective}) {
      for (bool overlap : {false, true}) {
        CAPTURE(zero);
        CAPTURE(static_cast<int>(rc));
        CAPTURE(overlap);
        Bench b = Base();
        b.l.zero = zero;
        b.t.recompute = rc;
        b.l.overlap_dp = overlap;
        SameWithJump(b);
      }
    }
  }
  Bench b = Base();
  b.l.tp = 2;
  b.l.dp = 2;
  b.l.sp = true;
  b.t.global_batch = 2 * 32;
  CHECK(SameWithJump(b) > 0);
}

TEST_CASE("the steady-state jump is exact when each backward waits for its reductions") {
  // No pipeline, DP16, 32 micro-batches each: ZeRO-2/3 and DDP reducing every micro-batch end
  // each backward waiting for its reductions (DataParallelLowering::EndBackward), and the
  // micro-batches repeat.
  for (int zero : {0, 2, 3}) {
    CAPTURE(zero);
    Bench b(16);
    b.l.dp = 16;
    b.l.zero = zero;
    b.l.grad_reduce = Layout::GradReduce::kMicroBatch;
    b.t.seq_len = 512;
    b.t.global_batch = 16 * 32;
    CHECK(SameWithJump(b) > 0);
  }
}

TEST_CASE("the steady-state jump is exact at op granularity (one task per op)") {
  StepOptions ops;
  ops.granularity = Granularity::kOp;
  for (std::string_view name : {"1f1b", "zb-h1", "zb-h2", "dualpipe"}) {
    CAPTURE(name);
    Bench b = Base();
    b.l.schedule = *FindSchedule(name);
    b.t.global_batch = 4 * 64;
    CHECK(SameWithJump(b, ops) > 0);
  }
}

TEST_CASE("the steady-state jump is exact for an expert-parallel MoE under DualPipe and 1F1B") {
  for (std::string_view name : {"1f1b", "dualpipe"}) {
    CAPTURE(name);
    Bench b(32);
    b.FineGrainedMoe(8);
    b.l.pp = 4;
    b.l.dp = 8;
    b.l.ep = 8;
    b.t.global_batch = 8 * 32;
    b.l.schedule = *FindSchedule(name);
    CHECK(SameWithJump(b) > 0);
  }
}

TEST_CASE("the steady-state jump is exact when the state repeats only after several anchors") {
  // Stages of unequal depth (Llama 2 7B cut to 30 or 26 layers): under 1F1B the replay's state
  // at stage 0's forwards comes back every 6 micro-batches at PP8 (2 at PP4), not every one, as
  // a max-plus system whose critical circuits span several micro-batches does. The jump then
  // spans that many.
  struct Case {
    int layers, pp;
    uint32_t anchors;
  };
  for (const Case& c : {Case{30, 8, 6}, Case{26, 4, 2}}) {
    for (int zero : {0, 1}) {
      for (RecomputeKind rc : {RecomputeKind::kNone, RecomputeKind::kFull}) {
        CAPTURE(c.layers);
        CAPTURE(c.pp);
        CAPTURE(zero);
        CAPTURE(static_cast<int>(rc));
        Bench b(8 * c.pp);
        b.model.layers = c.layers;
        b.l.pp = c.pp;
        b.l.dp = 8;
        b.l.zero = zero;
        b.t.recompute = rc;
        b.t.global_batch = 8 * 16 * c.pp;
        uint32_t anchors = 0;
        CHECK(SameWithJump(b, {}, &anchors) > 0);
        CHECK(anchors == c.anchors);
      }
    }
  }
}

}  // namespace
}  // namespace parasim
