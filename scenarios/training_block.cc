#include "scenarios/training_block.h"

#include <fmt/core.h>

#include "scenarios/table_keys.h"
#include "sim/yaml_reader.h"
#include "strategies/plan.h"

namespace parasim {
namespace {

// What the table's keys ask of one another: an FP8 recipe needs FP8, a count of recomputed
// layers a recompute mode.
Status CheckTableKeys(const MapReader& m, const Training& t) {
  if (m.Has("fp8_recipe") && t.precision != Dtype::kFp8) {
    return m.Error("fp8_recipe",
                   "applies to precision: fp8 (set precision: fp8, or leave fp8_recipe out)");
  }
  if (m.Has("fp8_param_gather") && t.precision != Dtype::kFp8) {
    return m.Error("fp8_param_gather",
                   "applies to precision: fp8 (set precision: fp8, or leave fp8_param_gather out)");
  }
  if (m.Has("recompute_layers") && t.recompute == RecomputeKind::kNone) {
    return m.Error("recompute_layers",
                   "applies to a recompute mode (set recompute to one other than none, or "
                   "leave recompute_layers out)");
  }
  return Status::Ok();
}

// The optimizer's master weights: a copy exists only beside 16-bit weights, and its remainder
// form only beside bf16 ones (fp8 training keeps bf16 weights).
Status ReadMasterWeights(const MapReader& m, Training* t) {
  if (!m.Has("master_weights")) return Status::Ok();
  std::string s;
  PARASIM_RETURN_IF_ERROR(m.Enum("master_weights", &s, MasterWeightsNames()));
  t->master_weights = *ParseMasterWeights(s);
  const bool bf16_weights = t->precision == Dtype::kBf16 || t->precision == Dtype::kFp8;
  if (t->master_weights == MasterWeights::kRemainder && !bf16_weights) {
    return m.Error("master_weights",
                   "remainder holds the fp32 value's low 16 bits beside bf16 weights: it applies "
                   "to precision bf16 or fp8 (use fp32 or fp16, or leave master_weights out)");
  }
  if (t->master_weights == MasterWeights::kRemainder && t->fp8_param_gather) {
    return m.Error("master_weights",
                   "remainder holds the fp32 value's low 16 bits beside bf16 weights, and "
                   "fp8_param_gather keeps FP8 ones (use fp32, or leave master_weights out)");
  }
  if (t->master_weights != MasterWeights::kFp32 && !bf16_weights && t->precision != Dtype::kFp16) {
    return m.Error("master_weights",
                   "a master copy exists only beside 16-bit weights; with fp32 or tf32 weights "
                   "leave master_weights out");
  }
  return Status::Ok();
}

// Gradients' and moments' number formats, and the optimizer.
Status ReadFormats(const MapReader& m, Training* t) {
  std::string s;
  PARASIM_RETURN_IF_ERROR(m.Bool("fp8_param_gather", &t->fp8_param_gather));
  t->grad_dtype = t->precision == Dtype::kFp8 ? Dtype::kBf16 : t->precision;
  if (t->grad_dtype == Dtype::kTf32) t->grad_dtype = Dtype::kFp32;
  if (m.Has("grad_dtype")) {
    PARASIM_RETURN_IF_ERROR(m.Enum("grad_dtype", &s, {"fp32", "fp16", "bf16"}));
    t->grad_dtype = *ParseDtype(s);
  }
  if (m.Has("moments")) {
    PARASIM_RETURN_IF_ERROR(m.Enum("moments", &s, {"fp32", "bf16"}));
    t->moments = *ParseDtype(s);
  }
  if (m.Has("optimizer")) {
    PARASIM_RETURN_IF_ERROR(m.Enum("optimizer", &s, {"adam", "sgd"}));
    t->optimizer = s == "adam" ? OptimizerKind::kAdam : OptimizerKind::kSgd;
  }
  return ReadMasterWeights(m, t);
}

// Which kernels run the attention, the loss, the experts and the gradient accumulation.
Status ReadKernels(const MapReader& m, Training* t) {
  std::string s;
  if (m.Has("attention")) {
    PARASIM_RETURN_IF_ERROR(m.Enum("attention", &s, {"flash", "standard"}));
    t->attention = s == "flash" ? AttentionKind::kFlash : AttentionKind::kStandard;
  }
  // A dropout probability (1 would drop every score: not a training setting).
  PARASIM_RETURN_IF_ERROR(m.Number("attention_dropout", &t->attention_dropout, 0, 0.999));
  if (m.Has("cross_entropy")) {
    PARASIM_RETURN_IF_ERROR(m.Enum("cross_entropy", &s, {"unfused", "fused"}));
    t->fused_cross_entropy = s == "fused";
  }
  if (m.Has("expert_gemm")) {
    PARASIM_RETURN_IF_ERROR(m.Enum("expert_gemm", &s, {"grouped", "per_expert"}));
    t->per_expert_gemm = s == "per_expert";
  }
  if (m.Has("grad_accumulation")) {
    PARASIM_RETURN_IF_ERROR(m.Enum("grad_accumulation", &s, GradAccumulationNames()));
    t->grad_accumulation = *ParseGradAccumulation(s);
  }
  PARASIM_RETURN_IF_ERROR(m.Bool("deterministic", &t->deterministic));
  PARASIM_RETURN_IF_ERROR(m.Bool("transformer_engine", &t->transformer_engine));
  if (m.Has("blas_workspace")) {
    PARASIM_RETURN_IF_ERROR(m.Size("blas_workspace", &t->blas_workspace));
    if (t->blas_workspace.bytes() <= 0 || t->blas_workspace.gib() > 64) {
      return m.Error("blas_workspace",
                     "the cuBLAS workspace per handle and stream: more than 0B and at most "
                     "64GiB, e.g. '32MiB' (CUBLAS_WORKSPACE_CONFIG=:4096:8)");
    }
  }
  return Status::Ok();
}

Status ReadFinetune(const YamlContext& ctx, const MapReader& m, Training* t) {
  if (!m.Has("finetune")) return Status::Ok();
  PARASIM_ASSIGN_OR_RETURN(MapReader f, MapReader::Open(ctx, m.Node("finetune"),
                                                        "training.finetune", {"method", "rank"}));
  std::string s;
  PARASIM_RETURN_IF_ERROR(f.Require("method"));
  PARASIM_RETURN_IF_ERROR(f.Enum("method", &s, {"lora", "qlora", "none"}));
  t->finetune = s == "lora" ? FinetuneKind::kLora
                            : (s == "qlora" ? FinetuneKind::kQlora : FinetuneKind::kNone);
  PARASIM_RETURN_IF_ERROR(f.Int("rank", &t->lora_rank, 1, 65536));
  return Status::Ok();
}

}  // namespace

const std::vector<std::string_view>& TrainingKeys() {
  static const std::vector<std::string_view> kKeys = {
      "seq_len",          "global_batch",       "micro_batch",
      "precision",        "optimizer",          "grad_dtype",
      "recompute",        "recompute_layers",   "tokens",
      "finetune",         "attention",          "fp8_recipe",
      "moments",          "grad_accumulation",  "cross_entropy",
      "expert_gemm",      "transformer_engine", "blas_workspace",
      "deterministic",    "master_weights",     "fp8_param_gather",
      "attention_dropout"};
  return kKeys;
}

Status ParseTraining(const YamlContext& ctx, const YAML::Node& node, Training* t) {
  PARASIM_ASSIGN_OR_RETURN(MapReader m, MapReader::Open(ctx, node, "training", TrainingKeys()));
  PARASIM_RETURN_IF_ERROR(m.Require("seq_len"));
  PARASIM_RETURN_IF_ERROR(m.Require("global_batch"));
  PARASIM_RETURN_IF_ERROR(m.Int("seq_len", &t->seq_len, 1, int64_t{1} << 32));
  // The training keys of the table apply to the training alone.
  Layout unused;
  PARASIM_RETURN_IF_ERROR(ReadTableKeys(m, "training", &unused, t));
  PARASIM_RETURN_IF_ERROR(CheckTableKeys(m, *t));
  PARASIM_RETURN_IF_ERROR(ReadFormats(m, t));
  PARASIM_RETURN_IF_ERROR(ReadKernels(m, t));
  PARASIM_RETURN_IF_ERROR(m.Number("tokens", &t->tokens, 0, 1e18));
  // A run trains whole steps: fewer tokens than one step's (`tokens: 2.5`) had printed a time
  // to train of a fraction of one step, and 0 GPU-hours per 10^12 tokens.
  const double step = static_cast<double>(t->seq_len) * static_cast<double>(t->global_batch);
  if (m.Has("tokens") && t->tokens < step) {
    return m.Error("tokens", fmt::format("{:g} tokens is less than one step's {:g} (seq_len x "
                                         "global_batch): expected at least {:g}",
                                         t->tokens, step, step));
  }
  return ReadFinetune(ctx, m, t);
}

Status CheckPrecisionOnGpu(const YamlContext& ctx, const YAML::Node& training, const Training& t,
                           const GpuSpec& g, const std::string& combination) {
  const std::optional<LayoutProblem> problem = PrecisionProblem(t, g);
  if (!problem) return Status::Ok();
  const YAML::Node at = training[problem->key].IsDefined() ? training[problem->key] : training;
  return ctx.ErrorAt(at, "training." + problem->key,
                     combination.empty() ? problem->message
                                         : fmt::format("{} (in the sweep's combination {})",
                                                       problem->message, combination));
}

}  // namespace parasim
