#include "models/training.h"

#include "sim/enum_names.h"

namespace parasim {

namespace {
constexpr EnumNames<RecomputeKind, 3> kRecomputes("recompute mode",
                                                  {{{RecomputeKind::kNone, "none"},
                                                    {RecomputeKind::kSelective, "selective"},
                                                    {RecomputeKind::kFull, "full"}}});
}  // namespace

std::string_view RecomputeName(RecomputeKind r) { return kRecomputes.Name(r); }
StatusOr<RecomputeKind> ParseRecompute(std::string_view s) { return kRecomputes.Parse(s); }
std::vector<std::string_view> RecomputeNames() { return kRecomputes.Names(); }

}  // namespace parasim
