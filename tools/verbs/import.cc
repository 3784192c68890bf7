// parasim import: a launch configuration as a scenario (SCENARIO.md "Added in turn 3"):
//   parasim import megatron FILE [--gpu ID] [--nodes N] [--gpus-per-node N] [--out FILE]
//   parasim import torchtitan CONFIG.toml [...]
// Every line of the scenario names the flag (or key) it came from; what is not modelled is
// listed at its end. Without --out the scenario goes to stdout.
#include <fmt/core.h>

#include "scenarios/catalogs.h"
#include "scenarios/megatron_flags.h"
#include "scenarios/megatron_import.h"
#include "scenarios/torchtitan_import.h"
#include "sim/io.h"
#include "tools/verbs/verb.h"

namespace parasim {
namespace {

struct Options {
  std::string format;  // megatron | torchtitan
  std::string file;
  std::string gpu;
  int nodes = 0;
  int gpus_per_node = 0;
  int nvlink_domain = 0;
  int64_t vocab = 0;
  std::string out;
  bool flags = false;  // list the flag table instead
};

struct Result {
  std::string format, file, out;
  ImportedScenario s;
  bool flags = false;
};

// --flags: the table, one row a line.
std::string FlagTable() {
  std::string out;
  for (const MegatronFlag& f : MegatronFlags()) {
    out += fmt::format("{:<52} {:<12} {}\n", f.name, FlagUseName(f.use), f.why);
  }
  return out;
}

StatusOr<Result> Run(const Options& o, const VerbContext&) {
  Result res{.format = o.format, .file = o.file, .out = o.out, .flags = o.flags};
  if (o.flags) return res;
  if (o.file.empty() && (o.format == "megatron" || o.format == "torchtitan")) {
    return InvalidArgument(
        fmt::format("file:1:1: error: import {}: give the file to import", o.format));
  }
  if (o.format != "megatron" && o.format != "torchtitan") {
    return InvalidArgument(fmt::format(
        "format:1:1: error: import: unknown format '{}'; expected megatron (a Megatron-LM "
        "model_config.yaml, launch script or flag list) or torchtitan (a job config .toml)",
        o.format));
  }
  PARASIM_ASSIGN_OR_RETURN(Catalogs cat, LoadCatalogs());
  const ImportOptions io{.gpu = o.gpu,
                         .nodes = o.nodes,
                         .gpus_per_node = o.gpus_per_node,
                         .nvlink_domain = o.nvlink_domain,
                         .vocab = o.vocab};
  if (o.format == "megatron") {
    PARASIM_ASSIGN_OR_RETURN(MegatronArgs args, ReadMegatronArgs(o.file));
    PARASIM_ASSIGN_OR_RETURN(res.s, ImportMegatron(args, io, cat));
  } else {
    PARASIM_ASSIGN_OR_RETURN(res.s, ImportTorchtitanFile(o.file, io, cat));
  }
  if (!o.out.empty()) PARASIM_RETURN_IF_ERROR(WriteFileAtomic(o.out, res.s.yaml));
  return res;
}

Json ToJson(const Result& r) {
  Json j = Json::Object();
  if (r.flags) {
    Json rows = Json::Array();
    for (const MegatronFlag& f : MegatronFlags()) {
      Json row = Json::Object();
      row.Set("flag", std::string(f.name)).Set("use", std::string(FlagUseName(f.use)));
      rows.Push(row.Set("why", std::string(f.why)));
    }
    return j.Set("flags", rows);
  }
  Json keys = Json::Array(), nm = Json::Array(), inert = Json::Array();
  for (const std::string& k : r.s.keys) keys.Push(k);
  for (const UnappliedFlag& f : r.s.not_modelled) {
    Json o = Json::Object();
    o.Set("flag", f.flag).Set("value", f.value).Set("why", f.why).Set("at", f.at);
    nm.Push(o);
  }
  for (const std::string& f : r.s.no_effect) inert.Push(f);
  j.Set("format", r.format).Set("file", r.file).Set("out", r.out);
  j.Set("flags_read", r.s.flags).Set("mapped", r.s.mapped);
  j.Set("keys", keys).Set("not_modelled", nm).Set("no_effect", inert);
  return j.Set("scenario", r.s.yaml);
}

std::string ToText(const Result& r) {
  if (r.flags) return FlagTable();
  if (r.out.empty()) return r.s.yaml;
  if (r.format == "torchtitan") {
    // A config's keys are not counted as flags (the scenario's comments name each source).
    return fmt::format("wrote {}: {} keys from the torchtitan config ({} not modelled)\n", r.out,
                       r.s.keys.size(), r.s.not_modelled.size());
  }
  return fmt::format(
      "wrote {}: {} keys from {} flags ({} mapped, {} not modelled, {} with no "
      "effect)\n",
      r.out, r.s.keys.size(), r.s.flags, r.s.mapped, r.s.not_modelled.size(), r.s.no_effect.size());
}

}  // namespace

Verb ImportVerb() {
  using O = Options;
  return MakeVerb<O, Result>({
      .name = "import",
      .help = "write a scenario from a Megatron-LM launch configuration or a torchtitan config",
      .flags = {Arg(&O::format, "format", "megatron or torchtitan").Required(),
                Arg(&O::file, "file",
                    "megatron: a functional-test model_config.yaml, a launch script or a file of "
                    "--flag value pairs; torchtitan: a job config .toml"),
                Opt(&O::gpu, "--gpu", "the cluster's GPU (catalog id, e.g. h100-sxm5-80gb)"),
                Opt(&O::nodes, "--nodes", "nodes (default: the launcher's --nnodes, else 1)")
                    .Range(0, 1 << 24),
                Opt(&O::gpus_per_node, "--gpus-per-node",
                    "GPUs per node (default: the launcher's, else the GPU's server)")
                    .Range(0, 1024),
                Opt(&O::nvlink_domain, "--nvlink-domain",
                    "GPUs sharing one NVLink fabric (default: NVLINK_DOMAIN_SIZE, else a node)")
                    .Range(0, 1 << 20),
                Opt(&O::vocab, "--vocab",
                    "the vocabulary, where the arguments leave it to a tokenizer file")
                    .Range(0, 67108864),
                Opt(&O::out, "--out", "write the scenario to FILE (default: stdout)").Output(),
                Opt(&O::flags, "--flags",
                    "list the Megatron-LM flags parasim knows and what each maps to"),
                JsonFlag<O>()},
      .run = Run,
      .json = ToJson,
      .text = ToText,
  });
}

}  // namespace parasim
