// A property check of `run` and `sweep` end to end, driven by arbitrary bytes: the bytes choose a
// scenario within the contract's ranges (a catalog GPU in its usual server, a catalog model, a
// layout of divisors of the cluster, batch, sequence, precision, recompute, ZeRO, schedule), it
// is loaded as YAML like a user's file, replayed, and swept over a small grid; each output must
// hold: no NaN, infinity or negative time, MFU and HFU at most 1, the sweep's best no worse than
// any layout it ranked, and every refusal located at the file. The libFuzzer target
// (plan_fuzz.cc) and a seeded test (plan_property_test.cc) both call it.
//
//   std::string why = CheckPlanProperties(data, size);   // "" = every property held
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace parasim {

// The scenario YAML the bytes choose (for messages and the corpus).
std::string PlanScenarioText(const uint8_t* data, size_t size);
// "" when every property holds, else the first that failed, with the scenario.
std::string CheckPlanProperties(const uint8_t* data, size_t size);

}  // namespace parasim
