// fit --runs recovers known parameters: step times made by replaying six jobs with a chosen
// sustained factor, launch overhead and inter-node efficiency are fitted back from the
// defaults, and the leave-one-out error stays small.
#include "scenarios/fit_runs.h"

#include <doctest/doctest.h>
#include <fmt/core.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "strategies/goodput.h"
#include "strategies/step.h"

namespace parasim {
namespace {

constexpr const char* kCases[] = {
    "{model: gpt3-1.3b, cluster: {nodes: 1}, parallelism: {tp: 1, pp: 1, dp: 8}, training: "
    "{global_batch: 64, micro_batch: 4}}",
    "{model: gpt3-1.3b, cluster: {nodes: 4}, parallelism: {tp: 1, pp: 1, dp: 32}, training: "
    "{global_batch: 64, micro_batch: 2}}",
    "{model: llama2-7b, cluster: {nodes: 2}, parallelism: {tp: 2, pp: 1, dp: 8}, training: "
    "{global_batch: 64, micro_batch: 1}}",
    "{model: llama2-7b, cluster: {nodes: 4}, parallelism: {tp: 4, pp: 2, dp: 4, zero: 1}, "
    "training: {global_batch: 128, micro_batch: 1}}",
    "{model: llama3-8b, cluster: {nodes: 2}, parallelism: {tp: 1, pp: 1, dp: 16, zero: 3}, "
    "training: {global_batch: 32, micro_batch: 1}}",
    "{model: llama2-13b, cluster: {nodes: 4}, parallelism: {tp: 8, pp: 2, dp: 2}, training: "
    "{global_batch: 64, micro_batch: 1}}",
};

// A runs file of `cases` (flow-style scenario fragments over `defaults`) and their step times.
template <size_t N>
std::string RunsFile(const char* defaults, const char* const (&cases)[N],
                     const std::vector<double>& measured) {
  std::string f = fmt::format(
      "source: synthetic (replayed with known parameters)\ndefaults:\n{}cases:\n", defaults);
  for (size_t i = 0; i < measured.size(); ++i) {
    f += fmt::format("  - name: c{}\n    scenario: {}\n    measured: {{step_time: {:.9g}s}}\n", i,
                     cases[i], measured[i]);
  }
  return f;
}

// Writes `defaults` and `cases` to `path` with every case's step time as replayed with the
// cluster `set` changes (the parameters that made them).
template <size_t N, class Set>
void WriteReplayed(const std::string& path, const char* defaults, const char* const (&cases)[N],
                   Set set) {
  std::ofstream(path) << RunsFile(defaults, cases, std::vector<double>(N, 1.0));
  auto file = LoadValidationFile(path, {});
  REQUIRE_MESSAGE(file.ok(), file.status().message());
  std::vector<double> measured;
  for (const ValidationInput& in : file->cases) {
    ClusterSpec c = in.scenario.cluster;
    set(&c.gpu);
    auto r = SimulateStep(in.scenario.model, in.scenario.training, in.scenario.layout, c, {});
    REQUIRE(r.ok());
    measured.push_back(r->step_time_s);
  }
  std::ofstream(path) << RunsFile(defaults, cases, measured);
}

std::string File(const std::vector<double>& measured) {
  return RunsFile(
      "  cluster: {gpu: a100-sxm4-80gb, gpus_per_node: 8, intra_node: nvlink3-a100, inter_node: "
      "ib-hdr-200g}\n  training: {seq_len: 2048}\n",
      kCases, measured);
}

// Writes the runs file at TEST_TMPDIR/name with each case's step time replayed under
// `knobs` (the parameters that made them), and returns its path.
template <class Knobs>
std::string ReplayedRuns(const std::string& name, Knobs knobs) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  std::ofstream(path) << File(std::vector<double>(std::size(kCases), 1.0));
  auto file = LoadValidationFile(path, {});
  REQUIRE_MESSAGE(file.ok(), file.status().message());
  std::vector<double> measured;
  for (const ValidationInput& in : file->cases) {
    ClusterSpec c = in.scenario.cluster;
    Training t = in.scenario.training;
    knobs(c, t);
    auto r = SimulateStep(in.scenario.model, t, in.scenario.layout, c, {});
    REQUIRE(r.ok());
    measured.push_back(r->step_time_s);
  }
  std::ofstream(path) << File(measured);
  return path;
}

TEST_CASE("fit --runs recovers the parameters that made the step times") {
  const std::string path = ReplayedRuns("runs.yaml", [](ClusterSpec& c, Training&) {
    c.gpu.sustained_factor = 0.70;
    c.gpu.launch_overhead = Duration::Microseconds(12);
    c.inter.efficiency = 0.80;
  });
  auto fit = FitRuns({path}, {}, SweepOptions{});
  REQUIRE_MESSAGE(fit.ok(), fit.status().message());
  REQUIRE(fit->params.size() == 3);
  CHECK(fit->params[0].name == "sustained_factor");
  CHECK(fit->params[0].fitted == doctest::Approx(0.70).epsilon(0.03));
  CHECK(fit->params[1].fitted == doctest::Approx(12).epsilon(0.15));
  CHECK(fit->params[2].name == "ib-hdr-200g.efficiency");
  CHECK(fit->params[2].fitted == doctest::Approx(0.80).epsilon(0.10));
  CHECK(fit->mape_before > 0.05);
  CHECK(fit->mape_after < 0.005);
  CHECK(fit->mape_held_out < 0.02);
  CHECK(fit->profile.sustained_factor.has_value());
  CHECK(fit->profile.fabrics.size() == 1);
}

TEST_CASE("fit --runs compares a wall-clock measurement as validate does: over the goodput") {
  // It fitted the step alone, putting the failures' overhead into the GPU's sustained factor.
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/wall.yaml";
  const std::string defaults =
      "  cluster: {gpu: a100-sxm4-80gb, gpus_per_node: 8, intra_node: nvlink3-a100, inter_node: "
      "ib-hdr-200g}\n  training: {seq_len: 2048, tokens: 1e11}\n  reliability: {gpu: 3}\n";
  auto write = [&](const std::vector<double>& measured) {
    std::string f = "source: synthetic wall clock\ndefaults:\n" + defaults + "cases:\n";
    for (size_t i = 0; i < measured.size(); ++i) {
      f += fmt::format(
          "  - name: c{}\n    scenario: {}\n    measured: {{step_time: {:.9g}s, basis: "
          "wall_clock}}\n",
          i, kCases[i], measured[i]);
    }
    std::ofstream(path) << f;
  };
  write({1.0, 1.0, 1.0});
  auto file = LoadValidationFile(path, {});
  REQUIRE_MESSAGE(file.ok(), file.status().message());
  std::vector<double> measured;
  for (const ValidationInput& in : file->cases) {
    const Scenario& sc = in.scenario;
    auto r = SimulateStep(sc.model, sc.training, sc.layout, sc.cluster, {});
    REQUIRE(r.ok());
    const double goodput = GoodputFactor(sc, r->step_time_s);
    REQUIRE(goodput < 0.95);
    measured.push_back(r->step_time_s / goodput);
  }
  write(measured);
  auto fit = FitRuns({path}, {}, SweepOptions{}, {"sustained_factor"});
  REQUIRE_MESSAGE(fit.ok(), fit.status().message());
  CHECK(fit->mape_before < 1e-6);
  CHECK(fit->params[0].fitted == doctest::Approx(fit->params[0].start).epsilon(1e-3));
}

TEST_CASE("fit --runs --set states a key in every case before fitting") {
  // Step times replayed with each micro-batch's gradients accumulated by a pass of their own and
  // a sustained factor of 0.70: fitted with that stated (--set), the factor comes back; fitted
  // without it, the factor absorbs the pass and lands elsewhere.
  const std::string path = ReplayedRuns("separate.yaml", [](ClusterSpec& c, Training& t) {
    c.gpu.sustained_factor = 0.70;
    t.grad_accumulation = GradAccumulation::kSeparate;
  });
  auto stated = FitRuns({path}, {"training.grad_accumulation=separate"}, SweepOptions{},
                        {"sustained_factor"});
  REQUIRE_MESSAGE(stated.ok(), stated.status().message());
  CHECK(stated->params[0].fitted == doctest::Approx(0.70).epsilon(0.005));
  CHECK(stated->mape_after < 0.002);
  auto unstated = FitRuns({path}, {}, SweepOptions{}, {"sustained_factor"});
  REQUIRE(unstated.ok());
  CHECK(unstated->params[0].fitted < 0.69);
  CHECK(unstated->mape_after > stated->mape_after);
}

TEST_CASE("fit --runs fits the host's op time where experts wait on the host") {
  // Qwen3 30B-A3B issued one expert at a time after dropless routing, 4 to 16 local experts a
  // GPU, replayed with a host op time of 40 us: fitted back from the default.
  const std::string dir = std::getenv("TEST_TMPDIR");
  const std::string path = dir + "/moe.yaml";
  const char* cases[] = {
      "{cluster: {nodes: 1}, parallelism: {dp: 8, ep: 8}, training: {micro_batch: 1}}",
      "{cluster: {nodes: 2}, parallelism: {dp: 16, ep: 16}, training: {micro_batch: 1}}",
      "{cluster: {nodes: 4}, parallelism: {dp: 32, ep: 32}, training: {micro_batch: 2}}",
  };
  WriteReplayed(path,
                "  cluster: {gpu: b200, gpus_per_node: 8, intra_node: nvlink5, inter_node: "
                "ib-ndr-400g}\n  model: qwen3-30b-a3b\n  training: {seq_len: 4096, global_batch: "
                "64, expert_gemm: per_expert}\n  parallelism: {zero: 1}\n",
                cases, [](GpuSpec* g) { g->host_op_time = Duration::Microseconds(40); });
  auto fit = FitRuns({path}, {}, SweepOptions{}, {"host_op_time"});
  REQUIRE_MESSAGE(fit.ok(), fit.status().message());
  REQUIRE(fit->params.size() == 1);
  CHECK(fit->params[0].name == "host_op_time");
  CHECK(fit->params[0].start == doctest::Approx(kDefaultHostOpTimeUs));
  CHECK(fit->params[0].fitted == doctest::Approx(40).epsilon(0.02));
  CHECK(fit->mape_before > 0.05);
  CHECK(fit->mape_after < 0.002);
  REQUIRE(fit->profile.host_op_time.has_value());
  CHECK(fit->profile.host_op_time->microseconds() == doctest::Approx(40).epsilon(0.02));
}

TEST_CASE("fit --runs recovers the host's op, micro-batch and step times from small models") {
  // A 512-wide GPT on one A100 node, where the step is the host's (the megatron-ci corpus's
  // host-bound group), at 1 to 8 micro-batches and 1 to 4 stages, replayed with chosen host
  // times: fitted back from the catalog's.
  const std::string dir = std::getenv("TEST_TMPDIR");
  const std::string path = dir + "/host.yaml";
  const char* cases[] = {
      "{parallelism: {tp: 1, pp: 1, dp: 8}, training: {global_batch: 32}}",
      "{parallelism: {tp: 1, pp: 1, dp: 8}, training: {global_batch: 256}}",
      "{parallelism: {tp: 1, pp: 4, dp: 2}, training: {global_batch: 32}}",
      "{parallelism: {tp: 2, pp: 2, dp: 2}, training: {global_batch: 64}}",
      "{parallelism: {tp: 2, pp: 1, dp: 4}, training: {global_batch: 128}}",
  };
  WriteReplayed(path,
                "  cluster: {gpu: a100-sxm4-80gb, nodes: 1, gpus_per_node: 8, intra_node: "
                "nvlink3-a100}\n  model: {layers: 12, hidden: 512, heads: 8, vocab: 50432}\n  "
                "training: {seq_len: 1024, micro_batch: 4, deterministic: true}\n",
                cases, [](GpuSpec* g) {
                  g->host_op_time = Duration::Microseconds(40);
                  g->host_micro_batch_time = Duration::Microseconds(600);
                  g->host_step_time = Duration::Milliseconds(20);
                });
  auto fit = FitRuns({path}, {}, SweepOptions{},
                     {"host_op_time", "host_micro_batch_time", "host_step_time"});
  REQUIRE_MESSAGE(fit.ok(), fit.status().message());
  REQUIRE(fit->params.size() == 3);
  CHECK(fit->params[0].fitted == doctest::Approx(40).epsilon(0.03));
  CHECK(fit->params[1].fitted == doctest::Approx(600).epsilon(0.15));
  CHECK(fit->params[2].fitted == doctest::Approx(20000).epsilon(0.05));
  CHECK(fit->mape_before > 0.05);
  CHECK(fit->mape_after < 0.01);
  REQUIRE(fit->profile.host_step_time.has_value());
  CHECK(fit->profile.host_step_time->seconds() == doctest::Approx(0.020).epsilon(0.05));
}

TEST_CASE("fit --runs fits each inter-node fabric the runs cross, whatever the first case's") {
  // A single-node run first (no fabric crossed), then runs over RoCE and over InfiniBand whose
  // step times were made with each fabric's own efficiency. One efficiency had been fitted for
  // every fabric and written for the first case's alone ("none.efficiency", starting at 1,
  // which scenarios ignore): the profile then missed both.
  static constexpr const char* kMixed[] = {
      "{model: gpt3-1.3b, cluster: {nodes: 1}, parallelism: {dp: 8}, training: {global_batch: "
      "64, micro_batch: 4}}",
      "{model: gpt3-1.3b, cluster: {nodes: 4, inter_node: roce-200g}, parallelism: {dp: 32}, "
      "training: {global_batch: 64, micro_batch: 2}}",
      "{model: llama2-7b, cluster: {nodes: 2, inter_node: roce-200g}, parallelism: {tp: 2, dp: "
      "8}, training: {global_batch: 64, micro_batch: 1}}",
      "{model: llama2-7b, cluster: {nodes: 4, inter_node: ib-hdr-200g}, parallelism: {tp: 4, pp: "
      "2, dp: 4, zero: 1}, training: {global_batch: 128, micro_batch: 1}}",
      "{model: llama3-8b, cluster: {nodes: 2, inter_node: ib-hdr-200g}, parallelism: {dp: 16, "
      "zero: 3}, training: {global_batch: 32, micro_batch: 1}}",
  };
  const char* defaults =
      "  cluster: {gpu: a100-sxm4-80gb, gpus_per_node: 8, intra_node: nvlink3-a100}\n"
      "  training: {seq_len: 2048}\n";
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/fabrics.yaml";
  std::ofstream(path) << RunsFile(defaults, kMixed, std::vector<double>(5, 1.0));
  auto file = LoadValidationFile(path, {});
  REQUIRE_MESSAGE(file.ok(), file.status().message());
  std::vector<double> measured;
  for (const ValidationInput& in : file->cases) {
    ClusterSpec c = in.scenario.cluster;
    c.inter.efficiency = c.inter.id == "roce-200g" ? 0.70 : 0.85;
    auto r = SimulateStep(in.scenario.model, in.scenario.training, in.scenario.layout, c, {});
    REQUIRE(r.ok());
    measured.push_back(r->step_time_s);
  }
  std::ofstream(path) << RunsFile(defaults, kMixed, measured);
  auto fit = FitRuns({path}, {}, SweepOptions{}, {"efficiency"});
  REQUIRE_MESSAGE(fit.ok(), fit.status().message());
  REQUIRE(fit->params.size() == 2);
  CHECK(fit->params[0].name == "roce-200g.efficiency");
  CHECK(fit->params[0].fitted == doctest::Approx(0.70).epsilon(0.05));
  CHECK(fit->params[1].name == "ib-hdr-200g.efficiency");
  CHECK(fit->params[1].fitted == doctest::Approx(0.85).epsilon(0.05));
  CHECK(fit->mape_after < 0.005);
  REQUIRE(fit->profile.fabrics.size() == 2);
  CHECK(fit->profile.fabrics[0].id == "roce-200g");
  CHECK(fit->profile.fabrics[1].id == "ib-hdr-200g");
}

TEST_CASE("fit --runs refuses a file that mixes GPUs") {
  const std::string dir = std::getenv("TEST_TMPDIR");
  const std::string path = dir + "/mixed.yaml";
  std::ofstream(path) << File({1.0, 1.0})
                      << "  - name: h100\n    scenario: {model: gpt3-1.3b, cluster: {gpu: "
                         "h100-sxm5-80gb, nodes: 1, intra_node: nvlink4-h100}, parallelism: {dp: "
                         "8}, training: {global_batch: 8}}\n    measured: {step_time: 1s}\n";
  auto fit = FitRuns({path}, {}, SweepOptions{});
  REQUIRE(!fit.ok());
  CHECK(fit.status().message().find("fit --runs fits one GPU") != std::string::npos);
}

}  // namespace
}  // namespace parasim
