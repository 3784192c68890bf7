// libFuzzer target: any text as a torchtitan job config (TOML) gives a scenario or an error
// naming the file, never a crash; the scenario written loads again as it was imported.
#include <cstdint>
#include <string>

#include "scenarios/torchtitan_import.h"
#include "tests/fuzz/import_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const parasim::Catalogs cat = *parasim::LoadCatalogs();
  const std::string text(reinterpret_cast<const char*>(data), size);
  parasim::fuzz::CheckImport(
      parasim::ImportTorchtitan("fuzz.toml", text, {.gpu = "h100-sxm5-80gb", .nodes = 2}, cat),
      "fuzz.toml", cat);
  return 0;
}
