// libFuzzer target: any text as a serving scenario gives a scenario or a located error (never a
// crash); a scenario that loads also replays its requests (a few of them, for speed).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "scenarios/serving_scenario.h"
#include "sim/yaml_reader.h"
#include "strategies/serving_report.h"
#include "tests/fuzz/serving_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const parasim::Catalogs cat = *parasim::LoadCatalogs();
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto root = parasim::ParseYaml(text, "fuzz.yaml");
  if (!root.ok() || !parasim::IsServingDocument(*root)) return 0;
  parasim::YamlContext ctx{"fuzz.yaml", {}};
  auto s = parasim::ServingScenarioFromNode(*root, ctx, cat);
  if (!s.ok()) {
    if (s.status().message().find("fuzz.yaml:") == std::string::npos) std::abort();
    return 0;
  }
  if (!parasim::fuzz::QuickToReplay(*s)) return 0;
  s->serving.requests.count = std::min<int64_t>(s->serving.requests.count, 48);
  if (s->serving.requests.trace.size() > 48) s->serving.requests.trace.resize(48);
  auto r = parasim::Serve(*s, {.search_rate = false, .load = true});
  if (!r.ok() && r.status().message().empty()) std::abort();
  return 0;
}
