#include "scenarios/scenario_writer.h"

#include <doctest/doctest.h>

namespace parasim {
namespace {

TEST_CASE("keys land in the contract's block order, each line with its origin") {
  ScenarioWriter w;
  w.Set("parallelism.tp", "2", "--tensor-model-parallel-size 2", "f:3:1");
  w.Set("model.moe.experts", "8", "--num-experts 8", "f:4:1");
  w.Set("cluster.gpu", "h100-sxm5-80gb", "--gpu");
  w.Set("model.layers", "32", "--num-layers 32", "f:1:1");
  w.Set("parallelism.tp", "4", "--tensor-model-parallel-size 4", "f:9:1");
  w.Trailer("Not modelled:", {"--deterministic-mode: ..."});
  CHECK(w.Get("parallelism.tp") == "4");
  std::vector<std::string> at, key;
  const std::string y = w.Render("# header", &at, &key);
  CHECK(y.find("cluster:") < y.find("model:"));
  CHECK(y.find("model:") < y.find("parallelism:"));
  CHECK(y.find("  moe:") != std::string::npos);
  CHECK(y.find("    experts: 8") != std::string::npos);
  CHECK(y.find("# --tensor-model-parallel-size 4") != std::string::npos);
  CHECK(y.find("#   --deterministic-mode: ...") != std::string::npos);
  // Every line of the scenario names where it came from.
  size_t start = 0;
  int line = 0;
  while (start < y.size()) {
    const size_t nl = y.find('\n', start);
    CHECK(y.substr(start, nl - start).find('#') != std::string::npos);
    if (key[line] == "parallelism.tp") CHECK(at[line] == "f:9:1");
    ++line;
    start = nl + 1;
  }
  CHECK(line == static_cast<int>(at.size()));
}

}  // namespace
}  // namespace parasim
