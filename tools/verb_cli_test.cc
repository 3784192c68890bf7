#include "tools/verb_cli.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace parasim {
namespace {

// A toy verb: it echoes its options, to check what the CLI bound.
struct Options {
  Document file;
  std::vector<std::string> sets;
  int jobs = 3;
  int64_t most = 10;
  bool fast = false;
  std::string out;
  std::vector<std::string> params;
};

StatusOr<Options> Echo(const Options& o, const VerbContext&) { return o; }
Json ToJson(const Options& o) {
  Json params = Json::Array();
  for (const std::string& p : o.params) params.Push(p);
  Json sets = Json::Array();
  for (const std::string& s : o.sets) sets.Push(s);
  Json j = Json::Object();
  j.Set("file", o.file.file).Set("sets", sets).Set("jobs", o.jobs).Set("most", o.most);
  return j.Set("fast", o.fast).Set("out", o.out).Set("params", params);
}
std::string ToText(const Options& o) { return o.file.file; }

Verb EchoVerb() {
  using O = Options;
  return MakeVerb<O, O>({
      .name = "echo",
      .help = "echo the options",
      .flags = {Arg(&O::file, "file", "a file").Required(), SetFlag(&O::sets), JsonFlag<O>(),
                Opt(&O::jobs, "--jobs", "threads").Range(1, 8),
                Opt(&O::most, "--most", "a cap").Positive(), Opt(&O::fast, "--fast", "go fast"),
                Opt(&O::out, "--out", "a file to write"),
                Opt(&O::params, "--params", "names").Delimiter(',')},
      .run = Echo,
      .json = ToJson,
      .text = ToText,
  });
}

// Parses `args` (after the program's name) as the CLI does, runs the echo verb with the values
// bound, and returns its options as JSON (one line).
StatusOr<std::string> Parse(std::vector<std::string> args, bool* json = nullptr) {
  CLI::App app{"test"};
  app.require_subcommand(1);
  std::vector<Verb> verbs;
  verbs.push_back(EchoVerb());
  VerbCommands commands(&app, std::move(verbs));
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  app.parse(args);
  REQUIRE(commands.parsed() != nullptr);
  if (json) *json = commands.parsed()->WantsJson(commands.values());
  auto r = commands.parsed()->run(commands.values(), VerbContext{});
  if (!r.ok()) return r.status();
  return (*r)->ToJson().Dump(0);
}

TEST_CASE("a verb's flags become a subcommand's, bound to its options") {
  bool json = true;
  auto o = Parse({"echo", "a.yaml"}, &json);
  REQUIRE(o.ok());
  // The options' defaults where no flag is given.
  CHECK(*o ==
        R"({"file":"a.yaml","sets":[],"jobs":3,"most":10,"fast":false,"out":"","params":[]})");
  CHECK_FALSE(json);
  o = Parse({"echo", "--jobs", "2", "--json", "--set", "a=1", "--set", "b=2", "--fast", "--out",
             "x.csv", "--most", "20", "--params", "p,q", "b.yaml"},
            &json);
  REQUIRE(o.ok());
  CHECK(*o == R"({"file":"b.yaml","sets":["a=1","b=2"],"jobs":2,"most":20,"fast":true,)"
              R"("out":"x.csv","params":["p","q"]})");
  CHECK(json);
  // A repeatable flag takes one value each time: the file after it is the file, whatever
  // follows (it had been taken as a second --set, and the file was missing).
  o = Parse({"echo", "--set", "a=1", "b.yaml", "--json"}, &json);
  REQUIRE(o.ok());
  CHECK(o->find(R"("file":"b.yaml","sets":["a=1"])") != std::string::npos);
  o = Parse({"echo", "--params", "p,q", "b.yaml", "--fast"}, &json);
  REQUIRE(o.ok());
  CHECK(o->find(R"("file":"b.yaml")") != std::string::npos);
  CHECK(o->find(R"("params":["p","q"])") != std::string::npos);
}

TEST_CASE("the CLI checks what the declarations say: required, ranges, positive numbers") {
  CHECK_THROWS_AS(Parse({"echo"}), CLI::RequiredError);
  CHECK_THROWS_AS(Parse({"echo", "--jobs", "9", "a.yaml"}), CLI::ValidationError);
  CHECK_THROWS_AS(Parse({"echo", "--most", "0", "a.yaml"}), CLI::ValidationError);
  CHECK_THROWS_AS(Parse({"echo", "--bogus", "a.yaml"}), CLI::ExtrasError);
}

TEST_CASE("the defaults of a verb are its options' default values") {
  const Verb v = EchoVerb();
  const std::vector<FlagValue> d = v.Defaults();
  REQUIRE(d.size() == 8);
  CHECK(std::get<int>(d[3]) == 3);
  CHECK(std::get<int64_t>(d[4]) == 10);
  CHECK(std::get<bool>(d[5]) == false);
  CHECK(v.flags[3].python == "jobs");
  CHECK(v.flags[0].positional);
  CHECK(v.flags[2].json);
}

}  // namespace
}  // namespace parasim
