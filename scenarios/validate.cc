#include "scenarios/validate.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <set>

#include "scenarios/megatron_args.h"
#include "scenarios/megatron_import.h"
#include "scenarios/model_block.h"
#include "scenarios/scenario.h"
#include "scenarios/validation_subsets.h"
#include "sim/parse_units.h"
#include "sim/yaml_reader.h"
#include "strategies/goodput.h"
#include "strategies/layout_format.h"
#include "strategies/robustness.h"

namespace parasim {

namespace {

// The architecture alone: routing choices (token dropping, the load spread, node-limited
// routing) are the training's, as a layout's are, and the catalog id and sources are names.
ModelSpec Architecture(ModelSpec m) {
  m.id.clear();
  m.source.clear();
  m.published_params = m.published_active_params = 0;
  m.moe.capacity_factor = m.moe.imbalance = m.moe.expert_cv = 0;
  m.moe.node_limit = 0;
  return m;
}

// Whether the case's GPUs and global batch are its own, not its sweep's.
bool Rankable(const Scenario& s) {
  if (!s.sweep) return true;
  if (s.sweep->global_batch_max > 0 || !s.sweep->hardware.empty()) return false;
  return std::none_of(s.sweep->axes.begin(), s.sweep->axes.end(),
                      [](const auto& a) { return a.first == "global_batch"; });
}

// A case's scenario error, naming the case. A check of the merged scenario as a whole (GPU
// counts that disagree) points at a node the merge made, which has no place in the file: it
// then points at the case's scenario instead.
Status InCase(const Status& error, const std::string& path, const YAML::Node& scenario,
              const std::string& name) {
  std::string message = error.message();
  const std::string nowhere = path + ":1:1: ";
  if (message.rfind(nowhere, 0) == 0 && scenario.Mark().line >= 0) {
    message = fmt::format("{}:{}:{}: {}", path, scenario.Mark().line + 1,
                          scenario.Mark().column + 1, message.substr(nowhere.size()));
  }
  return Status(error.code(),
                fmt::format("{} (case '{}', over the file's defaults)", message, name));
}

void AssignRankGroups(std::vector<ValidationInput>* cases) {
  struct Head {  // the first case of a rank group
    int index;
    int64_t seq_len;
    ModelSpec arch;
  };
  std::vector<Head> heads;
  for (size_t i = 0; i < cases->size(); ++i) {
    ValidationInput& c = (*cases)[i];
    if (!c.measured.load_failure.empty() || !c.measured.has_time() || !Rankable(c.scenario)) {
      continue;
    }
    c.measured.gpus_per_sequence = static_cast<double>(c.scenario.cluster.gpus()) /
                                   static_cast<double>(c.scenario.training.global_batch);
    ModelSpec arch = Architecture(c.scenario.model);
    auto head = std::find_if(heads.begin(), heads.end(), [&](const Head& h) {
      return h.seq_len == c.scenario.training.seq_len && h.arch == arch;
    });
    if (head == heads.end()) {
      heads.push_back({static_cast<int>(i), c.scenario.training.seq_len, std::move(arch)});
      c.measured.rank_group = static_cast<int>(i);
    } else {
      c.measured.rank_group = head->index;
    }
  }
}

// Every pair of predicted cases in one rank group, scored by the order of their GPU-seconds
// per sequence.
Ranking RankPairs(const std::vector<ValidationCase>& cases) {
  Ranking r;
  for (size_t i = 0; i < cases.size(); ++i) {
    const ValidationCase& a = cases[i];
    if (!a.ok || a.rank_group < 0) continue;
    for (size_t j = i + 1; j < cases.size(); ++j) {
      const ValidationCase& b = cases[j];
      if (!b.ok || b.rank_group != a.rank_group) continue;
      RankedPair p{a.name, b.name,
                   a.measured_s * a.gpus_per_sequence / (b.measured_s * b.gpus_per_sequence),
                   a.predicted_s * a.gpus_per_sequence / (b.predicted_s * b.gpus_per_sequence)};
      if (std::max(p.measured_ratio, 1 / p.measured_ratio) - 1 <= kRankTie) {
        ++r.ties;
        continue;
      }
      ++r.scored;
      if ((p.measured_ratio > 1) == (p.predicted_ratio > 1) && p.predicted_ratio != 1) {
        ++r.ordered;
      } else {
        r.misordered.push_back(std::move(p));
      }
    }
  }
  return r;
}

}  // namespace

namespace {

// measured: step_time and/or peak_memory, which stage the peak is from, the note and basis.
Status ReadMeasured(const YamlContext& ctx, const YAML::Node& node, const std::string& at,
                    ValidationCase* vc) {
  PARASIM_ASSIGN_OR_RETURN(MapReader m, MapReader::Open(ctx, node, at + ".measured",
                                                        {"step_time", "peak_memory",
                                                         "peak_memory_stage", "note", "basis"}));
  if (!m.Has("step_time") && !m.Has("peak_memory")) {
    return ctx.ErrorAt(node, at + ".measured",
                       "expected step_time (a time), peak_memory (a size) or both");
  }
  Duration measured;
  PARASIM_RETURN_IF_ERROR(m.Time("step_time", &measured));
  if (m.Has("step_time") && measured <= Duration::Zero()) {
    return m.Error("step_time", "a measured step time must be positive");
  }
  vc->measured_s = measured.seconds();
  Bytes peak;
  PARASIM_RETURN_IF_ERROR(m.Size("peak_memory", &peak));
  // A GPU's allocator reports whole bytes; a step allocates far more than a MiB and no GPU
  // holds a PiB.
  if (m.Has("peak_memory") &&
      !(peak.bytes() >= 1024.0 * 1024 && peak.bytes() <= std::ldexp(1.0, 50))) {
    return m.Error("peak_memory",
                   "a measured peak memory must be from 1MiB to 1PiB, e.g. '61.3GiB'");
  }
  vc->measured_peak_bytes = peak.bytes();
  std::string stage = "max";
  PARASIM_RETURN_IF_ERROR(m.Enum("peak_memory_stage", &stage, {"max", "last"}));
  vc->peak_stage_last = stage == "last";
  PARASIM_RETURN_IF_ERROR(m.String("note", &vc->note));
  std::string basis = "step";
  PARASIM_RETURN_IF_ERROR(m.Enum("basis", &basis, {"step", "wall_clock"}));
  vc->wall_clock = basis == "wall_clock";
  if (vc->wall_clock && !m.Has("step_time")) {
    return m.Error("basis", "basis: wall_clock compares a step time: give measured.step_time");
  }
  return Status::Ok();
}

// The import options and arguments of a case's `import:` over the file's defaults.import
// (read side by side, never merged: merging nodes of the file into each case's document would
// copy the file's node pool once per case).
Status ReadImport(const YamlContext& ctx, const YAML::Node& own, const YAML::Node& fallback,
                  const std::string& at, ImportOptions* o, MegatronArgs* args) {
  const std::vector<std::string_view> keys = {"megatron",      "env",           "gpu",  "nodes",
                                              "gpus_per_node", "nvlink_domain", "vocab"};
  PARASIM_ASSIGN_OR_RETURN(MapReader m, MapReader::Open(ctx, own, at + ".import", keys));
  PARASIM_ASSIGN_OR_RETURN(MapReader d, MapReader::Open(ctx, fallback, "defaults.import", keys));
  auto pick = [&](std::string_view k) -> const MapReader& { return m.Has(k) ? m : d; };
  if (!m.Has("megatron") && !d.Has("megatron")) return m.Require("megatron");
  const YAML::Node list = pick("megatron").Node("megatron");
  if (!list.IsSequence()) {
    return ctx.ErrorAt(
        list, at + ".import.megatron",
        "expected a list of Megatron-LM argument tokens ['--num-layers', '32', ...]");
  }
  std::vector<ArgToken> tokens;
  for (const YAML::Node& t : list) {
    PARASIM_ASSIGN_OR_RETURN(std::string text, ReadScalar(ctx, t, at + ".import.megatron"));
    tokens.push_back({text, t.Mark().line + 1, t.Mark().column + 1});
  }
  PARASIM_RETURN_IF_ERROR(pick("gpu").String("gpu", &o->gpu));
  if (pick("gpu").Has("gpu")) o->gpu_at = ctx.Where(pick("gpu").Node("gpu"), at + ".import.gpu");
  PARASIM_RETURN_IF_ERROR(pick("nodes").Int("nodes", &o->nodes, 1, kMaxGpus));
  PARASIM_RETURN_IF_ERROR(pick("gpus_per_node").Int("gpus_per_node", &o->gpus_per_node, 1, 1024));
  PARASIM_RETURN_IF_ERROR(
      pick("nvlink_domain").Int("nvlink_domain", &o->nvlink_domain, 1, 1 << 20));
  PARASIM_RETURN_IF_ERROR(pick("vocab").Int("vocab", &o->vocab, 1, 67108864));
  PARASIM_ASSIGN_OR_RETURN(*args, ArgsFromTokens(ctx.file, tokens));
  std::map<std::string, std::string> env;
  for (const MapReader* r : {&d, &m}) {
    if (!r->Has("env")) continue;
    if (!r->Node("env").IsMap()) {
      return r->Error("env", "expected a mapping from variable to value");
    }
    for (const auto& kv : r->Node("env")) env[kv.first.Scalar()] = kv.second.Scalar();
  }
  args->env.assign(env.begin(), env.end());
  return Status::Ok();
}

// A case's `import:` as the scenario it gives, or *failure set to why it cannot be imported.
// `scenario` is the case's own fragment (its model.vocab stands in for a tokenizer file's).
StatusOr<YAML::Node> ImportCase(const YamlContext& ctx, const YAML::Node& import,
                                const YAML::Node& default_import, const YAML::Node& scenario,
                                const std::string& at, const std::string& name, const Catalogs& cat,
                                std::string* failure) {
  ImportOptions o;
  MegatronArgs args;
  PARASIM_RETURN_IF_ERROR(ReadImport(ctx, import, default_import, at, &o, &args));
  o.name = name;
  if (o.vocab == 0 && scenario.IsMap()) {
    const YAML::Node model = scenario["model"];
    const YAML::Node vocab = model.IsDefined() && model.IsMap() ? model["vocab"] : YAML::Node();
    if (vocab.IsDefined() && vocab.IsScalar()) {
      PARASIM_ASSIGN_OR_RETURN(o.vocab, ReadInt(ctx, vocab, "model.vocab", 1, 67108864));
    }
  }
  if (o.nodes == 0) {
    *failure = "import.nodes not given: the run's node count is not public";
    return YAML::Node();
  }
  StatusOr<ImportedScenario> imported = ImportMegatron(args, o, cat);
  if (!imported.ok()) {
    *failure = "import: " + imported.status().message();
    return YAML::Node();
  }
  return ParseYaml(imported->yaml, "<imported>");
}

// The GPU and node count a case states, as written (import: or scenario.cluster, over the
// file's defaults); "" and 0 where it states none.
struct CaseHardware {
  std::string gpu;
  int64_t nodes = 0;
};

CaseHardware CaseHardwareOf(const MapReader& c, const YAML::Node& defaults,
                            const YAML::Node& default_import) {
  CaseHardware h;
  auto scalar = [](const YAML::Node& map, const char* key) {
    return map.IsDefined() && map.IsMap() && map[key].IsDefined() && map[key].IsScalar()
               ? map[key].Scalar()
               : std::string();
  };
  auto read = [&](const YAML::Node& map) {
    std::string gpu = scalar(map, "gpu");
    const std::string nodes = scalar(map, "nodes");
    // A catalog GPU extended keeps its id (SCENARIO.md, cluster.gpu).
    if (gpu.empty() && map.IsDefined() && map.IsMap()) gpu = scalar(map["gpu"], "extends");
    if (!gpu.empty()) h.gpu = gpu;
    if (!nodes.empty()) h.nodes = std::strtoll(nodes.c_str(), nullptr, 10);
  };
  if (c.Has("import")) {
    read(default_import);
    read(c.Node("import"));
  } else {
    auto cluster_of = [](const YAML::Node& map) {
      // Not a mapping: CaseNode refuses it where it stands; here it names no hardware.
      return map.IsDefined() && map.IsMap() ? map["cluster"] : YAML::Node();
    };
    read(cluster_of(defaults));
    if (c.Has("scenario")) read(cluster_of(c.Node("scenario")));
  }
  return h;
}

bool Kept(const CaseFilter& f, const Subset& subset, const std::string& name,
          const CaseHardware& hw) {
  if (!subset.any && !subset.whole_file && !subset.cases.count(name.substr(0, name.find(" (")))) {
    return false;
  }
  return (f.gpu.empty() || f.gpu == hw.gpu) && (f.nodes == 0 || f.nodes == hw.nodes);
}

// A case's scenario node: its import (when it has one) under the file's defaults and its own
// fragment; "" in *failure when it loaded.
StatusOr<YAML::Node> CaseNode(const YamlContext& ctx, const MapReader& c,
                              const YAML::Node& defaults, const YAML::Node& default_import,
                              const std::string& at, const std::string& name, const Catalogs& cat,
                              std::string* failure) {
  // A copy of the case's fragment (its places kept in the case's context: PlaceOwnKeys).
  const YAML::Node own =
      c.Has("scenario") ? YAML::Clone(c.Node("scenario")) : YAML::Node(YAML::NodeType::Map);
  if (!c.Has("import")) {
    // The case's scenario over a fresh copy of the defaults (DeepMerge shares nodes).
    return DeepMerge(YAML::Clone(defaults), own);
  }
  PARASIM_ASSIGN_OR_RETURN(YAML::Node imported, ImportCase(ctx, c.Node("import"), default_import,
                                                           own, at, name, cat, failure));
  if (!failure->empty() || (defaults.size() == 0 && !c.Has("scenario"))) return imported;
  // Scenario keys over the imported scenario.
  return DeepMerge(imported, DeepMerge(YAML::Clone(defaults), own));
}

// A case's keys and its name, which no earlier case of the file has: cases are told apart by
// name (the ranking's pairs, fit --runs, subsets.yaml).
StatusOr<MapReader> CaseHead(const YamlContext& ctx, const YAML::Node& node, const std::string& at,
                             std::map<std::string, std::string>* names, std::string* name) {
  PARASIM_ASSIGN_OR_RETURN(
      MapReader c, MapReader::Open(ctx, node, at, {"name", "scenario", "import", "measured"}));
  for (auto k : {"name", "measured"}) PARASIM_RETURN_IF_ERROR(c.Require(k));
  if (!c.Has("scenario") && !c.Has("import")) {
    return ctx.ErrorAt(node, at, "expected a scenario fragment, an import block or both");
  }
  PARASIM_RETURN_IF_ERROR(c.String("name", name));
  if (auto [it, fresh] = names->emplace(*name, at); !fresh) {
    return ctx.ErrorAt(c.Node("name"), at + ".name",
                       fmt::format("case name '{}' again ({} has it): give each case its own name",
                                   *name, it->second));
  }
  return c;
}

}  // namespace

StatusOr<ValidationFile> LoadValidationFile(const YamlInput& input,
                                            const std::vector<std::string>& sets,
                                            const CaseFilter& filter) {
  PARASIM_ASSIGN_OR_RETURN(Catalogs cat, LoadCatalogs());
  PARASIM_ASSIGN_OR_RETURN(YAML::Node root, LoadYaml(input, "keys source, defaults, cases"));
  const std::string& path = input.name;
  YamlContext ctx{path, {}};
  PARASIM_ASSIGN_OR_RETURN(MapReader top,
                           MapReader::Open(ctx, root, "", {"source", "defaults", "cases"}));
  ValidationFile file;
  file.path = path;
  PARASIM_RETURN_IF_ERROR(top.String("source", &file.source));
  PARASIM_RETURN_IF_ERROR(top.Require("cases"));
  const YAML::Node cases = top.Node("cases");
  if (!cases.IsSequence() || cases.size() == 0) {
    return ctx.ErrorAt(cases, "cases", "expected a list of cases, each {name, scenario, measured}");
  }
  YAML::Node defaults =
      top.Has("defaults") ? YAML::Clone(top.Node("defaults")) : YAML::Node(YAML::NodeType::Map);
  if (!defaults.IsMap()) {
    return ctx.ErrorAt(defaults, "defaults", "expected a mapping (a scenario fragment)");
  }
  // defaults.import goes under each case's import; the rest is a scenario fragment.
  YAML::Node default_import =
      defaults["import"].IsDefined() ? defaults["import"] : YAML::Node(YAML::NodeType::Map);
  defaults.remove("import");
  PARASIM_ASSIGN_OR_RETURN(const Subset subset, LoadSubset(path, filter.subset));
  PARASIM_RETURN_IF_ERROR(ApplyStated(path, &defaults, &ctx, &file.stated));
  std::map<std::string, std::string> names;  // -> the case that has it
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string at = fmt::format("cases[{}]", i);
    ValidationCase vc;
    PARASIM_ASSIGN_OR_RETURN(MapReader c, CaseHead(ctx, cases[i], at, &names, &vc.name));
    if (!Kept(filter, subset, vc.name, CaseHardwareOf(c, defaults, default_import))) continue;
    PARASIM_RETURN_IF_ERROR(ReadMeasured(ctx, c.Node("measured"), at, &vc));
    PARASIM_ASSIGN_OR_RETURN(YAML::Node merged, CaseNode(ctx, c, defaults, default_import, at,
                                                         vc.name, cat, &vc.load_failure));
    if (!vc.load_failure.empty()) {
      file.cases.push_back({std::move(vc), Scenario()});
      continue;
    }
    YamlContext case_ctx = ctx;
    if (c.Has("scenario")) {
      ForgetOwnKeys(c.Node("scenario"), &case_ctx);
      PlaceOwnKeys(c.Node("scenario"), ctx, &case_ctx);
    }
    // As a scenario's --set: a key under a catalog model, GPU or fabric extends it.
    PARASIM_RETURN_IF_ERROR(ApplyScenarioSets(sets, &merged, &case_ctx));
    // A case whose layout is invalid is predicted as failed, with the reason (SCENARIO.md).
    StatusOr<Scenario> loaded =
        ScenarioFromNode(merged, case_ctx, cat, /*keep_invalid_layout=*/true);
    if (!loaded.ok() && c.Has("import")) {
      vc.load_failure = "the imported scenario: " + loaded.status().message();
      file.cases.push_back({std::move(vc), Scenario()});
      continue;
    }
    if (!loaded.ok()) return InCase(loaded.status(), path, c.Node("scenario"), vc.name);
    Scenario s = *std::move(loaded);
    if (!s.fixed_layout.ok())
      s.fixed_layout = InCase(s.fixed_layout, path, c.Node("scenario"), vc.name);
    if (s.name.empty()) s.name = vc.name;
    if (vc.wall_clock && !GoodputModelled(s)) {
      return ctx.ErrorAt(c.Node("measured"), at + ".measured.basis",
                         "basis: wall_clock compares the step time through failures and "
                         "checkpoints (the goodput model): the case needs training.tokens, the "
                         "tokens the published time covers, and no `reliability: none`");
    }
    file.cases.push_back({std::move(vc), std::move(s)});
  }
  AssignRankGroups(&file.cases);
  return file;
}

namespace {

// Why nothing fits: the stage of `r` that is over, in GiB.
std::string OverMemory(const std::vector<double>& peaks, double capacity) {
  size_t worst = 0;
  for (size_t i = 0; i < peaks.size(); ++i) {
    if (peaks[i] > peaks[worst]) worst = i;
  }
  return fmt::format("stage {} needs {:.1f} GiB of {:.1f} GiB", worst,
                     peaks.empty() ? 0.0 : Bytes(peaks[worst]).gib(), Bytes(capacity).gib());
}

}  // namespace

StatusOr<SweepOutcome> SweepCase(const Scenario& s, const SweepOptions& options) {
  SweepOptions o = options;
  o.out_csv.clear();
  o.resume = false;
  return RunSweep(s, o);
}

std::string NoLayoutFits(const SweepOutcome& r) {
  return r.leanest.key.empty()
             ? fmt::format("no layout of its sweep is valid ({} grid points)", r.grid_points)
             : fmt::format("no layout fits: the leanest of {} ({}) {}", r.valid_layouts,
                           r.leanest.key, r.leanest.reason);
}

// The case's predicted layout (`s` with it applied) replayed under each swing that applies to
// its cluster, as the case compares: through the goodput of a wall-clock measurement.
Status SwingCase(const Scenario& s, const SweepOptions& options, ValidationCase* vc) {
  const std::vector<Swing> swings = SwingsFor({&s.cluster}, DefaultSwings());
  std::vector<double> steps(swings.size());
  std::vector<size_t> items(swings.size());
  for (size_t i = 0; i < items.size(); ++i) items[i] = i;
  PARASIM_RETURN_IF_ERROR(ParallelFor(items, options.jobs, [&](size_t i) -> Status {
    PARASIM_ASSIGN_OR_RETURN(StepReport r, SwungStep(s, swings[i]));
    const double goodput = vc->wall_clock ? GoodputFactor(s, r.step_time_s) : 1.0;
    steps[i] = goodput > 0 ? r.step_time_s / goodput : std::numeric_limits<double>::infinity();
    return Status::Ok();
  }));
  const auto [lo, hi] = std::minmax_element(steps.begin(), steps.end());
  auto label = [&](auto it) { return SwingText(swings[static_cast<size_t>(it - steps.begin())]); };
  vc->swing_lo_s = std::min(*lo, vc->predicted_s);
  vc->swing_hi_s = std::max(*hi, vc->predicted_s);
  vc->swing_lo = label(lo);
  vc->swing_hi = label(hi);
  return Status::Ok();
}

namespace {

// The predicted peak of the stage the measurement is from, and its error: PyTorch's allocated
// bytes, as a measured peak_memory counts them (SCENARIO.md).
void SetMemory(const std::vector<double>& peaks, ValidationCase* vc) {
  if (!vc->has_memory() || peaks.empty()) return;
  vc->predicted_peak_bytes =
      vc->peak_stage_last ? peaks.back() : *std::max_element(peaks.begin(), peaks.end());
  vc->memory_error = vc->predicted_peak_bytes / vc->measured_peak_bytes - 1;
}

}  // namespace

Status PredictCase(const Scenario& s, const SweepOptions& options, ValidationCase* vc,
                   bool robust) {
  vc->ok = true;
  vc->failure.clear();
  if (!vc->load_failure.empty()) {
    vc->ok = false;
    vc->failure = vc->load_failure;
    return Status::Ok();
  }
  if (!s.sweep && !s.fixed_layout.ok()) {
    vc->ok = false;
    vc->failure = "invalid layout: " + s.fixed_layout.message();
    return Status::Ok();
  }
  Scenario chosen = s;
  if (s.sweep) {
    PARASIM_ASSIGN_OR_RETURN(SweepOutcome r, SweepCase(s, options));
    if (r.ranked.empty()) {
      vc->ok = false;
      vc->failure = NoLayoutFits(r);
      return Status::Ok();
    }
    vc->predicted_s = r.ranked[0].step_time_s;
    vc->layout = r.ranked[0].key;
    chosen = WithLayout(s, r.ranked[0]);
    if (vc->has_memory()) {
      PARASIM_ASSIGN_OR_RETURN(StepReport m, SimulateStep(chosen.model, chosen.training,
                                                          chosen.layout, chosen.cluster, {}));
      SetMemory(m.peak_allocated_bytes, vc);
    }
  } else {
    PARASIM_ASSIGN_OR_RETURN(StepReport r,
                             SimulateStep(s.model, s.training, s.layout, s.cluster, {}));
    vc->predicted_s = r.step_time_s;
    vc->layout = FormatLayout(s.layout, s.training, LayoutStyle::kKey);
    SetMemory(r.peak_allocated_bytes, vc);
    if (!r.fits) {
      vc->ok = false;
      vc->failure = "no layout fits: " + OverMemory(r.peak_memory_bytes, r.capacity_bytes);
      return Status::Ok();
    }
  }
  if (vc->wall_clock) {
    // The closed form at the failure-free step, as the sweep's time_to_train objective takes it.
    vc->goodput = GoodputFactor(s, vc->predicted_s);
    if (!(vc->goodput > 0)) {
      vc->ok = false;
      vc->failure =
          "no run ends: its failures come faster than it restarts and checkpoints "
          "(the scenario's reliability block)";
      return Status::Ok();
    }
    vc->predicted_s /= vc->goodput;
  }
  vc->error = vc->has_time() ? vc->predicted_s / vc->measured_s - 1 : 0;
  if (robust && vc->has_time()) PARASIM_RETURN_IF_ERROR(SwingCase(chosen, options, vc));
  return Status::Ok();
}

ValidationReport Summarize(std::string source, std::vector<ValidationCase> cases) {
  ValidationReport rep;
  rep.source = std::move(source);
  rep.cases = std::move(cases);
  double sum = 0, memory_sum = 0;
  for (const ValidationCase& c : rep.cases) {
    if (!c.ok) {
      ++rep.failed;
      continue;
    }
    if (c.has_memory()) {
      memory_sum += std::abs(c.memory_error);
      ++rep.memory_cases;
      rep.max_abs_memory_error = std::max(rep.max_abs_memory_error, std::abs(c.memory_error));
    }
    if (!c.has_time()) continue;
    sum += std::abs(c.error);
    ++rep.timed;
    if (c.swing_hi_s > 0) {
      ++rep.swung;
      rep.within_swings += c.within_swings();
    }
    rep.max_abs_error = std::max(rep.max_abs_error, std::abs(c.error));
  }
  rep.mape = rep.timed > 0 ? sum / rep.timed : 0;
  rep.memory_mape = rep.memory_cases > 0 ? memory_sum / rep.memory_cases : 0;
  rep.ranking = RankPairs(rep.cases);
  return rep;
}

StatusOr<ValidationReport> Validate(const YamlInput& input, const std::vector<std::string>& sets,
                                    const SweepOptions& options, bool robust,
                                    const CaseFilter& filter) {
  PARASIM_ASSIGN_OR_RETURN(ValidationFile file, LoadValidationFile(input, sets, filter));
  std::vector<ValidationCase> cases;
  for (ValidationInput& in : file.cases) {
    // A case whose replay fails is reported failed with the reason; the file goes on.
    const Status st = PredictCase(in.scenario, options, &in.measured, robust);
    if (!st.ok()) {
      in.measured.ok = false;
      in.measured.failure = "replay: " + st.message();
    }
    cases.push_back(in.measured);
  }
  ValidationReport rep = Summarize(file.source, std::move(cases));
  rep.stated = std::move(file.stated);
  return rep;
}

}  // namespace parasim
