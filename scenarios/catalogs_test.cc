#include "scenarios/catalogs.h"

#include <doctest/doctest.h>

namespace parasim {
namespace {

TEST_CASE("the catalogs load with the ids the contract names") {
  StatusOr<Catalogs> cat = LoadCatalogs();
  REQUIRE_MESSAGE(cat.ok(), cat.status().message());
  // SCENARIO.md, "Catalog ids that must exist": a few of each kind.
  for (const char* gpu : {"a100-sxm4-80gb", "h100-sxm5-80gb", "b200", "gb200", "mi300x"}) {
    CAPTURE(gpu);
    CHECK(cat->hardware.FindGpu(gpu) != nullptr);
  }
  for (const char* fabric : {"nvlink3-a100", "ib-hdr-200g", "nvlink5", "roce-400g"}) {
    CAPTURE(fabric);
    CHECK(cat->hardware.FindFabric(fabric) != nullptr);
  }
  for (const char* model : {"gpt3-175b", "llama3-70b", "mixtral-8x7b", "deepseek-v3"}) {
    CAPTURE(model);
    CHECK(cat->models.Find(model) != nullptr);
  }
  CHECK(cat->hardware.FindGpu("a100-80gb") == nullptr);
}

}  // namespace
}  // namespace parasim
