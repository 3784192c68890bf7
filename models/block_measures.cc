#include "models/block_measures.h"

#include <algorithm>

#include "models/op_graph.h"

namespace parasim {

double ActivationBytes(const Block& b, RecomputeKind recompute) {
  double total = 0;
  if (recompute == RecomputeKind::kFull || recompute == RecomputeKind::kSelectiveOp) {
    // Only the block's input is kept (Korthikanti: 2sbh, /t with SP); the first op's first saved
    // tensor is the block input (the norm's input) for transformer layers. Selective-op keeps
    // the outputs of the ops its policy saves as well.
    if (recompute == RecomputeKind::kSelectiveOp) {
      for (size_t i = 0; i < b.size(); ++i) total += b.op(i).op_kept_bytes;
    }
    for (size_t i = 0; i < b.size(); ++i) {
      if (!b.op(i).saved.empty()) return total + b.op(i).saved.front().bytes;
    }
    return total;
  }
  for (size_t i = 0; i < b.size(); ++i) {
    for (const auto& t : b.op(i).saved) {
      if (recompute == RecomputeKind::kSelective && t.attention_core) continue;
      total += recompute == RecomputeKind::kDeepseek ? t.bytes * t.deepseek : t.bytes;
    }
  }
  return total;
}

double WeightGradBytes(const Block& b) {
  double total = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    if (b.op(i).kind != OpKind::kGemm) continue;
    for (const auto& t : b.op(i).saved) total += t.bytes;
  }
  return total;
}

double TransientBytes(const Block& b) {
  double most = 0;
  for (size_t i = 0; i < b.size(); ++i) most = std::max(most, b.op(i).transient);
  return most;
}

double ForwardFlops(const Block& b) {
  double f = 0;
  for (size_t i = 0; i < b.size(); ++i) f += b.op(i).fwd_flops.flops();
  return f;
}

double BackwardFlops(const Block& b) {
  double f = 0;
  for (size_t i = 0; i < b.size(); ++i) f += b.op(i).bwd_flops.flops();
  return f;
}

double BlockParams(const Block& b, bool experts_only) {
  double p = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    if (!experts_only || b.op(i).expert) p += b.op(i).params;
  }
  return p;
}

double Fp8GemmParams(const Block& b, bool experts_only) {
  double p = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    const Op& op = b.op(i);
    if (op.fp8 && (!experts_only || op.expert)) p += op.params;
  }
  return p;
}

double LoraParams(const Block& b, int r, bool experts_only) {
  double p = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    const Op& op = b.op(i);
    if (op.kind != OpKind::kGemm || op.name == "router") continue;
    if (experts_only && !op.expert) continue;
    p += static_cast<double>(r) * (op.k + op.n) * op.batch;
  }
  return p;
}

}  // namespace parasim
