// The parasim verbs as library functions (the CLI parses flags, these do the work).
#pragma once

#include <string>
#include <vector>

#include "sim/status.h"

namespace parasim {

struct CommonOptions {
  std::string file;
  std::vector<std::string> sets;
  bool json = false;
  bool timing = false;
  bool full = false;
  bool ops = false;  // replay at op granularity
  std::string trace;
};

Status RunCommand(const CommonOptions& opt);
Status MemoryCommand(const CommonOptions& opt);
Status CatalogCommand(const CommonOptions& opt);

}  // namespace parasim
