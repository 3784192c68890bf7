// Explanation tests: a step's bottleneck is its largest non-compute share (or compute when every
// other share is small), and a runner-up's loss is told by the parts it spends longer in.
#include "strategies/sweep_explain.h"

#include <doctest/doctest.h>

#include <string>

namespace parasim {
namespace {

TEST_CASE("the bottleneck is the largest non-compute part of the busiest stage's step") {
  StepReport r;
  r.step_time_s = 10;
  r.stage_compute_s = {7};
  // A partition of the step: 7 + 0.7 + 1.2 + 0.4 + 0.7 = 10 s (StepReport::parts_s).
  r.parts_s = {7, 0.7, 1.2, 0, 0, 0.4, 0.7};
  r.mfu = 0.45;
  CHECK(Bottleneck(r) == "exposed TP communication (12% of the step)");
  // Below 5% of the step everything else is noise: compute-bound.
  r.parts_s = {9.7, 0, 0, 0, 0, 0.3, 0};
  CHECK(Bottleneck(r) == "compute-bound (MFU 45%)");
  CHECK(Bottleneck(StepReport{}).empty());  // nothing replayed
}

TEST_CASE("why a layout is behind: the parts it spends longer in, largest first") {
  SweepEntry best;
  best.step_time_s = 10;
  best.tokens_per_s = 1000;
  best.compute_s = 8;
  best.bubble = 0.1;  // of the step: 1 s
  best.training.global_batch = 512;
  SweepEntry e = best;
  e.tokens_per_s = 900;
  e.step_time_s = 11.1;
  e.bubble = 1.8 / 11.1;  // 1.8 s: +0.8 s of bubble
  e.exposed.dp = 0.3;     // +0.3 s
  e.exposed.tp = 0.01;    // below half a percent of the step: left out
  CHECK(WhyBehind(e, best) ==
        "10.0% less throughput: +0.80 s pipeline bubble, +0.30 s gradient sync (DP)");
  // More compute for the same work is recompute or smaller GEMMs.
  SweepEntry more = best;
  more.tokens_per_s = 950;
  more.step_time_s = 10.5;
  more.compute_s = 8.5;
  more.bubble = 1 / 10.5;  // the same bubble in seconds
  CHECK(WhyBehind(more, best) ==
        "5.0% less throughput: +0.50 s compute (recompute or smaller GEMMs)");
}

TEST_CASE("a runner-up within half a percent of the best in every part: the parts, not the batch") {
  // Both at gb512 (the newcomer's case): the explanation names the parts that differ, however
  // small, never a global batch that is the same on both sides.
  SweepEntry best;
  best.step_time_s = 10;
  best.tokens_per_s = 1000;
  best.compute_s = 8;
  best.training.global_batch = 512;
  SweepEntry e = best;
  e.tokens_per_s = 998;
  e.step_time_s = 10.02;
  e.compute_s = 8.015;
  e.exposed.tp = 0.005;
  const std::string why = WhyBehind(e, best);
  CHECK(
      why ==
      "0.2% less throughput: +15.000 ms compute (recompute or smaller GEMMs), +5.000 ms exposed TP "
      "communication (each under 0.5% of the step)");
  CHECK(why.find("global batch") == std::string::npos);
  // No part longer at all: said so, with the step's difference.
  SweepEntry flat = best;
  flat.tokens_per_s = 990;
  flat.step_time_s = 10.1;
  CHECK(WhyBehind(flat, best) ==
        "1.0% less throughput: a step 100.000 ms longer with no part longer on its own (the parts "
        "overlap differently)");
}

TEST_CASE("at another global batch the best's parts are compared per sequence") {
  SweepEntry best;
  best.step_time_s = 10;
  best.tokens_per_s = 1000;
  best.compute_s = 8;
  best.exposed.dp = 1;
  best.training.global_batch = 1024;
  SweepEntry e;  // half the batch: half the compute, the same gradient sync per step
  e.step_time_s = 5.5;
  e.tokens_per_s = 1000 * (10.0 / 2) / 5.5;
  e.compute_s = 4;
  e.exposed.dp = 1;
  e.training.global_batch = 512;
  CHECK(WhyBehind(e, best) ==
        "9.1% less throughput: at global batch 512 against 1024, per 512 sequences: +0.50 s "
        "gradient sync (DP)");
}

}  // namespace
}  // namespace parasim
