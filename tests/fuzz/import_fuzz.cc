// libFuzzer target: any text as a Megatron-LM launch configuration (a model_config.yaml, a
// launch script or a flag list) gives a scenario or a located error (never a crash); the
// scenario written loads again as it was imported.
#include <cstdint>
#include <string>

#include "scenarios/megatron_args.h"
#include "tests/fuzz/import_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const parasim::Catalogs cat = *parasim::LoadCatalogs();
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto args = parasim::ParseMegatronArgs("fuzz.sh", text);
  if (!args.ok()) {
    parasim::fuzz::CheckLocated(args.status(), "fuzz.sh");
    return 0;
  }
  parasim::fuzz::CheckImport(
      parasim::ImportMegatron(*args, {.gpu = "h100-sxm5-80gb", .nodes = 2}, cat), "fuzz.sh", cat);
  return 0;
}
