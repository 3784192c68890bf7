#include "tools/text.h"

#include <fmt/core.h>

#include "sim/parse_units.h"
#include "sim/units.h"

namespace parasim {

std::string Seconds(double s) { return FormatSeconds(s); }

std::string Human(double x) { return FormatCount(x); }

const std::string& ScenarioName(const Scenario& s) { return s.name.empty() ? s.file : s.name; }

}  // namespace parasim
