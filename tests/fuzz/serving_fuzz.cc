// libFuzzer target: any text as a serving scenario gives a scenario or a located error (never a
// crash); a scenario that loads also replays its requests (a few of them, for speed).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "scenarios/serving_scenario.h"
#include "strategies/serving_report.h"

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
  // A sweep's own layout need not be valid alone (serve --sweep varies it); keep replays small
  // enough for fuzzing speed.
  if (s->serving.sweep || s->cluster.gpus() > 512 || s->model.layers > 128) return 0;
  // Long requests are legitimate but slow to replay (a token an iteration): keep to lengths of
  // at most a few thousand tokens, for fuzzing speed.
  auto long_dist = [](const parasim::LengthDist& d) {
    return d.Mean() > 2048 ||
           (d.max > 0 ? d.max > 8192 : d.kind != parasim::LengthDist::Kind::kFixed);
  };
  const parasim::RequestSpec& rq = s->serving.requests;
  if (long_dist(rq.input) || long_dist(rq.output)) return 0;
  for (const parasim::TraceRow& t : rq.trace) {
    if (t.input > 8192 || t.output > 8192) return 0;
  }
  s->serving.requests.count = std::min<int64_t>(s->serving.requests.count, 48);
  if (s->serving.requests.trace.size() > 48) s->serving.requests.trace.resize(48);
  auto r = parasim::Serve(*s, {.search_rate = false, .load = true});
  if (!r.ok() && r.status().message().empty()) std::abort();
  return 0;
}
