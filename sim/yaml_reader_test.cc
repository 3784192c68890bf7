#include "sim/yaml_reader.h"

#include <doctest/doctest.h>

namespace parasim {
namespace {

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST_CASE("errors name file, line, column and key") {
  YamlContext ctx{"x.yaml", {}};
  auto root = ParseYaml("training:\n  seq_len: many\n", "x.yaml");
  REQUIRE(root.ok());
  auto m = MapReader::Open(ctx, (*root)["training"], "training", {"seq_len"});
  REQUIRE(m.ok());
  int seq = 0;
  Status st = m->Int("seq_len", &seq, 1, 1000);
  REQUIRE_FALSE(st.ok());
  CHECK(Contains(st.message(), "x.yaml:2:12"));
  CHECK(Contains(st.message(), "training.seq_len"));
  CHECK(st.exit_code() == 2);
}

TEST_CASE("unknown keys get a did-you-mean suggestion") {
  YamlContext ctx{"x.yaml", {}};
  auto root = ParseYaml("parallelism:\n  tpp: 4\n", "x.yaml");
  auto m = MapReader::Open(ctx, (*root)["parallelism"], "parallelism", {"tp", "pp", "dp"});
  REQUIRE_FALSE(m.ok());
  CHECK(Contains(m.status().message(), "did you mean 'tp'"));
  CHECK(Contains(m.status().message(), "x.yaml:2:3"));
}

TEST_CASE("syntax errors and empty files are located") {
  auto bad = ParseYaml("a: [1, 2\n", "bad.yaml");
  REQUIRE_FALSE(bad.ok());
  CHECK(Contains(bad.status().message(), "bad.yaml:"));
  auto empty = ParseYaml("", "empty.yaml");
  REQUIRE_FALSE(empty.ok());
  CHECK(Contains(empty.status().message(), "empty.yaml:1:1"));
}

TEST_CASE("deep merge keeps marks of both sides") {
  auto base = ParseYaml("a:\n  x: 1\n  y: 2\nb: 3\n", "f");
  auto over = ParseYaml("a:\n  y: 20\n  z: 30\n", "f");
  YAML::Node m = DeepMerge(*base, *over);
  CHECK(m["a"]["x"].as<int>() == 1);
  CHECK(m["a"]["y"].as<int>() == 20);
  CHECK(m["a"]["z"].as<int>() == 30);
  CHECK(m["b"].as<int>() == 3);
  CHECK(m["a"]["y"].Mark().line == 1);
  CHECK((*base)["a"]["y"].as<int>() == 2);  // the base is not modified
}

TEST_CASE("--set replaces a value and errors name the option") {
  auto root = ParseYaml("parallelism:\n  tp: 8\n", "f.yaml");
  YamlContext ctx{"f.yaml", {}};
  YAML::Node n = *root;
  REQUIRE(ApplySet(n, "parallelism.tp=four", &ctx).ok());
  auto m = MapReader::Open(ctx, n["parallelism"], "parallelism", {"tp"});
  int tp = 0;
  Status st = m->Int("tp", &tp, 1, 64);
  REQUIRE_FALSE(st.ok());
  CHECK(Contains(st.message(), "--set parallelism.tp=four"));
  CHECK_FALSE(ApplySet(n, "novalue", &ctx).ok());
}

}  // namespace
}  // namespace parasim
