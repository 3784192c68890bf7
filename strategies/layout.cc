#include "strategies/layout.h"

#include "sim/enum_names.h"

namespace parasim {
namespace {
constexpr EnumNames<RankDim, 5> kRankDims("rank dimension", {{{RankDim::kTp, "tp"},
                                                              {RankDim::kCp, "cp"},
                                                              {RankDim::kEp, "ep"},
                                                              {RankDim::kDp, "dp"},
                                                              {RankDim::kPp, "pp"}}});
}  // namespace

std::string_view RankDimName(RankDim d) { return kRankDims.Name(d); }
StatusOr<RankDim> ParseRankDim(std::string_view s) { return kRankDims.Parse(s); }

const std::vector<RankDim>& DefaultRankOrder() {
  static const std::vector<RankDim> kOrder = {RankDim::kTp, RankDim::kCp, RankDim::kEp,
                                              RankDim::kDp, RankDim::kPp};
  return kOrder;
}

std::vector<int> StageLayers(const Layout& l, int layers) {
  if (!l.stage_layers.empty()) return l.stage_layers;
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

}  // namespace parasim
