// Fidelity: `parasim validate` on the published Megatron-LM SC21 Table 1 meets the targets (MAPE
// at most 5%, no case worse than 10%), the repository's copy of the validation file is identical
// to the project's shared one when ../shared exists, and docs/MODEL.md shows the current table.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "scenarios/serving_validate.h"
#include "tests/cli_runner.h"
#include "tests/sanitized.h"

namespace parasim {
namespace {

using testing::Runfile;
using testing::RunParasim;
using testing::RunShell;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A validation file's defaults for GPT-3 1.3B on one DGX A100 (DP8), and the start of its cases.
constexpr const char* kOneA100Node = R"(defaults:
  cluster: {gpu: a100-sxm4-80gb, nodes: 1, gpus_per_node: 8, intra_node: nvlink3-a100,
            inter_node: ib-hdr-200g}
  model: gpt3-1.3b
  training: {seq_len: 2048, global_batch: 8}
  parallelism: {tp: 1, pp: 1, dp: 8}
cases:
)";

double Field(const std::string& json, const std::string& key) {
  auto at = json.rfind("\"" + key + "\":");
  REQUIRE(at != std::string::npos);
  return std::stod(json.substr(at + key.size() + 3));
}

void CheckTargets(const std::string& file) {
  CAPTURE(file);
  auto r = RunParasim("validate --json --jobs 2 " + file);
  REQUIRE(r.exit_code == 0);
  CHECK(Field(r.out, "mape") <= 0.05);
  CHECK(Field(r.out, "max_abs_error") <= 0.10);
  CHECK(Field(r.out, "failed") == 0);
  CHECK(r.out.find("\"gpt-1008.0b-3072gpu\"") != std::string::npos);
}

// `parasim validate --json` of a file under tests/validation, which must succeed.
std::string ValidateJson(const std::string& name) {
  auto r = RunParasim("validate --json --jobs 2 " + Runfile("tests/validation/" + name));
  REQUIRE(r.exit_code == 0);
  return r.out;
}

TEST_CASE("Megatron-LM SC21 Table 1: MAPE at most 5%, no case worse than 10%") {
  CheckTargets(Runfile("tests/validation/megatron-sc21-table1.yaml"));
}

TEST_CASE("DeepSeek-V3 and V2 on 2,048 H800: within 12% of their published GPU-hours per token") {
  // Wall-clock cases (step over goodput): V3 replayed with DualPipe's F&B overlap, FP8 and the
  // recompute set is 8.4% fast (2026-11-26, with Hopper's element-wise SM rates; 9.9% with FP8
  // GEMMs at the measured FP8/16-bit ratio, 6.5% before), V2 with ZB-H1 5.0% slow (3.6%).
  // Issue #17's target was 10%; this guards against regressions and checks the basis is
  // applied.
  auto r = RunParasim("validate --json " + Runfile("tests/validation/regimes/deepseek-h800.yaml"));
  REQUIRE(r.exit_code == 0);
  CHECK(Field(r.out, "failed") == 0);
  CHECK(Field(r.out, "max_abs_error") <= 0.12);
  CHECK(r.out.find("\"basis\": \"wall_clock\"") != std::string::npos);
  const double goodput = Field(r.out, "goodput");
  CHECK(goodput > 0.95);
  CHECK(goodput < 1);
}

TEST_CASE(
    "torchtitan FSDP2 on 64 A100: MAPE at most 5%, no case worse than 12%, every case predicted") {
  // As restated in ../shared/validation (2026-11-28): op-level checkpointing as
  // `recompute: selective-op`, every-second-layer checkpointing as `recompute: full` with
  // `recompute_layers` at half the depth. 4.51% MAPE, 7.56% at worst, 8 of 8 predicted with the
  // A100 factor refitted on SC21 as run (0.852), 2026-11-28.
  const std::string out = ValidateJson("regimes/torchtitan-a100-fsdp2.yaml");
  CHECK(Field(out, "mape") <= 0.05);
  CHECK(Field(out, "max_abs_error") <= 0.12);
  CHECK(Field(out, "failed") == 0);
}

TEST_CASE("Megatron-Bridge on H100: every stated layout replays; the 405B at scale within 10%") {
  // Held out and far from the issue's targets (docs/MODEL.md, "Megatron-Bridge on H100"): dense
  // FP8 on few GPUs is predicted 11-24% slow, fine-grained dropless MoE 40-59% fast, 24.23% MAPE
  // over the 11 cases that fit (2026-11-26: FP8 GEMMs at the measured FP8/16-bit ratio, 26.22% ->
  // 23.99%; then the rows' fused cross-entropy, which made every row faster, 25.29%; then the
  // MoE layers waiting on the host issuing their experts one at a time, 24.23%). This checks the
  // file
  // states layouts parasim can replay (one case, GPT-OSS at micro-batch 4, does not fit in
  // parasim's memory model) and guards the two 1,024-GPU Llama 3.1 405B cases, which predict within
  // 0-4%.
  const std::string out = ValidateJson("regimes/megatron-bridge-h100.yaml");
  CHECK(Field(out, "failed") == 1);
  CHECK(Field(out, "mape") <= 0.25);
  auto error_of = [&](const char* name) {
    const size_t at = out.find(std::string("\"") + name + "\"");
    REQUIRE(at != std::string::npos);
    const size_t e = out.find("\"error\": ", at);
    REQUIRE(e != std::string::npos);
    return std::stod(out.substr(e + 9));
  };
  for (const char* name :
       {"mbridge-26.02-llama3.1-405b-fp8-1024gpu", "mbridge-25.11-llama3.1-405b-fp8-1024gpu"}) {
    CAPTURE(name);
    CHECK(std::abs(error_of(name)) <= 0.06);
  }
  // Qwen3 235B's EP32 spans its TP2 pairs (MoE parallel folding, etp: 1): 20% fast, 2026-11-26.
  for (const char* name :
       {"mbridge-26.02-qwen3-235b-a22b-fp8-256gpu", "mbridge-25.11-qwen3-235b-a22b-fp8-256gpu"}) {
    CAPTURE(name);
    CHECK(std::abs(error_of(name)) <= 0.22);
  }
}

TEST_CASE(
    "Megatron-Bridge on Blackwell: every stated layout fits and replays; dense B200/GB200 runs "
    "within 16%") {
  // Held out (docs/MODEL.md, "Megatron-Bridge on B200 and GB200"). Until 2026-11-29 the
  // catalog's Blackwell GPUs took the H100's GEMM efficiency (0.807), and every B200 and GB200
  // case was 7-58% fast (20.57% MAPE over 19); since then they take a B200's measured bf16
  // matmul, 63.1% of peak (hardware/catalog/gpus.yaml), and the replay's host issues their ops:
  // 13.85% MAPE, the Llama runs +2% to +15% (slow), the gpt-oss MoE runs still 27-54% fast.
  // This guards the file's layouts, its MAPE and the dense runs' band.
  const std::string out = ValidateJson("regimes/megatron-bridge-blackwell.yaml");
  CHECK(Field(out, "failed") == 0);
  CHECK(Field(out, "mape") <= 0.145);
  int cases = 0, first_generation = 0;
  for (size_t at = out.find("\"name\": \""); at != std::string::npos;
       at = out.find("\"name\": \"", at + 1)) {
    const size_t from = at + 9;
    const std::string name = out.substr(from, out.find('"', from) - from);
    const size_t e = out.find("\"error\": ", at);
    REQUIRE(e != std::string::npos);
    CAPTURE(name);
    ++cases;
    if (name.find("-b200-") != std::string::npos || name.find("-gb200-") != std::string::npos) {
      ++first_generation;
      if (name.find("llama") != std::string::npos) {
        CHECK(std::abs(std::stod(out.substr(e + 9))) < 0.16);
      }
    }
  }
  CHECK(cases == 19);
  CHECK(first_generation == 13);
}

TEST_CASE("the copied validation files are identical to ../shared/validation when it exists") {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  REQUIRE(srcdir != nullptr);
  const std::filesystem::path shared = std::filesystem::path(srcdir) / "shared_validation";
  int compared = 0;
  if (std::filesystem::exists(shared)) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(shared)) {
      if (entry.path().extension() != ".yaml") continue;
      const std::string name = entry.path().string().substr(shared.string().size() + 1);
      CAPTURE(name);
      const std::string copy = Runfile("tests/validation/" + name);
      REQUIRE(std::filesystem::exists(copy));
      CHECK(Slurp(copy) == Slurp(entry.path().string()));
      ++compared;
    }
  }
  MESSAGE("compared " << compared << " shared validation files (0 in a clone without ../shared)");
}

TEST_CASE("docs/MODEL.md holds the tables `parasim validate --markdown` prints now") {
  const std::string doc = Slurp(Runfile("docs/MODEL.md"));
  for (const char* name :
       {"megatron-sc21-table1", "korthikanti-2022-table5", "regimes/megatron-lm-h100-weak-scaling",
        "regimes/torchtitan-a100-fsdp2", "regimes/llama3-405b-table4", "regimes/deepseek-h800",
        "regimes/megatron-bridge-h100", "regimes/megatron-bridge-blackwell"}) {
    CAPTURE(name);
    auto r = RunParasim("validate --markdown --jobs 2 " +
                        Runfile(std::string("tests/validation/") + name + ".yaml"));
    REQUIRE(r.exit_code == 0);
    CHECK_MESSAGE(doc.find(r.out) != std::string::npos,
                  "docs/MODEL.md is stale: run tools/regen_model_doc.sh");
  }
}

// The files a subset of tests/validation/subsets.yaml lists ("training" or "held_out").
std::vector<std::string> Subset(const std::string& text, const std::string& name) {
  std::vector<std::string> out;
  std::istringstream in(text);
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != ' ' && line[0] != '#') inside = line == name + ":";
    if (inside && line.rfind("  - ", 0) == 0) out.push_back(line.substr(4));
  }
  return out;
}

TEST_CASE("declared subsets: each validation file once; the A100s' factor is the training fit") {
  const std::string text = Slurp(Runfile("tests/validation/subsets.yaml"));
  const std::vector<std::string> training = Subset(text, "training");
  const std::vector<std::string> held_out = Subset(text, "held_out");
  REQUIRE(!training.empty());
  REQUIRE(!held_out.empty());
  std::set<std::string> listed;
  for (const auto* subset : {&training, &held_out}) {
    for (const std::string& f : *subset) {
      CAPTURE(f);
      CHECK(listed.insert(f).second);  // in one subset, once
    }
  }
  const std::filesystem::path dir = Runfile("tests/validation");
  std::set<std::string> present;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    const std::string name = e.path().string().substr(dir.string().size() + 1);
    // megatron-ci/ has its own subsets, by case (the test below).
    if (name.rfind("megatron-ci/", 0) == 0) continue;
    // The serving files have subsets of their own (serving/subsets.yaml, checked below).
    if (name.rfind("serving/", 0) == 0) continue;
    if (e.path().extension() == ".yaml" && name != "subsets.yaml") present.insert(name);
  }
  CHECK(listed == present);
  // The sustained factor fitted on the training subset alone (every run on A100s) is the A100
  // catalog entries' (the fit's start); other GPUs take the measured default (hardware/spec.h).
  std::string runs;
  for (const std::string& f : training) runs += " --runs " + Runfile("tests/validation/" + f);
  auto r = RunParasim("fit --json --jobs 2 --params sustained_factor" + runs);
  REQUIRE(r.exit_code == 0);
  CAPTURE(r.out);
  const size_t at = r.out.find("\"name\": \"sustained_factor\"");
  REQUIRE(at != std::string::npos);
  auto number = [&](const char* key) {
    const size_t k = r.out.find(std::string("\"") + key + "\": ", at);
    REQUIRE(k != std::string::npos);
    return std::stod(r.out.substr(k + std::strlen(key) + 4));
  };
  CHECK(std::abs(number("fitted") - number("start")) <= 0.001);
}

// The case names of a megatron-ci file, "<family>/<case>" (the name before its " (platform,
// container)").
std::vector<std::string> CorpusCases(const std::string& path) {
  std::vector<std::string> out;
  std::istringstream in(Slurp(path));
  const std::string tag = "  - name: \"";
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(tag, 0) != 0) continue;
    const std::string name = line.substr(tag.size());
    out.push_back(name.substr(0, name.find(" (")));
  }
  return out;
}

std::vector<std::string> CorpusFiles() {
  std::vector<std::string> out;
  for (const auto& e :
       std::filesystem::directory_iterator(Runfile("tests/validation/megatron-ci"))) {
    if (e.path().extension() == ".yaml" && e.path().filename() != "subsets.yaml") {
      out.push_back(e.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST_CASE("megatron-ci: every file's every case in one subset of its own subsets.yaml") {
  // A case is in training or in held_out (never both, once), or, when none of its golden files
  // has a node count, only in unscaled; scale_inferred names cases of training or held_out.
  const std::string text = Slurp(Runfile("tests/validation/megatron-ci/subsets.yaml"));
  std::set<std::string> fitted;
  for (const char* subset : {"training", "held_out"}) {
    for (const std::string& c : Subset(text, subset)) {
      CAPTURE(c);
      CHECK(fitted.insert(c).second);  // in one subset, once
    }
  }
  std::set<std::string> listed = fitted;
  const std::vector<std::string> unscaled = Subset(text, "unscaled");
  for (const std::string& c : unscaled) listed.insert(c);
  const std::vector<std::string> inferred = Subset(text, "scale_inferred");
  CHECK(!inferred.empty());
  for (const std::string& c : inferred) {
    CAPTURE(c);
    CHECK(fitted.count(c) == 1);
  }
  // Each case's golden files with and without a node count.
  std::set<std::string> present, with_nodes, without_nodes;
  const std::vector<std::string> files = CorpusFiles();
  REQUIRE(files.size() >= 9);
  for (const std::string& f : files) {
    for (const std::string& c : CorpusCases(f)) present.insert(c);
    const std::string body = Slurp(f);
    for (size_t at = body.find("  - name: \""); at != std::string::npos;) {
      const size_t next = body.find("  - name: \"", at + 1);
      const std::string block =
          body.substr(at, next == std::string::npos ? std::string::npos : next - at);
      const std::string name = block.substr(11, block.find(" (") - 11);
      (block.find("\n      nodes: ") != std::string::npos ? with_nodes : without_nodes)
          .insert(name);
      at = next;
    }
  }
  CHECK(listed == present);
  // unscaled: a file without nodes; only there (in no subset): none with nodes.
  for (const std::string& c : unscaled) {
    CAPTURE(c);
    CHECK(without_nodes.count(c) == 1);
    if (fitted.count(c) == 0) CHECK(with_nodes.count(c) == 0);
  }
  for (const std::string& c : fitted) {
    CAPTURE(c);
    CHECK(with_nodes.count(c) == 1);
  }
}

TEST_CASE("megatron-ci: a scale inferred from memory is named in the case's note and listed") {
  // generate.py gives a release run (no public node count) the scale its own resident memory
  // singles out, and says so in the note; every such case is listed under scale_inferred, and a
  // case whose note says so has its nodes.
  const std::string text = Slurp(Runfile("tests/validation/megatron-ci/subsets.yaml"));
  const std::vector<std::string> listed = Subset(text, "scale_inferred");
  const std::set<std::string> inferred(listed.begin(), listed.end());
  std::set<std::string> noted;
  for (const std::string& f : CorpusFiles()) {
    const std::string body = Slurp(f);
    for (size_t at = body.find("  - name: \""); at != std::string::npos;) {
      const size_t next = body.find("  - name: \"", at + 1);
      const std::string c =
          body.substr(at, next == std::string::npos ? std::string::npos : next - at);
      if (c.find("scale: INFERRED from the run's mem-allocated-bytes") != std::string::npos) {
        const std::string name = c.substr(11, c.find(" (") - 11);
        CAPTURE(name);
        CHECK(c.find("\n      nodes: ") != std::string::npos);
        noted.insert(name);
      }
      at = next;
    }
  }
  CHECK(noted == inferred);
}

TEST_CASE("megatron-ci: every file validates; each case predicted or failed with its reason") {
  // Every flag of the corpus has a row of the flag table (an unknown one would fail the case
  // with "unknown Megatron-LM flag"); cases parasim cannot express fail naming their flags.
  int cases = 0, predicted = 0;
  for (const std::string& f : CorpusFiles()) {
    CAPTURE(f);
    auto r = RunParasim("validate --json " + f);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("unknown Megatron-LM flag") == std::string::npos);
    for (size_t at = r.out.find("\"status\": "); at != std::string::npos;
         at = r.out.find("\"status\": ", at + 1)) {
      ++cases;
      predicted += r.out.compare(at + 10, 5, "\"ok\",") == 0;
    }
    CHECK(r.out.find("\"memory_mape\"") != std::string::npos);
  }
  CHECK(cases == 554);
  // 2026-11-28: 426 of 554 predicted; the rest are T5, BERT (no vocabulary), Mamba hybrids,
  // multimodal and GRPO runs, release runs without a public node count, and interleaved
  // pipelines whose micro-batch count is not a multiple of pp.
  CHECK(predicted >= 400);
}

TEST_CASE("megatron-ci: the last stage's peak allocated memory on the held-out cases") {
  // docs/MODEL.md, "Peak memory" (2026-11-29): held-out MAPE 5.2% over 274 cases (3.3% dense);
  // the GPT 7B runs within 1%. Before the allocator's view and the working memory: 40.4%.
  const std::string text = Slurp(Runfile("tests/validation/megatron-ci/subsets.yaml"));
  const std::vector<std::string> held = Subset(text, "held_out");
  std::set<std::string> held_out(held.begin(), held.end());
  // A scale inferred from the resident memory makes that part of the peak no independent check.
  for (const std::string& c : Subset(text, "scale_inferred")) held_out.erase(c);
  double sum = 0;
  int n = 0, n_7b = 0;
  for (const std::string& f : CorpusFiles()) {
    auto r = RunParasim("validate --json " + f);
    REQUIRE(r.exit_code == 0);
    for (size_t at = r.out.find("\"name\": \""); at != std::string::npos;
         at = r.out.find("\"name\": \"", at + 1)) {
      const size_t begin = at + 9, end = r.out.find('"', begin);
      const std::string name = r.out.substr(begin, end - begin);
      const size_t next = r.out.find("\"name\": \"", end);
      const size_t mem = r.out.find("\"memory_error\": ", end);
      if (mem == std::string::npos || (next != std::string::npos && mem > next)) continue;
      if (r.out.compare(mem + 16, 4, "null") == 0) continue;
      const double e = std::abs(std::stod(r.out.substr(mem + 16)));
      if (name.find("gpt3_7b_") != std::string::npos) {
        CAPTURE(name);
        CHECK(e <= 0.03);
        ++n_7b;
      }
      if (held_out.count(name.substr(0, name.find(" (")))) {
        sum += e;
        ++n;
      }
    }
  }
  CHECK(n >= 270);
  CHECK(n_7b == 6);
  CHECK(sum / n <= 0.06);
}

TEST_CASE("megatron-ci: fit --runs reads an import file, skipping cases it cannot predict") {
  auto r = RunParasim("fit --params sustained_factor --runs " +
                      Runfile("tests/validation/megatron-ci/h100-dense.yaml"));
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("gpt/gpt3_7b_tp1_pp4_memory_speed (dgx_h100, dev)") != std::string::npos);
  CHECK(r.out.find("skipped: t5/t5_11b_mcore_tp4_pp1 (dgx_h100, dev): import: ") !=
        std::string::npos);
}

TEST_CASE("a subsets.yaml states what a copied file does not, under its cases and --set") {
  // A folder of its own: validation files, and beside them a subsets.yaml whose `stated` map
  // sets keys for one file's cases (as the H100 weak-scaling copy gets Megatron-Core r0.8's
  // parameter gathers): under a case's own keys and --set, as the file's defaults are.
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/stated";
  std::filesystem::create_directories(dir);
  const std::string body = std::string(kOneA100Node) +
                           "  - name: one\n    scenario: {parallelism: {tp: 1, pp: 2, dp: 4, "
                           "zero: 1}}\n    measured: {step_time: 1s}\n"
                           "  - name: own\n    scenario: {parallelism: {tp: 1, pp: 2, dp: 4, "
                           "zero: 1}, training: {global_batch: 24}}\n    measured: {step_time: "
                           "1s}\n";
  std::ofstream(dir + "/a.yaml") << body;
  std::ofstream(dir + "/b.yaml") << body;
  std::ofstream(dir + "/subsets.yaml")
      << "held_out:\n  - a.yaml\n  - b.yaml\nstated:\n  a.yaml:\n"
         "    parallelism.param_gather: chained\n    training.global_batch: 16\n";
  auto a = RunParasim("validate --json " + dir + "/a.yaml");
  REQUIRE_MESSAGE(a.exit_code == 0, a.err);
  CHECK(a.out.find("\"stated\": [") != std::string::npos);
  CHECK(a.out.find("\"parallelism.param_gather=chained\"") != std::string::npos);
  CHECK(a.out.find("gb16") != std::string::npos);
  CHECK(a.out.find("gb24") != std::string::npos);  // the case's own key stands
  auto text = RunParasim("validate " + dir + "/a.yaml");
  CHECK(text.out.find("Stated beside the file (subsets.yaml, as --set): "
                      "parallelism.param_gather=chained, training.global_batch=16") !=
        std::string::npos);
  // The same from inside the folder, the file named alone.
  auto here = RunShell("cd " + dir + " && " + Runfile("tools/parasim") + " validate --json a.yaml");
  REQUIRE_MESSAGE(here.exit_code == 0, here.err);
  CHECK(here.out.find("\"parallelism.param_gather=chained\"") != std::string::npos);
  auto over = RunParasim("validate --json " + dir + "/a.yaml --set training.global_batch=32");
  REQUIRE(over.exit_code == 0);
  CHECK(over.out.find("gb32") != std::string::npos);
  auto b = RunParasim("validate --json " + dir + "/b.yaml");
  REQUIRE(b.exit_code == 0);
  CHECK(b.out.find("\"stated\"") == std::string::npos);
  CHECK(b.out.find("gb8") != std::string::npos);
  // A stated value the scenario refuses is told at its line in subsets.yaml.
  std::ofstream(dir + "/subsets.yaml")
      << "held_out:\n  - a.yaml\nstated:\n  a.yaml:\n    parallelism.param_gather: soon\n";
  auto bad = RunParasim("validate " + dir + "/a.yaml");
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find(dir + "/subsets.yaml:5:31: error: parallelism.param_gather") !=
        std::string::npos);
  CHECK(bad.err.find("expected auto, at_start, chained, on_demand or aligned") !=
        std::string::npos);
  // A `stated` that is not a map, or a file's entry that is not one, is refused where it is.
  std::ofstream(dir + "/subsets.yaml") << "held_out:\n  - a.yaml\nstated: [a.yaml]\n";
  auto list = RunParasim("validate " + dir + "/a.yaml");
  CHECK(list.exit_code == 2);
  CHECK(list.err.find("subsets.yaml:3:9: error: stated: expected a map") != std::string::npos);
  std::ofstream(dir + "/subsets.yaml") << "stated:\n  a.yaml: chained\n";
  auto entry = RunParasim("validate " + dir + "/a.yaml");
  CHECK(entry.exit_code == 2);
  CHECK(entry.err.find("subsets.yaml:2:11: error: stated.a.yaml: expected a map") !=
        std::string::npos);
  // An empty subsets.yaml states nothing.
  std::ofstream(dir + "/subsets.yaml") << "";
  CHECK(RunParasim("validate " + dir + "/b.yaml").exit_code == 0);
}

TEST_CASE("validate --search on a training file is refused, not ignored") {
  auto r = RunParasim("validate --search " + Runfile("tests/validation/megatron-sc21-table1.yaml"));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--search applies to serving validation files") != std::string::npos);
}

TEST_CASE("measured peak memory: compared per case beside the time, from the stage measured") {
  const std::string dir = std::getenv("TEST_TMPDIR");
  const std::string f = dir + "/memory.yaml";
  std::ofstream(f) << kOneA100Node
                   << "  - name: both\n    scenario: {}\n    measured: {step_time: 1s, "
                      "peak_memory: 20GiB}\n"
                      "  - name: memory-only\n    scenario: {parallelism: {tp: 1, pp: 2, dp: "
                      "4}}\n    measured: {peak_memory: 20GiB, peak_memory_stage: last}\n"
                      "  - name: memory-max\n    scenario: {parallelism: {tp: 1, pp: 2, dp: "
                      "4}}\n    measured: {peak_memory: 20GiB}\n";
  auto r = RunParasim("validate --json " + f);
  REQUIRE(r.exit_code == 0);
  CAPTURE(r.out);
  CHECK(Field(r.out, "memory_cases") == 3);
  CHECK(Field(r.out, "memory_mape") > 0);
  CHECK(r.out.find("\"measured_s\": null") != std::string::npos);  // memory-only
  // The mean over the one case with a step time.
  const size_t both = r.out.find("\"name\": \"both\"");
  const size_t only = r.out.find("\"name\": \"memory-only\"");
  const size_t max = r.out.find("\"name\": \"memory-max\"");
  REQUIRE(max != std::string::npos);
  auto value = [&](size_t from, const std::string& key) {
    const size_t k = r.out.find("\"" + key + "\": ", from);
    return std::stod(r.out.substr(k + key.size() + 4));
  };
  CHECK(std::abs(Field(r.out, "mape") - std::abs(value(both, "error"))) < 1e-9);
  // The first stage holds the embedding as well as its layers' activations: the largest stage
  // is the first, so the last stage's prediction is smaller.
  CHECK(value(only, "predicted_peak_bytes") < value(max, "predicted_peak_bytes"));
  auto text = RunParasim("validate " + f);
  CHECK(text.out.find("memory MAPE") != std::string::npos);
  CHECK(text.out.find("peak meas") != std::string::npos);
  // Neither a step time nor a peak: refused at the case's measured block.
  std::ofstream(f) << kOneA100Node << "  - name: none\n    scenario: {}\n    measured: {note: x}\n";
  auto bad = RunParasim("validate " + f);
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("expected step_time (a time), peak_memory (a size) or both") !=
        std::string::npos);
  // A peak under a MiB (1e-308B read "mem err +inf%" with exit 0) or over a PiB: refused.
  for (const char* peak : {"1e-308B", "0.5B", "1e308B"}) {
    std::ofstream(f) << kOneA100Node << "  - name: tiny\n    scenario: {}\n    measured: "
                     << "{peak_memory: " << peak << "}\n";
    auto tiny = RunParasim("validate " + f);
    CHECK(tiny.exit_code == 2);
    CHECK(tiny.err.find("a measured peak memory must be from 1MiB to 1PiB") != std::string::npos);
  }
}

// The input-length mean a serving validation file states in its defaults.
std::string PromptMean(const std::string& text) {
  const size_t at = text.find("input_tokens: {lognormal: {mean: ");
  REQUIRE(at != std::string::npos);
  const size_t from = at + std::strlen("input_tokens: {lognormal: {mean: ");
  return text.substr(from, text.find(',', from) - from);
}

TEST_CASE("serving: declared subsets, one prompt mean a benchmark, held-out throughput in 15%") {
  const std::string dir = Runfile("tests/validation/serving");
  const std::string text = Slurp(dir + "/subsets.yaml");
  const std::vector<std::string> training = Subset(text, "training");
  const std::vector<std::string> held_out = Subset(text, "held_out");
  const std::vector<std::string> reference = Subset(text, "reference");
  const std::vector<std::string> megatron_training = Subset(text, "megatron_inference_training");
  const std::vector<std::string> megatron_held_out = Subset(text, "megatron_inference_held_out");
  REQUIRE(!training.empty());
  REQUIRE(!held_out.empty());
  std::set<std::string> listed, present, mlperf;
  for (const auto* subset :
       {&training, &held_out, &reference, &megatron_training, &megatron_held_out}) {
    for (const std::string& f : *subset) CHECK(listed.insert(f).second);
  }
  for (const auto* subset : {&training, &held_out, &reference}) {
    mlperf.insert(subset->begin(), subset->end());
  }
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    const std::string name = e.path().string().substr(dir.size() + 1);
    if (e.path().extension() == ".yaml" && name != "subsets.yaml") present.insert(name);
  }
  CHECK(listed == present);
  // The fitted prompt mean of a benchmark is the same in each of its files (not per case, not
  // per subset): train/X.yaml's, wherever X is.
  for (const std::string& f : mlperf) {
    const std::string train = dir + "/train/" + f.substr(f.find('/') + 1);
    CAPTURE(f);
    REQUIRE(std::filesystem::exists(train));
    CHECK(PromptMean(Slurp(dir + "/" + f)) == PromptMean(Slurp(train)));
  }
  // Throughput within 15% MAPE on the held-out files together (issue 63's target), and the
  // training files (on which the prompt means were fitted) likewise. Under ASan the first
  // held-out file alone (llama2-70b, 4 cases; the others' replays are the same code, and their
  // 22 s here would be 5 minutes there): its throughput within 15% too.
  const std::vector<std::string> sampled = testing::SampledUnderSanitizer(held_out, 4);
  std::vector<const std::vector<std::string>*> checked = {&sampled, &training};
  if (testing::kSanitized) checked.pop_back();
  for (const auto* subset : checked) {
    double sum = 0;
    int cases = 0, failed = 0;
    for (const std::string& f : *subset) {
      const std::string out = ValidateJson("serving/" + f);
      CHECK(out.find("\"kind\": \"serving\"") != std::string::npos);
      const double n = Field(out, "cases");  // the throughput summary's, the last "cases"
      sum += Field(out, "mape") * n;
      cases += static_cast<int>(n);
      failed += static_cast<int>(Field(out, "failed"));
    }
    CAPTURE(subset == &sampled ? "held out" : "training");
    CHECK(failed == 0);
    CHECK(cases >= (testing::kSanitized ? 4 : 15));
    CHECK(sum / cases <= 0.15);
  }
}

// The number a generated Megatron-LM inference file's head gives: "N cases here of M".
int HeadCount(const std::string& text) {
  const size_t at = text.find("): ");
  REQUIRE(at != std::string::npos);
  return std::stoi(text.substr(at + 3));
}

TEST_CASE("serving: Megatron-LM's inference goldens load, replay and keep their held-out half") {
  const std::string dir = Runfile("tests/validation/serving");
  const std::string text = Slurp(dir + "/subsets.yaml");
  const std::vector<std::string> training = Subset(text, "megatron_inference_training");
  const std::vector<std::string> held_out = Subset(text, "megatron_inference_held_out");
  REQUIRE(training.size() == 1);
  REQUIRE(held_out.size() == 1);
  int total = 0;
  for (const std::string& f : {training[0], held_out[0]}) {
    CAPTURE(f);
    const std::string yaml = Slurp(dir + "/" + f);
    // Every golden of the snapshot is a case or a line that says why not.
    CHECK(yaml.find("that make no case:") != std::string::npos);
    const std::string out = ValidateJson("serving/" + f);
    CHECK(out.find("\"kind\": \"serving\"") != std::string::npos);
    CHECK(Field(out, "failed") == 0);  // the loader takes every case
    const int cases = static_cast<int>(Field(out, "cases"));
    CHECK(cases == HeadCount(yaml));
    CHECK(cases >= 10);
    total += cases;
    // The engine's host time a step, a call and a graph is fitted on the training file (9.2%);
    // the held out file keeps it (13.7%: the 16B MoE's host time, twice the 583M's a layer,
    // follows its calls; one constant a step had left 23.8% and 36.2%).
    CHECK(Field(out, "mape") < (f == training[0] ? 0.12 : 0.17));
  }
  CHECK(total == 31);
}

// Llama 3 8B on one H100: an Offline case and a Server case that names it, with the run's mean
// latency and TPOT (the figures are this test's, not a measurement).
constexpr const char* kServingViews = R"(source: test
defaults:
  cluster: {gpu: h100-sxm5-80gb, nodes: 1, gpus_per_node: 1, intra_node: nvlink4-h100,
            inter_node: ib-ndr-400g}
  model: llama3-8b
  serving:
    precision: fp8
    requests: {input_tokens: 512, output_tokens: 64, count: 1200}
  parallelism: {tp: 1, pp: 1, replicas: 1}
cases:
  - name: offline
    source: test
    scenario: {serving: {requests: {arrival: offline}}}
    measured: {tokens_per_s: 5000}
  - name: server
    source: test
    scenario: {serving: {requests: {arrival: {rate: 8/s}}, slo: {ttft_p99: 2s, tpot_p99: 50ms}}}
    measured: {ttft_p99: 100ms, tpot_p99: 20ms, e2e_mean: 2s, tpot_mean: 15ms, offline_case: offline}
)";

TEST_CASE("serving views beside the stated settings: the run's load, its concurrency, the search") {
  const std::string dir = std::getenv("TEST_TMPDIR");
  const std::string f = dir + "/views.yaml";
  std::ofstream(f) << kServingViews;
  auto r = RunParasim("validate --json --search " + f);
  REQUIRE(r.exit_code == 0);
  // At the run's load: the rate scaled by the Offline case's predicted over measured throughput.
  const std::string out = r.out;
  const size_t off = out.find("\"tokens_per_s\"");
  REQUIRE(off != std::string::npos);
  const double predicted = Field(out.substr(0, out.find("\"error\"", off)), "predicted");
  const size_t load = out.find("\"at_load\"");
  REQUIRE(load != std::string::npos);
  const std::string view = out.substr(load, out.find('}', out.find("rate_scale", load)) - load);
  CHECK(Field(view, "rate_scale") == doctest::Approx(predicted / 5000).epsilon(1e-6));
  CHECK(Field(view, "rate_per_s") == doctest::Approx(8 * predicted / 5000).epsilon(1e-6));
  // At the run's concurrency: rate x mean latency = 16 requests in flight (Little's law).
  CHECK(Field(out.substr(0, out.find("\"tpot_mean\"")), "concurrency") == doctest::Approx(16));
  // The search: the highest rate within the targets set against the run's 8/s.
  auto count = [](const std::string& text, const std::string& key) {
    int n = 0;
    for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + 1)) ++n;
    return n;
  };
  CHECK(count(out, "\"max_rate_at_slo\"") == 2);  // the case's and the summary's
  // The span at the rate x 0.98 and x 1.02: the case's capacity and load, a prediction at each
  // end, and the summary's count of figures within 20% somewhere in it.
  const size_t at_span = out.find("\"capacity_per_s\"");
  REQUIRE(at_span != std::string::npos);
  const std::string span = out.substr(at_span, out.find("rate_scale", at_span) - at_span);
  CHECK(Field(span, "capacity_per_s") > 8);
  CHECK(Field(span, "load") == doctest::Approx(8 / Field(span, "capacity_per_s")));
  const std::string summary = out.substr(out.rfind("\"band\""));
  CHECK(Field(summary.substr(0, summary.find("\"tpot\"")), "cases") == 1);  // the TTFT P99
  auto text = RunParasim("validate " + f);
  CHECK(text.out.find("from 2% less to 2% more load (the stated rate is") != std::string::npos);
  CHECK(text.out.find("within 20% at the rate x 0.98-1.02: TTFT ") != std::string::npos);
  // Without --search there is no rate search; the stated settings' figures are unchanged.
  auto plain = RunParasim("validate --json " + f);
  REQUIRE(plain.exit_code == 0);
  CHECK(count(plain.out, "\"max_rate_at_slo\"") == 1);  // the summary's alone
  CHECK(Field(plain.out, "ttft_mape") == doctest::Approx(Field(out, "ttft_mape")));
  // Bad input: an Offline case that is not in the file, a mean latency without a mean TPOT.
  struct Bad {
    std::string from, to, message;
  };
  for (const Bad& b :
       {Bad{"offline_case: offline", "offline_case: elsewhere",
            ":18:94: error: cases[1].measured.offline_case: 'elsewhere' names no case"},
        Bad{"tpot_mean: 15ms, ", "",
            ":18:59: error: cases[1].measured.e2e_mean: give e2e_mean "
            "and tpot_mean together"}}) {
    std::string text = kServingViews;
    text.replace(text.find(b.from), b.from.size(), b.to);
    const std::string g = dir + "/bad_views.yaml";
    std::ofstream(g) << text;
    auto q = RunParasim("validate " + g);
    CAPTURE(q.err);
    CHECK(q.exit_code == 2);
    CHECK(q.err.find(g + b.message) != std::string::npos);
  }
}

TEST_CASE("a latency figure is within the span of a 2% capacity error when the span meets 20%") {
  auto fig = [](double predicted, double measured) {
    return ServingFigure{measured, predicted, predicted / measured - 1};
  };
  // Measured 150: the stated prediction 100 is 33% low; with 2% more load 200, 2% less 110.
  CHECK(BandWithin(fig(100, 150), fig(110, 150), fig(200, 150)));
  CHECK_FALSE(BandWithin(fig(100, 150), fig(90, 150), fig(110, 150)));   // all below 120
  CHECK(BandWithin(fig(100, 100), fig(100, 100), fig(100, 100)));        // within at the rate
  CHECK_FALSE(BandWithin(fig(300, 150), fig(190, 150), fig(400, 150)));  // all above 180
  CHECK_FALSE(BandWithin(ServingFigure{}, fig(1, 1), fig(1, 1)));        // none measured
}

TEST_CASE("a serving case with too few requests for a span counts its figures at its rate") {
  // 40 requests on one H100 reach no steady batch all at once: no capacity, so no span.
  auto file = [](const std::string& ttft) {
    return "source: test\ncases:\n  - name: few\n    source: test\n    scenario:\n      cluster: "
           "{gpu: h100-sxm5-80gb, nodes: 1, gpus_per_node: 1, intra_node: nvlink4-h100}\n      "
           "model: llama3-8b\n      serving: {precision: fp8, requests: {input_tokens: 512, "
           "output_tokens: 64, count: 40, arrival: {rate: 4/s}}}\n      parallelism: {tp: 1}\n"
           "    measured: {ttft_p99: " +
           ttft + "}\n";
  };
  StatusOr<ServingValidationReport> far =
      ValidateServing(YamlInput("far.yaml", file("100s")), {}, 1, false);
  REQUIRE_MESSAGE(far.ok(), far.status().message());
  REQUIRE(far->cases.size() == 1);
  CHECK(far->cases[0].load == 0);  // no span
  CHECK(far->ttft.cases == 1);
  CHECK(far->band_ttft_within == 0);
  // Measured where the replay predicts: within 20% at the stated rate, and so counted.
  const double predicted = far->cases[0].latency.ttft_p99.predicted;
  REQUIRE(predicted > 0);
  StatusOr<ServingValidationReport> near = ValidateServing(
      YamlInput("near.yaml", file(std::to_string(predicted * 1e3) + "ms")), {}, 1, false);
  REQUIRE_MESSAGE(near.ok(), near.status().message());
  CHECK(near->ttft.within == 1);
  CHECK(near->band_ttft_within == 1);
}

TEST_CASE("a case where nothing fits is reported as failed and the file goes on") {
  const std::string dir = std::getenv("TEST_TMPDIR");
  const std::string f = dir + "/no_fit.yaml";
  std::ofstream(f) << "source: test\ndefaults:\n  cluster: {gpu: a100-sxm4-80gb, nodes: 1, "
                      "gpus_per_node: 8, intra_node: nvlink3-a100}\n  training: {seq_len: 2048, "
                      "global_batch: 8}\ncases:\n  - name: too-big\n    scenario:\n      model: "
                      "gpt3-175b\n      parallelism: {tp: 1, pp: 1, dp: 8}\n    measured: "
                      "{step_time: 10s}\n  - name: sweeps-nothing-that-fits\n    scenario:\n"
                      "      model: gpt3-175b\n      sweep: {tp: [1, 2]}\n    measured: "
                      "{step_time: 10s}\n  - name: fits\n    scenario:\n      model: gpt3-1.3b\n"
                      "      parallelism: {tp: 1, pp: 1, dp: 8}\n    measured: {step_time: 1s}\n";
  auto r = RunParasim("validate --json " + f);
  REQUIRE(r.exit_code == 0);
  CHECK(Field(r.out, "failed") == 2);
  CHECK(r.out.find("\"error\": null") != std::string::npos);
  CHECK(r.out.find("\"status\": \"ok\"") != std::string::npos);
  CHECK(r.out.find("no layout fits: stage 0 needs") != std::string::npos);
  CHECK(r.out.find("no layout fits: the leanest of") != std::string::npos);
  auto text = RunParasim("validate " + f);
  CHECK(text.out.find("over 1 cases; 2 case(s) FAILED") != std::string::npos);
}

TEST_CASE("validate scores the order of the cases that train one model, by cost a sequence") {
  // Three layouts of one model whose predicted order is fixed (no recompute, half the layers
  // recomputed, all of them), measured so that the half-recomputed one is out of order against
  // two others; a fourth within 2% of the first (a tie); and three cases not ranked: another
  // sequence length, a sweep over the global batch, and a case that does not fit.
  const std::string dir = std::getenv("TEST_TMPDIR");
  const std::string f = dir + "/ranking.yaml";
  std::ofstream(f)
      << std::string("source: test\n") + kOneA100Node +
             R"(  - {name: none, scenario: {training: {recompute: none}}, measured: {step_time: 150ms}}
  - {name: full, scenario: {training: {recompute: full}}, measured: {step_time: 195ms}}
  - name: half
    scenario: {training: {recompute: full, recompute_layers: 12}}
    measured: {step_time: 120ms}
  - name: none-on-16
    scenario:
      cluster: {nodes: 2}
      training: {global_batch: 16, recompute: none}
      parallelism: {dp: 16}
    measured: {step_time: 151.5ms}
  - {name: shorter, scenario: {training: {seq_len: 1024}}, measured: {step_time: 90ms}}
  - {name: swept, scenario: {sweep: {global_batch: [8, 16]}}, measured: {step_time: 150ms}}
  - {name: too-big, scenario: {model: gpt3-175b}, measured: {step_time: 9s}}
)";
  auto r = RunParasim("validate --json " + f);
  REQUIRE(r.exit_code == 0);
  CAPTURE(r.out);
  CHECK(Field(r.out, "failed") == 1);
  // Pairs: none-full, none-half (out of order), none-none-on-16 (a tie: 150 against 151.5 ms a
  // sequence on twice the GPUs for twice the batch), full-half, full-none-on-16, half-none-on-16
  // (out of order).
  CHECK(Field(r.out, "scored") == 5);
  CHECK(Field(r.out, "ordered") == 3);
  CHECK(Field(r.out, "ties") == 1);
  std::string flat;  // the JSON on one line
  for (size_t i = 0; i < r.out.size(); ++i) {
    if (r.out[i] != '\n') {
      flat += r.out[i];
      continue;
    }
    while (i + 1 < r.out.size() && r.out[i + 1] == ' ') ++i;
    flat += ' ';
  }
  CHECK(flat.find(R"("a": "none", "b": "half", "measured_ratio": 1.25,)") != std::string::npos);
  CHECK(flat.find(R"("a": "half", "b": "none-on-16",)") != std::string::npos);
  auto text = RunParasim("validate " + f);
  CHECK(text.out.find("Ranking: 3 of 5 pairs of cases of the same model ordered as measured") !=
        std::string::npos);
  CHECK(text.out.find("1 more within 2%") != std::string::npos);
  CHECK(text.out.find("Out of order: none against half: measured 1.250x, predicted 0.") !=
        std::string::npos);
  // The summary stays the last line, after the ranking: scripts read it there.
  const std::string last = text.out.substr(text.out.rfind('\n', text.out.size() - 2) + 1);
  CHECK(last.rfind("MAPE ", 0) == 0);
  auto md = RunParasim("validate --markdown " + f);
  CHECK(md.out.rfind("\nMAPE ") > md.out.rfind("Out of order"));
}

TEST_CASE("the published files' layouts of one model are ranked as measured") {
  // What a planner's choice rests on (docs/MODEL.md, "Ranking"), 2026-11-26: Korthikanti's
  // full against selective recompute 4 of 4; Llama 3's 8K runs on 8,192 and 16,384 GPUs 1 of 1;
  // Megatron-Bridge on H100 5 of 5, on Blackwell 26 of 27 (B200 FP8 against GB200 MXFP8 for
  // Llama 3 8B is out of order: the catalog's GB200 peaks are 11% above the B200's, and the
  // tables have it 1-3% faster); torchtitan 1 of 3, where the copied file cannot state
  // checkpointing every second layer.
  struct Floor {
    const char* file;
    int scored, ordered;
  };
  for (const Floor& f :
       {Floor{"korthikanti-2022-table5.yaml", 4, 4}, Floor{"regimes/llama3-405b-table4.yaml", 1, 1},
        Floor{"regimes/megatron-bridge-h100.yaml", 5, 5},
        Floor{"regimes/megatron-bridge-blackwell.yaml", 27, 26},
        Floor{"regimes/torchtitan-a100-fsdp2.yaml", 3, 1}}) {
    CAPTURE(f.file);
    const std::string out = ValidateJson(f.file);
    CHECK(Field(out, "scored") == f.scored);
    CHECK(Field(out, "ordered") >= f.ordered);
  }
}

TEST_CASE("validate --robust: how many measured steps lie within the range the swings span") {
  // Korthikanti Table 5: eight of eight since the A100 factor was refitted on SC21 as restated
  // (2026-11-28). Before, the 530B model under full recompute, predicted 9.2% long, stayed 0.5%
  // long with the GEMMs at x1.10; now it is 5.3% long.
  const std::string f = Runfile("tests/validation/korthikanti-2022-table5.yaml");
  auto j = RunParasim("validate --robust --json --jobs 2 " + f);
  REQUIRE(j.exit_code == 0);
  CHECK(j.out.find("\"swings\": {\n    \"swung\": 8,\n    \"within\": 8\n  }") !=
        std::string::npos);
  int cases = 0, within = 0;
  for (size_t at = j.out.find("\"swing_range_s\": ["); at != std::string::npos;
       at = j.out.find("\"swing_range_s\": [", at + 1)) {
    ++cases;
    // Each range holds the case's own prediction, which comes before it in the case's record.
    const double lo = std::stod(j.out.substr(at + 18));
    const double hi = std::stod(j.out.substr(j.out.find(',', at) + 1));
    const size_t p = j.out.rfind("\"predicted_s\": ", at);
    REQUIRE(p != std::string::npos);
    const double predicted = std::stod(j.out.substr(p + 15));
    CHECK(lo <= predicted);
    CHECK(predicted <= hi);
    CHECK(lo < hi);
    const size_t m = j.out.rfind("\"measured_s\": ", at);
    const double measured = std::stod(j.out.substr(m + 14));
    const size_t w = j.out.find("\"within_swings\": ", at);
    const bool says = j.out.compare(w + 17, 4, "true") == 0;
    CHECK(says == (lo <= measured && measured <= hi));
    within += says;
  }
  CHECK(cases == 8);
  CHECK(within == 8);
  // Under a sanitizer the JSON run alone (27 s under ASan): the text run replays the same swings.
  if (testing::kSanitized) return;
  auto t = RunParasim("validate --robust --jobs 2 " + f);
  REQUIRE(t.exit_code == 0);
  CHECK(t.out.find("spans for 8 of 8 cases.\nMAPE") != std::string::npos);
  // The MAPE summary stays the last line; without the flag there is no swing line.
  CHECK(t.out.rfind("MAPE 2.51%") > t.out.rfind("Swings (--robust)"));
  auto plain = RunParasim("validate --jobs 2 " + f);
  CHECK(plain.out.find("Swings") == std::string::npos);
}

TEST_CASE("a bad validation file is bad input with file:line:col") {
  const std::string dir = std::getenv("TEST_TMPDIR");
  const std::string f = dir + "/bad_validation.yaml";
  std::ofstream(f) << "source: x\ncases:\n  - name: a\n    scenario: {}\n    measured: {step_time: "
                      "fast}\n";
  auto r = RunParasim("validate " + f);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find(f + ":5:") != std::string::npos);
  // A case whose cluster disagrees with the defaults' layout is reported as failed, the check of
  // the merged scenario pointing at the case and naming it, not at the top of the file; the
  // file's other cases are still predicted (SCENARIO.md, "Validation file").
  const std::string g = dir + "/bad_gpus.yaml";
  std::ofstream(g) << std::string("source: x\n") + kOneA100Node + R"(  - name: two-nodes
    scenario:
      cluster: {nodes: 2}
    measured: {step_time: 1s}
)";
  auto q = RunParasim("validate " + g);
  CHECK(q.exit_code == 0);
  CAPTURE(q.out);
  CHECK(q.out.find("invalid layout: " + g + ":11:7: error: parallelism.dp") != std::string::npos);
  CHECK(q.out.find("(case 'two-nodes', over the file's defaults)") != std::string::npos);
  CHECK(q.out.find("1 case(s) FAILED") != std::string::npos);
  // A bad value in a later case's own fragment is told at its place in the file (the fragment
  // is merged as a copy, whose nodes have none).
  const std::string h = dir + "/bad_value.yaml";
  std::ofstream(h) << std::string("source: x\n") + kOneA100Node + R"(  - name: one
    scenario: {}
    measured: {step_time: 1s}
  - name: two
    scenario:
      training: {micro_batch: 1, recompute: sometimes}
    measured: {step_time: 1s}
)";
  auto v = RunParasim("validate " + h);
  CHECK(v.exit_code == 2);
  CAPTURE(v.err);
  CHECK(v.err.find(h + ":14:45: error: training.recompute: ") == 0);
  // Where subsets.yaml states the key, the case's own value is still told at its own place.
  const std::string sd = dir + "/stated";
  std::filesystem::create_directories(sd);
  std::ofstream(sd + "/subsets.yaml")
      << "training: [c1]\nstated:\n  v.yaml:\n    training.grad_accumulation: fused\n";
  std::ofstream(sd + "/v.yaml") << std::string("source: x\n") + kOneA100Node + R"(  - name: c1
    scenario:
      training: {micro_batch: 1, grad_accumulation: fuzed}
    measured: {step_time: 1s}
)";
  auto st = RunParasim("validate " + sd + "/v.yaml");
  CHECK(st.exit_code == 2);
  CAPTURE(st.err);
  CHECK(st.err.find(sd + "/v.yaml:11:53: error: training.grad_accumulation: ") == 0);
}

// Before: two cases named "a" were both predicted and ranked "a against a"; one file given twice
// to fit --runs counted its cases twice, each the other's leave-one-out twin (0.00%).
TEST_CASE("a case name twice in a file, and a file twice to fit --runs, are refused") {
  const std::string dir = std::getenv("TEST_TMPDIR");
  const std::string dup = dir + "/dup_names.yaml";
  std::ofstream(dup) << std::string("source: x\n") + kOneA100Node +
                            "  - name: a\n    scenario: {}\n    measured: {step_time: 1s}\n"
                            "  - name: a\n    scenario: {}\n    measured: {step_time: 1.2s}\n";
  auto r = RunParasim("validate " + dup);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find(dup + ":12:11: error: cases[1].name: case name 'a' again (cases[0] has it): "
                         "give each case its own name") != std::string::npos);
  const std::string ok = dir + "/one_case.yaml";
  std::ofstream(ok) << std::string("source: x\n") + kOneA100Node +
                           "  - name: a\n    scenario: {}\n    measured: {step_time: 1s}\n";
  auto twice = RunParasim("fit --runs " + ok + " --runs " + dir +
                          "/./one_case.yaml --params "
                          "sustained_factor");
  CHECK(twice.exit_code == 2);
  CHECK(twice.err.find(dir + "/./one_case.yaml:1:1: error: given twice to fit --runs (" + ok +
                       " is the same file)") != std::string::npos);
}

TEST_CASE("validate: a scalar scenario is refused where it stands; filters that select nothing") {
  const std::string dir = std::getenv("TEST_TMPDIR");
  const std::string f = dir + "/scalar_scenario.yaml";
  std::ofstream(f)
      << "source: x\ncases:\n  - name: a\n    scenario: 5\n    measured: {step_time: 1s}\n";
  auto r = RunParasim("validate " + f);
  CHECK(r.exit_code == 2);  // was an internal error (yaml-cpp's operator[] on a scalar), exit 1
  CHECK(r.err.find(f + ":4:15: error: expected a mapping with keys name, cluster") !=
        std::string::npos);
  const std::string k = Runfile("tests/validation/korthikanti-2022-table5.yaml");
  // An unknown GPU is refused with the catalog's; a negative node count too.
  auto g = RunParasim("validate --gpu foo " + k);
  CHECK(g.exit_code == 2);
  CHECK(g.err.find("--gpu=foo:1:7: error: unknown GPU 'foo'") != std::string::npos);
  CHECK(RunParasim("validate --nodes -3 " + k).exit_code == 2);
  // A filter that leaves no case: no MAPE of 0 (text) and null (JSON), as memory's.
  auto none = RunParasim("validate --gpu h100-sxm5-80gb " + k);
  CHECK(none.exit_code == 0);
  CHECK(none.out.find("MAPE -, max |error| - over 0 cases (none predicted)") != std::string::npos);
  // A case on an extended catalog GPU is on that GPU for --gpu (it keeps the id).
  const std::string e = dir + "/extended_gpu.yaml";
  std::ofstream(e)
      << std::string("source: x\n") + kOneA100Node +
             "  - name: ext\n    scenario:\n      cluster: {gpu: {extends: "
             "a100-sxm4-80gb, sustained_factor: 0.8}}\n    measured: {step_time: 1s}\n";
  auto ext = RunParasim("validate --gpu a100-sxm4-80gb " + e);
  CHECK(ext.exit_code == 0);
  CHECK(ext.out.find("over 1 cases") != std::string::npos);
  // validate's --set extends a catalog GPU as every verb's does (it failed: missing 'memory').
  auto set = RunParasim("validate --set cluster.gpu.sustained_factor=0.6 " + e);
  CHECK(set.exit_code == 0);
  CHECK(set.out.find("over 1 cases") != std::string::npos);
  auto j = RunParasim("validate --json --gpu h100-sxm5-80gb " + k);
  CHECK(j.out.find("\"mape\": null") != std::string::npos);
  CHECK(j.out.find("\"max_abs_error\": null") != std::string::npos);
}

}  // namespace
}  // namespace parasim
