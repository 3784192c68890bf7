// Ranking tests: the layouts that fit in the objective's order with ties broken by key, the
// leanest of those that do not, and a Pareto front that is non-dominated and complete.
#include "strategies/sweep_rank.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace parasim {
namespace {

SweepEntry Entry(const std::string& key, double tokens_per_s, double peak, bool fits = true) {
  SweepEntry e;
  e.key = key;
  e.tokens_per_s = tokens_per_s;
  e.peak_memory_bytes = peak;
  e.fits = fits;
  e.replayed = true;
  e.cost_per_s = 1;
  return e;
}

std::vector<std::string> Keys(const std::vector<SweepEntry>& v) {
  std::vector<std::string> out;
  for (const SweepEntry& e : v) out.push_back(e.key);
  return out;
}

// Whether a is at least as good as b on both axes of the front and better on one.
bool Dominates(const FrontPoint& a, const FrontPoint& b) {
  return a.tokens >= b.tokens && a.other <= b.other && (a.tokens > b.tokens || a.other < b.other);
}

TEST_CASE("ranked by the objective, ties by key; the leanest layout that does not fit") {
  const std::vector<SweepEntry> entries = {Entry("b", 100, 50),      Entry("a", 100, 60),
                                           Entry("c", 300, 70),      Entry("d", 200, 40),
                                           Entry("x", 0, 90, false), Entry("y", 0, 80, false)};
  SweepSpec spec;
  SweepRanking r = RankEntries(spec, entries);
  CHECK(Keys(r.ranked) == std::vector<std::string>{"c", "d", "a", "b"});
  CHECK(r.leanest.key == "y");
  spec.objective = Objective::kMemory;
  r = RankEntries(spec, entries);
  CHECK(Keys(r.ranked) == std::vector<std::string>{"d", "b", "a", "c"});
  // Time to train ranks by the throughput kept through failures.
  std::vector<SweepEntry> kept = entries;
  kept[2].goodput = 0.5;  // c keeps 150 tokens/s
  spec.objective = Objective::kTimeToTrain;
  CHECK(Keys(RankEntries(spec, kept).ranked) == std::vector<std::string>{"d", "c", "a", "b"});
  // Cost ranks by tokens per unit of the cluster's cost.
  kept[1].cost_per_s = 0.25;  // a: 400 tokens per unit
  spec.objective = Objective::kCost;
  CHECK(Keys(RankEntries(spec, kept).ranked).front() == "a");
}

TEST_CASE(
    "the Pareto front: fastest first, non-dominated as printed, every other layout dominated") {
  std::mt19937 rng(7);
  // Throughputs about 62.9k tokens/s and peaks about 30 GiB, spread finer than they print
  // (0.1k tokens/s, 0.1 GiB), so that many print alike.
  std::uniform_real_distribution<double> tokens(62'000, 64'000), peak_gib(29, 31);
  for (bool codesign : {false, true}) {
    CAPTURE(codesign);
    SweepSpec spec;
    if (codesign) spec.hardware.resize(2);
    std::vector<SweepEntry> entries;
    for (int i = 0; i < 300; ++i) {
      SweepEntry e =
          Entry("k" + std::to_string(i), tokens(rng), peak_gib(rng) * Bytes::GiB(1).bytes());
      e.cost_per_s = 1 + (i % 3) * 1e-4;
      entries.push_back(e);
    }
    const SweepRanking r = RankEntries(spec, entries);
    REQUIRE(!r.pareto.empty());
    std::set<size_t> front(r.pareto.begin(), r.pareto.end());
    CHECK(front.size() == r.pareto.size());
    for (size_t k = 1; k < r.pareto.size(); ++k) {
      const FrontPoint a = PrintedFrontOf(r.ranked[r.pareto[k - 1]], codesign);
      const FrontPoint b = PrintedFrontOf(r.ranked[r.pareto[k]], codesign);
      CHECK(a.tokens > b.tokens);  // faster as printed ...
      CHECK(a.other > b.other);    // ... and higher on the other axis as printed
    }
    for (size_t i = 0; i < r.ranked.size(); ++i) {
      const FrontPoint x = PrintedFrontOf(r.ranked[i], codesign);
      bool dominated = false, exactly_dominated = false;
      for (size_t j = 0; j < r.ranked.size(); ++j) {
        dominated = dominated || Dominates(PrintedFrontOf(r.ranked[j], codesign), x);
        exactly_dominated = exactly_dominated || Dominates(FrontOf(r.ranked[j], codesign),
                                                           FrontOf(r.ranked[i], codesign));
      }
      if (front.count(i) != 0) {
        CHECK_FALSE(dominated);
        CHECK_FALSE(exactly_dominated);  // the printed front is part of the exact one
      } else {
        // Off the front: dominated as printed, or printed alike with a point of the front.
        bool tied = false;
        for (size_t f : r.pareto) {
          const FrontPoint y = PrintedFrontOf(r.ranked[f], codesign);
          tied = tied || (y.tokens == x.tokens && y.other == x.other);
        }
        CHECK((dominated || tied));
      }
    }
  }
}

TEST_CASE("the newcomer's front: the same free memory as printed, less throughput, is dominated") {
  // Two layouts 27.2 GiB free as printed, 62.7k and 60.8k tokens/s (the Llama 3 70B Ethernet
  // sweep): only the faster stays on the front.
  const double gib = Bytes::GiB(1).bytes();
  const std::vector<SweepEntry> entries = {Entry("fast", 62'710, 52.41 * gib),
                                           Entry("slow", 60'790, 52.38 * gib)};
  const SweepRanking r = RankEntries(SweepSpec{}, entries);
  CHECK(r.pareto == std::vector<size_t>{0});
  CHECK(TokensAsPrinted(62'947) == 62'900);
  CHECK(TokensAsPrinted(1'204'321) == 1'200'000);
  CHECK(TokensAsPrinted(643'481) == doctest::Approx(643'500));
  CHECK(PeakTenthsOfGib(73.34 * gib) == 733);
}

TEST_CASE("the objective's value and the order agree") {
  SweepEntry fast = Entry("fast", 200, 80), lean = Entry("lean", 100, 40);
  CHECK(RanksBefore(fast, lean, Objective::kThroughput));
  CHECK(RanksBefore(lean, fast, Objective::kMemory));
  CHECK(RankedValue(fast, Objective::kThroughput) > RankedValue(lean, Objective::kThroughput));
  CHECK(RankedValue(lean, Objective::kMemory) > RankedValue(fast, Objective::kMemory));
  // Equal throughput under the cost objective: the raw throughput, then the key, decide.
  SweepEntry a = Entry("a", 100, 1), b = Entry("b", 100, 1);
  CHECK(RanksBefore(a, b, Objective::kCost));
  CHECK_FALSE(RanksBefore(b, a, Objective::kCost));
}

}  // namespace
}  // namespace parasim
