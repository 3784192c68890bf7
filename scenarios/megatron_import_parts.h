// The parts of `parasim import megatron` (scenarios/megatron_import.h), internal to its
// library: one function per group of flags, each writing its keys through the context.
#pragma once

#include <string>
#include <vector>

#include "scenarios/megatron_import.h"
#include "scenarios/megatron_reader.h"
#include "scenarios/scenario_writer.h"

namespace parasim::megatron_import {

// The environment variable sizing PyTorch's cuBLAS workspace (training.blas_workspace).
inline constexpr const char* kBlasWorkspaceEnv = "CUBLAS_WORKSPACE_CONFIG";

struct Context {
  const FlagReader& r;
  const ImportOptions& o;
  const Catalogs& cat;
  int gpus_per_node = 8;  // the cluster's
  ScenarioWriter w;
  std::vector<UnappliedFlag> not_modelled;  // mapped flags whose value parasim cannot express
  std::vector<std::string> used;            // flags the mapping read

  // Sets `key` from `flag` (its text and place go into the comment and the error map).
  void Set(const std::string& key, const std::string& value, const std::string& flag) {
    Use(flag);
    w.Set(key, value, r.Text(flag), r.At(flag));
  }
  // Sets `key` from a default or a derivation: `from` is the comment, `flag` (may be "") the
  // flag whose place an error points at.
  void Derived(const std::string& key, const std::string& value, const std::string& from,
               const std::string& flag = "") {
    if (!flag.empty()) Use(flag);
    w.Set(key, value, from, flag.empty() ? "" : r.At(flag));
  }
  // A switch flag: `key` is `on` where `flag` is given (the comment names it), else `off`, with
  // `otherwise` (Megatron-LM's default) as the comment.
  void Switch(const std::string& key, const std::string& flag, const std::string& on,
              const std::string& off, const std::string& otherwise) {
    const bool given = r.Has(flag);
    Derived(key, given ? on : off, given ? flag : otherwise, given ? flag : "");
  }
  void Use(const std::string& flag) {
    if (r.Has(flag)) used.push_back(flag);
  }
  // A mapped flag whose value parasim cannot express: listed with why.
  void NotModelled(const std::string& flag, const std::string& why) {
    Use(flag);
    const MegatronArg* a = r.Get(flag);
    std::string value;
    for (const std::string& v : a ? a->values : std::vector<std::string>{}) {
      value += (value.empty() ? "" : " ") + v;
    }
    not_modelled.push_back({flag, value, why, r.At(flag)});
  }
};

// The flag that gives a hybrid layer pattern (--hybrid-layer-pattern or its deprecated
// --hybrid-override-pattern), or null.
const char* HybridFlag(const FlagReader& r);
// The program a launch script runs: one that trains something other than a decoder stack
// (BERT, T5, a vision-language or multimodal model, GRPO) or runs inference is refused at its
// file:line:col (megatron_import_model.cc).
Status CheckProgram(const MegatronArgs& args);
// Model shape, vocabulary, MoE, MLA and MTP (megatron_import_model.cc).
Status ReadModel(Context& c, int tp);
// Precision, optimizer, recompute and kernels (megatron_import_training.cc).
Status ReadTraining(Context& c);
// ZeRO from --use-distributed-optimizer or an FSDP flag; Torch FSDP2's limits checked
// (megatron_import_training.cc).
Status ReadSharding(Context& c, int64_t pp, int64_t ep);
// At most one virtual-stage flag (megatron_import_training.cc).
Status CheckVirtualFlags(const FlagReader& r);
// Interleaving's checks and micro-batch group, once vp is known (megatron_import_training.cc).
Status ReadInterleaving(Context& c, int64_t pp, int64_t vp);
// --tp-comm-overlap's conditions (megatron_import_training.cc).
Status CheckTpOverlap(const FlagReader& r, int64_t tp);
// Megatron-Core's limits on --overlap-moe-expert-parallel-comm (after the pipeline is read).
Status CheckEpOverlap(Context& c);
// Parallel sizes, ZeRO, overlap and the pipeline split (megatron_import.cc); `gpus` the
// cluster's.
Status ReadParallel(Context& c, int64_t gpus, int layers, int64_t* dp);
// --max-position-embeddings and --context-parallel-size against the sequence, as Megatron-LM
// checks them.
Status CheckSequence(const FlagReader& r, int64_t seq);

}  // namespace parasim::megatron_import
