// Test helpers for the serving planners: a node of a catalog GPU with its server's fabrics, a
// catalog model, and a serving scenario of both (FP8, 1000 requests of 1000 tokens in and 200
// out, all at once, one TP1 replica).
//
//   ServingScenario s = testing::ServingOn("h100-sxm5-80gb", 8, "llama3-70b");
#pragma once

#include <string>

#include "scenarios/catalogs.h"
#include "strategies/serving_spec.h"

namespace parasim::testing {

inline const Catalogs& ServingCatalogs() {
  static const Catalogs cat = *LoadCatalogs();
  return cat;
}

inline ClusterSpec NodeOf(const std::string& gpu, int gpus = 8) {
  const Catalogs& cat = ServingCatalogs();
  ClusterSpec c;
  c.gpu = *cat.hardware.FindGpu(gpu);
  c.gpus_per_node = gpus;
  c.intra = *cat.hardware.FindFabric(c.gpu.server.intra);
  c.inter = *cat.hardware.FindFabric(c.gpu.server.inter);
  return c;
}

inline const ModelSpec& CatalogModel(const std::string& id) {
  return *ServingCatalogs().models.Find(id);
}

inline ServingScenario ServingOn(const std::string& gpu, int gpus, const std::string& model) {
  ServingScenario s;
  s.cluster = NodeOf(gpu, gpus);
  s.model = CatalogModel(model);
  s.serving.precision = {ServeDtype::kFp8, ServeDtype::kFp8, ServeDtype::kFp8};
  s.serving.requests.input = LengthDist::Fixed(1000);
  s.serving.requests.output = LengthDist::Fixed(200);
  return s;
}

}  // namespace parasim::testing
