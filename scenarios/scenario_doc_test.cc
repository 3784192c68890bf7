// The input contract against the loader: every key the loader accepts is named in
// docs/SCENARIO.md, in the section of its block.
//
// The accepted keys are the loader's own lists, each MapReader's: a key `zz_probe` put into a
// block makes the loader refuse it and list what the block accepts ("cluster.zz_probe: unknown
// key 'zz_probe' (accepted: gpu, nodes, ...)"). So nothing here repeats a list that could drift
// from the readers. The test starts from documents that hold every block (a scenario, a
// calibration profile, a validation file), asks each of their mappings for its keys that way,
// and then gives every accepted key a mapping for a value, to find blocks that the documents do
// not hold yet: such a block fails the test until a document holds one (so that its keys, and
// its own blocks', are checked too).
#include <doctest/doctest.h>
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "hardware/profile.h"
#include "scenarios/scenario.h"
#include "scenarios/serving_scenario.h"
#include "scenarios/validate.h"
#include "sim/yaml_reader.h"

namespace parasim {
namespace {

// A scenario with every block the loader reads, each valid (an inline GPU, inline fabrics, an
// extended model with MoE, MLA and a window, fine-tuning, overlap, a sweep, reliability).
constexpr char kScenario[] = R"(name: probe
cluster:
  gpu:
    name: Probe GPU
    memory: 80GiB
    hbm_bandwidth: 2TB/s
    peak: {fp32: 60TFLOP/s, tf32: 400TFLOP/s, fp16: 900TFLOP/s, bf16: 900TFLOP/s, fp8: 1800TFLOP/s}
    sms: 132
    gemm_efficiency: 0.8
    gemm_efficiency_fp8: 0.6
    mxfp8: false
    memory_efficiency: 0.9
    launch_overhead: 4us
    host_op_time: 20us
    sustained_factor: 0.9
    attention_flash: {forward: 0.6, backward: 0.5}
    attention_flash2: {forward: 0.3, backward: 0.2}
    elementwise_rates: {norm_forward: 1e12}
    device_names: ["Probe GPU"]
    server: {gpus: 8, intra: nvlink4-h100, inter: ib-ndr-400g}
  nodes: 2
  gpus_per_node: 8
  intra_node: {kind: intra, bandwidth: 450GB/s, latency: 3us, efficiency: 0.8}
  inter_node: {bandwidth: 50GB/s, latency: 5us, efficiency: 0.9}
  nics_per_node: 8
  nvlink_domain: 8
  oversubscription: 1.0
  pod_gpus: 16
  gpu_hour_cost: {inline: 2.5}
model:
  extends: deepseek-v3
  layers: 8
  moe: {experts: 16, top_k: 2, imbalance: {expert_cv: 0.1}, node_limit: 2}
  mla: {q_lora_rank: 64, kv_lora_rank: 64, qk_nope_head_dim: 32, qk_rope_head_dim: 16, v_head_dim: 32}
  attention_window: {size: 128, kind: sliding, global_every: 2}
  hybrid: {pattern: "M*EM-E*E", mamba: {heads: 8, head_dim: 64, state_dim: 16, groups: 2}}
training:
  seq_len: 1024
  global_batch: 32
  micro_batch: 1
  precision: bf16
  finetune: {method: lora, rank: 16}
parallelism:
  tp: 2
  pp: 2
  dp: 4
  ep: 2
  sp: true
  overlap: {dp: true, tp: backward, ep: false}
sweep:
  tp: [1, 2]
  global_batch: {max: 64}
  objective: throughput
  top: 3
reliability:
  gpu: 1e-3
  checkpoint: async
)";

constexpr char kProfile[] = R"(gpu: h100-sxm5-80gb
source: probe
compute:
  gemm_efficiency: 0.8
  attention_standard: {forward: 0.4, backward: 0.4}
  attention_flash: {forward: 0.6, backward: 0.5}
  attention_flash2: {forward: 0.3, backward: 0.2}
  elementwise_rates: {loss_pass: 1e12}
gemm_shapes:
  - {dtype: bf16, m: 1024, n: 1024, k: 1024, efficiency: 0.7}
fabrics:
  nvlink4-h100:
    efficiency: 0.8
    collectives:
      - {op: all_reduce, algo: ring, ranks: 8, per_node: 8, efficiency: 0.9, latency: 10us}
)";

constexpr char kValidation[] = R"(source: probe
defaults:
  cluster: {gpu: a100-sxm4-80gb, nodes: 1, gpus_per_node: 8, intra_node: nvlink3-a100}
  model: gpt3-1.3b
  training: {seq_len: 2048, global_batch: 16}
  parallelism: {tp: 8}
cases:
  - name: probe
    scenario: {training: {micro_batch: 2}}
    measured: {step_time: 1s, note: probe, basis: step}
  - name: imported
    import:
      megatron: [--num-layers, "2", --hidden-size, "256", --num-attention-heads, "4",
                 --seq-length, "512", --max-position-embeddings, "512", --vocab-size, "1000",
                 --tensor-model-parallel-size, "8"]
      env: {NCCL_ALGO: Ring}
      gpu: a100-sxm4-80gb
      nodes: 1
      gpus_per_node: 8
      nvlink_domain: 8
      vocab: 1000
    measured: {peak_memory: 1GiB, peak_memory_stage: last}
)";

// A serving scenario with every block its loader reads (cluster and model are the training
// scenario's, checked there): both length forms, a rate, targets, the engine, two pools, a sweep.
constexpr char kServing[] = R"(name: probe
cluster: {gpu: h100-sxm5-80gb, nodes: 2, gpus_per_node: 8, intra_node: nvlink4-h100,
          inter_node: ib-ndr-400g}
model: mixtral-8x7b
serving:
  precision: fp8
  weights: fp8
  activations: fp8
  kv_dtype: fp8
  requests:
    input_tokens: {lognormal: {mean: 800, sigma: 0.5}, min: 4, max: 4096}
    output_tokens: {uniform: [16, 256]}
    arrival: {rate: 10/s, burst: 2}
    count: 100
    prefix_cache_hit: 0.1
    seed: 3
  slo: {ttft_p99: 2s, tpot_p99: 100ms}
  engine: {max_num_tokens: 4096, max_seqs: 128, chunked_prefill: true, block_size: 16,
           long_prefill_threshold: 512, kv_fraction: 0.9, preemption: recompute,
           cuda_graphs: piecewise, cuda_graph_max_tokens: 512, moe_chunk_tokens: 16384,
           iteration_overhead: 1ms, host_ops_per_op: 0, host_ops_per_graph: 0,
           cuda_graph_scope: whole}
parallelism:
  prefill: {tp: 2, pp: 1, ep: 2, replicas: 2, dp_attention: false}
  decode: {tp: 4, replicas: auto}
sweep: {tp: [1, 2], pp: [1], ep: auto, gpus: [8, 16], disaggregated: [false, true], top: 5}
)";

// One kind of input document: how the loader reads it and where docs/SCENARIO.md names its keys.
struct Kind {
  std::string heading;  // the level-2 heading of its section
  const char* document;
  std::function<Status(const YAML::Node&)> load;
  std::set<std::string> fragments;  // scenario fragments: keys of the scenario, not their own
  std::set<std::string> by_id;      // mappings keyed by catalog ids, not by a vocabulary
  std::map<std::string, std::string> ids;  // id in a path -> its placeholder in the document
};

const std::vector<Kind>& Kinds() {
  static const Catalogs cat = *LoadCatalogs();
  static const std::vector<Kind> kinds = {
      {"## Scenario keys",
       kScenario,
       [](const YAML::Node& n) {
         const YamlContext ctx{"probe.yaml", {}};
         return ScenarioFromNode(n, ctx, cat).status();
       },
       {},
       {"cluster.gpu_hour_cost"},
       {}},
      {"## Calibration profile keys",
       kProfile,
       [](const YAML::Node& n) {
         return ParseCalibrationProfile(YAML::Dump(n), "probe.yaml").status();
       },
       {},
       {"fabrics"},
       {{"nvlink4-h100", "<fabric>"}}},
      {"## Serving scenario keys",
       kServing,
       [](const YAML::Node& n) {
         const YamlContext ctx{"probe.yaml", {}};
         return ServingScenarioFromNode(n, ctx, cat).status();
       },
       {"cluster", "model"},
       {},
       {}},
      {"## Validation file keys",
       kValidation,
       [](const YAML::Node& n) {
         return LoadValidationFile(YamlInput("probe.yaml", YAML::Dump(n)), {}).status();
       },
       {"defaults", "cases[].scenario"},
       {"cases[].import.env"},
       {}},
  };
  return kinds;
}

// A place in a document: mapping keys, and list indices written "[i]".
using Path = std::vector<std::string>;

bool IsIndex(const std::string& step) { return !step.empty() && step[0] == '['; }
size_t Index(const std::string& step) { return std::stoul(step.substr(1)); }

// The path as the documentation spells a block: "cases[].measured", "fabrics.<fabric>".
std::string Spelled(const Path& p, const Kind& kind) {
  std::string out;
  for (const std::string& step : p) {
    if (IsIndex(step)) {
      out += "[]";
    } else {
      const auto id = kind.ids.find(step);
      if (!out.empty()) out += ".";
      out += id == kind.ids.end() ? step : id->second;
    }
  }
  return out;
}

// The loader's path of a block ("cases[0].fabrics.nvlink4-h100") spelled likewise.
std::string Spelled(std::string loader_path, const Kind& kind) {
  loader_path = std::regex_replace(loader_path, std::regex(R"(\[\d+\])"), "[]");
  for (const auto& [id, placeholder] : kind.ids) {
    const size_t at = loader_path.find(id);
    if (at != std::string::npos) loader_path.replace(at, id.size(), placeholder);
  }
  return loader_path;
}

// A copy of `root` with `value` at `p` (the last step a mapping key).
YAML::Node With(const YAML::Node& root, const Path& p, const YAML::Node& value) {
  YAML::Node out = YAML::Clone(root);
  YAML::Node n = out;
  for (size_t i = 0; i + 1 < p.size(); ++i) {
    if (IsIndex(p[i])) {
      n.reset(n[Index(p[i])]);
    } else {
      n.reset(n[p[i]]);
    }
  }
  n[p.back()] = value;
  return out;
}

YAML::Node Probe() {
  YAML::Node probe(YAML::NodeType::Map);
  probe["zz_probe"] = 1;
  return probe;
}

// What the loader said of a probe: the block that refused `zz_probe` and the keys it accepts.
struct Refusal {
  bool refused = false;
  std::string block;  // as spelled in the documentation
  std::vector<std::string> accepted;
};

Refusal Load(const Kind& kind, const YAML::Node& doc) {
  const Status st = kind.load(doc);
  static const std::regex kRefused(
      R"(error: (\S*?)\.?zz_probe: unknown key 'zz_probe'[^(]*\(accepted: ([^)]*)\))");
  std::smatch m;
  Refusal r;
  if (st.ok() || !std::regex_search(st.message(), m, kRefused)) return r;
  r.refused = true;
  r.block = Spelled(m[1].str(), kind);
  std::stringstream keys(m[2].str());
  for (std::string k; std::getline(keys, k, ',');) r.accepted.push_back(k.substr(k[0] == ' '));
  return r;
}

// Every mapping of `n` at `p` and below that holds keys of the loader's vocabulary.
void Mappings(const YAML::Node& n, const Path& p, const Kind& kind, std::vector<Path>* out) {
  const std::string spelled = Spelled(p, kind);
  if (kind.fragments.count(spelled)) return;
  if (n.IsMap()) {
    if (!kind.by_id.count(spelled)) out->push_back(p);
    for (const auto& kv : n) {
      Path child = p;
      child.push_back(kv.first.Scalar());
      Mappings(kv.second, child, kind, out);
    }
  } else if (n.IsSequence()) {
    for (size_t i = 0; i < n.size(); ++i) {
      Path child = p;
      child.push_back(fmt::format("[{}]", i));
      Mappings(n[i], child, kind, out);
    }
  }
}

// Each block of `kind`'s document with the keys the loader accepts in it.
std::map<std::string, std::vector<std::string>> AcceptedKeys(const Kind& kind) {
  const YAML::Node doc = YAML::Load(kind.document);
  REQUIRE_MESSAGE(kind.load(doc).ok(), kind.load(doc).message());
  std::vector<Path> maps;
  Mappings(doc, {}, kind, &maps);
  std::map<std::string, std::vector<std::string>> blocks;
  for (const Path& p : maps) {
    Path probe = p;
    probe.push_back("zz_probe");
    const Refusal r = Load(kind, With(doc, probe, YAML::Node(1)));
    CAPTURE(Spelled(p, kind));
    REQUIRE_MESSAGE(r.refused, "the loader did not refuse an unknown key in this block");
    CHECK(r.block == Spelled(p, kind));
    blocks[r.block] = r.accepted;
  }
  // Blocks the documents do not hold: an accepted key that takes a mapping of its own keys.
  for (const Path& p : maps) {
    for (const std::string& key : blocks[Spelled(p, kind)]) {
      Path at = p;
      at.push_back(key);
      if (kind.fragments.count(Spelled(at, kind))) continue;
      const Refusal r = Load(kind, With(doc, at, Probe()));
      if (!r.refused || blocks.count(r.block) || kind.by_id.count(r.block)) continue;
      FAIL_CHECK(
          fmt::format("{} `{}` is a block (keys {}) that the test's document does not "
                      "hold: add one there so that its keys are checked",
                      kind.heading, r.block, fmt::join(r.accepted, ", ")));
    }
  }
  return blocks;
}

std::string ScenarioMd() {
  std::ifstream in("docs/SCENARIO.md");
  REQUIRE_MESSAGE(in.good(), "docs/SCENARIO.md is not in the test's runfiles");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int HeadingLevel(const std::string& line) {
  size_t n = 0;
  while (n < line.size() && line[n] == '#') ++n;
  return n > 0 && n < line.size() && line[n] == ' ' ? static_cast<int>(n) : 0;
}

// The text of the section whose heading starts with `heading` (or, with `block`, of the
// heading within it that names `block` in backticks), up to the next heading of its level or
// above; empty when there is none. Lines in code blocks are not headings.
std::string Section(const std::string& md, const std::string& heading, const std::string& block) {
  std::stringstream lines(md);
  std::string out;
  int level = 0;
  bool in_kind = false, in_code = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("```", 0) == 0) in_code = !in_code;
    const int h = in_code ? 0 : HeadingLevel(line);
    if (h == 2) in_kind = line.rfind(heading, 0) == 0;
    if (level > 0 && h > 0 && h <= level) break;
    if (level == 0 && in_kind && h > 0 &&
        (block.empty() ? h == 2 : line.find("`" + block + "`") != std::string::npos)) {
      level = h;
    }
    if (level > 0) out += line + "\n";
  }
  return out;
}

TEST_CASE("docs/SCENARIO.md names every key the loader accepts, in its block's section") {
  const std::string md = ScenarioMd();
  size_t blocks = 0, keys = 0;
  for (const Kind& kind : Kinds()) {
    CAPTURE(kind.heading);
    for (const auto& [block, accepted] : AcceptedKeys(kind)) {
      CAPTURE(block);
      ++blocks;
      const std::string section = Section(md, kind.heading, block);
      if (section.empty()) {
        FAIL_CHECK(fmt::format("no heading names `{}` under \"{}\" (keys: {})", block, kind.heading,
                               fmt::join(accepted, ", ")));
        continue;
      }
      for (const std::string& key : accepted) {
        ++keys;
        CHECK_MESSAGE(
            section.find("`" + key + "`") != std::string::npos,
            fmt::format("`{}` is accepted in `{}` but not named in its section", key, block));
      }
    }
  }
  // The probes reach the blocks: the scenario's 20-odd, the profile's and the validation file's.
  CHECK(blocks >= 25);
  CHECK(keys >= 200);
}

TEST_CASE("the probe finds a key the documentation does not name") {
  // A section without a key fails the lookup the test above makes.
  const std::string md = "## Scenario keys\n### `cluster`\n`gpu`, `nodes`\n### `model`\n`layers`\n";
  const std::string cluster = Section(md, "## Scenario keys", "cluster");
  CHECK(cluster.find("`nodes`") != std::string::npos);
  CHECK(cluster.find("`layers`") == std::string::npos);
  CHECK(Section(md, "## Scenario keys", "training").empty());
  // And the loader's refusal lists the block's keys.
  const Kind& scenario = Kinds()[0];
  const YAML::Node doc = YAML::Load(scenario.document);
  const Refusal r =
      Load(scenario, With(doc, {std::string("training"), std::string("zz_probe")}, YAML::Node(1)));
  REQUIRE(r.refused);
  CHECK(r.block == "training");
  CHECK(r.accepted.front() == "seq_len");
}

}  // namespace
}  // namespace parasim
