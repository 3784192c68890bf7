// Sweep entry tests: CopyFound carries every found field and none of the grid's, the figures
// come in the results file's column order, and a replayed report's entry takes its worst stage.
#include "strategies/sweep_entry.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace parasim {
namespace {

// An entry as the grid gives it: its key, layout, training, cluster and price.
SweepEntry Named(const std::string& key, int tp, size_t hardware) {
  SweepEntry e;
  e.key = key;
  e.layout.tp = tp;
  e.training.micro_batch = 2 * tp;
  e.hardware = hardware;
  e.cost_per_s = 2.0 * static_cast<double>(hardware);
  return e;
}

// An entry with every field set, the found ones to `v` and its multiples.
SweepEntry Filled(double v) {
  SweepEntry e = Named("tp8 pp8 dp16", 8, 3);
  e.fits = e.replayed = e.pruned = true;
  double x = v;
  ForEachFigure([&](double& f) { f = x++; }, e);
  e.bound_s = 20 * v;
  e.min_peak_bytes = 21 * v;
  e.goodput = 0.5;
  e.reason = "a note";
  return e;
}

TEST_CASE("CopyFound carries what the sweep found and keeps what the grid gave") {
  const SweepEntry from = Filled(1);
  SweepEntry to = Named("tp1 pp1 dp1024", 1, 1);
  CopyFound(from, &to);
  // The grid's fields stay.
  CHECK(to.key == "tp1 pp1 dp1024");
  CHECK(to.layout.tp == 1);
  CHECK(to.training.micro_batch == 2);
  CHECK(to.hardware == 1);
  CHECK(to.cost_per_s == 2);
  // Every found field is copied.
  CHECK(to.fits);
  CHECK(to.replayed);
  CHECK(to.pruned);
  CHECK(to.step_time_s == 1);
  CHECK(to.exposed.tp == from.exposed.tp);
  CHECK(to.exposed.dp == from.exposed.dp);
  CHECK(to.compute_s == 11);
  CHECK(to.bound_s == 20);
  CHECK(to.min_peak_bytes == 21);
  CHECK(to.goodput == 0.5);
  CHECK(to.reason == "a note");
}

TEST_CASE("the figures in the results file's column order") {
  SweepEntry e;
  std::vector<double*> seen;
  ForEachFigure([&](double& f) { seen.push_back(&f); }, e);
  REQUIRE(seen.size() == kNumFigures);
  CHECK(seen.front() == &e.step_time_s);
  CHECK(seen[1] == &e.tokens_per_s);
  CHECK(seen[4] == &e.exposed.tp);
  CHECK(seen[8] == &e.exposed.dp);
  CHECK(seen.back() == &e.compute_s);
  // Two entries in step: each call gets the same field of both.
  SweepEntry a = Filled(1), b = Filled(100);
  int same_field = 0;
  ForEachFigure([&](double x, double y) { same_field += y - x == 99 ? 1 : 0; }, a, b);
  CHECK(same_field == kNumFigures);
}

TEST_CASE("a replayed report's entry: its worst stage's peak and busiest stage's compute") {
  StepReport r;
  r.fits = false;
  r.step_time_s = 12.5;
  r.tokens_per_s = 1000;
  r.mfu = 0.4;
  r.bubble_fraction = 0.1;
  r.exposed.tp = 0.25;
  r.peak_memory_bytes = {3e9, 9e9, 5e9};
  r.stage_compute_s = {10, 11, 9};
  Layout l;
  l.pp = 3;
  const SweepEntry e = EntryOf(l, Training{}, r);
  CHECK(e.replayed);
  CHECK_FALSE(e.fits);
  CHECK(e.layout.pp == 3);
  CHECK(e.step_time_s == 12.5);
  CHECK(e.tokens_per_s == 1000);
  CHECK(e.bubble == 0.1);
  CHECK(e.exposed.tp == 0.25);
  CHECK(e.peak_memory_bytes == 9e9);
  CHECK(e.compute_s == 11);
  CHECK(KeptTokensPerS(e) == 1000);  // goodput 1 until the sweep models failures
}

}  // namespace
}  // namespace parasim
