// libFuzzer target: any text as a serving validation file is loaded or refused with an error
// located in it (never a crash); a file whose cases are small enough (few, short requests: for
// fuzzing speed) is also validated whole, every view included (the span, the run's load and
// concurrency, the rate search).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "scenarios/serving_validate.h"
#include "tests/fuzz/serving_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const parasim::YamlInput input("fuzz.yaml", text);
  if (!parasim::IsServingValidationFile(input)) return 0;
  auto file = parasim::LoadServingValidationFile(input, {});
  if (!file.ok()) {
    if (file.status().message().find("fuzz.yaml") == std::string::npos) std::abort();
    return 0;
  }
  if (file->cases.size() > 4) return 0;
  for (const parasim::ServingValidationInput& c : file->cases) {
    const parasim::RequestSpec& rq = c.scenario.serving.requests;
    if (!parasim::fuzz::QuickToReplay(c.scenario) || rq.count > 48 || rq.trace.size() > 48) {
      return 0;
    }
  }
  auto r = parasim::ValidateServing(input, {}, /*jobs=*/1, /*search=*/true);
  if (!r.ok() && r.status().message().empty()) std::abort();
  if (r.ok() && r->cases.size() != file->cases.size()) std::abort();
  return 0;
}
