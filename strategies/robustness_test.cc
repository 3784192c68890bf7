// sweep --robust: each swing moves the rates it names and no other, at factor 1 it changes no
// prediction, and on a sweep whose answer hangs on its Ethernet the swing of that fabric puts
// another layout first.
#include "strategies/robustness.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "strategies/step.h"
#include "tests/load_scenario.h"

namespace parasim {
namespace {

Scenario Load(const std::string& path) { return testing::LoadScenarioOrFail(path); }

double StepOn(const Scenario& s, const ClusterSpec& c) {
  auto r = SimulateStep(s.model, s.training, s.layout, c, {});
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  return r->step_time_s;
}

// A scenario's sweep on two threads and its robustness check, both required to succeed.
struct Swept {
  std::optional<SweepOutcome> outcome;
  std::optional<Robustness> robust;
};
Swept SweepAndSwing(const Scenario& s) {
  SweepOptions o;
  o.jobs = 2;
  auto r = RunSweep(s, o);
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  auto rob = SweepRobustness(s, *r, RobustnessOptions::Jobs(2));
  REQUIRE_MESSAGE(rob.ok(), rob.status().message());
  return {std::move(*r), std::move(*rob)};
}

TEST_CASE("the attention swing moves FlashAttention 2's figure where a GPU has one") {
  // Deterministic training with dropout on a GB200 runs FlashAttention 2's kernels.
  Scenario s = Load("scenarios/llama3-405b-gb200-nvl72.yaml");
  s.training.deterministic = true;
  s.training.attention_dropout = 0.1;
  const ClusterSpec& c = s.cluster;
  REQUIRE(c.gpu.attention_flash2.forward > 0);
  const ClusterSpec down = Swung(c, {SwingKind::kAttention, 0.8, {}});
  CHECK(down.gpu.attention_flash2.forward == doctest::Approx(c.gpu.attention_flash2.forward * 0.8));
  CHECK(StepOn(s, down) > StepOn(s, c));
  // An H100 has none: its FlashAttention 2 stays unset, priced as the swung fused kernels.
  const Scenario h = Load("scenarios/llama3-70b-64-h100.yaml");
  CHECK(Swung(h.cluster, {SwingKind::kAttention, 0.8, {}}).gpu.attention_flash2.forward == 0);
}

TEST_CASE("a swing moves the rates it names, and at factor 1 no prediction") {
  const Scenario s = Load("scenarios/llama3-70b-64-h100.yaml");
  const ClusterSpec& c = s.cluster;
  const double base = StepOn(s, c);
  for (int k = 0; k < kNumSwingKinds; ++k) {
    const auto kind = static_cast<SwingKind>(k);
    CAPTURE(SwingName(kind));
    CHECK(SwingKindOf(SwingKey(kind)) == kind);  // as report --from reads sweep --json back
    // Attention efficiencies made explicit at their derived values price the step alike.
    CHECK(StepOn(s, Swung(c, {kind, 1.0, {}})) == doctest::Approx(base).epsilon(1e-12));
    const ClusterSpec down = Swung(c, {kind, 0.8, {}});
    const ClusterSpec up = Swung(c, {kind, 1.25, {}});
    // A rate's factor below 1 slows the step; the per-kernel costs' factor is a cost's.
    const bool cost = kind == SwingKind::kHost;
    const double slow = StepOn(s, cost ? up : down), fast = StepOn(s, cost ? down : up);
    // Every kind weighs on this step: TP on NVLink, DP over InfiniBand, flash attention, and
    // a kernel's launch gap (the host's issue time only where MoE experts wait on it).
    CHECK(slow > base);
    CHECK(fast < base);
    // What the other kinds price is left alone.
    if (kind != SwingKind::kGemm) CHECK(down.gpu.gemm_efficiency == c.gpu.gemm_efficiency);
    if (kind != SwingKind::kMemory) CHECK(down.gpu.memory_efficiency == c.gpu.memory_efficiency);
    if (kind != SwingKind::kIntra) CHECK(down.intra.efficiency == c.intra.efficiency);
    if (kind != SwingKind::kInter) CHECK(down.inter.efficiency == c.inter.efficiency);
    if (kind != SwingKind::kHost) CHECK(down.gpu.host_op_time == c.gpu.host_op_time);
    if (kind != SwingKind::kAttention) {
      CHECK(down.gpu.attention_flash.forward == c.gpu.attention_flash.forward);
    }
  }
}

TEST_CASE("swings stop at the caps a fraction of a peak keeps") {
  const Scenario s = Load("scenarios/llama3-70b-64-h100.yaml");
  const ClusterSpec& c = s.cluster;
  // InfiniBand NDR's measured 0.97 reaches line rate and no further.
  std::string applied;
  CHECK(Swung(c, {SwingKind::kInter, 1.28, {}}, &applied).inter.efficiency == doctest::Approx(1.0));
  CHECK(applied == "ib-ndr-400g efficiency 0.97 -> 1");
  CHECK(Swung(c, {SwingKind::kInter, 0.78, {}}).inter.efficiency == doctest::Approx(0.97 * 0.78));
  // NVLink's all-reduces reach NVLink SHARP's 480 GB/s bus bandwidth of 450 at most.
  CHECK(Swung(c, {SwingKind::kIntra, 2.0, {}}).intra.efficiency == doctest::Approx(480.0 / 450));
  // Attention stops at the cost model's 0.95; the H100's measured fused forward is 0.440.
  const ClusterSpec att = Swung(c, {SwingKind::kAttention, 3.0, {}});
  CHECK(att.gpu.attention_flash.forward == doctest::Approx(0.95));
  CHECK(Swung(c, {SwingKind::kAttention, 1.5, {}}).gpu.attention_flash.backward ==
        doctest::Approx(0.269 * 1.5));
  // An A100's attention efficiencies are derived from its GEMM efficiency until measured: the
  // attention swing scales them, the GEMM swing leaves them where they were.
  const Scenario a = Load("scenarios/gpt3-175b-1024-a100.yaml");
  CHECK(a.cluster.gpu.attention_standard.forward == 0);
  const ClusterSpec g = Swung(a.cluster, {SwingKind::kGemm, 0.9, {}});
  const ClusterSpec at = Swung(a.cluster, {SwingKind::kAttention, 0.9, {}});
  CHECK(g.gpu.attention_standard.forward > 0);
  CHECK(at.gpu.attention_standard.forward ==
        doctest::Approx(0.9 * g.gpu.attention_standard.forward));
  // What a calibration profile measured swings by a measurement's spread, x0.97 / x1.03.
  ClusterSpec calibrated = c;
  calibrated.measured.inter = true;
  std::string said;
  CHECK(Swung(calibrated, {SwingKind::kInter, 0.78, {}}, &said).inter.efficiency ==
        doctest::Approx(0.97 * 0.97));
  CHECK(said == "ib-ndr-400g efficiency 0.97 -> 0.941 (calibrated: x0.97)");
  CHECK(Swung(calibrated, {SwingKind::kGemm, 0.9, {}}).gpu.gemm_efficiency ==
        doctest::Approx(0.9 * c.gpu.gemm_efficiency));
  // Per-kernel costs scale both the launch gap and the host's issue.
  const ClusterSpec h = Swung(c, {SwingKind::kHost, 2.0, {}});
  CHECK(h.gpu.host_op_time.seconds() == doctest::Approx(2 * c.gpu.host_op_time.seconds()));
  CHECK(h.gpu.launch_overhead.seconds() == doctest::Approx(2 * c.gpu.launch_overhead.seconds()));
}

TEST_CASE("the Ethernet example's answer hangs on its fabric, and --robust says so") {
  const Scenario s = Load("scenarios/llama3-70b-64-h100-ethernet-sweep.yaml");
  const Swept sw = SweepAndSwing(s);
  const auto& r = sw.outcome;
  const auto& rob = sw.robust;
  REQUIRE(r->ranked.size() >= 8);
  CHECK(rob->leaders == 8);
  REQUIRE(rob->swings.size() == DefaultSwings().size());
  int held = 0;
  for (const SwingOutcome& w : rob->swings) {
    CAPTURE(SwingName(w.swing.kind));
    CAPTURE(w.swing.factor);
    REQUIRE(w.step_s.size() == rob->leaders);
    // The same tokens a step on the same GPUs: the first is the shortest step.
    const size_t shortest =
        static_cast<size_t>(std::min_element(w.step_s.begin(), w.step_s.end()) - w.step_s.begin());
    CHECK(w.first == shortest);
    CHECK(w.behind == doctest::Approx(w.step_s[0] / w.step_s[w.first] - 1));
    CHECK(w.holds == (w.behind <= kRankTie));
    held += w.holds;
    // #1's step under the swing is its replay on the swung cluster.
    Scenario one = WithLayout(s, r->ranked[0]);
    CHECK(w.step_s[0] == doctest::Approx(StepOn(one, Swung(one.cluster, w.swing))));
  }
  CHECK(rob->held == held);
  // #1 spreads data parallelism over the Ethernet; with the fabric at 0.55 of its rate instead
  // of the catalog's estimated 0.70, a layout without it comes first, by more than a tie.
  const Layout& first = r->ranked[0].layout;
  CHECK(first.dp > 1);
  auto slow_net = std::find_if(rob->swings.begin(), rob->swings.end(), [](const SwingOutcome& w) {
    return w.swing.kind == SwingKind::kInter && w.swing.factor < 1;
  });
  REQUIRE(slow_net != rob->swings.end());
  CHECK_FALSE(slow_net->holds);
  CHECK(r->ranked[slow_net->first].layout.dp == 1);
  CHECK(slow_net->behind > kRankTie);
  CHECK(rob->held < static_cast<int>(rob->swings.size()));
  // A faster fabric only strengthens #1.
  auto fast_net = std::find_if(rob->swings.begin(), rob->swings.end(), [](const SwingOutcome& w) {
    return w.swing.kind == SwingKind::kInter && w.swing.factor > 1;
  });
  REQUIRE(fast_net != rob->swings.end());
  CHECK(fast_net->first == 0);
}

TEST_CASE("a co-design sweep: each cluster's best is a leader, each GPU type swings alone") {
  const Scenario s = Load("scenarios/llama3-70b-cluster-codesign.yaml");
  const Swept sw = SweepAndSwing(s);
  const auto& r = sw.outcome;
  const auto& rob = sw.robust;
  // The first ten, then the best of each cluster not among them.
  REQUIRE(rob->top == 10);
  REQUIRE(rob->leaders == rob->ranked.size());
  for (size_t i = 0; i < rob->top; ++i) CHECK(rob->ranked[i] == i);
  std::vector<bool> seen(s.sweep->hardware.size(), false);
  for (size_t i : rob->ranked) seen[r->ranked[i].hardware] = true;
  for (const SweepEntry& e : r->ranked) CHECK(seen[e.hardware]);
  CHECK(rob->leaders > rob->top);
  // Twelve shared swings and two for each of the three GPU types.
  REQUIRE(rob->swings.size() == DefaultSwings().size() + 6);
  for (const std::string gpu : {"h100-sxm5-80gb", "h200-sxm-141gb", "b200"}) {
    CAPTURE(gpu);
    auto w = std::find_if(rob->swings.begin(), rob->swings.end(), [&](const SwingOutcome& x) {
      return x.swing.kind == SwingKind::kKernels && x.swing.gpu == gpu && x.swing.factor < 1;
    });
    REQUIRE(w != rob->swings.end());
    CHECK(SwingLabel(w->swing) == gpu + " kernels");
    CHECK(w->applied == "sustained factor 0.826 -> 0.727");
    // That GPU's leaders slow down; every other leader replays as the sweep did.
    for (size_t k = 0; k < rob->leaders; ++k) {
      const SweepEntry& e = r->ranked[rob->ranked[k]];
      if (ClusterOf(s, e).gpu.id == gpu) {
        CHECK(w->step_s[k] > e.step_time_s);
      } else {
        CHECK(w->step_s[k] == e.step_time_s);
      }
    }
  }
  // B200's cost a token leads by more than the 12% either way (2026-11-26).
  CHECK(rob->held == static_cast<int>(rob->swings.size()));
}

TEST_CASE("a swing for one GPU type leaves another's cluster as it is") {
  const Scenario s = Load("scenarios/llama3-70b-64-h100.yaml");
  const ClusterSpec other = Swung(s.cluster, {SwingKind::kKernels, 0.5, "b200"});
  CHECK(other.gpu.sustained_factor == s.cluster.gpu.sustained_factor);
  CHECK(StepOn(s, other) == StepOn(s, s.cluster));
  const ClusterSpec mine = Swung(s.cluster, {SwingKind::kKernels, 0.88, "h100-sxm5-80gb"});
  CHECK(mine.gpu.sustained_factor == doctest::Approx(0.88 * s.cluster.gpu.sustained_factor));
  CHECK(StepOn(s, mine) > StepOn(s, s.cluster));
}

TEST_CASE("nothing to swing for the memory objective or a single leader") {
  Scenario s = Load("scenarios/llama3-70b-64-h100-ethernet-sweep.yaml");
  s.sweep->objective = Objective::kMemory;
  SweepOptions o;
  o.jobs = 2;
  auto r = RunSweep(s, o);
  REQUIRE(r.ok());
  auto rob = SweepRobustness(s, *r, RobustnessOptions::Jobs(2));
  REQUIRE(rob.ok());
  CHECK(rob->leaders == 0);
  CHECK(rob->swings.empty());
  s.sweep->objective = Objective::kThroughput;
  s.sweep->top = 1;
  auto one = SweepRobustness(s, *r, RobustnessOptions::Jobs(2));
  REQUIRE(one.ok());
  CHECK(one->leaders == 0);
}

}  // namespace
}  // namespace parasim
