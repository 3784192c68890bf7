// libFuzzer target: any text as a Megatron-LM launch configuration (a model_config.yaml, a
// launch script or a flag list) gives a scenario or a located error (never a crash); the
// scenario written loads again as it was imported.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "scenarios/megatron_args.h"
#include "scenarios/megatron_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const parasim::Catalogs cat = *parasim::LoadCatalogs();
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto args = parasim::ParseMegatronArgs("fuzz.sh", text);
  if (!args.ok()) {
    if (args.status().message().find("fuzz.sh") == std::string::npos) std::abort();
    return 0;
  }
  auto s = parasim::ImportMegatron(*args, {.gpu = "h100-sxm5-80gb", .nodes = 2}, cat);
  if (!s.ok()) {
    if (s.status().message().find("fuzz.sh") == std::string::npos) std::abort();
    return 0;
  }
  // What the import wrote is a scenario the loader takes.
  auto root = parasim::ParseYaml(s->yaml, "imported.yaml");
  if (!root.ok()) std::abort();
  parasim::YamlContext ctx{"imported.yaml", {}};
  if (!parasim::ScenarioFromNode(*root, ctx, cat).ok()) std::abort();
  return 0;
}
