#include "strategies/serving_spec.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "sim/enum_names.h"

namespace parasim {
namespace {

constexpr EnumNames<ServeDtype, 4> kDtypeNames("number format", {{
                                                                    {ServeDtype::kBf16, "bf16"},
                                                                    {ServeDtype::kFp16, "fp16"},
                                                                    {ServeDtype::kFp8, "fp8"},
                                                                    {ServeDtype::kFp4, "fp4"},
                                                                }});

std::string PoolText(const PoolLayout& p) {
  std::string out = fmt::format("tp{}", p.tp);
  if (p.pp > 1) out += fmt::format(" pp{}", p.pp);
  if (p.ep > 1) out += fmt::format(" ep{}", p.ep);
  if (p.dp_attention) out += " dp-attention";
  return out + fmt::format(" x{}", p.replicas);
}

}  // namespace

std::string_view ServeDtypeName(ServeDtype d) { return kDtypeNames.Name(d); }
StatusOr<ServeDtype> ParseServeDtype(std::string_view s) { return kDtypeNames.Parse(s); }
std::vector<std::string_view> ServeDtypeNames() { return kDtypeNames.Names(); }

double ServeDtypeBytes(ServeDtype d) {
  switch (d) {
    case ServeDtype::kBf16:
    case ServeDtype::kFp16:
      return 2;
    case ServeDtype::kFp8:
      return 1;
    case ServeDtype::kFp4:
      return 0.5 + 1.0 / 16;  // E2M1 values and an E4M3 scale per 16 (the header's NVFP4)
  }
  return 2;
}

double LengthDist::Mean() const {
  switch (kind) {
    case Kind::kFixed:
    case Kind::kLognormal:
      return a;
    case Kind::kUniform:
      return (a + b) / 2;
  }
  return a;
}

double LengthDist::LogMean() const {
  const double s2 = b * b;
  const double free = std::log(a) - s2 / 2;
  if (b <= 0) return free;
  const double lo_clip = static_cast<double>(std::max<int64_t>(1, min));
  const double ll = std::log(lo_clip);
  const double lm = max > 0 ? std::log(static_cast<double>(max)) : 0;
  auto phi = [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); };
  // E[clamp(X, m, M)] for X lognormal(mu, s): the draws below m count as m, above M as M.
  auto clipped_mean = [&](double mu) {
    const double upper = max > 0 ? phi((lm - mu - s2) / b) : 1.0;
    const double above = max > 0 ? static_cast<double>(max) * (1 - phi((lm - mu) / b)) : 0.0;
    return lo_clip * phi((ll - mu) / b) +
           std::exp(mu + s2 / 2) * (upper - phi((ll - mu - s2) / b)) + above;
  };
  // The clipped mean grows with mu, from m to M: bisect between a low and a high enough mu.
  double lo = free - 50, hi = max > 0 ? lm + 10 : free + 1;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (clipped_mean(mid) < a ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

std::string_view SloMetricName(SloMetric m) {
  switch (m) {
    case SloMetric::kTtft:
      return "ttft";
    case SloMetric::kTpot:
      return "tpot";
    case SloMetric::kE2e:
      return "e2e";
  }
  return "ttft";
}

std::string SloTarget::Key() const {
  return fmt::format("{}_p{}", SloMetricName(metric), percentile);
}

std::string FormatServingLayout(const ServingLayout& l) {
  if (!l.disaggregated) return PoolText(l.unified);
  return fmt::format("prefill {} + decode {}", PoolText(l.prefill), PoolText(l.decode));
}

std::optional<ServingLayoutProblem> CheckPoolLayout(const PoolLayout& p, const ModelSpec& m) {
  if (p.pp > m.layers) {
    return ServingLayoutProblem{
        "pp", fmt::format("pp = {} exceeds the model's {} layers", p.pp, m.layers)};
  }
  if (!p.dp_attention && m.heads % p.tp != 0) {
    return ServingLayoutProblem{
        "tp", fmt::format("tp = {} does not divide the model's {} attention heads", p.tp, m.heads)};
  }
  // Engines shard the KV heads over TP, or replicate them where TP exceeds them; a TP that does
  // neither (6 over 8 KV heads) vLLM refuses (its 8/6 KV heads a GPU had held 1.5x the tokens).
  if (!p.dp_attention && !m.mla.enabled() && m.kv() % p.tp != 0 && p.tp % m.kv() != 0) {
    return ServingLayoutProblem{
        "tp", fmt::format("tp = {} neither divides the model's {} KV heads nor is a multiple of "
                          "them: engines shard the KV heads over TP or replicate them",
                          p.tp, m.kv())};
  }
  if (!m.TpSplits(p.tp) && m.heads % p.tp == 0) {
    return ServingLayoutProblem{
        "tp", fmt::format("tp = {} does not divide the Mamba layers' {} heads and {} groups", p.tp,
                          m.mamba_heads(), m.mamba.groups)};
  }
  if (p.dp_attention && m.is_hybrid()) {
    return ServingLayoutProblem{"dp_attention",
                                "data-parallel attention is not modelled for a hybrid model's "
                                "Mamba layers: leave it out"};
  }
  if (p.ep > 1 && !m.is_moe()) {
    return ServingLayoutProblem{"ep",
                                fmt::format("ep = {} needs a mixture-of-experts model", p.ep)};
  }
  if (p.tp % p.ep != 0) {
    return ServingLayoutProblem{
        "ep", fmt::format("ep = {} must divide tp = {}: the experts are spread over the "
                          "replica's tensor-parallel ranks",
                          p.ep, p.tp)};
  }
  if (m.is_moe() && m.moe.experts % p.ep != 0) {
    return ServingLayoutProblem{
        "ep", fmt::format("ep = {} does not divide the model's {} experts", p.ep, m.moe.experts)};
  }
  if (p.dp_attention && !m.is_moe()) {
    return ServingLayoutProblem{"dp_attention",
                                "data-parallel attention pairs with expert parallelism: it "
                                "needs a mixture-of-experts model"};
  }
  // With data-parallel attention the experts spread over every rank of the replica (EP = TP):
  // another ep had been printed and priced as tp.
  if (p.dp_attention && p.ep > 1 && p.ep != p.tp) {
    return ServingLayoutProblem{
        "ep", fmt::format("ep = {}: with dp_attention the experts spread over all {} ranks of "
                          "the replica; leave ep out or give {}",
                          p.ep, p.tp, p.tp)};
  }
  if (p.replicas < 1) return ServingLayoutProblem{"replicas", "replicas must be at least 1"};
  return std::nullopt;
}

double ReplayedPools(const std::vector<int64_t>& pools, std::vector<int64_t>* replayed,
                     double least) {
  const int64_t most = *std::max_element(pools.begin(), pools.end());
  // The largest pool replays k of its replicas, the smallest k for which every other pool's
  // share, rounded to whole replicas, stays within kPoolRatioTolerance of the first pool's: the
  // requests the replay takes are the first pool's share, so a pool rounded up would serve them
  // with more than its part of the system (24 prefill and 1 decode replicas replayed as 8 and 1
  // gave the decode replica three times its capacity). k = most replays every replica.
  for (int64_t k = std::min(most, kMaxReplayedReplicas);; ++k) {
    const double f =
        std::min(1.0, std::max(least, static_cast<double>(k) / static_cast<double>(most)));
    replayed->clear();
    for (int64_t r : pools) {
      replayed->push_back(std::max<int64_t>(1, std::llround(static_cast<double>(r) * f)));
    }
    const double share =
        static_cast<double>(replayed->front()) / static_cast<double>(pools.front());
    bool kept = true;
    for (size_t i = 1; i < pools.size(); ++i) {
      const double want = static_cast<double>(pools[i]) * share;
      kept &= std::abs(static_cast<double>((*replayed)[i]) - want) <= kPoolRatioTolerance * want;
    }
    if (kept || k >= most) return share;
  }
}

std::optional<ServingLayoutProblem> CheckServingLayout(const ServingLayout& l, const ModelSpec& m,
                                                       const ClusterSpec& c) {
  for (const PoolLayout* p : l.disaggregated ? std::vector<const PoolLayout*>{&l.prefill, &l.decode}
                                             : std::vector<const PoolLayout*>{&l.unified}) {
    if (auto problem = CheckPoolLayout(*p, m)) {
      if (l.disaggregated) problem->key = (p == &l.prefill ? "prefill." : "decode.") + problem->key;
      return problem;
    }
  }
  if (l.gpus() > c.gpus()) {
    return ServingLayoutProblem{
        l.disaggregated ? "decode.replicas" : "replicas",
        fmt::format("the layout takes {} GPUs ({}), more than the cluster's {}", l.gpus(),
                    FormatServingLayout(l), c.gpus())};
  }
  if (l.disaggregated) {
    std::vector<int64_t> replayed;
    ReplayedPools({l.prefill.replicas, l.decode.replicas}, &replayed);
    const int64_t most = std::max(replayed[0], replayed[1]);
    if (most > kMaxRatioReplicas) {
      const bool prefill_smaller = l.prefill.replicas < l.decode.replicas;
      return ServingLayoutProblem{
          prefill_smaller ? "prefill.replicas" : "decode.replicas",
          fmt::format("{} prefill and {} decode replicas: the replay keeps the pools' ratio "
                      "within 1% only with {} replicas of the larger pool, more than the {} it "
                      "replays; give pools in a ratio a few replicas keep (e.g. 64:1 or 3:1)",
                      l.prefill.replicas, l.decode.replicas, most, kMaxRatioReplicas)};
    }
  }
  return std::nullopt;
}

std::optional<ServingLayoutProblem> CheckServingPrecision(const ServingPrecision& p,
                                                          const GpuSpec& g) {
  if (p.activations == ServeDtype::kFp8 && g.Peak(Dtype::kFp8).flops_per_second() <= 0) {
    return ServingLayoutProblem{
        "activations", fmt::format("{} has no FP8 tensor cores (no fp8 peak in its catalog entry); "
                                   "serve with activations: bf16",
                                   g.id)};
  }
  if (p.activations == ServeDtype::kFp4 && !g.mxfp8) {
    return ServingLayoutProblem{
        "activations",
        fmt::format("{} has no block-scaled FP4 tensor cores (Blackwell's); serve FP4 weights "
                    "with activations: fp8 or bf16",
                    g.id)};
  }
  return std::nullopt;
}

}  // namespace parasim
