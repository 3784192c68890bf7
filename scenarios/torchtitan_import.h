// `parasim import torchtitan`: a torchtitan job config (TOML, as under
// torchtitan/models/*/train_configs/*.toml) as a scenario, each line commented with the key it
// came from ("[parallelism] tensor_parallel_degree = 2"):
// - [model] name and flavor -> a catalog model (llama3 8B -> llama3-8b, ...);
// - [training] local_batch_size (or batch_size), global_batch_size, seq_len, steps,
//   mixed_precision_param and mixed_precision_reduce -> training keys;
// - [parallelism] (or the older [training] and [experimental] keys) data_parallel_shard_degree
//   and data_parallel_replicate_degree (FSDP2: ZeRO 3 with per-parameter copies; DDP: ZeRO 0),
//   tensor, pipeline (and its schedule), context and expert degrees;
// - [activation_checkpoint] mode none / full / selective with selective_ac_option "op"
//   (`recompute: selective-op`) or N (every N-th layer: `recompute: full` with recompute_layers
//   at layers / N, as tests/validation/regimes/torchtitan-a100-fsdp2.yaml states them);
// - [float8] (or [model] converters = ["float8"]) -> precision fp8.
// Keys it does not read are listed at the end. TOML errors name file:line:col.
//
//   PARASIM_ASSIGN_OR_RETURN(ImportedScenario s,
//                            ImportTorchtitanFile("llama3_8b.toml", {.gpu = "h100-sxm5-80gb",
//                                                                    .nodes = 8}, cat));
#pragma once

#include <string>

#include "scenarios/catalogs.h"
#include "scenarios/megatron_import.h"
#include "sim/status.h"

namespace parasim {

// `text` is the TOML document; `file` names it in messages.
StatusOr<ImportedScenario> ImportTorchtitan(const std::string& file, const std::string& text,
                                            const ImportOptions& options, const Catalogs& catalogs);
StatusOr<ImportedScenario> ImportTorchtitanFile(const std::string& path,
                                                const ImportOptions& options,
                                                const Catalogs& catalogs);

}  // namespace parasim
