#include "strategies/scale.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>

#include "tests/load_scenario.h"

namespace parasim {
namespace {

Scenario Load(const std::string& path) { return testing::LoadScenarioOrFail(path); }

TEST_CASE("seeds' Amdahl table: 90% parallel on 8 workers is 4.7x, and the fit recovers p") {
  CHECK(AmdahlSpeedup(0.9, 8) == doctest::Approx(4.7).epsilon(0.002));
  std::vector<double> n = {1, 2, 4, 8, 16, 32};
  std::vector<double> s;
  for (double x : n) s.push_back(AmdahlSpeedup(0.9, x));
  CHECK(FitAmdahl(n, s) == doctest::Approx(0.9).epsilon(1e-9));
  // Noisy measurements still give p within a point.
  for (size_t i = 0; i < s.size(); ++i) s[i] *= 1 + 0.01 * std::sin(7.0 * i);
  CHECK(FitAmdahl(n, s) == doctest::Approx(0.9).epsilon(0.01));
  // Karp-Flatt of a pure Amdahl job is its serial fraction at every size.
  for (double x : {2.0, 8.0, 64.0}) {
    CHECK(KarpFlatt(AmdahlSpeedup(0.9, x), x) == doctest::Approx(0.1).epsilon(1e-9));
  }
}

TEST_CASE("strong scaling of the 7B DDP case: speedup grows, efficiency at most ideal") {
  Scenario s = Load("scenarios/llama2-7b-ddp-8-a100.yaml");
  auto r = RunScale(s, {2, 4, 8}, false, SweepOptions{});
  REQUIRE(r.ok());
  REQUIRE(r->points.size() == 3);
  for (const auto& pt : r->points) REQUIRE(pt.found);
  CHECK(r->points[0].speedup == doctest::Approx(1));
  CHECK(r->points[1].speedup > 1.5);
  CHECK(r->points[2].speedup > r->points[1].speedup);
  for (const auto& pt : r->points) CHECK(pt.best.training.global_batch == 64);
  CHECK(r->amdahl_skipped.empty());
  CHECK(r->parallel_fraction > 0.9);
  CHECK(r->parallel_fraction <= 1.0);
  // Weak scaling keeps the batch per GPU, and fits no Amdahl law (it is about a fixed problem).
  auto w = RunScale(s, {2, 8}, true, SweepOptions{});
  REQUIRE(w.ok());
  CHECK(w->points[1].best.training.global_batch == 4 * w->points[0].best.training.global_batch);
  CHECK(w->parallel_fraction == 0);
  CHECK(w->amdahl_skipped.find("weak scaling") != std::string::npos);
  // Nor Karp-Flatt's serial fraction, which is Amdahl's law's (it had printed -0.0083).
  for (const auto& pt : w->points) CHECK(std::isnan(pt.karp_flatt));
  CHECK(r->points[1].karp_flatt == doctest::Approx(KarpFlatt(r->points[1].speedup, 2)));
  // One point determines no fit (the newcomer saw p = 1.0000 from a single point).
  auto one = RunScale(s, {8}, false, SweepOptions{});
  REQUIRE(one.ok());
  CHECK(one->parallel_fraction == 0);
  CHECK(one->amdahl_skipped.find("at least two GPU counts") != std::string::npos);
}

TEST_CASE("scale resizes the scenario's own cluster, by throughput, and says what it leaves") {
  // A co-design sweep block made scale replay the block's fixed clusters at every size (a DP32
  // layout named best on 8 GPUs), and objective: memory ranked the least-memory layouts.
  Scenario s = Load("scenarios/llama2-7b-ddp-8-a100.yaml");
  Scenario co = Load("scenarios/llama3-70b-cluster-codesign.yaml");
  s.sweep = co.sweep;
  s.sweep->objective = Objective::kMemory;
  s.sweep->axes = {{"zero", SweepAxis{.values = {"1", "3"}}}};
  REQUIRE_FALSE(s.sweep->hardware.empty());
  auto r = RunScale(s, {4, 8}, false, SweepOptions{});
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  for (const auto& pt : r->points) {
    REQUIRE_MESSAGE(pt.found, pt.reason);
    CHECK(static_cast<int64_t>(pt.best.layout.tp) * pt.best.layout.pp * pt.best.layout.dp *
              pt.best.layout.cp ==
          pt.gpus);
  }
  REQUIRE(r->notes.size() == 2);
  CHECK(r->notes[0].find("co-design") != std::string::npos);
  CHECK(r->notes[1].find("by throughput") != std::string::npos);
  // Points Amdahl's law does not describe: the raw p and why it was kept within [0, 1].
  CHECK(FitAmdahlRaw({1, 2, 4}, {1, 2.2, 4.6}) > 1);
  CHECK(FitAmdahl({1, 2, 4}, {1, 2.2, 4.6}) == 1);
  CHECK(FitAmdahlRaw({1, 2, 4}, {1, 0.8, 0.6}) < 0);
}

TEST_CASE("advice: LoRA on one GPU says don't distribute; 7B full training does not fit one GPU") {
  Advice lora = Advise(Load("scenarios/llama2-13b-lora-1-a100.yaml"), 0);
  CHECK(lora.fits_one_gpu);
  CHECK(lora.verdict.find("don't distribute") != std::string::npos);
  Advice seven = Advise(Load("scenarios/llama2-7b-ddp-8-a100.yaml"), 0);
  CHECK_FALSE(seven.fits_one_gpu);
  CHECK(seven.verdict.find("Does not fit on one GPU") != std::string::npos);
  // The capacity it names is what the memory model fits against, to a tenth: on an H100 (79.6
  // GiB) "79.7 GiB needed of 80 GiB" had read as a fit.
  CHECK(seven.one_gpu_capacity_bytes > 0);
  CHECK(seven.verdict.find(
            fmt::format("of {:.1f} GiB", seven.one_gpu_capacity_bytes / Bytes::GiB(1).bytes())) !=
        std::string::npos);
  for (const auto& m : seven.minimums) {
    CAPTURE(m.strategy);
    if (m.strategy == "DP") CHECK(m.gpus == 0);  // plain DP never helps memory
    // 108 GB of states over N GPUs plus 4096-token activations (materialised attention).
    if (m.strategy == "ZeRO-3") CHECK((m.gpus == 2 || m.gpus == 4));
  }
  // GPT-3 175B: 16+ bytes per parameter needs dozens of GPUs under any strategy.
  Advice big = Advise(Load("scenarios/gpt3-175b-1024-a100.yaml"), 0);
  for (const auto& m : big.minimums) {
    CAPTURE(m.strategy);
    if (m.gpus > 0) CHECK(m.gpus >= 32);
    if (m.gpus > 0) CHECK(m.why_none.empty());
    // What does not fit says why, never "it replicates" for a strategy that shards.
    if (m.gpus == 0) CHECK(!m.why_none.empty());
    if (m.strategy == "TP") {
      // TP alone stops at a node: TP8 still needs several times the 80 GiB.
      CHECK(m.gpus == 0);
      CHECK(m.why_none.find("TP8+SP PP1 DP1") == 0);
      CHECK(m.why_none.find("within a node (8 GPUs)") != std::string::npos);
    }
    if (m.strategy == "TP x PP + ZeRO-1") {
      // Its DP is derived (the least that fits), and named in its layout.
      REQUIRE(m.gpus > 0);
      CHECK(m.layout.find(" DP") != std::string::npos);
      CHECK(m.layout.find(" Z1") != std::string::npos);
    }
  }
}

TEST_CASE("advice: a strategy fits with full recompute where the scenario's recompute does not") {
  // Llama 3 70B at 8K tokens with selective recompute keeps about 2.3 GB of activations a layer:
  // 178 GiB per GPU under ZeRO-3 at any DP, so the advice said "none up to 65536 GPUs" while the
  // table above it fitted TP1 PP1 DP64 Z3 with full recompute.
  Advice a = Advise(Load("scenarios/llama3-70b-64-h100.yaml"), 0);
  bool zero3 = false;
  for (const auto& m : a.minimums) {
    CAPTURE(m.strategy);
    if (m.strategy != "ZeRO-3") continue;
    zero3 = true;
    CHECK(m.gpus == 32);
    CHECK(m.layout.find("Z3") != std::string::npos);
    CHECK(m.layout.find("rc-full") != std::string::npos);
  }
  CHECK(zero3);
}

TEST_CASE("resizing a cluster: whole nodes or one partial node") {
  Scenario s = Load("scenarios/llama2-7b-ddp-8-a100.yaml");
  CHECK(Resize(s.cluster, 4)->gpus() == 4);
  CHECK(Resize(Load("scenarios/gpt3-175b-1024-a100.yaml").cluster, 64)->nodes == 8);
  CHECK_FALSE(Resize(s.cluster, 12).ok());
  // The 7B scenario is one node with no inter_node fabric: two nodes would be joined by a
  // zero-bandwidth link (the invariant suite's find: a 53-day step ranked as the best layout).
  Scenario one = s;
  one.cluster.inter = FabricSpec{};
  const auto two = Resize(one.cluster, 16);
  REQUIRE_FALSE(two.ok());
  CHECK(two.status().message().find("no inter_node fabric") != std::string::npos);
  // As the loader leaves it ("none" at 1 B/s), not only a zero one: `scale --gpus 16` replayed
  // a step past 1e6 s and said so instead.
  const auto loaded = Resize(s.cluster, 16);
  REQUIRE_FALSE(loaded.ok());
  CHECK(loaded.status().message().find("no inter_node fabric") != std::string::npos);
}

}  // namespace
}  // namespace parasim
