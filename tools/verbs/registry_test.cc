// The contract every verb keeps (tools/verbs/registry.h): declarations the CLI and Python can
// both read, and a Run that refuses bad input as bad input.
#include "tools/verbs/registry.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>

namespace parasim {
namespace {

// Python's keywords: a flag's Python name must not be one ("from" is spelt "from_").
bool PythonKeyword(const std::string& s) {
  static const std::set<std::string> kKeywords = {
      "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
      "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
      "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
      "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"};
  return kKeywords.count(s) > 0;
}

bool Identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

TEST_CASE("the table: each verb named once; today's eleven in the CLI's order") {
  std::vector<std::string> names;
  for (const Verb& v : Verbs()) names.push_back(v.name);
  CHECK(std::set<std::string>(names.begin(), names.end()).size() == names.size());
  // A new verb may go anywhere; these keep `parasim --help`'s order.
  const std::vector<std::string> today = {"run",      "memory",  "sweep",     "scale",
                                          "validate", "fit",     "calibrate", "report",
                                          "diff",     "compare", "catalog"};
  auto at = names.begin();
  for (const std::string& name : today) {
    CAPTURE(name);
    at = std::find(at, names.end(), name);
    CHECK(at != names.end());
  }
}

TEST_CASE("every verb's flags can be read by the CLI and by Python") {
  for (const Verb& v : Verbs()) {
    CAPTURE(v.name);
    CHECK(!v.help.empty());
    CHECK(v.run);
    CHECK(v.under_mpi == (v.name == "sweep"));  // only the sweep spreads over ranks
    CHECK(v.Defaults().size() == v.flags.size());
    std::set<std::string> cli, python;
    int json = 0;
    for (const Flag& f : v.flags) {
      CAPTURE(f.name);
      CHECK(!f.help.empty());
      CHECK(cli.insert(f.name).second);
      CHECK(f.positional == (f.name.rfind("--", 0) != 0));
      json += f.json;
      if (f.json) {
        CHECK(f.python.empty());  // Python always takes the JSON view
        continue;
      }
      CHECK(Identifier(f.python));
      CHECK_FALSE(PythonKeyword(f.python));
      CHECK(python.insert(f.python).second);
      CHECK(f.min <= f.max);
    }
    CHECK(json == (v.name == "calibrate" ? 0 : 1));  // calibrate's program prints its own output
  }
}

TEST_CASE("every verb refuses missing input as bad input, with a located message") {
  for (const Verb& v : Verbs()) {
    // calibrate would run the GPU program where it is built; catalog needs no input.
    if (v.name == "calibrate" || v.name == "catalog") continue;
    CAPTURE(v.name);
    auto r = v.run(v.Defaults(), VerbContext{.json = true});
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().exit_code() == 2);
    CHECK(r.status().message().find(":1:1: error: ") != std::string::npos);
  }
}

const Verb& Find(const std::vector<Verb>& verbs, const std::string& name) {
  for (const Verb& v : verbs) {
    if (v.name == name) return v;
  }
  FAIL("no verb " << name);
  return verbs.front();
}

// The values of a verb's flags with one set by name.
template <typename T>
void SetValue(const Verb& v, std::vector<FlagValue>* values, const std::string& name, T value) {
  for (size_t i = 0; i < v.flags.size(); ++i) {
    if (v.flags[i].name == name) (*values)[i] = std::move(value);
  }
}

constexpr const char* kSmall =
    "{\"cluster\": {\"gpu\": \"a100-sxm4-80gb\", \"nodes\": 1, \"gpus_per_node\": 8,\n"
    "             \"intra_node\": \"nvlink3-a100\"},\n"
    " \"model\": \"llama2-7b\",\n"
    " \"training\": {\"seq_len\": 2048, \"global_batch\": 16, \"recompute\": \"selective\"},\n"
    " \"parallelism\": {\"tp\": 2, \"pp\": 1, \"dp\": 4, \"zero\": 1}}\n";

TEST_CASE("run through the table: a document's step, its JSON and text views of one result") {
  const std::vector<Verb> verbs = Verbs();
  const Verb& run = Find(verbs, "run");
  std::vector<FlagValue> values = run.Defaults();
  SetValue(run, &values, "file", Document{"<dict>", kSmall});
  CHECK_FALSE(run.WantsJson(values));
  auto r = run.run(values, VerbContext{});
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  const std::string json = (*r)->ToJson().Dump();
  CHECK(json.find("\"step_time_s\": ") != std::string::npos);
  CHECK(json.find("\"tp\": 2") != std::string::npos);
  const std::string text = (*r)->ToText();
  CHECK(text.rfind("<dict>: llama2-7b on 8 x ", 0) == 0);
  CHECK(text.find("  step time        ") != std::string::npos);
  CHECK((*r)->Notes().empty());  // no --timing
  SetValue(run, &values, "--json", true);
  CHECK(run.WantsJson(values));
}

TEST_CASE("a bad document is bad input at its line; a flag out of range names the flag") {
  const std::vector<Verb> verbs = Verbs();
  const Verb& run = Find(verbs, "run");
  std::vector<FlagValue> values = run.Defaults();
  std::string bad = kSmall;
  bad.replace(bad.find("\"tp\": 2"), 7, "\"tp\": 3");
  SetValue(run, &values, "file", Document{"<dict>", bad});
  auto r = run.run(values, VerbContext{});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().exit_code() == 2);
  CHECK(r.status().message().rfind("<dict>:5:", 0) == 0);
  SetValue(run, &values, "--repeat", 0);
  auto range = run.run(values, VerbContext{});
  REQUIRE_FALSE(range.ok());
  CHECK(range.status().message() == "--repeat=0:1:1: error: expected a value from 1 to 100000");
  const Verb& sweep = Find(verbs, "sweep");
  values = sweep.Defaults();
  SetValue(sweep, &values, "--max-layouts", int64_t{0});
  auto positive = sweep.run(values, VerbContext{});
  REQUIRE_FALSE(positive.ok());
  CHECK(positive.status().message() == "--max-layouts=0:1:1: error: expected a positive number");
}

// docs/VERBS.md, from the test's runfiles.
std::string VerbsDoc() {
  std::ifstream in(std::string(std::getenv("TEST_SRCDIR")) + "/" + std::getenv("TEST_WORKSPACE") +
                   "/docs/VERBS.md");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST_CASE("docs/VERBS.md has a section per verb naming each of its flags and Python keywords") {
  const std::string doc = VerbsDoc();
  REQUIRE(!doc.empty());
  for (const Verb& v : Verbs()) {
    CAPTURE(v.name);
    const size_t at = doc.find("\n## `parasim " + v.name + "`\n");
    REQUIRE(at != std::string::npos);
    const std::string section = doc.substr(at, doc.find("\n## ", at + 1) - at);
    for (const Flag& f : v.flags) {
      CAPTURE(f.name);
      // "| `--jobs N` | `jobs` |": the flag, then its keyword.
      CHECK(section.find("| `" + f.name) != std::string::npos);
      if (!f.python.empty()) CHECK(section.find("| `" + f.python + "` |") != std::string::npos);
    }
  }
}

TEST_CASE("the Python keyword of a flag") {
  CHECK(PythonName("--max-layouts") == "max_layouts");
  CHECK(PythonName("--set-a") == "set_a");
  CHECK(PythonName("file") == "file");
}

TEST_CASE("an error is located once, whatever the length of its first line") {
  const std::vector<FlagValue> values = {Document{.file = "in.yaml"}};
  // A message already naming file:line:col is kept as it is.
  const Status located = InvalidArgument("x.yaml:3:14: error: bad");
  CHECK(LocateAtInput(located, values).message() == "x.yaml:3:14: error: bad");
  CHECK(LocateAtInput(InvalidArgument("--set a.b=1:1:7: error: no"), values).message() ==
        "--set a.b=1:1:7: error: no");
  // One that does not is placed at the verb's input.
  CHECK(LocateAtInput(InvalidArgument("bad: 1:2 error: no"), values).message() ==
        "in.yaml:1:1: error: bad: 1:2 error: no");
  CHECK(LocateAtInput(InvalidArgument("x.yaml::3: error: no"), values).message() ==
        "in.yaml:1:1: error: x.yaml::3: error: no");
  // A first line of 200,000 characters (an importer quoting a hostile value) was a stack
  // overflow in std::regex; now a scan.
  const std::string huge(200000, '(');
  CHECK(LocateAtInput(InvalidArgument(huge + " x.yaml:1:2: error: deep"), values).message() ==
        huge + " x.yaml:1:2: error: deep");
  CHECK(LocateAtInput(InvalidArgument(huge), values).message().rfind("in.yaml:1:1: error: ", 0) ==
        0);
}

}  // namespace
}  // namespace parasim
