#include "sim/yaml_reader.h"

#include <doctest/doctest.h>

#include <limits>

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
  // A UTF-16 file (Windows' "Unicode") is named as such; it read "binary data (a NUL byte)".
  auto wide = ParseYaml(std::string("a\0:\0 \0"
                                    "1\0",
                                    8),
                        "wide.yaml");
  REQUIRE_FALSE(wide.ok());
  CHECK(Contains(wide.status().message(), "wide.yaml:1:1: error: the file is UTF-16LE text"));
  CHECK(ParseYaml("\xEF\xBB\xBF"
                  "a: 1\n",
                  "mark.yaml")
            .ok());
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
  // Exact at the bounds of an int64 range (a seed up to 2^62 took 2^62 + 1 through a double).
  CHECK(*ParseInteger("4611686018427387904", 0, int64_t{1} << 62) == int64_t{1} << 62);
  CHECK_FALSE(ParseInteger("4611686018427387905", 0, int64_t{1} << 62).ok());
  CHECK_FALSE(ParseInteger("1e19", 0, std::numeric_limits<int64_t>::max()).ok());
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

TEST_CASE("text that is not UTF-8, and a quote never closed, are syntax errors where they are") {
  const auto bad = ParseYaml("name: ok\ncluster: \"caf\xE9\"\n", "u.yaml");
  REQUIRE_FALSE(bad.ok());
  CHECK(Contains(bad.status().message(), "u.yaml:2:14: error: byte 0xE9 is not UTF-8 text"));
  CHECK(ParseYaml("name: \"caf\xC3\xA9\"\n", "u.yaml").ok());
  // yaml-cpp reads an unclosed quote to the end of the file, swallowing the keys after it.
  for (const char* text : {"name: \"GPT-3\ncluster: {gpu: b200}\n", "name: 'GPT-3\nmodel: x\n"}) {
    const auto open = ParseYaml(text, "q.yaml");
    REQUIRE_FALSE(open.ok());
    CHECK(Contains(open.status().message(), "q.yaml:1:7: error: YAML syntax: the string quoted"));
  }
  CHECK(ParseYaml("a: \"x \\\" y\"\nb: 'it''s'\n", "q.yaml").ok());  // escapes close nothing
}

TEST_CASE("--set: keys of non-empty segments, at most 16 deep; a value; errors at the option") {
  YAML::Node root = YAML::Load("training: {seq_len: 8}\n");
  YamlContext ctx{"base.yaml", {}};
  struct Case {
    std::string set, says;
  };
  for (const Case& c :
       {Case{"parallelism.dp.=4", "--set parallelism.dp.=4:1:22: error: empty key"},
        Case{".tp=4", "--set .tp=4:1:7: error: empty key segment"},
        Case{"a..b=4", "--set a..b=4:1:9: error: empty key segment"},
        Case{"parallelism=~",
             "--set parallelism=~:1:19: error: parallelism: no "
             "value given"},
        Case{"parallelism=null", "no value given"},
        Case{"a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q=1", "more than 16 segments deep"}}) {
    CAPTURE(c.set);
    YAML::Node r = root;
    const Status st = ApplySet(r, c.set, &ctx);
    CHECK(st.exit_code() == 2);
    CHECK(Contains(st.message(), c.says));
  }
  YAML::Node r = root;
  REQUIRE(ApplySet(r, "training.calibration=", &ctx).ok());
  CHECK(r["training"]["calibration"].Scalar().empty());  // the empty string, not null
  // A key the option made has no place in the file: errors point at the option's key.
  REQUIRE(ApplySet(r, "x.y=1", &ctx).ok());
  CHECK(ctx.Where(r["x"], "x") == "--set x.y=1:1:7");
  CHECK(ctx.Where(r["x"]["y"], "x.y") == "--set x.y=1:1:10");
  // A list the option gave: its items are at the option too, not in the file.
  REQUIRE(ApplySet(r, "sweep.gpus=[8, 0]", &ctx).ok());
  CHECK(ctx.Where(r["sweep"]["gpus"][1], "sweep.gpus[1]") == "--set sweep.gpus=[8, 0]:1:17");
}

TEST_CASE("ranged readers refuse a value outside their range, naming it") {
  YamlContext ctx{"g.yaml", {}};
  auto root = ParseYaml("hbm: 1000B/s\npeak: 2PFLOP/s\nlat: 2s\n", "g.yaml");
  REQUIRE(root.ok());
  auto m = MapReader::Open(ctx, *root, "", {"hbm", "peak", "lat"});
  REQUIRE(m.ok());
  Bandwidth bw;
  const Status a = m->Rate("hbm", &bw, Bandwidth::GBps(1), Bandwidth::GBps(1e6));
  CHECK(Contains(
      a.message(),
      "g.yaml:1:6: error: hbm: expected a bandwidth from 1 GB/s to 1 PB/s, got '1000B/s'"));
  FlopRate fr;
  CHECK(m->Compute("peak", &fr, FlopRate::TFLOPs(1), FlopRate::TFLOPs(1e6)).ok());
  CHECK(fr.tflops() == 2000);
  Duration d;
  const Status c = m->Time("lat", &d, Duration::Zero(), Duration::Seconds(1));
  CHECK(Contains(c.message(), "expected a time from 0 s to 1 s, got '2s'"));
}

TEST_CASE("an unknown id suggests its family, else the nearest id") {
  const std::vector<std::string_view> ids = {"a100-sxm4-80gb", "h100-sxm5-80gb", "h100-pcie-80gb",
                                             "b200"};
  CHECK(SuggestionHint("h100", ids) == " (did you mean one of: h100-sxm5-80gb, h100-pcie-80gb?)");
  CHECK(SuggestionHint("a100", ids) == " (did you mean 'a100-sxm4-80gb'?)");
  CHECK(SuggestionHint("b2000", ids) == " (did you mean 'b200'?)");
  CHECK(SuggestionHint("zzzzzzzz", ids).empty());
  CHECK(DidYouMean("h100", ids) == "h100-sxm5-80gb");
}

}  // namespace
}  // namespace parasim
