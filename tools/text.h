// Small pieces of the text the verbs and the report print: durations, counts in k/M/B, a
// scenario's name.
//
//   Seconds(0.0123)  // "12.300 ms"
//   Human(1.2e6)     // "1.20M"
#pragma once

#include <string>

#include "scenarios/scenario.h"

namespace parasim {

// A duration in seconds as FormatSeconds writes it ("12.300 ms", "128.0 days"), never saturated.
std::string Seconds(double s);
// A count in thousands, millions or billions: "812", "12.3k", "1.20M", "1.75B".
std::string Human(double x);
// The scenario's name, or its file when it has none.
const std::string& ScenarioName(const Scenario& s);

}  // namespace parasim
