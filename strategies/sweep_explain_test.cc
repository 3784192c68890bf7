// Explanation tests: a step's bottleneck is its largest non-compute share (or compute when every
// other share is small), and a runner-up's loss is told by the parts it spends longer in.
#include "strategies/sweep_explain.h"

#include <doctest/doctest.h>

#include <string>

namespace parasim {
namespace {

TEST_CASE("the bottleneck is the largest non-compute share of the step") {
  StepReport r;
  r.step_time_s = 10;
  r.stage_compute_s = {7};
  r.bubble_fraction = 0.1;  // 0.7 s
  r.exposed.tp = 1.2;
  r.exposed.dp = 0.4;
  r.mfu = 0.45;
  CHECK(Bottleneck(r) == "exposed TP communication (12% of the step)");
  // Below 5% of the step everything else is noise: compute-bound.
  r.bubble_fraction = 0;
  r.exposed = ExposedComm{};
  r.exposed.pp = 0.3;
  CHECK(Bottleneck(r) == "compute-bound (MFU 45%)");
  CHECK(Bottleneck(StepReport{}).empty());  // nothing replayed
}

TEST_CASE("why a layout is behind: the parts it spends longer in, largest first") {
  SweepEntry best;
  best.step_time_s = 10;
  best.tokens_per_s = 1000;
  best.compute_s = 8;
  best.bubble = 0.1;
  SweepEntry e = best;
  e.tokens_per_s = 900;
  e.step_time_s = 11.1;
  e.bubble = 0.2;       // +0.8 s of bubble
  e.exposed.dp = 0.3;   // +0.3 s
  e.exposed.tp = 0.01;  // below half a percent of the best's step: left out
  CHECK(WhyBehind(e, best) ==
        "10.0% less throughput: +0.80 s pipeline bubble, +0.30 s gradient sync (DP)");
  // More compute for the same work is recompute or smaller GEMMs.
  SweepEntry more = best;
  more.tokens_per_s = 950;
  more.compute_s = 8.5;
  more.bubble = 0.1 * 8 / 8.5;  // the same bubble in seconds
  CHECK(WhyBehind(more, best) ==
        "5.0% less throughput: +0.50 s compute (recompute or smaller GEMMs)");
  // Nothing per step: what is left is per sequence.
  SweepEntry same = best;
  same.tokens_per_s = 990;
  CHECK(WhyBehind(same, best) ==
        "1.0% less throughput: per-sequence costs (larger global batch per step)");
}

}  // namespace
}  // namespace parasim
