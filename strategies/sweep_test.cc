// Sweep planner tests, of the whole (each part has its own test beside it: sweep_grid_test.cc,
// sweep_screen_test.cc, sweep_replay_test.cc, ...): the best GPT-3 175B layout is Megatron-like,
// results are deterministic across threads and after an interrupted run is resumed,
// --exhaustive replays every feasible layout, and pruning by lower bounds gives the exhaustive
// sweep's top and Pareto front, for every kind of schedule, sharding and co-design sweep.
#include "strategies/sweep.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "sim/engine.h"
#include "strategies/memory.h"
#include "strategies/schedule.h"
#include "strategies/step.h"
#include "strategies/sweep_keys.h"
#include "tests/load_scenario.h"
#include "tests/sanitized.h"

namespace parasim {
namespace {

Scenario Load(const std::string& path) { return testing::LoadScenarioOrFail(path); }

// The example sweep, narrowed so the test stays quick.
Scenario Gpt3Sweep() {
  Scenario s = Load("scenarios/gpt3-175b-1024-a100-sweep.yaml");
  for (auto& [key, axis] : s.sweep->axes) {
    if (key == "micro_batch") axis.values = {"1", "2"};
    if (key == "virtual_stages") axis.values = {"1", "2"};
  }
  return s;
}

// Under ASan the GPT-3 175B sweep's exhaustive replays (955 layouts, 7 s here, 2 minutes there)
// narrowed to TP 8 and ZeRO 1: 331 layouts, every schedule, recompute and micro-batch kept.
void NarrowUnderSanitizer(Scenario& s) {
  if (!testing::kSanitized) return;
  for (auto& [key, axis] : s.sweep->axes) {
    if (key == "tp") axis = SweepAxis{false, {"8"}};
    if (key == "zero") axis.values = {"1"};
  }
}

// Under ASan the Turing 530B sweep's exhaustive replays take one micro-batch size and two chunk
// counts; its TP and ZeRO choices stay (TP 8 and ZeRO 1 alone prune nothing there).
void ThinUnderSanitizer(Scenario& s) {
  if (!testing::kSanitized) return;
  for (auto& [key, axis] : s.sweep->axes) {
    if (key == "micro_batch") axis.values = {"1"};
    if (key == "virtual_stages") axis.values = {"1", "2"};
  }
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST_CASE("the best layout for GPT-3 175B on 1024 A100 is Megatron-style") {
  Scenario s = Gpt3Sweep();
  SweepOptions o;
  o.jobs = 2;
  auto r = RunSweep(s, o);
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  REQUIRE(!r->ranked.empty());
  const Layout& best = r->ranked[0].layout;
  CAPTURE(r->ranked[0].key);
  CHECK(best.tp > 1);                         // the model is sharded inside the node ...
  CHECK(best.tp <= s.cluster.gpus_per_node);  // ... and TP stays on NVLink
  CHECK(best.pp > 1);                         // pipeline stages to fit 175B in 80 GB
  CHECK(best.schedule != kScheduleGpipe);
  CHECK(best.gpus() == 1024);
  CHECK(r->top_reports[0].fits);
  CHECK(r->top_reports[0].warnings.empty());
  // No layout without pipeline parallelism fits: states alone exceed the GPU.
  for (const auto& e : r->ranked) CHECK(e.layout.pp > 1);
  // Ranked by throughput, best first; the leader's full report agrees with its entry.
  for (size_t i = 1; i < r->ranked.size(); ++i) {
    CHECK(r->ranked[i].tokens_per_s <= r->ranked[i - 1].tokens_per_s);
  }
  CHECK(r->top_reports[0].step_time_s == doctest::Approx(r->ranked[0].step_time_s));
  CHECK(r->grid_points > r->valid_layouts);
  CHECK(r->valid_layouts == r->memory_rejected + r->pruned + r->replayed);
  CHECK(r->replayed >= r->feasible);
  CHECK(r->valid_layouts > r->feasible);
}

TEST_CASE("--exhaustive: every valid layout that fits in memory is replayed") {
  Scenario s = Load("scenarios/turing-530b-5128-a100-sweep.yaml");
  SweepOptions o;
  o.jobs = 2;
  o.exhaustive = true;
  auto r = RunSweep(s, o);
  REQUIRE(r.ok());
  CHECK(r->pruned == 0);
  CHECK(r->grid_points > r->valid_layouts);  // the grid itself: sweep_grid_test.cc
  int64_t fit = 0;
  for (const auto& e : r->ranked) {
    CHECK(EstimateMemory(s.model, e.training, e.layout, s.cluster).fits);
    CHECK(e.step_time_s > 0);
    ++fit;
  }
  CHECK(fit == r->feasible);
  CHECK(r->feasible > 10);
}

// A file in the test's scratch folder.
std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

// The narrowed GPT-3 sweep on `jobs` threads in batches of `batch`, writing `csv`: its outcome
// and the results file's text.
std::pair<SweepOutcome, std::string> RunGpt3(int jobs, int batch, const std::string& csv) {
  SweepOptions o;
  o.jobs = jobs;
  o.batch = batch;
  o.out_csv = csv;
  auto out = RunSweep(Gpt3Sweep(), o);
  REQUIRE(out.ok());
  return {std::move(*out), Slurp(csv)};
}

TEST_CASE("workers running ahead of the batch being decided change nothing") {
  // With one thread every layout is tried against its own batch's pruning state; with four,
  // most are tried against an older state while the batch before is still replaying. Small
  // batches make the running ahead deep. Every layout's line (replayed, or pruned with the
  // bound that pruned it) and the counts must be the same.
  const std::string csv = TempPath("ahead.csv");
  const auto [one, lines] = RunGpt3(1, 2, csv);
  const auto [four, four_lines] = RunGpt3(4, 2, csv);
  CHECK(four_lines == lines);
  CHECK(one.pruned == four.pruned);
  CHECK(one.replayed == four.replayed);
  CHECK(one.pruned > 0);
  CHECK(one.replayed > 1);
}

TEST_CASE("same results with 1 and 2 threads, and after resuming an interrupted sweep") {
  Scenario s = Gpt3Sweep();
  const std::string csv = TempPath("sweep.csv");
  const auto [one, full] = RunGpt3(1, SweepOptions{}.batch, csv);
  const auto [two, two_lines] = RunGpt3(2, SweepOptions{}.batch, csv);
  SweepOptions o;
  o.jobs = 2;
  o.out_csv = csv;
  CHECK(two_lines == full);
  REQUIRE(one.ranked.size() == two.ranked.size());
  for (size_t i = 0; i < one.ranked.size(); ++i) {
    CHECK(one.ranked[i].key == two.ranked[i].key);
    CHECK(one.ranked[i].step_time_s == two.ranked[i].step_time_s);
  }
  // An interrupted run: the header, a third of the lines, and a torn last line.
  {
    std::ofstream cut(csv, std::ios::trunc);
    size_t pos = 0;
    const size_t lines = std::count(full.begin(), full.end(), '\n');
    for (size_t i = 0; i < lines / 3; ++i) pos = full.find('\n', pos) + 1;
    cut << full.substr(0, pos) << full.substr(pos, 25);
  }
  o.resume = true;
  auto resumed = RunSweep(s, o);
  REQUIRE(resumed.ok());
  CHECK(resumed->resumed > 0);
  CHECK(resumed->resumed < resumed->valid_layouts);
  CHECK(resumed->replayed == one.replayed);
  CHECK(resumed->memory_rejected == one.memory_rejected);
  CHECK(Slurp(csv) == full);
  REQUIRE(resumed->ranked.size() == one.ranked.size());
  for (size_t i = 0; i < one.ranked.size(); ++i) {
    CHECK(resumed->ranked[i].key == one.ranked[i].key);
    CHECK(resumed->ranked[i].tokens_per_s == one.ranked[i].tokens_per_s);
  }
  CHECK(resumed->top_reports[0].step_time_s == one.top_reports[0].step_time_s);
}

// The layouts of a sweep as ranked: key and step time of the first `top`, and the front.
void CheckSameAnswer(const SweepOutcome& pruned, const SweepOutcome& all, int top) {
  REQUIRE(pruned.ranked.size() >= std::min<size_t>(top, all.ranked.size()));
  for (size_t i = 0; i < std::min<size_t>(top, all.ranked.size()); ++i) {
    CAPTURE(i);
    CHECK(pruned.ranked[i].key == all.ranked[i].key);
    CHECK(pruned.ranked[i].step_time_s == all.ranked[i].step_time_s);
  }
  REQUIRE(pruned.pareto.size() == all.pareto.size());
  for (size_t i = 0; i < all.pareto.size(); ++i) {
    CHECK(pruned.ranked[pruned.pareto[i]].key == all.ranked[all.pareto[i]].key);
  }
}

// The sweep replayed exhaustively and pruned (2 threads), checked to give the same answer.
std::pair<std::optional<SweepOutcome>, std::optional<SweepOutcome>> BothWays(const Scenario& s) {
  SweepOptions o;
  o.jobs = 2;
  o.exhaustive = true;
  auto all = RunSweep(s, o);
  REQUIRE_MESSAGE(all.ok(), all.status().message());
  o.exhaustive = false;
  auto pruned = RunSweep(s, o);
  REQUIRE(pruned.ok());
  CheckSameAnswer(*pruned, *all, s.sweep->top);
  return {*std::move(all), *std::move(pruned)};
}

// A replayed layout's first-tier bounds (StepLowerBounds), from its stages' held bytes.
StatusOr<StepBounds> BoundsOf(const Scenario& s, const SweepEntry& e, std::vector<double>* held) {
  for (const StageMemory& st : EstimateMemory(s.model, e.training, e.layout, s.cluster).stages) {
    held->push_back(st.held_bytes());
  }
  return StepLowerBounds(s.model, e.training, e.layout, s.cluster, *held);
}

// A replayed layout's first-tier and schedule bounds, each at most its replayed step.
void CheckStepBounds(const Scenario& s, const SweepEntry& e) {
  std::vector<double> held;
  auto bound = BoundsOf(s, e, &held);
  REQUIRE(bound.ok());
  CHECK(bound->step_s <= e.step_time_s);
  auto schedule = StepScheduleBound(s.model, e.training, e.layout, s.cluster);
  REQUIRE(schedule.ok());
  CHECK(*schedule <= e.step_time_s);
}

TEST_CASE("pruning stays exact however the distributed optimizer issues its start gathers") {
  // The GPT-3 175B sweep (1F1B, interleaved, ZB-H1/H2; ZeRO 1, full recompute) under each
  // parallelism.param_gather: the schedule bound counts an on-demand gather from when the
  // forward is otherwise ready, a chained later chunk's alone. It stays under every replay.
  using PG = Layout::ParamGather;
  // Under a sanitizer every other order (chained and aligned); the normal pass checks all four.
  for (PG g : testing::SampledUnderSanitizer(
           std::vector<PG>{PG::kChained, PG::kOnDemand, PG::kAligned, PG::kAtStart}, 2)) {
    CAPTURE(ParamGatherName(g));
    Scenario s = Load("scenarios/gpt3-175b-1024-a100-sweep.yaml");
    for (auto& [key, axis] : s.sweep->axes) {
      if (key == "micro_batch") axis.values = {"1"};
      if (key == "zero") axis.values = {"1"};
      if (key == "recompute") axis = SweepAxis{false, {"full"}};
    }
    s.layout.param_gather = g;
    NarrowUnderSanitizer(s);
    auto [all, pruned] = BothWays(s);
    CHECK(pruned->pruned > 0);
    for (const SweepEntry& e : all->ranked) {
      CAPTURE(e.key);
      CHECK(e.layout.param_gather == g);
      auto bound = StepScheduleBound(s.model, e.training, e.layout, s.cluster);
      REQUIRE(bound.ok());
      CHECK(*bound <= e.step_time_s * (1 + 1e-12));
    }
  }
}

TEST_CASE("pruning by lower bounds keeps the top and the Pareto front of the exhaustive sweep") {
  // Every schedule (1F1B, GPipe, interleaved, ZB-H1/H2), ZeRO, recompute and micro-batch, for
  // the throughput and memory objectives, against replaying every layout that fits.
  for (const char* file :
       {"scenarios/gpt3-175b-1024-a100-sweep.yaml", "scenarios/turing-530b-5128-a100-sweep.yaml"}) {
    const bool gpt3 = std::string(file).find("gpt3") != std::string::npos;
    for (Objective objective : {Objective::kThroughput, Objective::kMemory}) {
      // Under a sanitizer one objective a file, GPT-3's throughput and Turing's memory: both
      // objectives' code and both models' replays are walked (58 s under ASan for all four).
      if (testing::kSanitized && gpt3 != (objective == Objective::kThroughput)) continue;
      CAPTURE(file);
      CAPTURE(static_cast<int>(objective));
      Scenario s = Load(file);
      for (auto& [key, axis] : s.sweep->axes) {
        if (key == "micro_batch") axis.values = {"1", "2"};
      }
      if (gpt3) {
        NarrowUnderSanitizer(s);
      } else {
        ThinUnderSanitizer(s);
      }
      s.sweep->objective = objective;
      SweepOptions o;
      o.jobs = 2;
      o.exhaustive = true;
      auto all = RunSweep(s, o);
      REQUIRE(all.ok());
      o.exhaustive = false;
      auto pruned = RunSweep(s, o);
      REQUIRE(pruned.ok());
      CHECK(pruned->pruned > 0);
      CHECK(pruned->replayed + pruned->pruned == all->replayed);
      CheckSameAnswer(*pruned, *all, s.sweep->top);
      // The bounds hold for every layout that fits: the step and the peak are never below them.
      // Under 1F1B with full recompute, the peak is the first backward's recompute on top of
      // the warm-up's forwards, which the memory bound counts (FirstBackwardPeaks): it is the
      // replay's own to rounding. Without it the bound falls a layer's activations short.
      int tight = 0;
      for (const SweepEntry& e : all->ranked) {
        CAPTURE(e.key);
        std::vector<double> held;
        auto bound = BoundsOf(s, e, &held);
        REQUIRE(bound.ok());
        CHECK(bound->step_s > 0);
        CHECK(bound->step_s <= e.step_time_s);
        CHECK(e.min_peak_bytes > 0);
        CHECK(e.min_peak_bytes <= e.peak_memory_bytes);
        CHECK(bound->peak_bytes > *std::max_element(held.begin(), held.end()));
        CHECK(bound->peak_bytes <= e.peak_memory_bytes);
        if (e.training.recompute == RecomputeKind::kFull && e.layout.pp > 1 &&
            e.layout.schedule == kSchedule1F1B) {
          CHECK(bound->peak_bytes >= e.peak_memory_bytes * (1 - 1e-12));
          ++tight;
        }
        if (objective == Objective::kThroughput) {
          // The schedule replayed unit by unit, before lowering.
          auto schedule = StepScheduleBound(s.model, e.training, e.layout, s.cluster);
          REQUIRE(schedule.ok());
          CHECK(*schedule >= bound->step_s);
          CHECK(*schedule <= e.step_time_s);
          // The lowered program's bound (the replay without contention, each link's bytes).
          auto low = LowerStep(s.model, e.training, e.layout, s.cluster, StepOptions{});
          REQUIRE(low.ok());
          auto program = sim::MakespanLowerBound(low->program, low->costs);
          REQUIRE(program.ok());
          CHECK(program->seconds() <= e.step_time_s);
        }
      }
      CHECK(tight > 0);
      for (const SweepEntry& e : pruned->ranked) {
        CHECK(e.bound_s <= e.step_time_s);
        CHECK(e.min_peak_bytes <= e.peak_memory_bytes);
      }
    }
  }
}

TEST_CASE("pruning stays exact when each micro-batch's gradients are accumulated by a pass") {
  // training.grad_accumulation: separate adds to every backward; the bounds, which leave it
  // out, stay below the step, and the answer is the exhaustive one.
  Scenario s = Load("scenarios/gpt3-175b-1024-a100-sweep.yaml");
  for (auto& [key, axis] : s.sweep->axes) {
    if (key == "micro_batch") axis.values = {"1", "2"};
    // One micro-batch size under a sanitizer: the pass is added to every backward either way.
    if (testing::kSanitized && key == "micro_batch") axis.values = {"1"};
  }
  NarrowUnderSanitizer(s);
  s.training.grad_accumulation = GradAccumulation::kSeparate;
  auto [all, pruned] = BothWays(s);
  CHECK(pruned->pruned > 0);
  Scenario fused = s;
  fused.training.grad_accumulation = GradAccumulation::kFused;
  SweepOptions o;
  o.jobs = 2;
  o.exhaustive = true;
  auto fused_all = RunSweep(fused, o);
  REQUIRE(fused_all.ok());
  // The pass is paid: the best step is longer than with fused accumulation.
  CHECK(all->ranked.front().step_time_s > fused_all->ranked.front().step_time_s);
}

// The best ranked layout of each cluster of a co-design sweep, by key ("" when none fits).
std::vector<std::string> BestPerCluster(const SweepOutcome& r, size_t clusters) {
  std::vector<std::string> best(clusters);
  for (const SweepEntry& e : r.ranked) {
    if (best[e.hardware].empty()) best[e.hardware] = e.key;
  }
  return best;
}

TEST_CASE("co-design: clusters and models swept with the layouts, ranked by cost, pruned exactly") {
  Scenario s = Load("scenarios/llama3-70b-cluster-codesign.yaml");
  REQUIRE(s.sweep->hardware.size() == 6);  // 3 GPU types x 2 sizes
  for (Objective objective : {Objective::kCost, Objective::kTimeToTrain, Objective::kMemory}) {
    CAPTURE(static_cast<int>(objective));
    s.sweep->objective = objective;
    auto [all, pruned] = BothWays(s);
    CHECK(pruned->pruned > 0);
    // Every cluster's best layout is found too, though most are far from the top.
    CHECK(BestPerCluster(*pruned, 6) == BestPerCluster(*all, 6));
    for (const std::string& best : BestPerCluster(*all, 6)) CHECK(!best.empty());
    for (const SweepEntry& e : all->ranked) {
      CAPTURE(e.key);
      const SweepHardware& h = s.sweep->hardware[e.hardware];
      // Each layout spans its own cluster, is named by it, and is priced by its GPU type.
      CHECK(e.layout.gpus() == h.cluster.gpus());
      CHECK(e.key.rfind(h.label + " | ", 0) == 0);
      CHECK(WithLayout(s, e).cluster.gpu.id == h.cluster.gpu.id);
      CHECK(e.cost_per_s == doctest::Approx(h.cluster.gpus() * h.cluster.gpu_hour_cost / 3600));
    }
    if (objective == Objective::kCost) {
      for (size_t i = 1; i < all->ranked.size(); ++i) {
        CHECK(CostPerToken(all->ranked[i - 1]) <= CostPerToken(all->ranked[i]));
      }
    }
    // The front: each point faster than the next and dearer per token.
    for (size_t k = 1; k < all->pareto.size(); ++k) {
      const SweepEntry& a = all->ranked[all->pareto[k - 1]];
      const SweepEntry& b = all->ranked[all->pareto[k]];
      CHECK(a.tokens_per_s > b.tokens_per_s);
      CHECK(CostPerToken(a) > CostPerToken(b));
    }
  }
}

TEST_CASE("co-design: a swept model key extends the scenario's catalog model") {
  static const Catalogs cat = *LoadCatalogs();
  auto m = LoadScenario("scenarios/llama3-70b-cluster-codesign.yaml",
                        {"sweep.layers=[80, 40]", "sweep.nodes=32"}, cat);
  REQUIRE_MESSAGE(m.ok(), m.status().message());
  const auto& hw = m->sweep->hardware;
  REQUIRE(hw.size() == 6);  // 3 GPU types x 2 depths, on 32 nodes
  SweepOptions o;
  o.jobs = 2;
  auto r = RunSweep(*m, o);
  REQUIRE(r.ok());
  const std::vector<std::string> best = BestPerCluster(*r, hw.size());
  for (size_t h = 0; h < hw.size(); ++h) {
    CAPTURE(hw[h].label);
    CHECK(hw[h].cluster.gpus() == 256);
    const bool shallow = hw[h].label.find("layers=40") != std::string::npos;
    CHECK(hw[h].model.layers == (shallow ? 40 : 80));
    CHECK(hw[h].model.hidden == 8192);  // the rest of Llama 3 70B
    REQUIRE(!best[h].empty());
  }
  // Half the layers on the same cluster: a faster best layout.
  auto tokens = [&](const std::string& key) {
    for (const SweepEntry& e : r->ranked) {
      if (e.key == key) return e.tokens_per_s;
    }
    return 0.0;
  };
  for (size_t h = 0; h < hw.size(); ++h) {
    for (size_t g = 0; g < hw.size(); ++g) {
      if (hw[g].cluster.gpu.id == hw[h].cluster.gpu.id && hw[h].model.layers == 80 &&
          hw[g].model.layers == 40) {
        CHECK(tokens(best[g]) > 1.5 * tokens(best[h]));
      }
    }
  }
}

TEST_CASE("sharded data parallelism: every bound holds and pruning keeps the exhaustive answer") {
  // ZeRO 0-3 (gathers per layer, reductions per micro-batch), dense and with experts sharded
  // over expert-data-parallel ranks, under every kind of schedule: the first tier's
  // data-parallel stream bound is never above the replay.
  auto axis = [](std::vector<std::string> v) { return SweepAxis{false, std::move(v)}; };
  for (const char* file :
       {"scenarios/llama3-70b-64-h100.yaml", "scenarios/mixtral-8x7b-ep-32-h100.yaml"}) {
    CAPTURE(file);
    Scenario s = Load(file);
    SweepSpec sw;
    sw.axes = {{"tp", axis({"2", "8"})},
               {"pp", axis({"1", "2", "4"})},
               {"dp", SweepAxis{true, {}}},
               {"zero", axis({"0", "1", "2", "3"})},
               {"micro_batch", axis({"1", "2"})},
               {"schedule", axis({"1f1b", "interleaved-1f1b", "zb-h1", "dualpipe"})},
               {"virtual_stages", axis({"2"})},
               {"grad_reduce", axis({"micro_batch", "step"})}};
    sw.global_batch_max = 64;
    s.sweep = sw;
    s.dp_auto = true;
    auto [all, pruned] = BothWays(s);
    int sharded = 0;
    std::map<std::string, double> step_of;
    for (const SweepEntry& e : all->ranked) step_of[e.key] = e.step_time_s;
    int twins = 0;
    for (const SweepEntry& e : all->ranked) {
      // The grid folds a ZeRO stage's own reduction onto auto: keys name only the other one.
      CHECK((e.layout.grad_reduce == Layout::GradReduce::kAuto) ==
            (e.key.find("reduce-per") == std::string::npos));
      // ZeRO-2 reducing once per step is about ZeRO-1, where both fit (ZeRO-1's buckets and start
      // gathers are Megatron-Core's: DataParallelLowering::WaitStartGather).
      const size_t at = e.key.find("zero2 reduce-per-step");
      if (at == std::string::npos) continue;
      std::string zero1 = e.key;
      zero1.replace(at, std::string("zero2 reduce-per-step").size(), "zero1");
      if (step_of.count(zero1) == 0) continue;
      CHECK(e.step_time_s == doctest::Approx(step_of[zero1]).epsilon(0.02));
      ++twins;
    }
    CHECK(twins > 0);
    for (const SweepEntry& e : all->ranked) {
      CAPTURE(e.key);
      CheckStepBounds(s, e);
      sharded += e.layout.zero >= 2 ? 1 : 0;
    }
    CHECK(sharded > 10);
  }
}

TEST_CASE("ZeRO 3's resharding: every bound holds and pruning keeps the exhaustive answer") {
  // Layers freed after each forward, after each backward or at the step's end (one gather a
  // layer a step) under every kind of schedule: the bounds count each policy's gathers and stay
  // under every replay; layouts without ZeRO 3 fold onto forward, and keys name the others.
  auto axis = [](std::vector<std::string> v) { return SweepAxis{false, std::move(v)}; };
  Scenario s = Load("scenarios/llama3-70b-64-h100.yaml");
  SweepSpec sw;
  sw.axes = {{"tp", axis({"4", "8"})},
             {"pp", axis({"1", "2", "4"})},
             {"dp", SweepAxis{true, {}}},
             {"zero", axis({"1", "3"})},
             {"micro_batch", axis({"1"})},
             {"schedule", axis({"1f1b", "interleaved-1f1b", "zb-h1", "dualpipe"})},
             {"virtual_stages", axis({"2"})},
             {"grad_reduce", axis({"micro_batch", "step"})},
             {"zero3_reshard", axis({"forward", "backward", "step"})}};
  sw.global_batch_max = 64;
  s.sweep = sw;
  s.dp_auto = true;
  auto [all, pruned] = BothWays(s);
  int held = 0;
  for (const SweepEntry& e : all->ranked) {
    CAPTURE(e.key);
    const bool holds = e.layout.zero3_reshard != Layout::Zero3Reshard::kForward;
    CHECK((!holds || e.layout.zero == 3));
    CHECK(holds == (e.key.find(" hold-") != std::string::npos));
    held += holds ? 1 : 0;
    CheckStepBounds(s, e);
  }
  CHECK(held > 10);
}

TEST_CASE("the schedule bound waits for transfers, start gathers and queued reductions") {
  // Llama 3 405B on 16,384 H100 at PP64 (the benchmark question's front runners): the walk of
  // the schedule before lowering counts each activation's transfer between nodes, the ZeRO-1
  // start gathers, and each stage's reductions one after another from the backwards that issue
  // them. Without them it was 2.0% below the ZeRO-1 replay (now under 1%) and 25% below the
  // ZeRO-2 one, whose per-micro-batch reduce-scatters queue (now 7%): such layouts were lowered
  // only to be pruned by the lowered program's bound.
  Scenario s = Load("scenarios/bench/llama3-405b-16k-h100-question.yaml");
  struct Case {
    int tp, dp, cp, zero;
    double at_least;  // of the replayed step
  };
  for (const Case c : {Case{2, 16, 8, 1, 0.99}, Case{2, 32, 4, 2, 0.9}}) {
    CAPTURE(c.zero);
    Training t = s.training;
    t.global_batch = 4096;
    Layout l = s.layout;
    l.tp = c.tp;
    l.pp = 64;
    l.dp = c.dp;
    l.cp = c.cp;
    l.zero = c.zero;
    auto dualpipe = FindSchedule("dualpipe");
    REQUIRE(dualpipe.ok());
    l.schedule = *dualpipe;
    l.virtual_stages = 1;
    auto bound = StepScheduleBound(s.model, t, l, s.cluster);
    REQUIRE_MESSAGE(bound.ok(), bound.status().message());
    auto r = SimulateStep(s.model, t, l, s.cluster, StepOptions{});
    REQUIRE_MESSAGE(r.ok(), r.status().message());
    CHECK(*bound <= r->step_time_s);
    CHECK(*bound >= c.at_least * r->step_time_s);
  }
}

TEST_CASE("cp_comm swept: ring and all-gather context parallelism, bounds and pruning exact") {
  // Llama 3 8B at 128K tokens on 64 H100: CP 1-8 (across nodes beyond 1) with K/V either passed
  // around a ring or gathered before the attention.
  auto axis = [](std::vector<std::string> v) { return SweepAxis{false, std::move(v)}; };
  Scenario s = Load("scenarios/llama3-8b-128k-cp-64-h100.yaml");
  SweepSpec sw;
  sw.axes = {{"tp", axis({"4", "8"})},
             {"cp", axis({"1", "2", "4", "8"})},
             {"dp", SweepAxis{true, {}}},
             {"recompute", axis({"selective", "full"})},
             {"cp_comm", axis({"ring", "all_gather"})}};
  s.sweep = sw;
  s.dp_auto = true;
  auto [all, pruned] = BothWays(s);
  std::map<std::string, double> step_of;
  for (const SweepEntry& e : all->ranked) step_of[e.key] = e.step_time_s;
  int twins = 0;
  for (const SweepEntry& e : all->ranked) {
    CAPTURE(e.key);
    // Without CP there is no exchange: the grid folds those layouts onto the ring, and keys name
    // the gather only where it is one.
    CHECK((e.layout.cp > 1 || e.layout.cp_comm == Layout::CpComm::kRing));
    const size_t at = e.key.find(" cp-all-gather");
    CHECK((at != std::string::npos) == (e.layout.cp_comm == Layout::CpComm::kAllGather));
    std::vector<double> held;
    auto bound = BoundsOf(s, e, &held);
    REQUIRE(bound.ok());
    CHECK(bound->step_s <= e.step_time_s);
    if (at == std::string::npos) continue;
    // The gathered exchange waits where the ring's hides: never a shorter step than the ring's.
    std::string ring = e.key;
    ring.erase(at, std::string(" cp-all-gather").size());
    REQUIRE(step_of.count(ring) == 1);
    CHECK(e.step_time_s > step_of[ring]);
    ++twins;
  }
  CHECK(twins > 0);
}

TEST_CASE("etp swept: MoE parallel folding ranked beside EP inside DP, bounds and pruning exact") {
  // Mixtral 8x7B on 32 H100: TP 1-4 for attention, EP 2-8, the experts' TP as tp or 1-8.
  auto axis = [](std::vector<std::string> v) { return SweepAxis{false, std::move(v)}; };
  Scenario s = Load("scenarios/mixtral-8x7b-ep-32-h100.yaml");
  SweepSpec sw;
  sw.axes = {{"tp", axis({"1", "2", "4"})},
             {"dp", SweepAxis{true, {}}},
             {"ep", axis({"2", "4", "8"})},
             {"etp", SweepAxis{true, {}}}};
  s.sweep = sw;
  s.dp_auto = true;
  auto [all, pruned] = BothWays(s);
  int folded = 0;
  std::set<std::string> keys;
  for (const SweepEntry& e : all->ranked) {
    CAPTURE(e.key);
    CHECK(keys.insert(e.key).second);  // etp as tp (auto's 0) and etp = tp are one layout
    const Layout& l = e.layout;
    CHECK((e.key.find(" etp") != std::string::npos) == (l.expert_tp() != l.tp));
    CHECK((static_cast<int64_t>(l.tp) * l.cp * l.dp) %
              (static_cast<int64_t>(l.expert_tp()) * l.ep) ==
          0);
    std::vector<double> held;
    auto bound = BoundsOf(s, e, &held);
    REQUIRE(bound.ok());
    CHECK(bound->step_s <= e.step_time_s);
    if (l.expert_tp() != l.tp) ++folded;
  }
  CHECK(folded > 0);
}

TEST_CASE("precision swept: FP8 beside bf16 where the GPU has FP8, bounds and pruning exact") {
  auto axis = [](std::vector<std::string> v) { return SweepAxis{false, std::move(v)}; };
  // Llama 3 70B on 64 H100: auto tries bf16 and fp8; FP8 ranks first and keeps less.
  Scenario s = Load("scenarios/llama3-70b-64-h100.yaml");
  CHECK(
      FindSweepKey("precision")->auto_values(s) ==
      std::vector<int64_t>{static_cast<int64_t>(Dtype::kBf16), static_cast<int64_t>(Dtype::kFp8)});
  SweepSpec sw;
  sw.axes = {{"precision", SweepAxis{true, {}}}, {"recompute", axis({"none", "selective"})}};
  s.sweep = sw;
  auto [all, pruned] = BothWays(s);
  REQUIRE(all->ranked.size() == 4);
  for (const SweepEntry& e : all->ranked) {
    CAPTURE(e.key);
    CHECK((e.key.find(" fp8") != std::string::npos) == (e.training.precision == Dtype::kFp8));
    std::vector<double> held;
    auto bound = BoundsOf(s, e, &held);
    REQUIRE(bound.ok());
    CHECK(bound->step_s <= e.step_time_s);
  }
  CHECK(all->ranked.front().training.precision == Dtype::kFp8);
  // With the recipes too: bf16 is one layout whatever the recipe; MXFP8 only on Blackwell.
  CHECK(FindSweepKey("fp8_recipe")->auto_values(s).size() == 2);
  s.sweep->axes = {{"precision", SweepAxis{true, {}}}, {"fp8_recipe", SweepAxis{true, {}}}};
  auto [recipes, recipes_pruned] = BothWays(s);
  std::set<std::string> keys;
  for (const SweepEntry& e : recipes->ranked) keys.insert(e.key);
  CHECK(keys.size() == 3);  // bf16, fp8, fp8-blockwise
  CHECK(std::count_if(keys.begin(), keys.end(), [](const std::string& k) {
          return k.find(" fp8-blockwise") != std::string::npos;
        }) == 1);
  Scenario b = s;
  b.cluster.gpu = *LoadHardwareCatalog()->FindGpu("b200");
  CHECK(FindSweepKey("fp8_recipe")->auto_values(b).size() == 3);
  s.training.precision = Dtype::kFp8;
  s.training.fp8_recipe = Fp8Recipe::kMxfp8;
  s.sweep.reset();
  const auto no_mx = CheckLayout(s);
  REQUIRE(no_mx);
  CHECK(no_mx->key == "fp8_recipe");
  CHECK(no_mx->message.find("and h100-sxm5-80gb has none; expected tensorwise or blockwise") !=
        std::string::npos);
  // On the A100s, which have no FP8 tensor cores, auto is bf16 alone and a listed fp8 is no
  // valid layout.
  Scenario a = Load("scenarios/gpt3-175b-1024-a100.yaml");
  CHECK(FindSweepKey("precision")->auto_values(a) ==
        std::vector<int64_t>{static_cast<int64_t>(Dtype::kBf16)});
  a.training.precision = Dtype::kFp8;
  const auto problem = CheckLayout(a);
  REQUIRE(problem);
  CHECK(problem->key == "precision");
  CHECK(problem->message ==
        "fp8 needs fp8 tensor cores and a100-sxm4-80gb has none (no fp8 peak in the catalog); "
        "expected one of fp32, tf32, fp16, bf16");
}

TEST_CASE("account_for in a sweep: one-way pipelines count the ends, V and DualPipe keep theirs") {
  // 30 layers on PP4: with the embedding and the loss, 32 units fill 4 x 4 interleaved chunks.
  auto axis = [](std::vector<std::string> v) { return SweepAxis{false, std::move(v)}; };
  Scenario s = Load("scenarios/mixtral-8x7b-ep-32-h100.yaml");
  s.model.layers = 30;
  s.layout.ep = 4;  // within DP4
  s.layout.split_embedding = s.layout.split_loss = true;
  SweepSpec sw;
  sw.axes = {{"pp", axis({"4"})},
             {"dp", SweepAxis{true, {}}},
             {"schedule", axis({"1f1b", "interleaved-1f1b", "dualpipe", "zb-v"})},
             {"virtual_stages", axis({"1", "4"})}};
  s.sweep = sw;
  s.dp_auto = true;
  auto [all, pruned] = BothWays(s);
  std::set<std::string> schedules;
  for (const SweepEntry& e : all->ranked) {
    CAPTURE(e.key);
    const PipelineSchedule& sched = ScheduleOf(e.layout.schedule);
    const bool one_way = !sched.mirrored() && !sched.bidirectional();
    CHECK(e.layout.split_embedding == one_way);
    CHECK((e.key.find(" account-embedding-loss") != std::string::npos) == one_way);
    schedules.insert(std::string(ScheduleName(e.layout.schedule)));
  }
  CHECK(schedules.count("interleaved-1f1b") == 1);
  CHECK(schedules.count("dualpipe") == 1);
}

}  // namespace
}  // namespace parasim

namespace parasim {
namespace {

TEST_CASE("one sweep-key table: every key parses, applies and lists its auto values") {
  const Scenario s = testing::LoadScenarioOrFail("scenarios/gpt3-175b-1024-a100.yaml");
  CHECK(SweepableKeys().size() == SweepKeys().size());
  for (const SweepKey& k : SweepKeys()) {
    CAPTURE(k.name);
    CHECK(FindSweepKey(k.name) == &k);
    CHECK(!k.parse("not-a-value").ok());
    for (int64_t v : k.auto_values(s)) {
      Layout l;
      Training t;
      k.apply(v, &l, &t);  // every auto value applies without a parse
    }
  }
  Scenario probe = s;
  REQUIRE(ApplySweepValue(&probe, "tp", "4").ok());
  REQUIRE(ApplySweepValue(&probe, "schedule", "interleaved").ok());
  REQUIRE(ApplySweepValue(&probe, "recompute", "selective").ok());
  CHECK(probe.layout.tp == 4);
  CHECK(probe.layout.schedule == kScheduleInterleaved);
  CHECK(probe.training.recompute == RecomputeKind::kSelective);
  CHECK(ApplySweepValue(&probe, "zero", "4").message() == "expected an integer from 0 to 3, got 4");
  CHECK(ApplySweepValue(&probe, "gpu", "h100").message() == "'gpu' cannot be swept");
  // tp auto: powers of two up to the node (8 GPUs of a DGX A100).
  CHECK(FindSweepKey("tp")->auto_values(s) == std::vector<int64_t>{1, 2, 4, 8});
}

TEST_CASE("a sweep point tells apart every value of every key (the enumeration dedupes by it)") {
  const Scenario s = testing::LoadScenarioOrFail("scenarios/gpt3-175b-1024-a100.yaml");
  CHECK(std::tuple_size<SweepPoint>::value == SweepKeys().size());
  for (const SweepKey& k : SweepKeys()) {
    CAPTURE(k.name);
    std::vector<int64_t> values = k.auto_values(s);
    if (values.size() < 2) {
      // Numbers, or two names (precision on the A100s, whose auto is bf16 alone).
      auto a = k.parse("1"), b = k.parse("2");
      values = a.ok() && b.ok() ? std::vector<int64_t>{*a, *b}
                                : std::vector<int64_t>{*k.parse("bf16"), *k.parse("fp8")};
    }
    std::set<SweepPoint> points;
    for (int64_t v : values) {
      Layout l = s.layout;
      Training t = s.training;
      k.apply(v, &l, &t);
      points.insert(SweepPointOf(l, t));
    }
    CHECK(points.size() == values.size());
  }
}

}  // namespace
}  // namespace parasim
