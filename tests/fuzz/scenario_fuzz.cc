// libFuzzer target: any text as a scenario file gives a scenario or a located error (never a
// crash); a scenario that loads also lowers and replays.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "scenarios/scenario.h"
#include "sim/yaml_reader.h"
#include "strategies/step.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const parasim::Catalogs cat = *parasim::LoadCatalogs();
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto root = parasim::ParseYaml(text, "fuzz.yaml");
  if (!root.ok()) return 0;
  parasim::YamlContext ctx{"fuzz.yaml", {}};
  auto s = parasim::ScenarioFromNode(*root, ctx, cat);
  if (!s.ok()) {
    if (s.status().message().find("fuzz.yaml:") == std::string::npos) std::abort();
    return 0;
  }
  // A sweep scenario's own layout need not be valid alone: run and the other commands refuse it
  // (fixed_layout), and so does the replay.
  if (!s->fixed_layout.ok()) {
    if (s->fixed_layout.message().find("fuzz.yaml:") == std::string::npos) std::abort();
    return 0;
  }
  // Keep replays small enough for fuzzing speed.
  if (s->cluster.gpus() > 4096 || s->training.global_batch > 4096 || s->model.layers > 256)
    return 0;
  (void)parasim::SimulateStep(s->model, s->training, s->layout, s->cluster, {});
  return 0;
}
