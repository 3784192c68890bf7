// A scenario written by a program (`parasim import`): keys set one at a time, each with where
// its value came from, rendered as YAML whose every line carries that origin as a comment, the
// blocks in the contract's order (name, cluster, model, training, parallelism) and the keys of
// each block in the order set. A closing comment block lists what was read but not applied.
//
//   ScenarioWriter w;
//   w.Set("model.moe.experts", "8", "--num-experts 8");
//   w.Set("parallelism.tp", "2", "--tensor-model-parallel-size 2");
//   w.Trailer("Flags not modelled:", {"--deterministic-mode: ..."});
//   std::string yaml = w.Render("# Imported from model_config.yaml");
//
// Render also says, per line of its text, which origin that line came from, so that an error
// the loader reports at a line of the text can be told at the flag the user wrote.
#pragma once

#include <string>
#include <vector>

namespace parasim {

// `text` as a double-quoted YAML scalar ("a \"b\"").
std::string YamlQuote(const std::string& text);

class ScenarioWriter {
 public:
  // Sets a dotted key ("model.moe.experts") to a YAML value ("8", "[7, 8]", "fp8"); a second
  // Set of the same key replaces the value and its origin. `from` says where it came from
  // ("--num-experts 8"); `at` is the place of that origin (file:line:col), for errors.
  void Set(const std::string& key, const std::string& value, const std::string& from,
           const std::string& at = "");
  bool Has(const std::string& key) const;
  // The value set for a key, or "".
  std::string Get(const std::string& key) const;
  void Erase(const std::string& key);
  // A comment block after the scenario: a heading and one line each.
  void Trailer(const std::string& heading, const std::vector<std::string>& lines);

  // The YAML text after `header` (comment lines). `line_at`, when given, gets one entry per
  // line of the text: the `at` of the key written there ("" for other lines).
  std::string Render(const std::string& header, std::vector<std::string>* line_at = nullptr,
                     std::vector<std::string>* line_key = nullptr) const;
  // Every key set, dotted, in the order rendered.
  std::vector<std::string> Keys() const;

 private:
  struct Entry {
    std::string key, value, from, at;
  };
  std::vector<Entry> entries_;
  std::vector<std::string> trailer_;
};

}  // namespace parasim
