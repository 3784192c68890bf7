// `parasim import megatron`: a Megatron-LM launch configuration (scenarios/megatron_args.h) as
// a scenario. Every flag of the flag table (scenarios/megatron_flags.h) that parasim models is
// mapped onto scenario keys, each line of the YAML written carries a comment naming the flag(s)
// it came from, and the flags that change time or memory in ways parasim does not model are
// listed at its end with why. Unknown flags, flags of models parasim cannot build, and flags
// that contradict each other (--fp16 with --bf16, sizes that do not divide the GPUs, a
// pipeline layout whose stages disagree with --pipeline-model-parallel-size) are errors at the
// flag's file:line:col. The scenario is loaded before it is returned: an error the loader finds
// is reported at the flag that set the key.
//
//   PARASIM_ASSIGN_OR_RETURN(MegatronArgs a, ReadMegatronArgs("model_config.yaml"));
//   PARASIM_ASSIGN_OR_RETURN(ImportedScenario s,
//                            ImportMegatron(a, {.gpu = "h100-sxm5-80gb", .nodes = 4}, cat));
//   WriteFileAtomic("scenario.yaml", s.yaml);
//
// What the mapping assumes, where Megatron-LM's defaults decide (docs/SCENARIO.md, "Importing
// a launch configuration"): without --overlap-grad-reduce the data-parallel gradients are
// reduced after the backward; under --bf16 gradients are accumulated in fp32; without
// --attention-backend, Transformer Engine's fused attention (flash); the vocabulary is padded
// to a multiple of --make-vocab-size-divisible-by (128) x TP, as Megatron-LM pads it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "scenarios/catalogs.h"
#include "scenarios/megatron_args.h"
#include "scenarios/scenario.h"
#include "scenarios/scenario_writer.h"
#include "sim/status.h"

namespace parasim {

struct ImportOptions {
  std::string gpu;        // catalog GPU id (required)
  int nodes = 0;          // 0: the launcher's (torchrun --nnodes), else 1
  int gpus_per_node = 0;  // 0: the launcher's, else the GPU's server (catalog)
  int nvlink_domain = 0;  // 0: the environment's NVLINK_DOMAIN_SIZE, else the server's
  int64_t vocab = 0;      // the vocabulary when the flags do not fix it (a tokenizer file)
  std::string name;       // the scenario's name; "" = from the file
  // Where `gpu` was given, for an error about it: "" = the command line's --gpu option.
  std::string gpu_at;
};

// A flag read but not applied: listed at the end of the scenario.
struct UnappliedFlag {
  std::string flag;   // "--deterministic-mode"
  std::string value;  // "" for a switch
  std::string why;
  std::string at;  // file:line:col
};

struct ImportedScenario {
  std::string yaml;               // the scenario, ready for `parasim run`
  std::vector<std::string> keys;  // the dotted keys it sets, in order
  std::vector<UnappliedFlag> not_modelled;
  std::vector<std::string> no_effect;  // flags that change neither time nor memory
  int flags = 0;                       // flags read
  int mapped = 0;                      // of which mapped onto keys
  Scenario scenario;                   // as loaded
};

// What a launcher says of the cluster: torchrun's --nnodes and --nproc-per-node (0 = not
// given) and the job's environment (NVLINK_DOMAIN_SIZE).
struct LauncherShape {
  int nodes = 0;
  int gpus_per_node = 0;
  std::vector<std::pair<std::string, std::string>> env;
};

// The cluster block of an imported scenario: the options' GPU (an error names `file` when it is
// missing or unknown), their nodes and GPUs per node, else the launcher's, else one node of the
// GPU's server; the server's fabrics (catalog). Gives the GPUs and GPUs per node.
Status WriteImportCluster(const ImportOptions& o, const LauncherShape& launcher,
                          const std::string& file, const Catalogs& catalogs, ScenarioWriter* w,
                          int64_t* gpus, int* gpus_per_node);

// Renders an importer's keys under `header` into out->yaml and out->keys and loads them into
// out->scenario (parasim import torchtitan shares it): an error the loader reports at a line of
// the YAML is told at the place (file:line:col) of the origin that set that line.
Status FinishImport(const ScenarioWriter& w, const std::string& header, const std::string& file,
                    const Catalogs& catalogs, ImportedScenario* out);

StatusOr<ImportedScenario> ImportMegatron(const MegatronArgs& args, const ImportOptions& options,
                                          const Catalogs& catalogs);

}  // namespace parasim
