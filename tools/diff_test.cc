// Tests of the what-if diff: the step's parts are the busiest stage's, they add up to the step
// time on each side (the newcomer's diff showed 198.96 + 2.08 + 29.41 + 7.88 s against a
// 233.66 s step), and the reason names the parts that differ.
#include "tools/diff.h"

#include <doctest/doctest.h>

#include <string>

namespace parasim {
namespace {

// GPT-3 1.3B on two A100 nodes over InfiniBand, a 4-stage pipeline (SC21's model sizes).
constexpr const char* kScenario = R"(
name: diff test
cluster: {gpu: a100-sxm4-80gb, nodes: 2, gpus_per_node: 8, intra_node: nvlink3-a100,
          inter_node: ib-hdr-200g}
model: gpt3-1.3b
training: {seq_len: 2048, global_batch: 32, micro_batch: 1}
parallelism: {tp: 2, pp: 4, dp: 2, zero: 1}
)";

StepReport Replay(const Scenario& s) {
  auto r = SimulateStep(s.model, s.training, s.layout, s.cluster, {});
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  return *r;
}

TEST_CASE("the diff's step parts are a partition of each side's step") {
  const Catalogs cat = *LoadCatalogs();
  auto a = LoadScenario(YamlInput("a.yaml", kScenario), {}, cat);
  auto b = LoadScenario(YamlInput("b.yaml", kScenario), {"training.recompute=full"}, cat);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  const StepReport ra = Replay(*a), rb = Replay(*b);
  const StepDiff d = DiffSteps(*a, ra, *b, rb);
  double sum_a = 0, sum_b = 0;
  int parts = 0;
  for (const DiffRow& row : d.rows) {
    if (!row.step_part) continue;
    ++parts;
    sum_a += row.a;
    sum_b += row.b;
  }
  CHECK(parts == kNumStepParts);
  CHECK(d.rows[0].what == "step time");
  CHECK(sum_a == doctest::Approx(d.rows[0].a).epsilon(1e-12));
  CHECK(sum_b == doctest::Approx(d.rows[0].b).epsilon(1e-12));
  // Full recompute lengthens B's compute, and the reason says so.
  CHECK(rb.step_time_s > ra.step_time_s);
  CHECK(d.reason.rfind("B is behind A: ", 0) == 0);
  CHECK(d.reason.find("compute (recompute or smaller GEMMs)") != std::string::npos);
}

TEST_CASE("sides on other GPU counts with other work a GPU compare per GPU, not part by part") {
  // B: twice the GPUs at the same global batch, so half the micro-batches a replica. Its step
  // is shorter and its throughput higher, but each GPU does less: which side is behind is
  // judged per GPU, and B's shorter compute is not "recompute or smaller GEMMs" of A's.
  const Catalogs cat = *LoadCatalogs();
  auto a = LoadScenario(YamlInput("a.yaml", kScenario), {}, cat);
  auto b =
      LoadScenario(YamlInput("b.yaml", kScenario), {"cluster.nodes=4", "parallelism.dp=4"}, cat);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  const StepReport ra = Replay(*a), rb = Replay(*b);
  const StepDiff d = DiffSteps(*a, ra, *b, rb);
  const double pa = ra.tokens_per_s / 16, pb = rb.tokens_per_s / 32;
  CAPTURE(d.reason);
  CHECK(d.reason.find(pb < pa ? "B is behind A a GPU" : "A is behind B a GPU") !=
        std::string::npos);
  CHECK(d.reason.find("do not compare part by part") != std::string::npos);
  CHECK(d.reason.find("recompute or smaller GEMMs") == std::string::npos);
}

TEST_CASE("sides on other GPUs or fabrics: the headers show them, the reason blames the GPU") {
  const Catalogs cat = *LoadCatalogs();
  auto a = LoadScenario(YamlInput("a.yaml", kScenario), {}, cat);
  auto gpu =
      LoadScenario(YamlInput("b.yaml", kScenario),
                   {"cluster.gpu.peak.bf16=150TFLOP/s", "cluster.gpu.peak.fp16=150TFLOP/s"}, cat);
  auto net =
      LoadScenario(YamlInput("c.yaml", kScenario), {"cluster.inter_node.bandwidth=5GB/s"}, cat);
  REQUIRE(a.ok());
  REQUIRE(gpu.ok());
  REQUIRE(net.ok());
  const StepReport ra = Replay(*a);
  // A slower GPU at the same layout was put down to "recompute or smaller GEMMs".
  const StepDiff dg = DiffSteps(*a, ra, *gpu, Replay(*gpu));
  CHECK(dg.reason.find("compute (the other GPU's rates, recompute or GEMM sizes)") !=
        std::string::npos);
  CHECK(dg.a_cluster != dg.b_cluster);  // the extended GPU's name says what changed
  // The same GPUs on another network: both headers name their fabrics (they read alike).
  const StepDiff dn = DiffSteps(*a, ra, *net, Replay(*net));
  CHECK(dn.a_cluster.find("ib-hdr-200g 25.0 GB/s") != std::string::npos);
  CHECK(dn.b_cluster.find("ib-hdr-200g 5.0 GB/s") != std::string::npos);
  CHECK(dn.a_cluster.find("nvlink3-a100") == std::string::npos);  // the same on both sides
}

}  // namespace
}  // namespace parasim
