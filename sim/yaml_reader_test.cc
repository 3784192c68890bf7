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

TEST_CASE("the unlocated checks word their errors as the readers do") {
  CHECK(*ParseInteger("3e3", 1, 4096) == 3000);
  CHECK(ParseInteger("eight", 1, 64).status().message() ==
        "expected an integer from 1 to 64, got 'eight' (counts take no unit)");
  CHECK(ParseInteger("0", 1, 64).status().message() == "expected an integer from 1 to 64, got 0");
  CHECK(ParseInteger("-2", 1, 64).status().message() == "expected an integer from 1 to 64, got -2");
  CHECK(ParseInteger("1.5", 1, 64).status().message() ==
        "expected an integer from 1 to 64, got 1.5");
  CHECK(*ParseBool("yes"));
  CHECK_FALSE(*ParseBool("off"));
  CHECK(ParseBool("2").status().message() == "expected true or false, got '2'");
  CHECK(CheckAccepted("ring", {"ring", "all_gather"}).ok());
  CHECK(CheckAccepted("rnig", {"ring", "all_gather"}).message() ==
        "'rnig' is not accepted; expected one of: ring, all_gather (did you mean 'ring'?)");
  // MapReader's readers locate the same messages at the key.
  YamlContext ctx{"x.yaml", {}};
  auto root = ParseYaml("a: 0\nb: 2\nc: rnig\n", "x.yaml");
  REQUIRE(root.ok());
  auto m = MapReader::Open(ctx, *root, "", {"a", "b", "c"});
  REQUIRE(m.ok());
  int64_t a = 0;
  bool b = false;
  std::string c;
  CHECK(m->Int("a", &a, 1, 64).message() ==
        "x.yaml:1:4: error: a: " + ParseInteger("0", 1, 64).status().message());
  CHECK(m->Bool("b", &b).message() == "x.yaml:2:4: error: b: " + ParseBool("2").status().message());
  CHECK(m->Enum("c", &c, {"ring", "all_gather"}).message() ==
        "x.yaml:3:4: error: c: " + CheckAccepted("rnig", {"ring", "all_gather"}).message());
}

}  // namespace
}  // namespace parasim
