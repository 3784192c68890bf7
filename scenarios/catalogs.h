// The catalogs a scenario names its GPU, fabrics and model from (hardware/catalog/*.yaml,
// models/catalog/models.yaml, embedded in the binary), loaded once and handed to every reader of
// a scenario block.
//
//   PARASIM_ASSIGN_OR_RETURN(Catalogs cat, LoadCatalogs());
//   const GpuSpec* a100 = cat.hardware.FindGpu("a100-sxm4-80gb");
#pragma once

#include "hardware/spec.h"
#include "models/model_spec.h"
#include "sim/status.h"

namespace parasim {

struct Catalogs {
  HardwareCatalog hardware;
  ModelCatalog models;
};
StatusOr<Catalogs> LoadCatalogs();

}  // namespace parasim
