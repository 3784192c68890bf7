#include "scenarios/table_keys.h"

#include <doctest/doctest.h>
#include <fmt/core.h>

#include <string>

#include "sim/yaml_reader.h"
#include "strategies/schedule.h"
#include "strategies/sweep_keys.h"

namespace parasim {
namespace {

// The block `text` (a YAML mapping) read through the table as `block`.
Status Read(const std::string& text, std::string_view block, Layout* l, Training* t,
            const std::vector<std::string_view>& skip = {}) {
  YamlContext ctx{"x.yaml", {}};
  StatusOr<YAML::Node> root = ParseYaml(text, "x.yaml");
  REQUIRE(root.ok());
  std::vector<std::string_view> keys;
  for (const SweepKey& k : SweepKeys()) keys.push_back(k.name);
  StatusOr<MapReader> m = MapReader::Open(ctx, *root, std::string(block), keys);
  REQUIRE(m.ok());
  return ReadTableKeys(*m, block, l, t, skip);
}

TEST_CASE("a block's table keys are read by the table, and only that block's") {
  Layout l;
  Training t;
  REQUIRE(Read("tp: 4\nschedule: interleaved\nsp: yes\nzero: 1\nprecision: fp8\n", "parallelism",
               &l, &t)
              .ok());
  CHECK(l.tp == 4);
  CHECK(l.schedule == kScheduleInterleaved);  // the registry's alias, as in a sweep
  CHECK(l.sp);
  CHECK(l.zero == 1);
  CHECK(t.precision == Dtype::kBf16);  // a training key, left to the training block
  REQUIRE(Read("precision: fp8\nmicro_batch: 2\nrecompute: selective\n", "training", &l, &t).ok());
  CHECK(t.precision == Dtype::kFp8);
  CHECK(t.micro_batch == 2);
  CHECK(t.recompute == RecomputeKind::kSelective);
  // `skip`: read by the caller (dp: auto).
  Layout skipped;
  REQUIRE(Read("dp: auto\n", "parallelism", &skipped, &t, {"dp"}).ok());
  CHECK(skipped.dp == Layout().dp);
}

TEST_CASE("an error is the table's, located at the key") {
  Layout l;
  Training t;
  CHECK(Read("pp: 2\ntp: 0\n", "parallelism", &l, &t).message() ==
        "x.yaml:2:5: error: parallelism.tp: expected an integer from 1 to 65536, got 0");
  CHECK(Read("tp: [2]\n", "parallelism", &l, &t).message() ==
        "x.yaml:1:5: error: parallelism.tp: expected a single value, got a list");
  for (const SweepKey& k : SweepKeys()) {
    CAPTURE(k.name);
    const std::string text = std::string(k.name) + ": not-a-value\n";
    const Status st = Read(text, k.block, &l, &t);
    REQUIRE_FALSE(st.ok());
    const std::string expected =
        fmt::format("x.yaml:1:{}: error: {}.{}: {}", k.name.size() + 3, k.block, k.name,
                    k.parse("not-a-value").status().message());
    CHECK(st.message() == expected);
  }
}

TEST_CASE("every key of the table belongs to the parallelism or the training block") {
  size_t n = 0;
  for (std::string_view block : {"parallelism", "training"}) n += SweepKeysOf(block).size();
  CHECK(n == SweepKeys().size());
  CHECK(SweepKeysOf("training") == std::vector<std::string_view>{"micro_batch", "recompute",
                                                                 "global_batch", "recompute_layers",
                                                                 "precision", "fp8_recipe"});
}

}  // namespace
}  // namespace parasim
