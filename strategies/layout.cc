#include "strategies/layout.h"

#include <fmt/core.h>

#include "sim/enum_names.h"

namespace parasim {
namespace {
constexpr EnumNames<RankDim, 5> kRankDims("rank dimension", {{{RankDim::kTp, "tp"},
                                                              {RankDim::kCp, "cp"},
                                                              {RankDim::kEp, "ep"},
                                                              {RankDim::kDp, "dp"},
                                                              {RankDim::kPp, "pp"}}});
constexpr EnumNames<Layout::GradReduce, 3> kGradReduces(
    "grad_reduce", {{{Layout::GradReduce::kAuto, "auto"},
                     {Layout::GradReduce::kMicroBatch, "micro_batch"},
                     {Layout::GradReduce::kStep, "step"}}});
constexpr EnumNames<Layout::CpComm, 2> kCpComms("cp_comm",
                                                {{{Layout::CpComm::kRing, "ring"},
                                                  {Layout::CpComm::kAllGather, "all_gather"}}});
constexpr EnumNames<Layout::ParamGather, 5> kParamGathers(
    "param_gather", {{{Layout::ParamGather::kAuto, "auto"},
                      {Layout::ParamGather::kAtStart, "at_start"},
                      {Layout::ParamGather::kChained, "chained"},
                      {Layout::ParamGather::kOnDemand, "on_demand"},
                      {Layout::ParamGather::kAligned, "aligned"}}});
constexpr EnumNames<Layout::Zero3Reshard, 3> kZero3Reshards(
    "zero3_reshard", {{{Layout::Zero3Reshard::kForward, "forward"},
                       {Layout::Zero3Reshard::kBackward, "backward"},
                       {Layout::Zero3Reshard::kStep, "step"}}});
}  // namespace

std::string_view Zero3ReshardName(Layout::Zero3Reshard r) { return kZero3Reshards.Name(r); }
StatusOr<Layout::Zero3Reshard> ParseZero3Reshard(std::string_view s) {
  return kZero3Reshards.Parse(s);
}
std::vector<std::string_view> Zero3ReshardNames() { return kZero3Reshards.Names(); }
std::string_view ParamGatherName(Layout::ParamGather g) { return kParamGathers.Name(g); }
StatusOr<Layout::ParamGather> ParseParamGather(std::string_view s) {
  return kParamGathers.Parse(s);
}
std::vector<std::string_view> ParamGatherNames() { return kParamGathers.Names(); }
std::string_view RankDimName(RankDim d) { return kRankDims.Name(d); }
StatusOr<RankDim> ParseRankDim(std::string_view s) { return kRankDims.Parse(s); }
std::string_view GradReduceName(Layout::GradReduce g) { return kGradReduces.Name(g); }
StatusOr<Layout::GradReduce> ParseGradReduce(std::string_view s) { return kGradReduces.Parse(s); }
std::vector<std::string_view> GradReduceNames() { return kGradReduces.Names(); }
std::string_view CpCommName(Layout::CpComm c) { return kCpComms.Name(c); }
StatusOr<Layout::CpComm> ParseCpComm(std::string_view s) { return kCpComms.Parse(s); }
std::vector<std::string_view> CpCommNames() { return kCpComms.Names(); }

std::string OrderText(const std::vector<RankDim>& order) {
  std::string out;
  for (RankDim d : order)
    out += std::string(out.empty() ? "[" : ", ") + std::string(RankDimName(d));
  return out + "]";
}

std::string CompressionText(CompressionKind kind, double param) {
  switch (kind) {
    case CompressionKind::kNone:
      return "none";
    case CompressionKind::kFp16:
      return "fp16";
    case CompressionKind::kInt8:
      return "int8";
    case CompressionKind::kTopK:
      return fmt::format("topk:{}", param);
    case CompressionKind::kPowerSgd:
      return fmt::format("powersgd:{}", param);
  }
  return "none";
}

const std::vector<RankDim>& DefaultRankOrder() {
  static const std::vector<RankDim> kOrder = {RankDim::kTp, RankDim::kCp, RankDim::kEp,
                                              RankDim::kDp, RankDim::kPp};
  return kOrder;
}

std::vector<int> StageLayers(const Layout& l, int layers) {
  if (!l.stage_layers.empty()) return l.stage_layers;
  if (l.split_embedding || l.split_loss) {
    const int units = layers + (l.split_embedding ? 1 : 0) + (l.split_loss ? 1 : 0);
    std::vector<int> out(l.pp, units / l.pp);  // plan.cc checks that they divide
    if (l.split_embedding) out.front() -= 1;
    if (l.split_loss) out.back() -= 1;
    return out;
  }
  std::vector<int> out(l.pp, layers / l.pp);
  int rem = layers % l.pp;
  // Spread the remainder from the middle outwards, so the first and last stages, which also
  // hold the embedding and the LM head, get the fewest layers (as Llama 3 405B on PP16).
  for (int i = 0; i < rem; ++i) {
    int mid = l.pp / 2;
    int offset = (i % 2 == 0) ? i / 2 : -(i / 2 + 1);
    int idx = (mid + offset + l.pp) % l.pp;
    out[idx] += 1;
  }
  return out;
}

std::vector<std::vector<int>> ChunkLayers(const Layout& l, int layers, int chunks, bool v_shape) {
  const std::vector<int> per_stage = StageLayers(l, layers);
  const int p = static_cast<int>(per_stage.size());
  const int v = std::max(1, chunks);
  std::vector<std::vector<int>> out(p, std::vector<int>(v));
  for (int s = 0; s < p; ++s) {
    const int base = per_stage[s] / v, rem = per_stage[s] % v;
    for (int c = 0; c < v; ++c) {
      // The first stage gives its extra layers to its last chunks, every other stage to its
      // first ones: short chunks sit beside the embedding and the LM head.
      const bool extra = s == 0 && p > 1 && !v_shape ? c >= v - rem : c < rem;
      out[s][c] = base + (extra ? 1 : 0);
    }
  }
  return out;
}

}  // namespace parasim
