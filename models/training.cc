#include "models/training.h"

#include "sim/enum_names.h"

namespace parasim {

namespace {
constexpr EnumNames<RecomputeKind, 5> kRecomputes(
    "recompute mode", {{{RecomputeKind::kNone, "none"},
                        {RecomputeKind::kSelective, "selective"},
                        {RecomputeKind::kFull, "full"},
                        {RecomputeKind::kDeepseek, "deepseek"},
                        {RecomputeKind::kSelectiveOp, "selective-op"}}});
constexpr EnumNames<Fp8Recipe, 3> kFp8Recipes("fp8 recipe",
                                              {{{Fp8Recipe::kTensorwise, "tensorwise"},
                                                {Fp8Recipe::kBlockwise, "blockwise"},
                                                {Fp8Recipe::kMxfp8, "mxfp8"}}});
constexpr EnumNames<MasterWeights, 3> kMasterWeights("master weights",
                                                     {{{MasterWeights::kFp32, "fp32"},
                                                       {MasterWeights::kRemainder, "remainder"},
                                                       {MasterWeights::kFp16, "fp16"}}});
constexpr EnumNames<GradAccumulation, 2> kGradAccumulations(
    "gradient accumulation",
    {{{GradAccumulation::kFused, "fused"}, {GradAccumulation::kSeparate, "separate"}}});
}  // namespace

std::string_view GradAccumulationName(GradAccumulation g) { return kGradAccumulations.Name(g); }
StatusOr<GradAccumulation> ParseGradAccumulation(std::string_view s) {
  return kGradAccumulations.Parse(s);
}
std::vector<std::string_view> GradAccumulationNames() { return kGradAccumulations.Names(); }
std::string_view RecomputeName(RecomputeKind r) { return kRecomputes.Name(r); }
StatusOr<RecomputeKind> ParseRecompute(std::string_view s) { return kRecomputes.Parse(s); }
std::vector<std::string_view> RecomputeNames() { return kRecomputes.Names(); }
std::string_view Fp8RecipeName(Fp8Recipe r) { return kFp8Recipes.Name(r); }
StatusOr<Fp8Recipe> ParseFp8Recipe(std::string_view s) { return kFp8Recipes.Parse(s); }
std::vector<std::string_view> Fp8RecipeNames() { return kFp8Recipes.Names(); }
std::string_view MasterWeightsName(MasterWeights w) { return kMasterWeights.Name(w); }
StatusOr<MasterWeights> ParseMasterWeights(std::string_view s) { return kMasterWeights.Parse(s); }
std::vector<std::string_view> MasterWeightsNames() { return kMasterWeights.Names(); }

}  // namespace parasim
