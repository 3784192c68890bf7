// The other direction of `parasim import`: a scenario's layout as the Megatron-LM flags and the
// torchtitan config keys that launch it (`parasim run --launch megatron|torchtitan`, and for
// `sweep`, its best layout). Each key maps to the flags `parasim import megatron` reads back
// into the same key; what Megatron-LM (or torchtitan) cannot be told is listed with why, never
// dropped (a ZB or DualPipe schedule, a fabric, a routing statistic). The cluster goes into the
// launcher's line (torchrun --nnodes, --nproc-per-node).
//
//   LaunchConfig l = ExportLaunch(scenario);
//   fmt::print("{}", MegatronScript(l));   // torchrun ... pretrain_gpt.py \ --num-layers 126 ...
//
// Importing the flags again (with the scenario's cluster) gives back the scenario's keys, so
// `run --json` predicts the same step time and peak memory; scenarios/launch_export_test.cc and
// tests/cli_test.cc check it on every example scenario.
#pragma once

#include <string>
#include <vector>

#include "strategies/plan.h"

namespace parasim {

// A key the launch cannot carry: its dotted path, its value as YAML (for `--set`), and why.
struct NotExported {
  std::string key;
  std::string value;
  std::string why;
};

struct LaunchConfig {
  int nodes = 1;
  int gpus_per_node = 8;
  std::string script = "pretrain_gpt.py";  // Megatron-LM's entry point (pretrain_hybrid.py)
  std::vector<std::string> megatron;       // tokens: "--num-layers", "126", "--bf16", ...
  std::vector<std::string> torchtitan;  // TOML lines, tables first: "[training]", "seq_len = 8192"
  std::vector<NotExported> megatron_missing, torchtitan_missing;
};

LaunchConfig ExportLaunch(const Scenario& s);
// The torchtitan half of ExportLaunch (launch_export_torchtitan.cc): l->torchtitan and
// l->torchtitan_missing.
void ExportTorchtitan(const Scenario& s, LaunchConfig* l);

// The Megatron-LM launch line: torchrun with the cluster's shape, then the flags, one per line
// with backslash continuations (a script `parasim import megatron` reads back).
std::string MegatronScript(const LaunchConfig& l);
// The torchtitan job config (TOML).
std::string TorchtitanToml(const LaunchConfig& l);

}  // namespace parasim
