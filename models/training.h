// How a model is trained: sequence, batch, precision, optimizer, recompute, fine-tuning.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hardware/spec.h"

namespace parasim {

enum class OptimizerKind { kAdam, kSgd };
enum class RecomputeKind { kNone, kSelective, kFull };
enum class FinetuneKind { kNone, kLora, kQlora };
enum class AttentionKind { kFlash, kStandard };

std::string_view RecomputeName(RecomputeKind r);
StatusOr<RecomputeKind> ParseRecompute(std::string_view s);
std::vector<std::string_view> RecomputeNames();  // none, selective, full

struct Training {
  int64_t seq_len = 0;
  int64_t global_batch = 0;  // sequences per optimizer step
  int64_t micro_batch = 1;
  Dtype precision = Dtype::kBf16;
  Dtype grad_dtype = Dtype::kBf16;  // defaults to precision (16-byte rule)
  OptimizerKind optimizer = OptimizerKind::kAdam;
  RecomputeKind recompute = RecomputeKind::kNone;
  // Fused (FlashAttention) kernels, as every training stack since 2023 runs them (FlashAttention
  // 2, Transformer Engine, PyTorch SDPA); `attention: standard` for the materialised softmax of
  // Megatron-LM 2021-22 (the published SC21 and Korthikanti 2022 runs state it).
  AttentionKind attention = AttentionKind::kFlash;
  double tokens = 0;  // total training tokens; 0 = not given
  FinetuneKind finetune = FinetuneKind::kNone;
  int lora_rank = 16;
};

}  // namespace parasim
