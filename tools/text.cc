#include "tools/text.h"

#include <fmt/core.h>

#include "sim/parse_units.h"
#include "sim/units.h"

namespace parasim {

std::string Seconds(double s) { return FormatSeconds(s); }

std::string Human(double x) {
  if (x >= 1e9) return fmt::format("{:.2f}B", x / 1e9);
  if (x >= 1e6) return fmt::format("{:.2f}M", x / 1e6);
  if (x >= 1e3) return fmt::format("{:.1f}k", x / 1e3);
  return fmt::format("{:.0f}", x);
}

const std::string& ScenarioName(const Scenario& s) { return s.name.empty() ? s.file : s.name; }

}  // namespace parasim
