#include "strategies/layout_format.h"

#include <fmt/core.h>

#include <algorithm>
#include <string_view>

#include "strategies/schedule.h"

namespace parasim {
namespace {

// The recompute mode, with the layers per chunk it covers when not all: "full:4".
std::string RecomputeOf(const Training& t) {
  if (t.recompute == RecomputeKind::kNone || t.recompute_layers < 0) {
    return std::string(RecomputeName(t.recompute));
  }
  return fmt::format("{}:{}", RecomputeName(t.recompute), t.recompute_layers);
}

// The gradient reduction when not the ZeRO stage's default: " reduce-per-mb" or
// " reduce-per-step".
std::string ReduceOf(const Layout& l) {
  if (l.grad_reduce == Layout::GradReduce::kAuto) return "";
  return l.reduces_every_micro_batch() ? " reduce-per-mb" : " reduce-per-step";
}

// Context parallelism's exchange when not the ring: " cp-all-gather".
std::string CpCommOf(const Layout& l) { return l.gathers_kv() ? " cp-all-gather" : ""; }

// ZeRO 3 over flat buffers, without the copies of per-parameter sharding: " no-copies"; its
// layers held gathered past their forward: " hold-backward", " hold-step".
std::string CopiesOf(const Layout& l) {
  std::string out = l.zero == 3 && !l.zero3_copies ? " no-copies" : "";
  if (l.zero == 3 && l.zero3_reshard != Layout::Zero3Reshard::kForward) {
    out += fmt::format(" hold-{}", Zero3ReshardName(l.zero3_reshard));
  }
  return out;
}

// Expert tensor parallelism narrower or wider than TP (MoE parallel folding): " etp1" (" ETP1"
// with `name` "ETP").
std::string EtpOf(const Layout& l, std::string_view name = "etp") {
  return l.expert_tp() != l.tp ? fmt::format(" {}{}", name, l.expert_tp()) : "";
}

// What the pipeline split counts as a layer besides the layers (parallelism.account_for).
std::string AccountOf(const Layout& l) {
  if (!l.split_embedding && !l.split_loss) return "";
  return l.split_embedding && l.split_loss ? " account-embedding-loss"
         : l.split_embedding               ? " account-embedding"
                                           : " account-loss";
}

// The training's number format where it is not bf16 (the default keys name nothing), and FP8's
// recipe where it is not per-tensor.
std::string PrecisionOf(const Training& t) {
  if (t.precision == Dtype::kBf16) return "";
  if (t.precision == Dtype::kFp8 && t.fp8_recipe != Fp8Recipe::kTensorwise) {
    return fmt::format(" fp8-{}", Fp8RecipeName(t.fp8_recipe));
  }
  return fmt::format(" {}", DtypeName(t.precision));
}

std::string Key(const Layout& l, const Training& t) {
  return fmt::format("tp{} pp{} dp{} cp{}{} ep{}{} sp{} zero{}{}{} {}{} v{} mb{} gb{} {}{}", l.tp,
                     l.pp, l.dp, l.cp, CpCommOf(l), l.ep, EtpOf(l), l.sp ? 1 : 0, l.zero,
                     CopiesOf(l), ReduceOf(l), ScheduleName(l.schedule), AccountOf(l),
                     l.virtual_stages, t.micro_batch, t.global_batch, RecomputeOf(t),
                     PrecisionOf(t));
}

std::string Short(const Layout& l, const Training& t) {
  std::string s = fmt::format("TP{}{} PP{} DP{}", l.tp, l.sp && l.tp > 1 ? "+SP" : "", l.pp, l.dp);
  if (l.cp > 1) s += fmt::format(" CP{}{}", l.cp, CpCommOf(l));
  if (l.ep > 1) s += fmt::format(" EP{}", l.ep);
  s += EtpOf(l, "ETP");
  if (l.pp > 1) {
    s += ScheduleOf(l.schedule).interleaves() ? fmt::format(" int-v{}", l.virtual_stages)
                                              : fmt::format(" {}", ScheduleName(l.schedule));
  }
  if (l.zero > 0) s += fmt::format(" Z{}{}", l.zero, CopiesOf(l));
  s += ReduceOf(l);
  s += fmt::format(" mb{} gb{}", t.micro_batch, t.global_batch);
  if (t.recompute != RecomputeKind::kNone) s += fmt::format(" rc-{}", RecomputeOf(t));
  s += PrecisionOf(t);
  return s;
}

std::string Sentence(const Layout& l, const Training& t) {
  const int64_t per_step = std::max<int64_t>(1, l.dp * t.micro_batch);
  std::string reduce;
  if (l.grad_reduce != Layout::GradReduce::kAuto) {
    reduce = l.reduces_every_micro_batch() ? " (gradients reduced every micro-batch)"
                                           : " (gradients reduced once per step)";
  }
  return fmt::format(
      "TP{} PP{} DP{} CP{}{} EP{}{}{}, ZeRO-{}{}{}, {}{}, {} micro-batches of {} x {} tokens, "
      "recompute {}{}{}",
      l.tp, l.pp, l.dp, l.cp, l.gathers_kv() ? " (K/V all-gathered)" : "", l.ep, EtpOf(l, "ETP"),
      l.sp && l.tp > 1 ? " +SP" : "", l.zero,
      std::string(l.zero == 3 && !l.zero3_copies ? " (flat buffers, no copies)" : "") +
          (l.zero == 3 && l.zero3_reshard != Layout::Zero3Reshard::kForward
               ? fmt::format(" (parameters held to the {}'s end)",
                             Zero3ReshardName(l.zero3_reshard))
               : std::string()),
      reduce, ScheduleName(l.schedule),
      (l.virtual_stages > 1 ? fmt::format(" (v={})", l.virtual_stages) : std::string()) +
          (l.split_embedding || l.split_loss
               ? fmt::format(" ({} counted as a layer in the split)",
                             l.split_embedding && l.split_loss ? "embedding and loss each"
                             : l.split_embedding               ? "embedding"
                                                               : "loss")
               : std::string()),
      std::max<int64_t>(1, t.global_batch / per_step), t.micro_batch, t.seq_len,
      t.recompute != RecomputeKind::kNone && t.recompute_layers >= 0
          ? fmt::format("{} on the first {} layer{} of each chunk", RecomputeName(t.recompute),
                        t.recompute_layers, t.recompute_layers == 1 ? "" : "s")
          : std::string(RecomputeName(t.recompute)),
      t.grad_accumulation == GradAccumulation::kSeparate
          ? ", weight gradients accumulated by a pass of their own"
          : "",
      t.fused_cross_entropy ? ", fused cross-entropy" : "");
}

}  // namespace

std::string FormatLayout(const Layout& l, const Training& t, LayoutStyle style) {
  switch (style) {
    case LayoutStyle::kKey:
      return Key(l, t);
    case LayoutStyle::kShort:
      return Short(l, t);
    case LayoutStyle::kSentence:
      return Sentence(l, t);
  }
  return Key(l, t);
}

}  // namespace parasim
