// The precision, optimizer, recompute and kernel flags of `parasim import megatron`
// (scenarios/megatron_import.h).
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <regex>
#include <set>

#include "scenarios/megatron_import_parts.h"

namespace parasim::megatron_import {
namespace {

// FP8 weights, gathered as FP8 (megatron/training/arguments.py, validate_args): only beside the
// distributed optimizer or an FSDP, and turned off under --use-torch-fsdp2 with Transformer
// Engine 2 (it gathers bf16 there).
Status ReadFp8ParamGather(Context& c) {
  const FlagReader& r = c.r;
  const std::string f = "--fp8-param-gather";
  if (!r.Has(f)) return Status::Ok();
  if (r.Has("--use-torch-fsdp2")) {
    c.Derived("training.fp8_param_gather", "false",
              "--use-torch-fsdp2: Megatron-LM turns --fp8-param-gather off under FSDP2 with "
              "Transformer Engine 2 and gathers bf16",
              f);
    return Status::Ok();
  }
  if (!r.Has("--use-distributed-optimizer") && !r.Has("--use-megatron-fsdp")) {
    return r.Error(f,
                   "needs --use-distributed-optimizer, --use-torch-fsdp2 or --use-megatron-fsdp "
                   "(Megatron-LM's validate_args)");
  }
  c.Set("training.fp8_param_gather", "true", f);
  return Status::Ok();
}

Status ReadPrecision(Context& c) {
  const FlagReader& r = c.r;
  const bool bf16 = r.Has("--bf16"), fp16 = r.Has("--fp16");
  if (bf16 && fp16) {
    return r.Error("--fp16",
                   fmt::format("contradicts --bf16 (at {}): give one of them", r.At("--bf16")));
  }
  const std::string base = bf16 ? "bf16" : (fp16 ? "fp16" : "fp32");
  const std::string base_flag = bf16 ? "--bf16" : (fp16 ? "--fp16" : "");
  if (r.Has("--fp8-format")) {
    PARASIM_RETURN_IF_ERROR(r.Choice("--fp8-format", {"e4m3", "hybrid"}).status());
    PARASIM_ASSIGN_OR_RETURN(
        std::string recipe,
        r.Choice("--fp8-recipe", {"delayed", "tensorwise", "blockwise", "mxfp8"}, "delayed"));
    c.Set("training.precision", "fp8", "--fp8-format");
    // Delayed and current (tensorwise) scaling both keep one scale per tensor.
    const std::string mapped = recipe == "delayed" ? "tensorwise" : recipe;
    c.Derived("training.fp8_recipe", mapped,
              r.Has("--fp8-recipe") ? r.Text("--fp8-recipe")
                                    : "Megatron-LM's default recipe (delayed: a scale per tensor)",
              "--fp8-recipe");
    c.Use(base_flag);
    PARASIM_RETURN_IF_ERROR(ReadFp8ParamGather(c));
  } else {
    c.Use("--fp8-recipe");
    c.Use("--fp8-param-gather");  // FP8 weights need FP8 GEMMs: no effect without them
    c.Derived("training.precision", base,
              base_flag.empty() ? "no --bf16 or --fp16: Megatron-LM trains in fp32" : base_flag,
              base_flag);
  }
  // Gradients: fp32 main gradients under --bf16 (arguments.py forces the fp32 accumulation),
  // the parameters' dtype under --fp16 unless asked for fp32.
  std::string grad = bf16 ? "fp32" : base;
  std::string from = bf16 ? "--bf16: Megatron-LM accumulates and reduces gradients in fp32"
                          : (fp16 ? "--fp16: gradients in the parameters' fp16" : "fp32 training");
  std::string flag = base_flag;
  for (const char* f : {"--accumulate-allreduce-grads-in-fp32", "--grad-reduce-in-bf16"}) {
    if (r.Has(f)) {
      grad = std::string(f) == "--grad-reduce-in-bf16" ? "bf16" : "fp32";
      from = f;
      flag = f;
    }
  }
  if (r.Has("--main-grads-dtype")) {
    PARASIM_ASSIGN_OR_RETURN(std::string g, r.Choice("--main-grads-dtype", {"fp32", "bf16"}));
    if (flag != "--grad-reduce-in-bf16") {
      grad = g;
      from = r.Text("--main-grads-dtype");
      flag = "--main-grads-dtype";
    }
    c.Use("--main-grads-dtype");
  }
  c.Derived("training.grad_dtype", grad, from, flag);
  return Status::Ok();
}

// The precision-aware optimizer's master copy (optimizer_config.py): fp16 where
// --main-params-dtype says so; else, beside bf16 weights and no FP8 recipe but delayed scaling,
// Transformer Engine's FusedAdam keeps the fp32 master as its low 16 bits (store_param_remainders,
// on by default, no flag); else Megatron-Core's own fp32 master.
Status ReadMasterWeights(Context& c) {
  const FlagReader& r = c.r;
  if (!r.Has("--bf16") && !r.Has("--fp16")) {
    c.Use("--main-params-dtype");
    return Status::Ok();
  }
  PARASIM_ASSIGN_OR_RETURN(std::string main,
                           r.Choice("--main-params-dtype", {"fp32", "fp16"}, "fp32"));
  if (main == "fp16") {
    c.Set("training.master_weights", "fp16", "--main-params-dtype");
    return Status::Ok();
  }
  c.Use("--main-params-dtype");
  PARASIM_ASSIGN_OR_RETURN(
      std::string recipe,
      r.Choice("--fp8-recipe", {"delayed", "tensorwise", "blockwise", "mxfp8"}, "delayed"));
  // OptimizerConfig takes --fp8-recipe (default delayed) whether or not --fp8-format turns FP8
  // on (training.py get_megatron_optimizer_config), so the recipe alone decides.
  // FP8 weights (--fp8-param-gather, kept where Megatron-LM keeps it) have no bf16 to sit beside.
  const bool fp8_weights =
      r.Has("--fp8-format") && r.Has("--fp8-param-gather") && !r.Has("--use-torch-fsdp2");
  if (r.Has("--bf16") && recipe == "delayed" && !fp8_weights) {
    c.Derived("training.master_weights", "remainder",
              "--use-precision-aware-optimizer with --bf16: the fp32 master's low 16 bits beside "
              "the bf16 weights (Transformer Engine's store_param_remainders)",
              "--use-precision-aware-optimizer");
  }
  return Status::Ok();
}

Status ReadOptimizer(Context& c) {
  const FlagReader& r = c.r;
  PARASIM_ASSIGN_OR_RETURN(std::string opt,
                           r.Choice("--optimizer", {"adam", "sgd", "muon", "dist_muon"}, "adam"));
  if (opt == "adam" || opt == "sgd") {
    c.Derived("training.optimizer", opt,
              r.Has("--optimizer") ? r.Text("--optimizer") : "Megatron-LM's default (Adam)",
              "--optimizer");
  } else {
    c.Derived("training.optimizer", "adam", "Adam's states in place of Muon's (not modelled)");
    c.NotModelled("--optimizer",
                  "Muon (one momentum buffer, Newton-Schulz iterations on each "
                  "matrix): parasim prices Adam's states and step");
  }
  // Megatron-Core hands the moments' types (and the master's) to the optimizer only under
  // --use-precision-aware-optimizer (optimizer/__init__.py); without it OptimizerConfig asserts
  // that all four are fp32 (optimizer_config.py __post_init__), and with it that the optimizer
  // is Adam. An fp32 one without the flag changes nothing and is listed so.
  if (!r.Has("--use-precision-aware-optimizer")) {
    for (const char* f :
         {"--main-grads-dtype", "--main-params-dtype", "--exp-avg-dtype", "--exp-avg-sq-dtype"}) {
      const MegatronArg* a = r.Get(f);
      if (a != nullptr && a->values.size() == 1 && a->values[0] != "fp32") {
        return r.Error(f,
                       fmt::format("{} can only be fp32 without "
                                   "--use-precision-aware-optimizer (Megatron-Core's "
                                   "OptimizerConfig asserts it): add that flag, or drop this one",
                                   a->values[0]));
      }
    }
    return Status::Ok();
  }
  if (opt != "adam") {
    return r.Error("--use-precision-aware-optimizer",
                   fmt::format("supports Adam only (Megatron-Core's OptimizerConfig asserts it), "
                               "not --optimizer {}",
                               opt));
  }
  if (!r.Has("--use-distributed-optimizer") && !r.Has("--use-megatron-fsdp")) {
    // get_megatron_optimizer raises it (megatron/core/optimizer/__init__.py).
    return r.Error("--use-precision-aware-optimizer",
                   "supported with the distributed optimizer only (Megatron-Core raises it): add "
                   "--use-distributed-optimizer");
  }
  c.Use("--use-precision-aware-optimizer");
  std::string moments;
  for (const char* f : {"--exp-avg-dtype", "--exp-avg-sq-dtype"}) {
    if (!r.Has(f)) continue;
    PARASIM_ASSIGN_OR_RETURN(std::string m, r.Choice(f, {"fp32", "fp16", "bf16", "fp8"}));
    if (m != "fp32" && m != "bf16") {
      c.NotModelled(f, fmt::format("Adam moments in {}: parasim keeps them in fp32 or bf16", m));
      continue;
    }
    if (!moments.empty() && m != moments) {
      c.NotModelled(f, "the two moments in different types: parasim keeps both in one");
      continue;
    }
    moments = m;
    c.Set("training.moments", m, f);
  }
  return ReadMasterWeights(c);
}

// --recompute-modules: Megatron-LM's selective recompute of the attention core, or
// DeepSeek-V3's set (norms, MLA up-projections, the experts' activation).
Status ReadModules(Context& c) {
  const FlagReader& r = c.r;
  const MegatronArg* m = r.Get("--recompute-modules");
  std::set<std::string> mods = {"core_attn"};  // the default (transformer_config.py)
  if (m) mods = {m->values.begin(), m->values.end()};
  const std::set<std::string> deepseek = {"layernorm", "mla_up_proj", "moe_act", "mlp"};
  if (mods == std::set<std::string>{"core_attn"}) {
    c.Derived("training.recompute", "selective",
              m ? r.Text("--recompute-modules") : "--recompute-granularity selective",
              m ? "--recompute-modules" : "--recompute-granularity");
    return Status::Ok();
  }
  const bool subset = std::all_of(mods.begin(), mods.end(),
                                  [&](const std::string& s) { return deepseek.count(s) > 0; });
  if (subset && mods.count("moe_act") > 0) {
    c.Set("training.recompute", "deepseek", "--recompute-modules");
    if (mods.size() < 3 || mods.count("mlp") > 0) {
      c.NotModelled("--recompute-modules",
                    "this set of modules: parasim's `deepseek` recomputes the norms, the MLA "
                    "up-projections and the experts' activation");
    }
    return Status::Ok();
  }
  c.Derived("training.recompute", "none", "recompute modules parasim has no mode for");
  c.NotModelled("--recompute-modules",
                "this set of modules: parasim recomputes the attention core (selective), "
                "DeepSeek-V3's set (deepseek) or whole layers (full)");
  return Status::Ok();
}

Status ReadRecompute(Context& c) {
  const FlagReader& r = c.r;
  std::string gran;
  if (r.Has("--recompute-granularity")) {
    PARASIM_ASSIGN_OR_RETURN(gran, r.Choice("--recompute-granularity", {"full", "selective"}));
    c.Use("--recompute-granularity");
  } else if (r.Has("--recompute-activations")) {
    gran = "selective";
    c.Use("--recompute-activations");
  }
  if (gran.empty()) {
    c.Derived("training.recompute", "none", "no --recompute-granularity");
    return Status::Ok();
  }
  if (gran == "selective") return ReadModules(c);
  c.Use("--recompute-modules");
  c.Set("training.recompute", "full", "--recompute-granularity");
  PARASIM_ASSIGN_OR_RETURN(std::string method,
                           r.Choice("--recompute-method", {"uniform", "block"}, "uniform"));
  PARASIM_ASSIGN_OR_RETURN(int64_t n, r.Int("--recompute-num-layers", 0, 1048576, 1));
  c.Use("--recompute-method");
  if (method == "block") {
    c.Set("training.recompute_layers", std::to_string(n), "--recompute-num-layers");
  } else if (n > 1) {
    c.NotModelled("--recompute-num-layers",
                  fmt::format("uniform blocks of {} layers (one input kept per block): parasim "
                              "keeps each layer's input",
                              n));
  } else {
    c.Use("--recompute-num-layers");
  }
  return Status::Ok();
}

// CUBLAS_WORKSPACE_CONFIG=:SIZE:COUNT[:SIZE:COUNT...] sizes PyTorch's cuBLAS workspace per
// handle and stream: the sum of SIZE KiB x COUNT over the pairs (aten/src/ATen/cuda/
// CublasHandlePool.cpp, parseChosenWorkspaceSize; a value without a pair leaves its default).
Status ReadBlasWorkspace(Context& c) {
  for (const auto& [k, v] : c.r.args().env) {
    if (k != kBlasWorkspaceEnv) continue;
    static const std::regex kPair(":([0-9]+):([0-9]+)");
    double kib = 0;
    for (auto it = std::sregex_iterator(v.begin(), v.end(), kPair); it != std::sregex_iterator();
         ++it) {
      kib += std::stod((*it)[1].str()) * std::stod((*it)[2].str());
    }
    if (kib > 0) {
      const double mib = kib / 1024;
      c.Derived(
          "training.blas_workspace",
          mib == std::floor(mib) ? fmt::format("{:.0f}MiB", mib) : fmt::format("{:.0f}KiB", kib),
          fmt::format("{}={}: PyTorch's cuBLAS workspace per handle and stream", k, v));
    }
  }
  return Status::Ok();
}

Status ReadKernels(Context& c) {
  const FlagReader& r = c.r;
  PARASIM_ASSIGN_OR_RETURN(
      std::string impl,
      r.Choice("--transformer-impl", {"transformer_engine", "local", "inference_optimized"},
               "transformer_engine"));
  PARASIM_ASSIGN_OR_RETURN(
      std::string backend,
      r.Choice("--attention-backend", {"flash", "fused", "unfused", "local", "auto"}, "auto"));
  c.Use("--transformer-impl");
  std::string attention = "flash", from, flag = "--attention-backend";
  if (backend == "unfused" || backend == "local") {
    attention = "standard";
    from = r.Text("--attention-backend") + ": the softmax materialised";
  } else if (r.Has("--use-flash-attn") || r.Has("--attention-backend")) {
    from = r.Has("--attention-backend") ? r.Text("--attention-backend") : "--use-flash-attn";
    flag = r.Has("--attention-backend") ? flag : "--use-flash-attn";
  } else if (impl == "local") {
    attention = "standard";
    from = "--transformer-impl local: Megatron-Core's unfused attention";
    flag = "--transformer-impl";
  } else {
    from = "Megatron-LM's default backend (auto): Transformer Engine's fused attention";
    flag = "";
  }
  c.Use("--use-flash-attn");
  c.Derived("training.attention", attention, from, flag);
  if (r.Has("--attention-dropout")) {
    PARASIM_ASSIGN_OR_RETURN(double p, r.Number("--attention-dropout", 0, 0.999));
    c.Set("training.attention_dropout", fmt::format("{}", p), "--attention-dropout");
  } else {
    c.Derived("training.attention_dropout", "0.1",
              "Megatron-Core's default (TransformerConfig.attention_dropout)");
  }
  c.Switch("training.cross_entropy", "--cross-entropy-loss-fusion", "fused", "unfused",
           "Megatron-LM's default: the loss pass by pass");
  c.Switch("training.grad_accumulation", "--no-gradient-accumulation-fusion", "separate", "fused",
           "Megatron-LM's default: the weight-gradient GEMM accumulates in place");
  if (r.Has("--deterministic-mode")) {
    c.Set("training.deterministic", "true", "--deterministic-mode");
  }
  if (impl == "local") {
    c.Derived("training.transformer_engine", "false",
              "--transformer-impl local: Megatron-Core's own modules, no Transformer Engine",
              "--transformer-impl");
  }
  return ReadBlasWorkspace(c);
}

// Torch FSDP2's limits (megatron/training/arguments.py, validate_args under use_torch_fsdp2):
// no pipeline or expert parallelism, not with the distributed optimizer, untied embeddings, no
// fp16, no gradient-accumulation fusion; and --overlap-param-gather only with the distributed
// optimizer or Megatron-FSDP (FSDP2 prefetches its own gathers).
Status CheckTorchFsdp2(const FlagReader& r, int64_t pp, int64_t ep) {
  const std::string f = "--use-torch-fsdp2";
  if (r.Has("--overlap-param-gather") && !r.Has("--use-distributed-optimizer") &&
      !r.Has("--use-megatron-fsdp") &&
      !(r.Has("--optimizer") && r.Value("--optimizer") == "dist_muon")) {
    return r.Error("--overlap-param-gather",
                   "without --use-distributed-optimizer or --use-megatron-fsdp: Megatron-LM "
                   "gathers parameters ahead only for its own sharded optimizer");
  }
  if (!r.Has(f)) return Status::Ok();
  if (pp > 1) {
    return r.Error(f, fmt::format("with --pipeline-model-parallel-size {}: Megatron-LM runs "
                                  "Torch FSDP2 without pipeline parallelism only (pp 1)",
                                  pp));
  }
  if (ep > 1) {
    return r.Error(f, fmt::format("with --expert-model-parallel-size {}: Megatron-LM runs "
                                  "Torch FSDP2 without expert parallelism only (EP 1)",
                                  ep));
  }
  if (r.Has("--use-distributed-optimizer")) {
    return r.Error(f,
                   "with --use-distributed-optimizer: Megatron-LM refuses the two together "
                   "(FSDP2 shards the optimizer itself); give one of them");
  }
  if (!r.Has("--untie-embeddings-and-output-weights")) {
    return r.Error(f,
                   "without --untie-embeddings-and-output-weights: Megatron-LM runs Torch "
                   "FSDP2 with untied embeddings only");
  }
  if (r.Has("--fp16")) return r.Error(f, "with --fp16: Megatron-LM runs Torch FSDP2 in bf16 only");
  if (!r.Has("--no-gradient-accumulation-fusion")) {
    return r.Error(f,
                   "without --no-gradient-accumulation-fusion: Megatron-LM refuses Torch "
                   "FSDP2 with gradient-accumulation fusion (its default)");
  }
  return Status::Ok();
}

}  // namespace

Status ReadSharding(Context& c, int64_t pp, int64_t ep) {
  const FlagReader& r = c.r;
  PARASIM_RETURN_IF_ERROR(CheckTorchFsdp2(r, pp, ep));
  if (r.Has("--use-megatron-fsdp")) {
    PARASIM_ASSIGN_OR_RETURN(
        std::string s,
        r.Choice("--data-parallel-sharding-strategy",
                 {"no_shard", "optim", "optim_grads", "optim_grads_params"}, "optim_grads_params"));
    const int zero = s == "no_shard" ? 0 : s == "optim" ? 1 : s == "optim_grads" ? 2 : 3;
    c.Use("--data-parallel-sharding-strategy");
    c.Derived("parallelism.zero", std::to_string(zero),
              "--use-megatron-fsdp " + (r.Has("--data-parallel-sharding-strategy")
                                            ? r.Text("--data-parallel-sharding-strategy")
                                            : std::string("(optim_grads_params)")),
              "--use-megatron-fsdp");
    if (zero == 3) {
      c.Set("parallelism.zero3_copies", "false", "--use-megatron-fsdp");
    }
    c.Use("--use-distributed-optimizer");
  } else if (r.Has("--use-torch-fsdp2")) {
    c.Set("parallelism.zero", "3", "--use-torch-fsdp2");
    c.Use("--use-distributed-optimizer");
  } else if (r.Has("--use-distributed-optimizer")) {
    c.Set("parallelism.zero", "1", "--use-distributed-optimizer");
  } else if (r.Has("--optimizer") && r.Value("--optimizer") == "dist_muon") {
    // Megatron-LM runs the deprecated dist_muon as Muon with its layer-wise distributed
    // optimizer: each data-parallel rank keeps the states of its share of the layers
    // (megatron/training/arguments.py, validate_args).
    c.Derived("parallelism.zero", "1",
              "--optimizer dist_muon: Megatron-LM's layer-wise distributed optimizer shards the "
              "states over data parallelism",
              "--optimizer");
  } else {
    c.Derived("parallelism.zero", "0",
              "no --use-distributed-optimizer: every rank holds the "
              "optimizer's states");
  }
  return Status::Ok();
}

// Megatron-LM sets at most one of --num-layers-per-virtual-pipeline-stage,
// --num-virtual-stages-per-pipeline-rank and --pipeline-model-parallel-layout
// (megatron/training/arguments.py, validate_args: "No more than one of ...").
Status CheckVirtualFlags(const FlagReader& r) {
  std::vector<std::string> given;
  for (const char* f :
       {"--pipeline-model-parallel-layout", "--num-layers-per-virtual-pipeline-stage",
        "--num-virtual-stages-per-pipeline-rank"}) {
    if (r.Has(f)) given.push_back(f);
  }
  if (given.size() < 2) return Status::Ok();
  return r.Error(given[1], fmt::format("contradicts {} (at {}): Megatron-LM accepts one of "
                                       "--pipeline-model-parallel-layout, "
                                       "--num-layers-per-virtual-pipeline-stage and "
                                       "--num-virtual-stages-per-pipeline-rank",
                                       given[0], r.At(given[0])));
}

// Interleaving: Megatron-LM refuses virtual stages (vp > 1) with one pipeline stage
// (megatron/training/arguments.py, validate_args: "When interleaved schedule is used,
// pipeline-model-parallel size should be greater than 1"). Then
// --microbatch-group-size-per-virtual-pipeline-stage: interleaving's micro-batch group
// (Megatron-Core's default, pp, left unwritten); without virtual stages it changes nothing.
Status ReadInterleaving(Context& c, int64_t pp, int64_t vp) {
  const FlagReader& r = c.r;
  if (vp > 1 && pp < 2) {
    std::string flag = "--pipeline-model-parallel-layout";
    for (const char* f :
         {"--num-layers-per-virtual-pipeline-stage", "--num-virtual-stages-per-pipeline-rank"}) {
      if (r.Has(f)) flag = f;
    }
    if (!r.Has(flag) && HybridFlag(r) != nullptr) flag = HybridFlag(r);
    return r.Error(flag, fmt::format("gives {} virtual stages with --pipeline-model-parallel-size "
                                     "{}: Megatron-LM interleaves over 2 or more pipeline stages "
                                     "only (give pp > 1, or one virtual stage)",
                                     vp, pp));
  }
  const char* flag = "--microbatch-group-size-per-virtual-pipeline-stage";
  if (!r.Has(flag)) return Status::Ok();
  PARASIM_ASSIGN_OR_RETURN(int64_t n, r.Int(flag, 1, int64_t{1} << 30));
  if (vp > 1) {
    c.Set("parallelism.microbatch_group", std::to_string(n), flag);
  } else {
    c.Use(flag);  // read, and without interleaving of no effect
  }
  return Status::Ok();
}

// --tp-comm-overlap needs sequence parallelism, which Megatron-LM turns off at TP 1
// (megatron/training/arguments.py, validate_args: "Tensor parallel communication/GEMM overlap
// can happen only when sequence parallelism is enabled").
Status CheckTpOverlap(const FlagReader& r, int64_t tp) {
  if (!r.Has("--tp-comm-overlap")) return Status::Ok();
  if (!r.Has("--sequence-parallel")) {
    return r.Error("--tp-comm-overlap",
                   "needs --sequence-parallel: Megatron-LM overlaps TP "
                   "communication with GEMMs only under sequence "
                   "parallelism");
  }
  if (tp < 2) {
    return r.Error("--tp-comm-overlap",
                   "with --tensor-model-parallel-size 1: Megatron-LM turns --sequence-parallel "
                   "off at TP 1, and overlaps TP communication only under it (give TP > 1)");
  }
  return Status::Ok();
}

Status ReadTraining(Context& c) {
  PARASIM_RETURN_IF_ERROR(ReadPrecision(c));
  PARASIM_RETURN_IF_ERROR(ReadOptimizer(c));
  PARASIM_RETURN_IF_ERROR(ReadRecompute(c));
  return ReadKernels(c);
}

// Megatron-Core's limits on --overlap-moe-expert-parallel-comm (transformer_config.py,
// __post_init__): virtual stages under a pipeline, no full recompute (nor its method or layer
// count), at most one MTP layer.
Status CheckEpOverlap(Context& c) {
  const FlagReader& r = c.r;
  const std::string f = "--overlap-moe-expert-parallel-comm";
  if (c.w.Get("parallelism.pp") != "" && c.w.Get("parallelism.pp") != "1" &&
      c.w.Get("parallelism.schedule") != "interleaved-1f1b") {
    return r.Error(f,
                   "with --pipeline-model-parallel-size > 1 and no virtual stages: "
                   "Megatron-Core overlaps the experts' all-to-alls under a pipeline only "
                   "with virtual stages (--num-virtual-stages-per-pipeline-rank)");
  }
  for (const char* flag : {"--recompute-method", "--recompute-num-layers"}) {
    if (r.Has(flag)) {
      return r.Error(f,
                     fmt::format("with {}: Megatron-Core refuses full recompute beside it", flag));
    }
  }
  if (r.Has("--recompute-granularity") && r.Value("--recompute-granularity") == "full") {
    return r.Error(f, "with --recompute-granularity full: Megatron-Core refuses the two together");
  }
  if (r.Has("--mtp-num-layers")) {
    PARASIM_ASSIGN_OR_RETURN(int64_t mtp, r.Int("--mtp-num-layers", 0, 16));
    if (mtp > 1) {
      return r.Error(f, fmt::format("with --mtp-num-layers {}: Megatron-Core overlaps at most "
                                    "one MTP layer",
                                    mtp));
    }
  }
  return Status::Ok();
}

// What Megatron-LM asks of the sequence (megatron/training/arguments.py, validate_args):
// --max-position-embeddings is a required argument, whatever the position embedding (unless
// --use-checkpoint-args reads it from the checkpoint first, load_args_from_checkpoint), and at
// least --seq-length; under context parallelism the sequence splits into 2 x cp chunks.
Status CheckSequence(const FlagReader& r, int64_t seq) {
  const char* mp_flag = "--max-position-embeddings";
  if (!r.Has(mp_flag) && !r.Has("--use-checkpoint-args")) {
    return r.Error("--seq-length", fmt::format("{} with no {}: Megatron-LM requires {} (at least "
                                               "the sequence) for every model",
                                               seq, mp_flag, mp_flag));
  }
  // A value the script leaves to a variable it never sets is compared only where the import
  // reads it (learned positions: ReadPositions).
  const MegatronArg* given = r.Get(mp_flag);
  int64_t mp = seq;
  if (given != nullptr && given->values.size() == 1 &&
      given->values[0].find_first_not_of("0123456789") == std::string::npos &&
      !given->values[0].empty()) {
    PARASIM_ASSIGN_OR_RETURN(mp, r.Int(mp_flag, 1, int64_t{1} << 40));
  }
  if (mp < seq) {
    return r.Error(mp_flag, fmt::format("{} is below --seq-length {}: Megatron-LM requires "
                                        "at least the sequence",
                                        mp, seq));
  }
  PARASIM_ASSIGN_OR_RETURN(int64_t cp, r.Int("--context-parallel-size", 1, 65536, 1));
  if (cp > 1 && seq % (2 * cp) != 0) {
    return r.Error("--seq-length",
                   fmt::format("{} is not a multiple of 2 x --context-parallel-size {}: "
                               "Megatron-LM splits each sequence into 2 x cp chunks",
                               seq, cp));
  }
  return Status::Ok();
}

}  // namespace parasim::megatron_import
