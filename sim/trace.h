// Chrome trace JSON (loads in Perfetto and chrome://tracing): one process per rank, one thread
// per stream, a complete event per task, counters for memory per rank.
#pragma once

#include <string>
#include <vector>

#include "sim/engine.h"
#include "sim/program.h"

namespace parasim::sim {

// `category_names[c]` names task category c (e.g. "forward", "tp-comm").
std::string ChromeTraceJson(const Program& p, const Timeline& tl,
                            const std::vector<std::string>& category_names);

}  // namespace parasim::sim
