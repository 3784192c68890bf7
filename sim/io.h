// File output that never leaves a half-written file: write to a temporary file beside the
// target, flush, then rename over it.
#pragma once

#include <string>
#include <string_view>

#include "sim/status.h"

namespace parasim {

Status WriteFileAtomic(const std::string& path, std::string_view content);
StatusOr<std::string> ReadFile(const std::string& path);

}  // namespace parasim
