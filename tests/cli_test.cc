// End-to-end tests of the parasim binary: every example scenario runs, every bad input is
// refused with exit code 2 and a file:line:col message, the catalog lists every id.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "tests/cli_runner.h"
#include "tests/sanitized.h"

namespace parasim {
namespace {

using testing::KindSeconds;
using testing::kSanitized;
using testing::Runfile;
using testing::RunParasim;
using testing::SampledUnderSanitizer;
using testing::Slurp;

// The step time of a `run --json` output.
double StepTime(const std::string& json) {
  return std::stod(json.substr(json.find("\"step_time_s\":") + 14));
}

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(Runfile(dir))) {
    if (e.path().extension() == ".yaml") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST_CASE("every example scenario runs and exits 0") {
  auto files = FilesIn("scenarios");
  CHECK(files.size() >= 7);
  for (const auto& f : files) {
    CAPTURE(f);
    auto r = RunParasim("run " + f);
    CHECK(r.exit_code == 0);
    if (Slurp(f).find("\nserving:") != std::string::npos) continue;  // serve's (below)
    CHECK(r.err.empty());
    auto mem = RunParasim("memory " + f);
    CHECK(mem.exit_code == 0);
    CHECK(mem.out.find("fit") != std::string::npos);
    auto memj = RunParasim("memory --json " + f);
    CHECK(memj.exit_code == 0);
    CHECK(memj.out.find("\"activations_bytes\"") != std::string::npos);
    auto j = RunParasim("run --json " + f);
    CHECK(j.exit_code == 0);
    CHECK(j.out.front() == '{');
    // The keys scripts rely on (SCENARIO.md "JSON keys").
    for (const char* key :
         {"\"step_time_s\"", "\"tokens_per_s\"", "\"tflops_per_gpu\"", "\"hw_tflops_per_gpu\"",
          "\"mfu\"", "\"hfu\"", "\"bubble_fraction\"", "\"fits\"", "\"peak_memory_bytes\"",
          "\"memory_capacity_bytes\"", "\"exposed_comm_s\"", "\"layout\"", "\"warnings\"",
          "\"tp\":", "\"cp\":", "\"ep\":", "\"pp\":", "\"dp\":"}) {
      CAPTURE(key);
      CHECK(j.out.find(key) != std::string::npos);
    }
  }
}

TEST_CASE("serve (and run) on a serving scenario: the figures and the contract's keys") {
  const std::string f = Runfile("scenarios/llama3-70b-serve-8-h100.yaml");
  auto r = RunParasim("serve " + f);
  REQUIRE(r.exit_code == 0);
  for (const char* line : {"output tokens/s", "input tokens/s", "TTFT", "TPOT", "end to end",
                           "goodput", "max rate at SLO", "load             ", "of the capacity (",
                           "KV cache", "memory per GPU", "fits"}) {
    CAPTURE(line);
    CHECK(r.out.find(line) != std::string::npos);
  }
  CHECK(RunParasim("run " + f).out == r.out);  // run hands a serving scenario to serve
  auto j = RunParasim("serve --json " + f);
  REQUIRE(j.exit_code == 0);
  for (const char* key :
       {"\"tokens_per_s\"", "\"input_tokens_per_s\"", "\"tokens_per_s_per_gpu\"", "\"ttft_s\"",
        "\"tpot_s\"", "\"e2e_s\"", "\"p50\"", "\"p90\"", "\"p99\"", "\"mean\"", "\"goodput\"",
        "\"max_rate_at_slo\"", "\"kv_peak_bytes\"", "\"fits\"", "\"kv_use\"", "\"load\"",
        "\"capacity_per_s\"", "\"band\": null", "\"kv_peak_capacity_bytes\""}) {
    CAPTURE(key);
    CHECK(j.out.find(key) != std::string::npos);
  }
  // One pool: its peak's capacity is the capacity, and no pool is named.
  CHECK(j.out.find("\"kv_peak_pool\"") == std::string::npos);
  // A sweep ranks by the searched rate: --no-search beside --sweep is refused, not ignored.
  auto both = RunParasim("serve --sweep --no-search " +
                         Runfile("scenarios/llama3-70b-serve-sweep-h100.yaml"));
  CHECK(both.exit_code == 2);
  CHECK(both.err.find("--no-search") != std::string::npos);
  // Near its capacity the latencies at 2% less and more load are printed too.
  auto near = RunParasim("serve --no-search " + f + " --set serving.requests.arrival.rate=24/s");
  REQUIRE(near.exit_code == 0);
  CHECK(near.out.find("load -/+ 2%      TTFT P99 ") != std::string::npos);
  // Too few requests for a capacity: said, not guessed.
  auto few = RunParasim("serve --no-search " + f + " --set serving.requests.count=300");
  CHECK(few.out.find("load             not estimated: too few requests") != std::string::npos);
  auto nj =
      RunParasim("serve --json --no-search " + f + " --set serving.requests.arrival.rate=24/s");
  CHECK(nj.out.find("\"rate_scale\": [") != std::string::npos);
  // Bad input: located, exit 2; a training verb on a serving scenario names serve.
  auto bad = RunParasim("serve " + f + " --set serving.requests.arrival.rate=20");
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("serving.requests.arrival.rate: expected requests per unit of time") !=
        std::string::npos);
  auto mem = RunParasim("memory " + f);
  CHECK(mem.exit_code == 2);
  CHECK(mem.err.find("run it with `parasim serve`") != std::string::npos);
  // report on a serving scenario: its page, self-contained.
  const std::string html = std::string(std::getenv("TEST_TMPDIR")) + "/serve.html";
  REQUIRE(RunParasim("report --out " + html + " " + f).exit_code == 0);
  CHECK(Slurp(html).find("Latency against throughput") != std::string::npos);
  CHECK(Slurp(html).find("KV cache over the replay") != std::string::npos);
  CHECK(Slurp(html).find("<td class=\"l\">load</td><td>31% of the capacity") != std::string::npos);

  // A model with no attention layers (a Mamba and MLP stack) keeps no KV: none is reported,
  // rather than a peak of a few bytes of the memory left over.
  const std::string mamba = std::string(std::getenv("TEST_TMPDIR")) + "/mamba-serve.yaml";
  std::ofstream(mamba) << "cluster: {gpu: h100-sxm5-80gb, nodes: 1, gpus_per_node: 8, intra_node: "
                          "nvlink4-h100}\nmodel: {layers: 4, hidden: 1024, heads: 8, vocab: "
                          "32000, ffn_hidden: 4096, hybrid: {pattern: \"M-M-\", mamba: {heads: "
                          "16, head_dim: 64, state_dim: 64, groups: 2}}}\nserving:\n  requests: "
                          "{input_tokens: 512, output_tokens: 64, count: 100}\nparallelism: "
                          "{tp: 1, replicas: 8}\n";
  auto m = RunParasim("serve " + mamba);
  REQUIRE_MESSAGE(m.exit_code == 0, m.err);
  CHECK(m.out.find("KV cache         none: the model has no attention layers") !=
        std::string::npos);
  CHECK(m.out.find("(no KV cache): fits") != std::string::npos);
  const std::string mhtml = std::string(std::getenv("TEST_TMPDIR")) + "/mamba-serve.html";
  REQUIRE(RunParasim("report --out " + mhtml + " " + mamba).exit_code == 0);
  CHECK(Slurp(mhtml).find("none: the model has no attention layers") != std::string::npos);
  CHECK(Slurp(mhtml).find("KV cache over the replay") == std::string::npos);
  // A layout that does not fit serves nothing: it says why, and prints no latency of zero.
  const std::string big = std::string(std::getenv("TEST_TMPDIR")) + "/no-fit-serve.yaml";
  std::ofstream(big) << "cluster: {gpu: h100-sxm5-80gb, nodes: 1, gpus_per_node: 1, intra_node: "
                        "nvlink4-h100}\nmodel: llama3-405b\nserving:\n  requests: "
                        "{input_tokens: 512, output_tokens: 64, count: 10}\nparallelism: {tp: 1}\n";
  auto nf = RunParasim("serve " + big);
  REQUIRE_MESSAGE(nf.exit_code == 0, nf.err);
  CHECK(nf.out.find("served           none: the layout does not fit") != std::string::npos);
  CHECK(nf.out.find("DOES NOT FIT (weights") != std::string::npos);
  CHECK(nf.out.find("TTFT") == std::string::npos);

  const std::string nhtml = std::string(std::getenv("TEST_TMPDIR")) + "/no-fit-serve.html";
  REQUIRE(RunParasim("report --out " + nhtml + " " + big).exit_code == 0);
  CHECK(Slurp(nhtml).find("none: no room for it") != std::string::npos);
  auto mj = RunParasim("serve --json " + mamba);
  CHECK(mj.out.find("\"kv_capacity_bytes\": 0,") != std::string::npos);
  CHECK(mj.out.find("\"kv_peak_bytes\": 0,") != std::string::npos);
}

TEST_CASE("more GPU memory never makes a serving layout not fit") {
  // The KV cache's token count overflowed an int64 past 9.2e18 tokens: 1e24 bytes read "served
  // none: the layout does not fit" with exit 0 (GPU memory is now at most 1 PiB, and 1e24 B a
  // located error).
  const std::string f = Runfile("scenarios/llama3-70b-serve-8-h100.yaml");
  auto base = RunParasim("serve --json " + f);
  auto huge = RunParasim("serve --json " + f + " --set cluster.gpu.memory=1PiB");
  CHECK(RunParasim("serve --json " + f + " --set cluster.gpu.memory=1e24B").exit_code == 2);
  REQUIRE(base.exit_code == 0);
  REQUIRE(huge.exit_code == 0);
  CHECK(huge.out.find("\"fits\": true") != std::string::npos);
  CHECK(base.out.find("\"fits\": true") != std::string::npos);
}

TEST_CASE("serve --sweep ranks layouts, advises, and says how long it took") {
  auto r = RunParasim(
      "serve --sweep --jobs 2 --set sweep.gpus=[8] --set sweep.tp=[2,8] "
      "--set sweep.pp=[1] --set sweep.disaggregated=false " +
      Runfile("scenarios/llama3-70b-serve-sweep-h100.yaml"));
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("layouts replayed") != std::string::npos);
  CHECK(r.out.find(" 1. ") != std::string::npos);
  CHECK(r.out.find("advice: ") != std::string::npos);
  CHECK(r.err.find("serve --sweep: 2 layouts in ") != std::string::npos);
}

TEST_CASE("run prints what a newcomer needs, the same each time") {
  const std::string f = Runfile("scenarios/gpt3-175b-1024-a100.yaml");
  auto r = RunParasim("run " + f);
  REQUIRE(r.exit_code == 0);
  for (const char* line :
       {"step time", "tokens/s", "MFU", "HFU", "pipeline bubble", "(p-1)/m", "exposed comm",
        "memory per GPU", "time to train", "critical path", "warnings"}) {
    CAPTURE(line);
    CHECK(r.out.find(line) != std::string::npos);
  }
  CHECK(RunParasim("run " + f).out == r.out);  // same input, same output
  // A long pipeline's memory: the first four stages and the last two, as the bubble's (the
  // seventh of eight had gone missing).
  const size_t mem = r.out.find("memory per GPU");
  const std::string line = r.out.substr(mem, r.out.find('\n', mem) - mem);
  CAPTURE(line);
  size_t figures = 0;
  for (size_t at = line.find(" GiB,"); at != std::string::npos; at = line.find(" GiB,", at + 1)) {
    ++figures;
  }
  CHECK(figures == 5);  // six stages shown, five followed by a comma
  CHECK(line.find(", ..., ") != std::string::npos);
}

TEST_CASE("a calibration profile replaces defaults and the report says which") {
  const std::string f = Runfile("tests/profiles/llama3-8b-tp8-calibrated.yaml");
  auto cal = RunParasim("run " + f);
  REQUIRE(cal.exit_code == 0);
  CHECK(cal.out.find("calibration") != std::string::npos);
  CHECK(cal.out.find("gemm_efficiency 0.7") != std::string::npos);
  CHECK(cal.out.find("nvlink4-h100 efficiency 0.4") != std::string::npos);
  const auto step = StepTime;
  // Slower GEMMs and NVLink: a longer step than with the catalog defaults.
  const double calibrated = step(RunParasim("run --json " + f).out);
  const double defaults = step(RunParasim("run --json " + f + " --set cluster.calibration=").out);
  CHECK(calibrated > 1.1 * defaults);
}

// A review found the front's ranks were indices among the layouts replayed: #19 by default,
// #17 with --batch 1, #51 exhaustive, for one layout.
TEST_CASE("the sweep's Pareto front prints a rank only where it is the ranking's") {
  const std::string f = Runfile("scenarios/gpt3-175b-1024-a100-sweep.yaml");
  auto front = [](const std::string& out) { return out.substr(out.find("Pareto front")); };
  auto a = RunParasim("sweep --jobs 2 " + f);
  auto b = RunParasim("sweep --jobs 2 --batch 1 " + f);
  REQUIRE(a.exit_code == 0);
  REQUIRE(b.exit_code == 0);
  CHECK(front(a.out) == front(b.out));
  CHECK(front(a.out).find("  #1     TP2+SP PP16 DP32") != std::string::npos);
  CHECK(front(a.out).find("  >#10   TP4+SP PP32 DP8") != std::string::npos);
  CHECK(front(a.out).find("(>#10: ranked below the first 10;") != std::string::npos);
}

TEST_CASE("sweep prints the ranking and its speed; --json has the keys scripts rely on") {
  const std::string f = Runfile("scenarios/turing-530b-5128-a100-sweep.yaml");
  auto r = RunParasim("sweep --jobs 2 " + f);
  REQUIRE(r.exit_code == 0);
  for (const char* line :
       {"grid_points: ", "valid_layouts: ", "memory_rejected: ", "pruned: ", "replayed: ",
        "elapsed_s: ", "valid_layouts_per_second: ", "replays_per_second: "}) {
    CAPTURE(line);
    CHECK(r.err.find(line) != std::string::npos);
  }
  // Where the wall clock went: the four phases add up to elapsed_s (each printed to 1 ms).
  const size_t at = r.err.find("phases_s: enumerate ");
  REQUIRE(at != std::string::npos);
  double enumerate = 0, screen = 0, replay = 0, report = 0;
  REQUIRE(std::sscanf(r.err.c_str() + at,
                      "phases_s: enumerate %lf, screen %lf, replay %lf, report %lf", &enumerate,
                      &screen, &replay, &report) == 4);
  const double elapsed = std::stod(r.err.substr(r.err.find("elapsed_s: ") + 11));
  CHECK(std::abs(enumerate + screen + replay + report - elapsed) <= 0.004);
  CHECK(replay > 0);
  for (const char* text :
       {"grid points", "Pareto front", "Why the runners-up lose", "bottleneck"}) {
    CAPTURE(text);
    CHECK(r.out.find(text) != std::string::npos);
  }
  // Where the best layout takes another global batch, the learning rate's advice follows (one
  // pipeline stage: the best is TP8 at 1282 sequences against the scenario's 1923).
  auto flat = RunParasim("sweep --jobs 2 " + f + " --set 'sweep.pp=[1]'");
  REQUIRE(flat.exit_code == 0);
  CHECK(flat.out.find("The best layout uses global batch 1282 (scenario: 1923): scale the "
                      "learning rate by 0.67") != std::string::npos);
  auto j = RunParasim("sweep --json --jobs 2 " + f);
  REQUIRE(j.exit_code == 0);
  for (const char* key :
       {"\"grid_points\"", "\"valid_layouts\"", "\"memory_rejected\"", "\"pruned\"", "\"replayed\"",
        "\"feasible\"", "\"elapsed_s\"", "\"valid_layouts_per_second\"", "\"replays_per_second\"",
        "\"results\"", "\"step_time_s\""}) {
    CAPTURE(key);
    CHECK(j.out.find(key) != std::string::npos);
  }
  auto big = RunParasim("sweep --max-layouts 100 " + f);
  CHECK(big.exit_code == 2);
  CHECK(big.err.find("--max-layouts") != std::string::npos);
}

TEST_CASE("sweep says which layouts tie with the first, and which of them leaves most memory") {
  // GPT-3 175B on 1,024 A100: the first eight layouts are within 1.8% (2026-11-26), closer than
  // validate's tie band, so a planner should not read their order as a finding.
  const std::string f = Runfile("scenarios/gpt3-175b-1024-a100-sweep.yaml");
  auto j = RunParasim("sweep --json --jobs 2 " + f);
  REQUIRE(j.exit_code == 0);
  const size_t at = j.out.find("\"within_tie_of_best\": ");
  REQUIRE(at != std::string::npos);
  const int ties = std::stoi(j.out.substr(at + 22));
  CHECK(ties >= 1);
  CHECK(j.out.find("\"tie_band\": 0.02") != std::string::npos);
  // Every reported layout within the band of #1's step (the same GPUs and tokens) is counted.
  std::vector<double> steps;
  for (size_t p = j.out.find("\"step_time_s\": "); p != std::string::npos;
       p = j.out.find("\"step_time_s\": ", p + 1)) {
    steps.push_back(std::stod(j.out.substr(p + 15)));
  }
  REQUIRE(steps.size() >= 2);
  int within = 0;
  for (size_t i = 1; i < steps.size(); ++i) within += steps[i] / steps[0] - 1 <= 0.02;
  if (within < static_cast<int>(steps.size()) - 1) CHECK(ties == within);
  auto t = RunParasim("sweep --jobs 2 " + f);
  REQUIRE(t.exit_code == 0);
  CHECK(t.out.find("\n" + std::to_string(ties) + " more layout") != std::string::npos);
  CHECK(t.out.find(" within 2% of #1 by the objective") != std::string::npos);
  CHECK(t.out.find("leaves the most memory free") != std::string::npos);
  // The memory objective ranks by memory: no ties by step.
  auto m = RunParasim("sweep --json --jobs 2 --set sweep.objective=memory " + f);
  REQUIRE(m.exit_code == 0);
  CHECK(m.out.find("\"within_tie_of_best\": 0") != std::string::npos);
}

TEST_CASE("sweep --robust: whether #1 stays first when the uncertain rates swing") {
  // Llama 3 70B on 64 H100 over 100 GbE: #1 spreads DP2 over the Ethernet; at 0.55 of the
  // fabric's rate (the catalog estimates 0.70) a layout without data parallelism is first.
  const std::string f = Runfile("scenarios/llama3-70b-64-h100-ethernet-sweep.yaml");
  auto t = RunParasim("sweep --robust --jobs 2 " + f);
  REQUIRE(t.exit_code == 0);
  for (const char* text :
       {"Robustness: the 8 leaders replayed", "scale-out fabric x0.78",
        "eth-100g efficiency 0.7 -> 0.546", "#2 first, ", "ahead of #1: TP4+SP PP8 DP1",
        "GEMMs x1.10", "per-kernel overheads x2.00", "under 11 of 12 swings",
        "Before choosing, measure what it hangs on:\n"
        "  scale-out fabric: nccl-tests across two nodes, then parasim fit on its log\n"}) {
    CAPTURE(text);
    CHECK(t.out.find(text) != std::string::npos);
  }
  CHECK(t.err.find("robust_s: ") != std::string::npos);
  auto j = RunParasim("sweep --robust --json --jobs 2 " + f);
  REQUIRE(j.exit_code == 0);
  for (const char* key :
       {"\"robustness\": {", "\"leaders\": 8", "\"held\": 11", "\"swung\": 12",
        "\"parameter\": \"inter\"", "\"factor\": 0.78", "\"first_rank\": 2", "\"holds\": false",
        "\"behind\": ", "\"applied\": ", "\"measure\": \"parasim calibrate --only attention\""}) {
    CAPTURE(key);
    CHECK(j.out.find(key) != std::string::npos);
  }
  // Once nccl-tests has measured the fabric (a profile that states it), it swings by a
  // measurement's spread and the answer holds.
  auto m = RunParasim("sweep --robust --jobs 2 " + f +
                      " --set cluster.calibration=" + Runfile("tests/profiles/eth-100g-h100.yaml"));
  REQUIRE(m.exit_code == 0);
  CHECK(m.out.find("eth-100g efficiency 0.7 -> 0.679 (calibrated: x0.97)") != std::string::npos);
  CHECK(m.out.find("under 12 of 12 swings") != std::string::npos);
  // Without the flag, nothing is replayed again and the JSON has no such key.
  auto plain = RunParasim("sweep --json --jobs 2 " + f);
  REQUIRE(plain.exit_code == 0);
  CHECK(plain.out.find("\"robustness\"") == std::string::npos);
  CHECK(plain.err.find("robust_s") == std::string::npos);
  // A co-design sweep swings each GPU type's kernels alone, and replays each cluster's best.
  auto c = RunParasim("sweep --robust --jobs 2 " +
                      Runfile("scenarios/llama3-70b-cluster-codesign.yaml"));
  REQUIRE(c.exit_code == 0);
  for (const char* text :
       {"the 10 leaders and 4 more clusters' best replayed", "b200 kernels x0.88",
        "h100-sxm5-80gb kernels x1.12", "under 18 of 18 swings"}) {
    CAPTURE(text);
    CHECK(c.out.find(text) != std::string::npos);
  }
  // The GPT-3 175B example's answer holds under every swing.
  auto g =
      RunParasim("sweep --robust --jobs 2 " + Runfile("scenarios/gpt3-175b-1024-a100-sweep.yaml"));
  REQUIRE(g.exit_code == 0);
  CHECK(g.out.find("under 12 of 12 swings: the answer does not hang on them") != std::string::npos);
}

TEST_CASE("a co-design sweep answers per cluster, by cost, with its front in the report") {
  const std::string f = Runfile("scenarios/llama3-70b-cluster-codesign.yaml");
  auto r = RunParasim("sweep --jobs 2 " + f);
  REQUIRE(r.exit_code == 0);
  for (const char* text :
       {"(6 clusters)", "Best layout on each cluster:", "gpu=h200-sxm-141gb nodes=64",
        "gpu=b200 intra_node=nvlink5 nodes=32: TP", "per million tokens", "days to train",
        "Pareto front (throughput vs cost per token)", "another cluster ("}) {
    CAPTURE(text);
    CHECK(r.out.find(text) != std::string::npos);
  }
  CHECK(r.out.find("no layout of the sweep fits") == std::string::npos);
  auto j = RunParasim("sweep --json --jobs 2 " + f);
  REQUIRE(j.exit_code == 0);
  for (const char* key : {"\"clusters\"", "\"hardware\"", "\"cost_per_million_tokens\"",
                          "\"time_to_train_s\"", "\"cost\""}) {
    CAPTURE(key);
    CHECK(j.out.find(key) != std::string::npos);
  }
  // The report plots every cluster's layouts by cost per token, from the scenario or the JSON.
  const std::string html = std::string(std::getenv("TEST_TMPDIR")) + "/codesign.html";
  REQUIRE(RunParasim("report --out " + html + " " + f).exit_code == 0);
  CHECK(Slurp(html).find("Throughput vs cost per token, every cluster") != std::string::npos);
  const std::string json = std::string(std::getenv("TEST_TMPDIR")) + "/codesign.json";
  {
    std::ofstream out(json);
    out << j.out;
  }
  REQUIRE(RunParasim("report --from " + json + " --out " + html).exit_code == 0);
  CHECK(Slurp(html).find("cost per million tokens") != std::string::npos);
  // --json prints only JSON, with --from too: the file written.
  auto from = RunParasim("report --json --from " + json + " --out " + html);
  REQUIRE(from.exit_code == 0);
  CHECK(from.out == "{\n  \"out\": \"" + html + "\"\n}\n");
}

TEST_CASE("scale and advice work on every example scenario") {
  // Under ASan every sixth example (the replays and the scale walk they share are the same code).
  for (const auto& f : SampledUnderSanitizer(FilesIn("scenarios"), 6)) {
    CAPTURE(f);
    if (Slurp(f).find("\nserving:") != std::string::npos) continue;  // scale is training's
    auto run = RunParasim("run --json " + f);
    REQUIRE(run.exit_code == 0);
    const auto at = run.out.find("\"gpus\":");
    const std::string gpus = std::to_string(std::stoll(run.out.substr(at + 7)));
    auto r = RunParasim("scale --json --jobs 2 --gpus " + gpus + " " + f);
    CHECK(r.exit_code == 0);
    for (const char* key : {"\"points\"", "\"gpus\"", "\"parallel_fraction\"", "\"advice\"",
                            "\"verdict\"", "\"minimum_gpus\""}) {
      CAPTURE(key);
      CHECK(r.out.find(key) != std::string::npos);
    }
    CHECK(r.out.find("\"found\": true") != std::string::npos);
  }
  auto text =
      RunParasim("scale --gpus 2,4,...,8 " + Runfile("scenarios/llama2-7b-ddp-8-a100.yaml"));
  REQUIRE(text.exit_code == 0);
  for (const char* t : {"speedup", "efficiency", "Karp-Flatt", "Amdahl", "Advice", "ZeRO-3"}) {
    CAPTURE(t);
    CHECK(text.out.find(t) != std::string::npos);
  }
  CHECK(
      RunParasim("scale --gpus 8,4 " + Runfile("scenarios/llama2-7b-ddp-8-a100.yaml")).exit_code ==
      2);
  CHECK(RunParasim("scale --gpus 12 " + Runfile("scenarios/llama2-7b-ddp-8-a100.yaml")).exit_code ==
        2);
}

TEST_CASE("fit: nccl-tests logs into a calibration profile that a scenario can use") {
  const std::string dir = std::getenv("TEST_TMPDIR");
  const std::string prof = dir + "/h100.yaml";
  // The 2-node log is priced on the inter-node fabric, which must be stated (issue 61).
  auto r = RunParasim("fit " + Runfile("hardware/testdata/all_reduce_perf_8gpu.log") + " " +
                      Runfile("hardware/testdata/all_gather_perf_2node.log") +
                      " --gpu h100-sxm5-80gb --inter ib-ndr-400g --out " + prof);
  REQUIRE(r.exit_code == 0);
  for (const char* t : {"R^2", "MAPE", "worst", "collectives nvlink4-h100", "efficiency"}) {
    CAPTURE(t);
    CHECK(r.out.find(t) != std::string::npos);
  }
  // The profile plugs into a scenario.
  const std::string scen = dir + "/calibrated.yaml";
  std::ofstream(scen) << "cluster: {gpu: h100-sxm5-80gb, nodes: 1, gpus_per_node: 8, intra_node: "
                         "nvlink4-h100, calibration: h100.yaml}\nmodel: llama3-8b\ntraining: "
                         "{seq_len: 4096, global_batch: 8}\nparallelism: {tp: 8, pp: 1, dp: 1}\n";
  auto run = RunParasim("run " + scen);
  CHECK(run.exit_code == 0);
  CHECK(run.out.find("nvlink4-h100 efficiency") != std::string::npos);
  CHECK(RunParasim("fit " + Runfile("hardware/testdata/all_reduce_perf_8gpu.log") +
                   " --gpu no-such-gpu")
            .exit_code == 2);
  CHECK(RunParasim("fit /no/such/log").exit_code == 2);
  // Without --gpu: the log's device list names a catalog GPU exactly, and fit takes it.
  auto inferred = RunParasim("fit " + Runfile("hardware/testdata/all_reduce_perf_8gpu.log"));
  CHECK(inferred.exit_code == 0);
  CHECK(inferred.out.find("fit for h100-sxm5-80gb") != std::string::npos);
}

TEST_CASE("fit --runs: measured step times into a profile, with leave-one-out error") {
  const std::string dir = std::getenv("TEST_TMPDIR");
  const std::string runs = dir + "/runs.yaml", prof = dir + "/fitted.yaml";
  // Three small jobs of one team (times made up, plausible): a second each for a 1.3B model.
  std::ofstream(runs)
      << "source: our jobs\ndefaults:\n  cluster: {gpu: a100-sxm4-80gb, nodes: 1, gpus_per_node: "
         "8, intra_node: nvlink3-a100}\n  model: gpt3-1.3b\n  training: {seq_len: 2048}\n"
         "cases:\n  - name: dp8\n    scenario: {parallelism: {dp: 8}, training: "
         "{global_batch: 32, micro_batch: 4}}\n    measured: {step_time: 1.1s}\n  - name: tp2\n"
         "    scenario: {parallelism: {tp: 2, dp: 4}, training: {global_batch: 32, micro_batch: "
         "2}}\n    measured: {step_time: 1.3s}\n  - name: dp8-big\n    scenario: {parallelism: "
         "{dp: 8}, training: {global_batch: 64, micro_batch: 4}}\n    measured: {step_time: "
         "2.1s}\n";
  // Made up, they ask for more than the parameters can give: a 1.3B step on 8 A100s at 1.1 s
  // is a third slower than the replay at the bounds (sustained_factor 0.5, launch_overhead 40
  // us), so the profile is refused with the reason (issue 61) unless --force.
  auto refused = RunParasim("fit --runs " + runs + " --out " + prof);
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("sustained_factor 0.5 sits on its bound [0.5, 1]") != std::string::npos);
  CHECK(refused.err.find("case tp2 (") != std::string::npos);
  CHECK_FALSE(std::ifstream(prof).good());
  auto r = RunParasim("fit --runs " + runs + " --out " + prof + " --force");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("the fit does not hold (profile written with --force)") != std::string::npos);
  for (const char* t : {"sustained_factor", "launch_overhead", "leave-one-out", "dp8-big"}) {
    CAPTURE(t);
    CHECK(r.out.find(t) != std::string::npos);
  }
  std::ifstream in(prof);
  CHECK(in.good());
  // --params fits only the parameters named; the others keep their values.
  auto one = RunParasim("fit --runs " + runs + " --params launch_overhead");
  REQUIRE(one.exit_code == 0);
  CHECK(one.out.find("launch_overhead") != std::string::npos);
  CHECK(one.out.find("sustained_factor") == std::string::npos);
  auto bad = RunParasim("fit --runs " + runs + " --params sustained,launch_overhead");
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("'sustained' is not a parameter fit --runs fits") != std::string::npos);
  // Both kinds of input at once, or none, is refused with the reason.
  CHECK(RunParasim("fit x.log --runs y.yaml").exit_code == 2);
  CHECK(RunParasim("fit").exit_code == 2);
}

TEST_CASE("fit: a calibrate measurements file gives every family and a profile that runs") {
  const std::string dir = std::getenv("TEST_TMPDIR");
  // Shaped like tools/calibrate's output on an 8-GPU H100 node (times made up, plausible).
  std::ofstream(dir + "/m.yaml") << R"(gpu: h100-sxm5-80gb
device: "NVIDIA H100 80GB HBM3"
launch: 4.5us
gemm:
  - {dtype: bf16, m: 8192, n: 8192, k: 8192, time: 1.62ms, spread: 0.5%}
  - {dtype: bf16, m: 4096, n: 4096, k: 4096, time: 215us, spread: 0.8%}
  - {dtype: bf16, m: 8192, n: 1280, k: 8192, time: 290us, spread: 0.6%}
  - {dtype: fp8, m: 8192, n: 8192, k: 8192, time: 1.05ms, spread: 0.7%}
  - {dtype: fp8, m: 4096, n: 4096, k: 4096, time: 150us, spread: 1%}
memory:
  - {kernel: copy, bytes: 2GiB, time: 760us}
  - {kernel: softmax, bytes: 1GiB, time: 420us}
  - {kernel: layernorm, bytes: 1GiB, time: 440us}
attention:
  - {kind: flash, batch: 32, seq: 4096, head_dim: 128, forward: 0.82ms, backward: 2.2ms}
  - {kind: flash, batch: 64, seq: 2048, head_dim: 128, forward: 0.43ms, backward: 1.15ms}
host_copies:
  - {direction: h2d, bytes: 16MiB, time: 345us}
  - {direction: h2d, bytes: 256MiB, time: 5.4ms}
collectives:
  - {op: all_reduce, ranks: 8, per_node: 8, bytes: 1MiB, time: 40us}
  - {op: all_reduce, ranks: 8, per_node: 8, bytes: 16MiB, time: 110us}
  - {op: all_reduce, ranks: 8, per_node: 8, bytes: 256MiB, time: 1.3ms}
  - {op: all_reduce, ranks: 8, per_node: 8, bytes: 4GiB, time: 19.5ms}
  - {op: all_gather, ranks: 8, per_node: 8, bytes: 16MiB, time: 75us}
  - {op: all_gather, ranks: 8, per_node: 8, bytes: 4GiB, time: 11.8ms}
)";
  const std::string prof = dir + "/p.yaml";
  auto r = RunParasim("fit " + dir + "/m.yaml --gpu h100-sxm5-80gb --out " + prof);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  for (const char* t : {"gemm (shape curve)", "gemm fp8 (shape curve)", "memory softmax",
                        "attention flash", "host copies h2d", "nvlink4-h100 all_reduce ring x8/8",
                        "all_gather ring x8/8: 2 point(s)"}) {
    CAPTURE(t);
    CHECK(r.out.find(t) != std::string::npos);
  }
  std::ifstream in(prof);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const char* t : {"gemm_efficiency_fp8", "attention_flash", "gemm_shapes:", "collectives:"}) {
    CAPTURE(t);
    CHECK(text.find(t) != std::string::npos);
  }
  const std::string scen = dir + "/cal.yaml";
  std::ofstream(scen) << "cluster: {gpu: h100-sxm5-80gb, nodes: 1, gpus_per_node: 8, intra_node: "
                         "nvlink4-h100, calibration: p.yaml}\nmodel: llama3-8b\ntraining: "
                         "{seq_len: 4096, global_batch: 8, attention: flash}\n"
                         "parallelism: {tp: 8, pp: 1, dp: 1}\n";
  auto run = RunParasim("run " + scen);
  REQUIRE_MESSAGE(run.exit_code == 0, run.err);
  CHECK(run.out.find("measured GEMM shapes") != std::string::npos);
  CHECK(run.out.find("attention_flash forward") != std::string::npos);
}

TEST_CASE("calibrate runs the calibration program and passes on its refusal") {
  const std::string dir = std::getenv("TEST_TMPDIR");
  const std::string fake = dir + "/fake-calibrate.sh";
  // A stand-in for tools/calibrate: records its arguments, refuses like it does without a GPU.
  std::ofstream(fake) << "#!/bin/sh\necho \"$@\" > " << dir
                      << "/args.txt\necho 'parasim-calibrate: no usable CUDA GPU' >&2\nexit 2\n";
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  setenv("PARASIM_CALIBRATE", fake.c_str(), 1);
  auto r = RunParasim("calibrate --quick --out " + dir + "/m.yaml --scenario " +
                      Runfile("scenarios/llama3-70b-64-h100.yaml"));
  unsetenv("PARASIM_CALIBRATE");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("no usable CUDA GPU") != std::string::npos);
  std::ifstream in(dir + "/args.txt");
  std::string args((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(args.find("--quick") != std::string::npos);
  // The scenario's TP-split GEMMs: Llama 3 70B QKV on TP8 is 8192 tokens x 8192 x 1280.
  CHECK(args.find("8192x1280x8192") != std::string::npos);
  // Its input gradient, and the attention core (heads / TP x seq x head_dim).
  CHECK(args.find("8192x8192x1280") != std::string::npos);
  CHECK(args.find("--attention ") != std::string::npos);
  CHECK(args.find("x8192x128") != std::string::npos);
  CHECK(r.err.find("distinct GEMM shapes") != std::string::npos);

  // A serving scenario: its iterations' GEMMs from a decode step of one sequence to a prompt
  // chunk of the token budget, in fp8 too (its weights are), and a prompt chunk's attention.
  setenv("PARASIM_CALIBRATE", fake.c_str(), 1);
  auto s = RunParasim("calibrate --out " + dir + "/s.yaml --scenario " +
                      Runfile("scenarios/llama3-70b-serve-8-h100.yaml"));
  unsetenv("PARASIM_CALIBRATE");
  CHECK(s.exit_code == 2);
  std::ifstream sin(dir + "/args.txt");
  const std::string sargs((std::istreambuf_iterator<char>(sin)), std::istreambuf_iterator<char>());
  // Llama 3 70B on TP4: QKV (8192 + 2 x 1024) / 4 = 2560 wide, at 1 row (one sequence
  // decoding), at the 8192-token budget and at the replay's bucket above it (8686); the LM
  // head's quarter of the vocabulary up to the 256 sequences that sample, no further.
  CHECK(sargs.find(" 1x2560x8192,") != std::string::npos);
  CHECK(sargs.find(",8192x2560x8192,") != std::string::npos);
  CHECK(sargs.find(",8686x2560x8192,") != std::string::npos);
  CHECK(sargs.find(",256x32064x8192,") != std::string::npos);
  CHECK(sargs.find("512x32064x8192") == std::string::npos);
  // Its FP8 GEMMs in fp8 too, their rows also rounded up to the 16 that FP8 kernels take.
  CHECK(sargs.find("--fp8-shapes") != std::string::npos);
  CHECK(sargs.find(",8688x2560x8192,") != std::string::npos);  // 8686 rows, padded
  CHECK(sargs.find("--attention 128x1024x128") != std::string::npos);
  CHECK(s.err.find("at up to 16 token counts a pool") != std::string::npos);
  // Weight-only FP8 (16-bit activations) computes in 16 bits: nothing to time in fp8.
  setenv("PARASIM_CALIBRATE", fake.c_str(), 1);
  auto w = RunParasim("calibrate --out " + dir + "/w.yaml --scenario " +
                      Runfile("scenarios/llama3-70b-serve-8-h100.yaml") +
                      " --set serving.activations=bf16");
  unsetenv("PARASIM_CALIBRATE");
  CHECK(w.exit_code == 2);
  std::ifstream win(dir + "/args.txt");
  const std::string wargs((std::istreambuf_iterator<char>(win)), std::istreambuf_iterator<char>());
  CHECK(wargs.find("--fp8-shapes") == std::string::npos);
  CHECK(wargs.find(" 1x2560x8192,") != std::string::npos);
}

TEST_CASE("calibrate passes --out as one argument, whatever it holds, and checks it was written") {
  const std::string dir = std::getenv("TEST_TMPDIR");
  const std::string fake = dir + "/writing-calibrate.sh";
  // A stand-in that writes the file its --out names, as tools/calibrate does.
  std::ofstream(fake) << "#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = --out ] && echo 'gpu: x' "
                         "> \"$2\"; shift; done\nexit 0\n";
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  setenv("PARASIM_CALIBRATE", fake.c_str(), 1);
  // A shell would have run the `touch` (the path was once spliced into a command line).
  const std::string odd = dir + "/it's; touch injected; echo x.yaml";
  auto r = RunParasim("calibrate --quick --out \"" + odd + "\"");
  CHECK(r.exit_code == 0);
  CHECK(std::filesystem::is_regular_file(odd));
  CHECK(!std::filesystem::exists("injected"));
  // A program that ends well without writing its file is a failure, not a silent success.
  std::ofstream(fake) << "#!/bin/sh\nexit 0\n";
  auto none = RunParasim("calibrate --out " + dir + "/never.yaml");
  CHECK(none.exit_code != 0);
  CHECK(none.err.find("ended without writing") != std::string::npos);
  // Nor when a file of an earlier run is there (measurements.yaml is the default --out).
  std::ofstream(dir + "/stale.yaml") << "gpu: x\n";
  auto stale = RunParasim("calibrate --out " + dir + "/stale.yaml");
  CHECK(stale.exit_code != 0);
  CHECK(stale.err.find("(the file there is an earlier run's)") != std::string::npos);
  // --out onto the scenario it times: refused before the program runs (it wrote over it).
  const std::string scen = dir + "/mine.yaml";
  std::filesystem::copy_file(Runfile("scenarios/llama3-70b-64-h100.yaml"), scen,
                             std::filesystem::copy_options::overwrite_existing);
  std::ofstream(fake) << "#!/bin/sh\necho ran > " << dir << "/ran.txt\nexit 0\n";
  auto onto = RunParasim("calibrate --scenario " + scen + " --out " + scen);
  CHECK(onto.exit_code == 2);
  CHECK(onto.err.find("would overwrite") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/ran.txt"));
  std::ifstream kept(scen);
  const std::string text((std::istreambuf_iterator<char>(kept)), std::istreambuf_iterator<char>());
  CHECK(text.find("Llama") != std::string::npos);
  unsetenv("PARASIM_CALIBRATE");
}

TEST_CASE("a sweep's result is the run object of its layout, through the same goodput model") {
  // Each result is documented as `run --json` of its layout. Its time to train had been the
  // failure-free one (run's ideal_time_to_train_s) in a throughput sweep, and in a co-design
  // sweep through the sweep's closed-form goodput while GPU-hours stayed failure-free.
  const std::string f = Runfile("scenarios/llama3-70b-64-h100-ethernet-sweep.yaml");
  auto sw = RunParasim("sweep --json --jobs 2 " + f);
  REQUIRE(sw.exit_code == 0);
  auto number = [](const std::string& json, const std::string& key, size_t from = 0) {
    const size_t at = json.find("\"" + key + "\": ", from);
    REQUIRE(at != std::string::npos);
    return std::stod(json.substr(at + key.size() + 4));
  };
  const size_t first = sw.out.find("\"results\": [");
  REQUIRE(first != std::string::npos);
  // The leader's layout, replayed by run with the sweep's keys.
  auto r = RunParasim("run --json " + f +
                      " --set parallelism.tp=4 --set parallelism.pp=4 --set parallelism.dp=2 "
                      "--set parallelism.cp=2 --set parallelism.schedule=interleaved-1f1b "
                      "--set parallelism.virtual_stages=5 --set training.micro_batch=1 "
                      "--set training.global_batch=64 --set training.recompute=none");
  REQUIRE(r.exit_code == 0);
  CHECK(number(sw.out, "step_time_s", first) == doctest::Approx(number(r.out, "step_time_s")));
  CHECK(number(sw.out, "time_to_train_s", first) ==
        doctest::Approx(number(r.out, "time_to_train_s")).epsilon(1e-9));
  CHECK(number(sw.out, "gpu_hours", first) ==
        doctest::Approx(number(r.out, "gpu_hours")).epsilon(1e-9));
  CHECK(number(sw.out, "goodput", first) == doctest::Approx(number(r.out, "goodput")));
  CHECK(number(sw.out, "time_to_train_s", first) > number(sw.out, "ideal_time_to_train_s", first));
}

TEST_CASE("diff's sides are run's, time to train through the same goodput model") {
  // diff --json gave each side's failure-free time to train and GPU-hours under the key that
  // run gives the failures' (a run taking 591,580 s read 300,866 s).
  const std::string f = Runfile("scenarios/llama2-7b-ddp-8-a100.yaml");
  const std::string sets = " --set training.tokens=1e10 --set reliability.gpu=10";
  auto r = RunParasim("run --json " + f + sets);
  auto d = RunParasim("diff --json " + f + " " + f + sets);
  REQUIRE(r.exit_code == 0);
  REQUIRE(d.exit_code == 0);
  auto number = [](const std::string& json, const std::string& key, size_t from = 0) {
    const size_t at = json.find("\"" + key + "\": ", from);
    REQUIRE(at != std::string::npos);
    return std::stod(json.substr(at + key.size() + 4));
  };
  for (const char* side : {"\"a\": {", "\"b\": {"}) {
    const size_t at = d.out.find(side);
    REQUIRE(at != std::string::npos);
    CHECK(number(d.out, "time_to_train_s", at) ==
          doctest::Approx(number(r.out, "time_to_train_s")));
    CHECK(number(d.out, "gpu_hours", at) == doctest::Approx(number(r.out, "gpu_hours")));
  }
  CHECK(number(r.out, "time_to_train_s") > 1.5 * number(r.out, "ideal_time_to_train_s"));
}

TEST_CASE("a mixture-of-experts model under TP needs sequence parallelism, as Megatron-Core says") {
  // It ran (13.466 s), exported without --sequence-parallel, and sweeps ranked such layouts.
  auto r = RunParasim("run " + Runfile("scenarios/mixtral-8x7b-ep-32-h100.yaml") +
                      " --set parallelism.sp=false");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("error: parallelism.sp: a mixture-of-experts model under tp 2 needs sp: true") !=
        std::string::npos);
}

TEST_CASE("sweep's options: --resume needs --out; a count must be more than 0") {
  const std::string f = Runfile("scenarios/llama3-70b-64-h100-ethernet-sweep.yaml");
  auto resume = RunParasim("sweep --resume " + f);
  CHECK(resume.exit_code == 2);
  CHECK(resume.err.find("--resume: error: it resumes from the results file of --out") !=
        std::string::npos);
  auto zero = RunParasim("sweep --max-layouts 0 " + f);
  CHECK(zero.exit_code == 2);
  CHECK(zero.err.find("--max-layouts: expected a number more than 0, got 0") != std::string::npos);
}

TEST_CASE("a mixture-of-experts sweep over TP takes SP where the block does not list it") {
  // Its TP > 1 points vanished from the grid ("3 grid points, 1 valid layout") once MoE under TP
  // needed SP, with the scenario's sp false held.
  auto r = RunParasim("sweep " + Runfile("scenarios/mixtral-8x7b-ep-32-h100.yaml") +
                      " --set parallelism.tp=1 --set parallelism.sp=false --set parallelism.dp=auto"
                      " --set 'sweep.tp=[1, 2, 4]' --set 'sweep.ep=[8]'");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("3 valid layouts") != std::string::npos);
  CHECK(r.out.find("TP2+SP") != std::string::npos);
}

TEST_CASE("a sweep ranked by memory says its runners-up lose on memory") {
  // It printed "-26.0% less throughput: +0.04 s pipeline bubble" for layouts that were faster.
  auto r = RunParasim("sweep " + Runfile("scenarios/llama3-70b-64-h100-ethernet-sweep.yaml") +
                      " --set sweep.objective=memory");
  REQUIRE(r.exit_code == 0);
  const size_t why = r.out.find("Why the runners-up lose to #1:");
  REQUIRE(why != std::string::npos);
  CHECK(r.out.find("GiB more at its peak", why) != std::string::npos);
  CHECK(r.out.find("less throughput", why) == std::string::npos);
}

TEST_CASE("a sweep with no valid layout says so, not that none fits in memory") {
  auto r = RunParasim("sweep " + Runfile("scenarios/llama3-70b-64-h100-ethernet-sweep.yaml") +
                      " --set 'sweep.tp=[3]'");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("0 valid layouts") != std::string::npos);
  CHECK(r.out.find("No point of the sweep is a valid layout") != std::string::npos);
  CHECK(r.out.find("fits in memory") == std::string::npos);
}

TEST_CASE("memory's totals and verdict are run's, also under a split backward") {
  // zb-h2 holds deferred weight gradients the planner bounds only roughly: memory printed
  // 21.1 GB on a stage run peaked at 24.4 GB, and DeepSeek-V3 under zb-h1 with full recompute
  // 'did not fit' by memory where run fit, advising full recompute, which it had.
  const std::string cp = Runfile("scenarios/llama3-8b-128k-cp-64-h100.yaml");
  const std::string l70 = Runfile("scenarios/llama3-70b-64-h100.yaml");
  for (const std::string& args :
       {cp + " --set parallelism.schedule=zb-h2", cp + " --set parallelism.schedule=1f1b",
        l70 + " --set parallelism.pp=8 --set parallelism.dp=1 --set parallelism.schedule=zb-h2 "
              "--set training.recompute=full"}) {
    CAPTURE(args);
    auto m = RunParasim("memory --json " + args);
    auto r = RunParasim("run --json " + args);
    REQUIRE(m.exit_code == 0);
    REQUIRE(r.exit_code == 0);
    const size_t peaks = r.out.find("\"peak_memory_bytes\": [");
    REQUIRE(peaks != std::string::npos);
    const double run_peak = std::stod(r.out.substr(r.out.find('[', peaks) + 1));
    const size_t total = m.out.find("\"total_bytes\": ");
    REQUIRE(total != std::string::npos);
    CHECK(std::stod(m.out.substr(total + 15)) == doctest::Approx(run_peak).epsilon(1e-9));
  }
  auto ds = RunParasim("memory " + Runfile("scenarios/deepseek-v3-2048-h800.yaml") +
                       " --set parallelism.schedule=zb-h1 --set training.recompute=full");
  auto dr = RunParasim("run --json " + Runfile("scenarios/deepseek-v3-2048-h800.yaml") +
                       " --set parallelism.schedule=zb-h1 --set training.recompute=full");
  REQUIRE(ds.exit_code == 0);
  const bool run_fits = dr.out.find("\"fits\": true") != std::string::npos;
  CHECK((ds.out.find("\nFits against") != std::string::npos) == run_fits);
  CHECK(ds.out.find("(--set training.recompute=full)") == std::string::npos);
}

TEST_CASE("an output never replaces a file the scenario named, such as its calibration profile") {
  // run --trace, --svg, report --out and sweep --out onto the scenario's calibration profile
  // had exited 0 and destroyed it: the check knew only the command line's files.
  const std::string dir = std::getenv("TEST_TMPDIR");
  const std::string scen = dir + "/calibrated-copy.yaml";
  const std::string prof = dir + "/synthetic-h100.yaml";
  std::filesystem::copy_file(Runfile("tests/profiles/llama3-8b-tp8-calibrated.yaml"), scen,
                             std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(Runfile("tests/profiles/synthetic-h100.yaml"), prof,
                             std::filesystem::copy_options::overwrite_existing);
  const std::string before = Slurp(prof);
  for (const std::string& cmd :
       {"run --trace " + prof + " " + scen, "run --svg " + prof + " " + scen,
        "report --out " + prof + " " + scen}) {
    CAPTURE(cmd);
    auto r = RunParasim(cmd);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("which this command read as an input") != std::string::npos);
  }
  CHECK(Slurp(prof) == before);
  // A refit in place, writing the profile the runs' scenarios read, takes --force.
  const std::string a100 = dir + "/a100-profile.yaml";
  std::ofstream(a100) << "gpu: a100-sxm4-80gb\ncompute: {gemm_efficiency: 0.75}\n";
  const std::string runs = dir + "/a100-runs.yaml";
  std::ofstream(runs) << "source: x\ndefaults:\n  cluster: {gpu: a100-sxm4-80gb, nodes: 1, "
                         "gpus_per_node: 8, intra_node: nvlink3-a100}\n  model: gpt3-1.3b\n  "
                         "training: {seq_len: 2048, global_batch: 8}\n  parallelism: {tp: 1, pp: "
                         "1, dp: 8}\ncases:\n  - name: gb8\n    scenario: {}\n    measured: "
                         "{step_time: 0.19s}\n  - name: gb16\n    scenario: {training: "
                         "{global_batch: 16}}\n    measured: {step_time: 0.36s}\n";
  const std::string refit = "fit --runs " + runs +
                            " --params sustained_factor --set cluster.calibration=" + a100 +
                            " --out " + a100;
  auto refused = RunParasim(refit);
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("which this command read as an input") != std::string::npos);
  auto forced = RunParasim(refit + " --force");
  CHECK(forced.exit_code == 0);
  CHECK(Slurp(a100).find("sustained_factor") != std::string::npos);
}

TEST_CASE("run --timing prints replay_ms on stderr, under 5 ms for GPT-3 175B on 1024 GPUs") {
  auto r = RunParasim("run --timing --json " + Runfile("scenarios/gpt3-175b-1024-a100.yaml"));
  REQUIRE(r.exit_code == 0);
  auto at = r.err.find("replay_ms: ");
  REQUIRE(at != std::string::npos);
  CHECK(r.out.find("replay_ms") == std::string::npos);  // stdout holds only the JSON
  // The figure itself is reported by the benchmark, not asserted here (timed tests are flaky).
  CHECK(std::stod(r.err.substr(at + 11)) > 0);

  // The benchmark form: the same step replayed N times in one process, median and fastest.
  auto rep =
      RunParasim("run --timing --repeat 3 --json " + Runfile("scenarios/gpt3-175b-1024-a100.yaml"));
  REQUIRE(rep.exit_code == 0);
  CHECK(rep.out == r.out);  // the prediction does not depend on how often it is replayed
  CHECK(rep.err.find("repeat: 3 replays; replay_ms median ") != std::string::npos);
  CHECK(RunParasim("run --timing --repeat 0 " + Runfile("scenarios/gpt3-175b-1024-a100.yaml"))
            .exit_code == 2);
}

TEST_CASE("run --trace writes an op-level Chrome trace; --full and --ops agree with the default") {
  const std::string f = Runfile("scenarios/llama2-7b-ddp-8-a100.yaml");
  const std::string trace = std::string(std::getenv("TEST_TMPDIR")) + "/trace.json";
  auto r = RunParasim("run --json --trace " + trace + " " + f);
  REQUIRE(r.exit_code == 0);
  std::ifstream in(trace);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find("\"traceEvents\"") != std::string::npos);
  CHECK(text.find("F qkv_proj") != std::string::npos);
  CHECK(text.find("dp-comm") != std::string::npos);
  const auto step = StepTime;
  const double base = step(r.out);
  CHECK(step(RunParasim("run --json --full " + f).out) == doctest::Approx(base).epsilon(0.001));
  CHECK(step(RunParasim("run --json --ops " + f).out) == doctest::Approx(base).epsilon(0.002));
  auto bad = RunParasim("run --trace /no/such/dir/t.json " + f);
  CHECK(bad.exit_code == 2);
}

TEST_CASE("run --trace refuses a step too large to write, before building it") {
  // GPT-3 175B at 14 times its batch: about 8.6M op-level tasks, over the 2^23 a trace holds
  // (0.8 GB). Lowering that step takes about 0.6 GB, more under AddressSanitizer: skipped there.
  if (kSanitized) return;
  const std::string f = Runfile("scenarios/gpt3-175b-1024-a100.yaml");
  const std::string trace = std::string(std::getenv("TEST_TMPDIR")) + "/big-trace.json";
  auto r = RunParasim("run --set training.global_batch=21504 --trace " + trace + " " + f);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--trace=" + trace + ":1:9: error: the step's op-level replay has ") == 0);
  CHECK(r.err.find("at most 8388608 tasks") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(trace));
}

TEST_CASE("every bad input exits 2 with file:line:col and the expected message") {
  auto files = FilesIn("tests/bad_inputs");
  CHECK(files.size() >= 30);
  for (const auto& f : files) {
    CAPTURE(f);
    std::ifstream in(f);
    std::string first;
    std::getline(in, first);
    REQUIRE(first.rfind("# expect: ", 0) == 0);
    std::string expect = first.substr(10);
    auto r = RunParasim("run " + f);
    CAPTURE(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find(expect) != std::string::npos);
    std::regex located(std::regex_replace(f, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
                       R"(:\d+:\d+: error: )");
    CHECK(std::regex_search(r.err, located));
  }
}

TEST_CASE("--set overrides a key; a bad --set names the option") {
  std::string f = Runfile("scenarios/gpt3-175b-1024-a100.yaml");
  auto ok = RunParasim("run --json " + f + " --set parallelism.pp=16 --set parallelism.dp=8");
  CHECK(ok.exit_code == 0);
  CHECK(ok.out.find("\"pp\": 16") != std::string::npos);
  auto bad = RunParasim("run " + f + " --set parallelism.tp=eight");
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("--set parallelism.tp=eight:1:") != std::string::npos);
  auto mismatch = RunParasim("run " + f + " --set parallelism.tp=4");
  CHECK(mismatch.exit_code == 2);
  CHECK(mismatch.err.find("but the cluster has") != std::string::npos);
  // A model key under a catalog id extends the catalog model.
  const std::string moe = Runfile("scenarios/mixtral-8x7b-ep-32-h100.yaml");
  auto base = RunParasim("run --json " + moe);
  auto skewed = RunParasim("run --json " + moe + " --set model.moe.imbalance=1.5");
  REQUIRE(skewed.exit_code == 0);
  CHECK(StepTime(skewed.out) > StepTime(base.out));
  // grad_reduce: named in the layout's JSON when set; a bad value lists the accepted ones.
  auto step = RunParasim("run --json " + f + " --set parallelism.grad_reduce=step");
  REQUIRE(step.exit_code == 0);
  CHECK(step.out.find("\"grad_reduce\": \"step\"") != std::string::npos);
  CHECK(ok.out.find("grad_reduce") == std::string::npos);
  auto bad_reduce = RunParasim("run " + f + " --set parallelism.grad_reduce=never");
  CHECK(bad_reduce.exit_code == 2);
  CHECK(bad_reduce.err.find("auto, micro_batch") != std::string::npos);
  // cp_comm likewise: named when not the ring, and a longer step once the K/V gathers wait.
  const std::string cp = Runfile("scenarios/llama3-8b-128k-cp-64-h100.yaml");
  auto ring = RunParasim("run --json " + cp);
  auto gathered = RunParasim("run --json " + cp + " --set parallelism.cp_comm=all_gather");
  REQUIRE(ring.exit_code == 0);
  REQUIRE(gathered.exit_code == 0);
  CHECK(gathered.out.find("\"cp_comm\": \"all_gather\"") != std::string::npos);
  CHECK(ring.out.find("cp_comm") == std::string::npos);
  CHECK(StepTime(gathered.out) > StepTime(ring.out));
  auto bad_cp = RunParasim("run " + cp + " --set parallelism.cp_comm=ulysses");
  CHECK(bad_cp.exit_code == 2);
  CHECK(bad_cp.err.find("ring, all_gather") != std::string::npos);
}

TEST_CASE("diff: two what-ifs side by side, what moved and why; --json has both runs") {
  const std::string f = Runfile("scenarios/gpt3-175b-1024-a100.yaml");
  auto r = RunParasim("diff " + f + " --set-b training.recompute=selective");
  REQUIRE(r.exit_code == 0);
  for (const char* part : {"rc-full", "rc-selective", "step time", "pipeline bubble",
                           "gradient sync (DP)", "exposed TP communication", "peak memory, stage 7",
                           "MFU", "A is behind B: ", "compute (recompute"}) {
    CAPTURE(part);
    CHECK(r.out.find(part) != std::string::npos);
  }
  auto j = RunParasim("diff --json " + f + " " + f + " --set-a training.recompute=selective");
  REQUIRE(j.exit_code == 0);
  for (const char* key : {"\"a\": {", "\"b\": {", "\"rows\": [", "\"reason\": \"B is behind A"}) {
    CAPTURE(key);
    CHECK(j.out.find(key) != std::string::npos);
  }
  // Two files: a different cluster; a side that does not fit is the reason.
  auto seven = RunParasim("diff " + Runfile("scenarios/llama2-7b-ddp-8-a100.yaml") +
                          " --set-b parallelism.zero=3");
  REQUIRE(seven.exit_code == 0);
  CHECK(seven.out.find("A does not fit") != std::string::npos);
  // Sides that do not compare like for like say so (a bug hunt, 2026-11-30): another model (the
  // headers were the same, the reason "+23.95 s compute"), another GPU count, neither fitting
  // (a "winner" that does not fit).
  const std::string l70 = Runfile("scenarios/llama3-70b-64-h100.yaml");
  auto model = RunParasim("diff " + l70 + " --set-b model=llama3-8b");
  REQUIRE(model.exit_code == 0);
  CHECK(model.out.find("model llama3-8b (8.0B parameters)") != std::string::npos);
  CHECK(model.out.find("the sides train different models (llama3-70b and llama3-8b)") !=
        std::string::npos);
  CHECK(model.out.find("compute (recompute or smaller GEMMs)") == std::string::npos);
  auto gpus = RunParasim("diff " + l70 + " --set-b cluster.nodes=16 --set-b parallelism.dp=8");
  REQUIRE(gpus.exit_code == 0);
  CHECK(gpus.out.find("the sides run on 64 and 128 GPUs") != std::string::npos);
  auto neither = RunParasim(
      "diff " + l70 + " --set-a parallelism.schedule=gpipe --set-b parallelism.schedule=dualpipe");
  REQUIRE(neither.exit_code == 0);
  CHECK(neither.out.find("neither fits: A peaks at ") != std::string::npos);
  // Each side carries run's advice, as documented (each side the object run --json prints).
  auto advice =
      RunParasim("diff --json " + l70 + " --set-b parallelism.pp=4 --set-b parallelism.dp=2");
  REQUIRE(advice.exit_code == 0);
  CHECK(advice.out.find("recompute: none also fits") != std::string::npos);
  auto nothing = RunParasim("diff " + f);
  CHECK(nothing.exit_code == 2);
  CHECK(nothing.err.find(":1:1: error: nothing to compare") != std::string::npos);
  CHECK(RunParasim("diff " + f + " /no/such.yaml").exit_code == 2);
}

TEST_CASE("compare --trace: a Kineto trace's kernels by kind against the replay, gzipped too") {
  const std::string trace = Runfile("tests/traces/kineto-step.json");
  const std::string scen = Runfile("scenarios/llama2-7b-ddp-8-a100.yaml");
  const std::string dir = std::getenv("TEST_TMPDIR");
  // Its kernels are made up (1.3 ms of GEMMs for a 7B step): every efficiency they imply is over
  // 1, so --out refuses the profile with the reasons (issue 61); --force writes it clamped.
  auto refused = RunParasim("compare --trace " + trace + " " + scen + " --out " + dir + "/t.yaml");
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("gemm_efficiency would be ") != std::string::npos);
  CHECK(refused.err.find("pass --force") != std::string::npos);
  auto r =
      RunParasim("compare --trace " + trace + " " + scen + " --force --out " + dir + "/trace.yaml");
  REQUIRE(r.exit_code == 0);
  // The fixture's known sums (tests/traces/README.md).
  for (const char* part :
       {"12 GPU kernels", "step (GPU span)          2.900 ms", "GEMM                     1.300 ms",
        "attention              700.000 us", "element-wise           200.000 us",
        "communication          730.000 us", "idle                   120.000 us",
        "NCCL ReduceScatter 400.000 us, NCCL AllReduce 250.000 us, NCCL SendRecv 80.000 us",
        "dp-comm", "largest gaps", "wrote "}) {
    CAPTURE(part);
    CHECK(r.out.find(part) != std::string::npos);
  }
  // The profile it wrote is a calibration profile a scenario can use.
  auto cal = RunParasim("run " + scen + " --set cluster.calibration=" + dir + "/trace.yaml");
  CHECK(cal.exit_code == 0);
  CHECK(cal.out.find("calibrat") != std::string::npos);
  // Gzipped: the same figures.
  REQUIRE(std::system(("gzip -c " + trace + " > " + dir + "/step.json.gz").c_str()) == 0);
  auto plain = RunParasim("compare --json --trace " + trace + " " + scen);
  auto gz = RunParasim("compare --json --trace " + dir + "/step.json.gz " + scen);
  REQUIRE(gz.exit_code == 0);
  CHECK(gz.out.substr(gz.out.find("\"stage\"")) == plain.out.substr(plain.out.find("\"stage\"")));
  // Not a trace; no trace; a stage the layout does not have.
  std::ofstream(dir + "/not-a-trace.json") << "{\"hello\": [1, 2]}\n";
  auto bad = RunParasim("compare --trace " + dir + "/not-a-trace.json " + scen);
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("not-a-trace.json:1:1: error: no traceEvents list") != std::string::npos);
  CHECK(RunParasim("compare --trace /no/such.json " + scen).exit_code == 2);
  CHECK(RunParasim("compare " + scen).exit_code == 2);
  CHECK(RunParasim("compare --trace " + trace + " --stage 3 " + scen).exit_code == 2);
}

TEST_CASE("compare --trace: a profiler trace recorded on an H100 against its one-GPU replay") {
  // Recorded by tools/gpu_check/megatron_step.py on an H100 SXM (PyTorch 2.11, cuBLAS nvjet
  // GEMMs, cuDNN fused attention, torch.compile'd element-wise): the Megatron-LM H100 table's
  // 1.7B model, one micro-batch of 4 x 4096 tokens (tests/traces/h100-mcore-1.7b-mb4.yaml).
  const std::string trace = Runfile("tests/traces/h100-mcore-1.7b-mb4.json.gz");
  const std::string scen = Runfile("tests/traces/h100-mcore-1.7b-mb4.yaml");
  auto r = RunParasim("compare --trace " + trace + " " + scen);
  REQUIRE(r.exit_code == 0);
  // The recording's own sums: every kernel read and classed by its library's name (cuDNN's
  // attention backward helpers, compute_dot_do_o and convert_dq_to_16bits, as attention).
  for (const char* part :
       {"1825 GPU kernels", "step (GPU span)        351.601 ms",
        "GEMM                   201.528 ms", "attention               54.974 ms",
        "element-wise            91.520 ms", "idle                     3.579 ms"}) {
    CAPTURE(part);
    CHECK(r.out.find(part) != std::string::npos);
  }
  // Where the cost model stands against that GPU (docs/MODEL.md, "Checked on a real GPU"):
  // its GEMMs and the step within 20% (+12.7% and +19.1% on 2026-11-26, the step with a 22 ms
  // optimizer step the recording does not have, and every kernel at the sustained factor's
  // clocks, 0.826 of this short recording's), its fused attention within 50% (+43%: one
  // efficiency fitted over shapes of 7 to 256 heads x batch, this one among the fastest).
  auto j = RunParasim("compare --json --trace " + trace + " " + scen);
  REQUIRE(j.exit_code == 0);
  for (const auto& [kind, band] : std::vector<std::pair<std::string, double>>{
           {"step (GPU span)", 0.20}, {"GEMM", 0.20}, {"attention", 0.50}}) {
    CAPTURE(kind);
    const double ratio =
        KindSeconds(j.out, kind, "predicted_s") / KindSeconds(j.out, kind, "measured_s");
    CHECK(ratio > 1 - band);
    CHECK(ratio < 1 + band);
  }
  // The replay's GPU waits on its host (the ops' issue) count as idle, as the trace's do: a
  // third of a millisecond here (they had been neither idle nor busy, and read 0).
  CHECK(KindSeconds(j.out, "idle", "predicted_s") > 1e-4);
  // The profile `--out` writes from it replays the step within 2%: each kind's efficiencies,
  // and the element-wise kernels' SM rates with them, scaled by the kind's measured over
  // replayed time (351.9 ms against 351.6, 2026-11-26).
  const std::string dir = std::getenv("TEST_TMPDIR");
  // Its element-wise kernels ran 1.24x faster than the replay at the catalog's memory efficiency
  // (0.866): 1.07 of the HBM's bandwidth by parasim's byte count, which therefore overstates
  // theirs. That profile is refused with the reason (issue 61; it was clamped to 1 silently);
  // --force writes it clamped, as before.
  auto refused = RunParasim("compare --trace " + trace + " " + scen + " --out " + dir + "/x.yaml");
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("memory_efficiency would be 1.07") != std::string::npos);
  auto out =
      RunParasim("compare --trace " + trace + " " + scen + " --force --out " + dir + "/h100.yaml");
  REQUIRE(out.exit_code == 0);
  std::ifstream in(dir + "/h100.yaml");
  const std::string profile((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(profile.find("elementwise_rates: {activation_forward: ") != std::string::npos);
  auto cal = RunParasim("compare --json --trace " + trace + " " + scen +
                        " --set cluster.calibration=" + dir + "/h100.yaml");
  REQUIRE(cal.exit_code == 0);
  const double step = KindSeconds(cal.out, "step (GPU span)", "predicted_s") /
                      KindSeconds(cal.out, "step (GPU span)", "measured_s");
  CHECK(step > 0.98);
  CHECK(step < 1.02);
}

TEST_CASE("compare --trace on an H200 too: the step's element-wise kernels gain what they did") {
  // The same step recorded on an H200 (tests/traces/h200-mcore-1.7b-mb4.json.gz; 1.43x the
  // H100's HBM bandwidth, the same SMs and clocks). Its element-wise kernels took 78.4 ms against
  // the H100's 91.5: 1.17x, where a plain copy gains 1.40-1.43x, since many of them are bound by
  // the SMs (GpuSpec::elementwise_rates). Priced by their traffic alone, the replay's gain was
  // 1.48x (2026-11-26); now it is within 6% of the recordings'.
  const std::string scen = Runfile("tests/traces/h100-mcore-1.7b-mb4.yaml");
  auto h100 = RunParasim("compare --json --trace " +
                         Runfile("tests/traces/h100-mcore-1.7b-mb4.json.gz") + " " + scen);
  auto h200 =
      RunParasim("compare --json --trace " + Runfile("tests/traces/h200-mcore-1.7b-mb4.json.gz") +
                 " " + scen + " --set cluster.gpu.extends=h200-sxm-141gb");
  REQUIRE(h100.exit_code == 0);
  REQUIRE(h200.exit_code == 0);
  CHECK(KindSeconds(h200.out, "element-wise", "measured_s") == doctest::Approx(0.078449));
  auto gain = [&](const std::string& kind, const char* which) {
    return KindSeconds(h100.out, kind, which) / KindSeconds(h200.out, kind, which);
  };
  for (const char* kind : {"element-wise", "step (GPU span)"}) {
    CAPTURE(kind);
    CHECK(gain(kind, "predicted_s") / gain(kind, "measured_s") > 0.94);
    CHECK(gain(kind, "predicted_s") / gain(kind, "measured_s") < 1.06);
  }
}

TEST_CASE("memory: the seeds' 7B DDP case shows 16 bytes per parameter and does not fit") {
  auto r = RunParasim("memory " + Runfile("scenarios/llama2-7b-ddp-8-a100.yaml"));
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("16 bytes per parameter") != std::string::npos);
  CHECK(r.out.find("Does NOT fit") != std::string::npos);
  auto z3 = RunParasim("memory " + Runfile("scenarios/llama2-7b-ddp-8-a100.yaml") +
                       " --set parallelism.zero=3");
  CHECK(z3.out.find("Fits") != std::string::npos);
  auto fp32 = RunParasim("memory " + Runfile("scenarios/llama2-7b-ddp-8-a100.yaml") +
                         " --set training.grad_dtype=fp32");
  CHECK(fp32.out.find("18 bytes per parameter") != std::string::npos);
}

TEST_CASE("a missing file and a bad flag are bad input") {
  CHECK(RunParasim("run /no/such/file.yaml").exit_code == 2);
  CHECK(RunParasim("run").exit_code == 2);
  CHECK(RunParasim("frobnicate").exit_code == 2);
  CHECK(RunParasim("--help").exit_code == 0);
}

TEST_CASE("catalog --json lists every id of SCENARIO.md") {
  auto r = RunParasim("catalog --json");
  REQUIRE(r.exit_code == 0);
  for (auto id :
       {"a100-sxm4-40gb", "a100-sxm4-80gb", "h100-sxm5-80gb", "h100-pcie-80gb", "h800-sxm5-80gb",
        "h200-sxm-141gb", "nvlink3-a100",   "nvlink4-h100",   "nvlink-h800",    "pcie4-x16",
        "pcie5-x16",      "ib-hdr-200g",    "ib-ndr-400g",    "roce-200g",      "roce-400g",
        "eth-100g",       "opa-100g",       "gpt3-1.3b",      "gpt3-13b",       "gpt3-175b",
        "megatron-1t",    "llama2-7b",      "llama2-13b",     "llama2-70b",     "llama3-8b",
        "llama3-70b",     "llama3-405b",    "mixtral-8x7b",   "mixtral-8x22b",  "gpt-neox-20b",
        "bloom-176b"}) {
    CAPTURE(id);
    CHECK(r.out.find(std::string("\"") + id + "\"") != std::string::npos);
  }
  auto table = RunParasim("catalog");
  CHECK(table.exit_code == 0);
  CHECK(table.out.find("h100-sxm5-80gb") != std::string::npos);
}

}  // namespace
}  // namespace parasim

namespace parasim {
namespace {

TEST_CASE("import megatron: a launch script to a scenario `run` takes as written") {
  const std::string dir = std::getenv("TEST_TMPDIR");
  const std::string out = dir + "/imported.yaml";
  auto r = RunParasim("import megatron " + Runfile("tests/fixtures/megatron/train_gpt.sh") +
                      " --gpu h100-sxm5-80gb --out " + out);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("wrote " + out) == 0);
  auto run = RunParasim("run --json " + out);
  REQUIRE(run.exit_code == 0);
  CHECK(run.out.find("\"step_time_s\"") != std::string::npos);
  // To stdout without --out; --json says what was read.
  auto text = RunParasim("import megatron " + Runfile("tests/fixtures/megatron/train_gpt.sh") +
                         " --gpu h100-sxm5-80gb");
  CHECK(text.out.find("  tp: 4                                 # --tensor-model-parallel-size 4") !=
        std::string::npos);
  auto json = RunParasim("import megatron --json " +
                         Runfile("tests/fixtures/megatron/train_gpt.sh") + " --gpu h100-sxm5-80gb");
  CHECK(json.out.find("\"not_modelled\"") != std::string::npos);
  CHECK(RunParasim("import megatron --flags").out.find("--num-layers") != std::string::npos);
  // A torchtitan config's summary counts no Megatron flags ("24 keys from 0 flags").
  auto titan =
      RunParasim("import torchtitan " + Runfile("tests/fixtures/torchtitan/llama3_8b.toml") +
                 " --gpu h100-sxm5-80gb --nodes 1 --out " + dir + "/titan.yaml");
  REQUIRE_MESSAGE(titan.exit_code == 0, titan.err);
  CHECK(titan.out.find("keys from the torchtitan config") != std::string::npos);
  CHECK(titan.out.find("flags") == std::string::npos);
}

TEST_CASE("import megatron: bad input is exit 2 at the flag's file:line:col") {
  const std::string dir = std::getenv("TEST_TMPDIR");
  const std::string f = dir + "/bad_flags.txt";
  std::ofstream(f)
      << "--num-layers 2 --hidden-size 256\n--num-attention-heads 4 --sequence-paralel\n";
  auto r = RunParasim("import megatron " + f + " --gpu h100-sxm5-80gb");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find(f + ":2:25: error: unknown Megatron-LM flag '--sequence-paralel' (did you "
                       "mean '--sequence-parallel'?)") != std::string::npos);
  CHECK(RunParasim("import megatorn " + f).exit_code == 2);
  // An unknown --gpu is told at the option (it named the flags' file).
  auto gpu = RunParasim("import megatron " + Runfile("tests/fixtures/megatron/train_gpt.sh") +
                        " --gpu nope");
  CHECK(gpu.exit_code == 2);
  CHECK(gpu.err.find("--gpu nope:1:7: error: the import needs the cluster's GPU: unknown GPU "
                     "'nope'") == 0);
  CHECK(RunParasim("import megatron " + Runfile("tests/fixtures/megatron/train_gpt.sh"))
            .err.find("give --gpu ID") != std::string::npos);
}

TEST_CASE("run and sweep --launch: the layout as the flags that launch it") {
  auto r = RunParasim("run --launch megatron " + Runfile("scenarios/llama3-70b-64-h100.yaml"));
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("torchrun --nnodes 8 --nproc-per-node 8 pretrain_gpt.py \\\n"
                   "  --num-layers 80") != std::string::npos);
  auto j =
      RunParasim("run --json --launch torchtitan " + Runfile("scenarios/llama3-70b-64-h100.yaml"));
  CHECK(j.out.find("\"toml\": \"[model]") != std::string::npos);
  CHECK(RunParasim("run --launch nemo " + Runfile("scenarios/llama3-70b-64-h100.yaml")).exit_code ==
        2);
  auto s = RunParasim("sweep --jobs 2 --launch megatron " +
                      Runfile("scenarios/llama3-70b-64-h100-ethernet-sweep.yaml"));
  REQUIRE(s.exit_code == 0);
  CHECK(s.out.find("launch (Megatron-LM):") != std::string::npos);
}

}  // namespace
TEST_CASE("options a verb cannot honour here are refused, never skipped with exit 0") {
  // A serving scenario's run wrote no --trace or --svg and said nothing.
  const std::string serve = Runfile("scenarios/llama3-70b-serve-8-h100.yaml");
  const std::string out = std::string(std::getenv("TEST_TMPDIR")) + "/skipped.json";
  for (const std::string& flag :
       std::vector<std::string>{"--trace " + out, "--svg " + out, "--ops", "--full"}) {
    CAPTURE(flag);
    const auto r = RunParasim("run " + serve + " " + flag);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("applies to a training step") != std::string::npos);
  }
  // The serving validation files took --subset, --gpu and --nodes and counted every case.
  const std::string file = Runfile("tests/validation/serving/train/mlperf-llama3.1-8b.yaml");
  for (const std::string flag : {"--subset held_out", "--gpu b200", "--nodes 7"}) {
    CAPTURE(flag);
    const auto r = RunParasim("validate " + file + " " + flag);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("applies to training validation files") != std::string::npos);
  }
  // --gpu selects by the file's GPU; a --set that replaces it counted H100 predictions as A100's.
  const auto both = RunParasim("validate " + Runfile("tests/validation/megatron-sc21-table1.yaml") +
                               " --set cluster.gpu=h100-sxm5-80gb --gpu a100-sxm4-80gb");
  CHECK(both.exit_code == 2);
  CHECK(both.err.find("replaces the cluster.gpu that --gpu selects cases by") != std::string::npos);
  // One file for --trace and --svg: the SVG replaced the trace, both said written.
  const auto same = RunParasim("run " + Runfile("scenarios/llama2-7b-ddp-8-a100.yaml") +
                               " --trace " + out + " --svg " + out);
  CHECK(same.exit_code == 2);
  CHECK(same.err.find("names the file --trace writes") != std::string::npos);
  // The same file named two ways, before it exists ("./x" and "x" compared apart).
  const std::string dir = std::string(std::getenv("TEST_TMPDIR"));
  const auto spelled = testing::RunShell("cd " + dir + " && " + Runfile("tools/parasim") + " run " +
                                         Runfile("scenarios/llama2-7b-ddp-8-a100.yaml") +
                                         " --trace ./fresh.json --svg fresh.json");
  CHECK(spelled.exit_code == 2);
  // A whole cluster block in one --set replaces the GPU too.
  const auto block = RunParasim(
      "validate " + Runfile("tests/validation/megatron-sc21-table1.yaml") +
      " --set 'cluster={gpu: h100-sxm5-80gb, gpus_per_node: 8, intra_node: nvlink4-h100}'" +
      " --gpu a100-sxm4-80gb");
  CHECK(block.exit_code == 2);
}

TEST_CASE("run --trace: spans on one track never run into each other") {
  // Start and duration were rounded to the nanosecond apart: 259 of the 7B example's 11,481 spans
  // began 1 ns before the one ahead of them ended, which a viewer nests.
  const std::string out = std::string(std::getenv("TEST_TMPDIR")) + "/tracks.json";
  REQUIRE(RunParasim("run " + Runfile("scenarios/llama2-7b-ddp-8-a100.yaml") + " --trace " + out)
              .exit_code == 0);
  std::ifstream in(out);
  const std::regex span(R"re("ph":"X","pid":(\d+),"tid":(\d+),"ts":([0-9.]+),"dur":([0-9.]+))re");
  std::map<std::pair<long, long>, std::vector<std::pair<double, double>>> tracks;
  std::string line;
  size_t spans = 0;
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, span)) continue;
    ++spans;
    tracks[{std::stol(m[1]), std::stol(m[2])}].push_back({std::stod(m[3]), std::stod(m[4])});
  }
  CHECK(spans > 1000);
  int overlaps = 0;
  for (auto& [track, v] : tracks) {
    std::sort(v.begin(), v.end());
    for (size_t k = 1; k < v.size(); ++k) {
      overlaps += v[k].first < v[k - 1].first + v[k - 1].second - 1e-6;
    }
  }
  CHECK(overlaps == 0);
}

TEST_CASE("a subsets file whose list is not a list of names is an error at its line") {
  // `training: dp8` said "has no list 'training' (it has: training)" at --subset; `- {a: 1}`
  // selected no case and said nothing.
  const std::filesystem::path dir = std::string(std::getenv("TEST_TMPDIR")) + "/subsets";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(Runfile("tests/validation/megatron-sc21-table1.yaml"),
                             dir / "file.yaml", std::filesystem::copy_options::overwrite_existing);
  for (const auto& [text, want] : std::vector<std::pair<std::string, std::string>>{
           {"training: dp8\n", "subsets.yaml:1:11: error: training: expected a list"},
           {"training:\n  - {a: 1}\n",
            "subsets.yaml:2:5: error: training: expected a case name"}}) {
    CAPTURE(text);
    std::ofstream(dir / "subsets.yaml") << text;
    const auto r = RunParasim("validate " + (dir / "file.yaml").string() + " --subset training");
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(want) != std::string::npos);
  }
  // A missing list names the lists the file has, not its `stated` map (which --subset then
  // refused as "expected a list").
  std::ofstream(dir / "subsets.yaml") << "training: [a]\nstated: {file.yaml: {zero: 1}}\n";
  const auto missing = RunParasim("validate " + (dir / "file.yaml").string() + " --subset x");
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("has no list 'x' (it has: training)") != std::string::npos);
}

}  // namespace parasim
