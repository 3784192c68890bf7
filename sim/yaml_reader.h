// Typed, located reading of YAML input (scenarios, catalogs, validation files, profiles).
//
// Every error names file:line:col, the dotted key and what would be accepted:
//   scenario.yaml:12:7: error: parallelism.tp: expected an integer from 1 to 65536, got 'eight'
//
//   YamlContext ctx{"scenario.yaml"};
//   PARASIM_ASSIGN_OR_RETURN(MapReader m, MapReader::Open(ctx, root["training"], "training",
//                                                        {"seq_len", "global_batch"}));
//   PARASIM_RETURN_IF_ERROR(m.Int("seq_len", &training.seq_len, 1, 1 << 24));
//   PARASIM_RETURN_IF_ERROR(m.Require("global_batch"));
//
// Values given with `--set key=value` keep their origin: errors in them name the option.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/status.h"
#include "sim/units.h"
#include "sim/yaml_context.h"

namespace parasim {

// Levenshtein-based suggestion: the closest candidate within a small distance, or "". A word that
// begins candidates ("h100" of "h100-sxm5-80gb") suggests the first of them.
std::string DidYouMean(std::string_view word, const std::vector<std::string_view>& candidates);
// The hint after an unknown id: every candidate the word begins (a family: "h100" ->
// " (did you mean one of: h100-sxm5-80gb, h100-pcie-80gb?)"), else DidYouMean's
// (" (did you mean 'b200'?)"), else "".
std::string SuggestionHint(std::string_view word, const std::vector<std::string_view>& candidates);

// Loads a YAML document from text; a syntax error names file:line:col.
// `expected` says what an empty file should have held ("a mapping with ...").
// `duplicate_keys`: equal keys in one mapping are kept, each (a Megatron-LM functional-test
// config, whose launcher passes every MODEL_ARGS entry and argparse keeps the last); else the
// second is an error.
StatusOr<YAML::Node> ParseYaml(
    std::string_view text, const std::string& file,
    std::string_view expected = "keys such as cluster, model, training, parallelism",
    bool duplicate_keys = false);
StatusOr<YAML::Node> LoadYamlFile(
    const std::string& path,
    std::string_view expected = "keys such as cluster, model, training, parallelism");

StatusOr<YAML::Node> LoadYaml(
    const YamlInput& in,
    std::string_view expected = "keys such as cluster, model, training, parallelism");

// Reads the keys of one mapping, checking that no unknown key is present.
class MapReader {
 public:
  static StatusOr<MapReader> Open(const YamlContext& ctx, const YAML::Node& node, std::string path,
                                  const std::vector<std::string_view>& allowed);

  bool Has(std::string_view key) const;
  YAML::Node Node(std::string_view key) const;
  std::string Path(std::string_view key) const;
  const YamlContext& ctx() const { return *ctx_; }
  const YAML::Node& node() const { return node_; }
  Status Error(std::string_view key, std::string_view message) const;
  Status Require(std::string_view key) const;

  // Each reader leaves *out untouched when the key is absent.
  Status Int(std::string_view key, int64_t* out, int64_t lo, int64_t hi) const;
  Status Int(std::string_view key, int* out, int64_t lo, int64_t hi) const;
  Status Number(std::string_view key, double* out, double lo, double hi) const;
  Status Bool(std::string_view key, bool* out) const;
  Status String(std::string_view key, std::string* out) const;
  Status Enum(std::string_view key, std::string* out,
              const std::vector<std::string_view>& accepted) const;
  Status Size(std::string_view key, Bytes* out) const;
  Status Rate(std::string_view key, Bandwidth* out) const;
  Status Compute(std::string_view key, FlopRate* out) const;
  Status Time(std::string_view key, Duration* out) const;
  // The same within [lo, hi]: "expected a bandwidth from 100.0 MB/s to 1000.00 TB/s, got
  // '1000B/s'" (a value out of range is refused, never clamped).
  Status Rate(std::string_view key, Bandwidth* out, Bandwidth lo, Bandwidth hi) const;
  Status Compute(std::string_view key, FlopRate* out, FlopRate lo, FlopRate hi) const;
  Status Time(std::string_view key, Duration* out, Duration lo, Duration hi) const;

 private:
  MapReader(const YamlContext* ctx, YAML::Node node, std::string path)
      : ctx_(ctx), node_(std::move(node)), path_(std::move(path)) {}
  StatusOr<std::string> Scalar(std::string_view key) const;
  const YamlContext* ctx_;
  YAML::Node node_;
  std::string path_;
};

// Node-level helpers for values that are not in a MapReader (list items).
StatusOr<int64_t> ReadInt(const YamlContext& ctx, const YAML::Node& n, std::string_view path,
                          int64_t lo, int64_t hi);
StatusOr<std::string> ReadScalar(const YamlContext& ctx, const YAML::Node& n,
                                 std::string_view path);

// The readers' checks of one scalar's text, unlocated, for values read outside a mapping (the
// sweep's key table, strategies/sweep_keys.h): the same acceptance and wording as MapReader's
// Int, Bool and Enum, which locate these messages at the key.
//   ParseInteger("eight", 1, 64) -> "expected an integer from 1 to 64, got 'eight' (counts take
//   no unit)"
StatusOr<int64_t> ParseInteger(std::string_view text, int64_t lo, int64_t hi);
StatusOr<bool> ParseBool(std::string_view text);  // true/yes/on, false/no/off
// Ok when `text` is one of `accepted`; else "'x' is not accepted; expected one of: a, b (did
// you mean 'y'?)".
Status CheckAccepted(std::string_view text, const std::vector<std::string_view>& accepted);

// Deep merge: keys of `over` replace or (for two mappings) merge into `base`. Nodes are shared,
// not copied, so their marks (line, column) survive.
YAML::Node DeepMerge(const YAML::Node& base, const YAML::Node& over);

// `root` with `value` at the key path `path` (maps along it rebuilt, so nodes shared with
// `root` stay untouched; missing maps created). `value` is shared, so its mark survives.
YAML::Node WithNodeAt(const YAML::Node& root, const std::vector<std::string>& path,
                      const YAML::Node& value);

// Applies "a.b.c=value" to `root` (value parsed as YAML), recording the origin in ctx.
Status ApplySet(YAML::Node& root, std::string_view assignment, YamlContext* ctx);

}  // namespace parasim
