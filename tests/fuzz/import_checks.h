// What the import fuzz targets (Megatron-LM, torchtitan) require of an import: a refusal names
// the file it read, and a scenario written is one the loader takes. A breach aborts.
#pragma once

#include <cstdlib>
#include <string>

#include "scenarios/megatron_import.h"
#include "scenarios/scenario.h"
#include "sim/yaml_reader.h"

namespace parasim::fuzz {

// A refusal names `file` (its file:line:col, or the file alone).
inline void CheckLocated(const Status& s, const std::string& file) {
  if (s.message().find(file) == std::string::npos) std::abort();
}

inline void CheckImport(const StatusOr<ImportedScenario>& s, const std::string& file,
                        const Catalogs& cat) {
  if (!s.ok()) return CheckLocated(s.status(), file);
  auto root = ParseYaml(s->yaml, "imported.yaml");
  if (!root.ok()) std::abort();
  YamlContext ctx{"imported.yaml", {}};
  if (!ScenarioFromNode(*root, ctx, cat).ok()) std::abort();
}

}  // namespace parasim::fuzz
