#include "models/training.h"

namespace parasim {

std::string_view RecomputeName(RecomputeKind r) {
  switch (r) {
    case RecomputeKind::kNone:
      return "none";
    case RecomputeKind::kSelective:
      return "selective";
    case RecomputeKind::kFull:
      return "full";
  }
  return "?";
}

}  // namespace parasim
