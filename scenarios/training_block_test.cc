#include "scenarios/training_block.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "scenarios/block_testing.h"
#include "sim/yaml_reader.h"
#include "strategies/sweep_keys.h"

namespace parasim {
namespace {

Status Read(const std::string& text, Training* t) {
  return testing::ReadBlock(text, "training", [&](const YamlContext& ctx, const YAML::Node& n) {
    return ParseTraining(ctx, n, t);
  });
}

TEST_CASE("the block accepts every training key of the sweep's table, and reads it by the table") {
  for (std::string_view k : SweepKeysOf("training")) {
    CAPTURE(k);
    CHECK(std::find(TrainingKeys().begin(), TrainingKeys().end(), k) != TrainingKeys().end());
  }
  Training t;
  REQUIRE(Read("training: {seq_len: 4096, global_batch: 3e3, micro_batch: 2, precision: fp8, "
               "fp8_recipe: blockwise, recompute: full, recompute_layers: 4}\n",
               &t)
              .ok());
  CHECK(t.seq_len == 4096);
  CHECK(t.global_batch == 3000);
  CHECK(t.micro_batch == 2);
  CHECK(t.precision == Dtype::kFp8);
  CHECK(t.fp8_recipe == Fp8Recipe::kBlockwise);
  CHECK(t.recompute == RecomputeKind::kFull);
  CHECK(t.recompute_layers == 4);
  CHECK(t.grad_dtype == Dtype::kBf16);  // FP8 GEMMs write bf16 gradients
  // The table's wording, located at the key.
  CHECK(Read("training: {seq_len: 8, global_batch: 8, precision: fp9}\n", &t).message() ==
        "x.yaml:1:52: error: training.precision: 'fp9' is not accepted; expected one of: fp32, "
        "tf32, fp16, bf16, fp8 (did you mean 'fp8'?)");
}

TEST_CASE("defaults, and the keys that need another") {
  Training t;
  REQUIRE(Read("training: {seq_len: 2048, global_batch: 64}\n", &t).ok());
  CHECK(t.micro_batch == 1);
  CHECK(t.precision == Dtype::kBf16);
  CHECK(t.grad_dtype == Dtype::kBf16);
  CHECK(t.moments == Dtype::kFp32);
  CHECK(t.attention == AttentionKind::kFlash);
  CHECK(t.recompute_layers == -1);
  CHECK(Read("training: {seq_len: 8, global_batch: 8, fp8_recipe: mxfp8}\n", &t)
            .message()
            .find("training.fp8_recipe: applies to precision: fp8") != std::string::npos);
  CHECK(Read("training: {seq_len: 8, global_batch: 8, fp8_param_gather: true}\n", &t)
            .message()
            .find("training.fp8_param_gather: applies to precision: fp8") != std::string::npos);
  CHECK(Read("training: {seq_len: 8, global_batch: 8, precision: fp8, fp8_param_gather: true, "
             "master_weights: remainder}\n",
             &t)
            .message()
            .find("fp8_param_gather keeps FP8 ones") != std::string::npos);
  REQUIRE(
      Read("training: {seq_len: 8, global_batch: 8, precision: fp8, fp8_param_gather: true}\n", &t)
          .ok());
  CHECK(t.fp8_param_gather);
  CHECK(Read("training: {seq_len: 8, global_batch: 8, recompute_layers: 2}\n", &t)
            .message()
            .find("training.recompute_layers: applies to a recompute mode") != std::string::npos);
  CHECK(Read("training: {seq_len: 8}\n", &t)
            .message()
            .find("missing required key "
                  "'global_batch'") != std::string::npos);
}

TEST_CASE("formats, kernels and fine-tuning") {
  Training t;
  REQUIRE(Read("training: {seq_len: 8, global_batch: 8, precision: tf32, moments: bf16, "
               "optimizer: sgd, attention: standard, cross_entropy: fused, expert_gemm: "
               "per_expert, grad_accumulation: separate, tokens: 1e9, finetune: {method: qlora, "
               "rank: 8}}\n",
               &t)
              .ok());
  CHECK(t.grad_dtype == Dtype::kFp32);  // tf32 accumulates in fp32
  CHECK(t.moments == Dtype::kBf16);
  CHECK(t.optimizer == OptimizerKind::kSgd);
  CHECK(t.attention == AttentionKind::kStandard);
  CHECK(t.fused_cross_entropy);
  CHECK(t.per_expert_gemm);
  CHECK(t.grad_accumulation == GradAccumulation::kSeparate);
  CHECK(t.tokens == 1e9);
  CHECK(t.finetune == FinetuneKind::kQlora);
  CHECK(t.lora_rank == 8);
  CHECK(t.transformer_engine);           // Megatron-LM's default --transformer-impl
  CHECK(t.blas_workspace.bytes() == 0);  // PyTorch's default for the GPU
}

TEST_CASE("the master weights: fp32 by default; a remainder only beside bf16 weights") {
  Training t;
  REQUIRE(Read("training: {seq_len: 8, global_batch: 8}\n", &t).ok());
  CHECK(t.master_weights == MasterWeights::kFp32);
  REQUIRE(Read("training: {seq_len: 8, global_batch: 8, master_weights: remainder}\n", &t).ok());
  CHECK(t.master_weights == MasterWeights::kRemainder);
  REQUIRE(Read("training: {seq_len: 8, global_batch: 8, precision: fp8, master_weights: "
               "remainder}\n",
               &t)
              .ok());
  REQUIRE(
      Read("training: {seq_len: 8, global_batch: 8, precision: fp16, master_weights: fp16}\n", &t)
          .ok());
  CHECK(t.master_weights == MasterWeights::kFp16);
  const std::string fp16 =
      Read("training: {seq_len: 8, global_batch: 8, precision: fp16, master_weights: remainder}\n",
           &t)
          .message();
  CHECK(fp16.find("x.yaml:1:") == 0);
  CHECK(fp16.find("beside bf16 weights") != std::string::npos);
  const std::string fp32 =
      Read("training: {seq_len: 8, global_batch: 8, precision: fp32, master_weights: fp16}\n", &t)
          .message();
  CHECK(fp32.find("only beside 16-bit weights") != std::string::npos);
  CHECK(Read("training: {seq_len: 8, global_batch: 8, master_weights: bf16}\n", &t)
            .message()
            .find("expected one of: fp32, remainder, fp16") != std::string::npos);
}

TEST_CASE("the layers' library and the cuBLAS workspace") {
  Training t;
  REQUIRE(Read("training: {seq_len: 8, global_batch: 8, transformer_engine: false, "
               "blas_workspace: 32MiB}\n",
               &t)
              .ok());
  CHECK_FALSE(t.transformer_engine);
  CHECK(t.blas_workspace.bytes() == 32.0 * 1024 * 1024);  // CUBLAS_WORKSPACE_CONFIG=:4096:8
  const Status zero = Read("training: {seq_len: 8, global_batch: 8, blas_workspace: 0B}\n", &t);
  CHECK(zero.message().find("x.yaml:1:57: error: training.blas_workspace") == 0);
  CHECK(zero.message().find(":4096:8") != std::string::npos);
  CHECK_FALSE(
      Read("training: {seq_len: 8, global_batch: 8, transformer_engine: maybe}\n", &t).ok());
}

TEST_CASE("a precision the GPU has no tensor cores for is refused at the key") {
  const Catalogs& cat = testing::TestCatalogs();
  StatusOr<YAML::Node> root =
      ParseYaml("training: {seq_len: 8, global_batch: 8, precision: fp8}\n", "x.yaml");
  YamlContext ctx{"x.yaml", {}};
  Training t;
  REQUIRE(ParseTraining(ctx, (*root)["training"], &t).ok());
  const YAML::Node training = (*root)["training"];
  CHECK(CheckPrecisionOnGpu(ctx, training, t, *cat.hardware.FindGpu("h100-sxm5-80gb"), "").ok());
  const Status a100 =
      CheckPrecisionOnGpu(ctx, training, t, *cat.hardware.FindGpu("a100-sxm4-80gb"), "gpu=a100");
  CHECK(a100.message().find("x.yaml:1:52: error: training.precision: fp8 needs fp8 tensor cores") ==
        0);
  CHECK(a100.message().find("(in the sweep's combination gpu=a100)") != std::string::npos);
}

}  // namespace
}  // namespace parasim
