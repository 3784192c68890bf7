// libFuzzer target: any text as a torchtitan job config (TOML) gives a scenario or an error
// naming the file, never a crash; the scenario written loads again as it was imported.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "scenarios/torchtitan_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const parasim::Catalogs cat = *parasim::LoadCatalogs();
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto s = parasim::ImportTorchtitan("fuzz.toml", text, {.gpu = "h100-sxm5-80gb", .nodes = 2}, cat);
  if (!s.ok()) {
    if (s.status().message().find("fuzz.toml") == std::string::npos) std::abort();
    return 0;
  }
  auto root = parasim::ParseYaml(s->yaml, "imported.yaml");
  if (!root.ok()) std::abort();
  parasim::YamlContext ctx{"imported.yaml", {}};
  if (!parasim::ScenarioFromNode(*root, ctx, cat).ok()) std::abort();
  return 0;
}
