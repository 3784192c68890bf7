#include "scenarios/catalogs.h"

namespace parasim {

StatusOr<Catalogs> LoadCatalogs() {
  Catalogs c;
  PARASIM_ASSIGN_OR_RETURN(c.hardware, LoadHardwareCatalog());
  PARASIM_ASSIGN_OR_RETURN(c.models, LoadModelCatalog());
  return c;
}

}  // namespace parasim
