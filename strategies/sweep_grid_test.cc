// Grid tests: the axes and size of a sweep block, refused over --max-layouts; points folded onto
// their canonical form; every enumerated layout valid, spanning its cluster, with the global
// batch derived, kept once, and the same whatever the number of threads.
#include "strategies/sweep_grid.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "strategies/schedule.h"
#include "tests/load_scenario.h"

namespace parasim {
namespace {

Scenario Load(const std::string& path) { return testing::LoadScenarioOrFail(path); }

TEST_CASE("the grid of a sweep block: its axes, the folded ones fastest, and its size") {
  const Scenario s = Load("scenarios/turing-530b-5128-a100-sweep.yaml");
  auto g = BuildGrid(s, *s.sweep, 10'000'000, 0);
  REQUIRE_MESSAGE(g.ok(), g.status().message());
  // tp, pp, micro-batch, recompute, ZeRO, sp, every schedule, v; dp follows the GPU count.
  const int64_t schedules = static_cast<int64_t>(AllSchedules().size());
  CHECK(g->points == 4 * 4 * 4 * 3 * 4 * 2 * schedules * 4);
  CHECK(g->dp_auto);
  REQUIRE(g->axes.size() == 8);
  CHECK(g->axes[0].key->name == "virtual_stages");
  CHECK(g->axes[1].key->name == "schedule");
  CHECK(g->axes[2].key->name == "sp");
  CHECK(g->axes.back().key->name == "recompute");  // then the file's order
  CHECK(g->axes[0].values == std::vector<int64_t>{1, 2, 3, 4});
}

TEST_CASE("a sweep larger than --max-layouts is refused with the reason") {
  const Scenario s = Load("scenarios/turing-530b-5128-a100-sweep.yaml");
  auto r = BuildGrid(s, *s.sweep, 1000, 0);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("--max-layouts 1000") != std::string::npos);
  // The limit counts the grids of the clusters enumerated before (co-design).
  CHECK(BuildGrid(s, *s.sweep, 10'000'000, 0).ok());
  CHECK_FALSE(BuildGrid(s, *s.sweep, 10'000'000, 9'990'000).ok());
  // The benchmark question (docs/BENCHMARKS.md) loads and spans its 1,290,240 grid points.
  const Scenario bench = Load("scenarios/bench/llama3-405b-16k-h100-question.yaml");
  auto b = BuildGrid(bench, *bench.sweep, 1000, 0);
  REQUIRE_FALSE(b.ok());
  CHECK(b.status().message().find("1.29e+06 layouts") != std::string::npos);
}

TEST_CASE("points that behave like another are folded onto its canonical form") {
  Layout l;
  Training t;
  l.tp = 1;
  l.sp = true;  // no SP without TP
  l.pp = 1;
  l.schedule = kScheduleInterleaved;
  l.virtual_stages = 4;  // one stage: no schedule
  l.dp = 1;
  l.cp = 1;
  l.zero = 2;  // nothing to shard
  l.cp_comm = Layout::CpComm::kAllGather;
  t.precision = Dtype::kBf16;
  t.fp8_recipe = Fp8Recipe::kBlockwise;  // no FP8 to scale
  NormaliseLayout(&l, &t);
  CHECK_FALSE(l.sp);
  CHECK(l.schedule == kSchedule1F1B);
  CHECK(l.virtual_stages == 1);
  CHECK(l.zero == 0);
  CHECK(l.cp_comm == Layout::CpComm::kRing);
  CHECK(t.fp8_recipe == Fp8Recipe::kTensorwise);
  // Interleaving with one model chunk per stage is 1F1B; a non-interleaved schedule has one.
  Layout i;
  i.pp = 4;
  i.schedule = kScheduleInterleaved;
  i.virtual_stages = 1;
  NormaliseLayout(&i, &t);
  CHECK(i.schedule == kSchedule1F1B);
  Layout g;
  g.pp = 4;
  g.schedule = kScheduleGpipe;
  g.virtual_stages = 3;
  NormaliseLayout(&g, &t);
  CHECK(g.virtual_stages == 1);
}

TEST_CASE("every layout of the grid: valid, spanning the cluster, its batch derived, once") {
  const Scenario s = Load("scenarios/turing-530b-5128-a100-sweep.yaml");
  auto g = BuildGrid(s, *s.sweep, 10'000'000, 0);
  REQUIRE(g.ok());
  REQUIRE(g->points > 2 * 4096);  // two threads take a range each
  std::vector<SweepEntry> one, two;
  EnumerateGrid(s, *s.sweep, *g, 0, 1.5, 1, &one);
  EnumerateGrid(s, *s.sweep, *g, 0, 1.5, 2, &two);
  REQUIRE(one.size() == two.size());
  for (size_t i = 0; i < one.size(); ++i) CHECK(one[i].key == two[i].key);
  KeepOnce(&one);
  REQUIRE(one.size() > 100);
  std::set<std::string> keys;
  for (const SweepEntry& e : one) {
    CAPTURE(e.key);
    CHECK(keys.insert(e.key).second);
    CHECK(e.layout.gpus() == s.cluster.gpus());
    CHECK(e.cost_per_s == 1.5);
    Scenario probe = s;
    probe.layout = e.layout;
    probe.training = e.training;
    CHECK_FALSE(CheckLayout(probe));
    // The global batch is the largest multiple of dp * micro_batch up to the cap.
    const int64_t unit = e.layout.dp * e.training.micro_batch;
    CHECK(e.training.global_batch % unit == 0);
    CHECK(e.training.global_batch <= 2520);
    CHECK(e.training.global_batch + unit > 2520);
  }
  CHECK(std::is_sorted(one.begin(), one.end(),
                       [](const SweepEntry& a, const SweepEntry& b) { return a.key < b.key; }));
}

TEST_CASE("co-design: each cluster's layouts named by it") {
  const Scenario s = Load("scenarios/llama3-70b-cluster-codesign.yaml");
  const SweepSpec& spec = *s.sweep;
  REQUIRE(spec.hardware.size() == 6);
  Scenario b200 = s;
  b200.cluster = spec.hardware[5].cluster;
  b200.model = spec.hardware[5].model;
  auto g = BuildGrid(b200, spec, 10'000'000, 0);
  REQUIRE(g.ok());
  std::vector<SweepEntry> entries;
  EnumerateGrid(b200, spec, *g, 5, 0.5, 2, &entries);
  REQUIRE(!entries.empty());
  for (const SweepEntry& e : entries) {
    CAPTURE(e.key);
    CHECK(e.key.rfind(spec.hardware[5].label + " | ", 0) == 0);
    CHECK(e.hardware == 5);
    CHECK(e.layout.gpus() == b200.cluster.gpus());
  }
}

}  // namespace
}  // namespace parasim
