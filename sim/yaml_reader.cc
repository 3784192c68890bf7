#include "sim/yaml_reader.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <sstream>

#include "sim/io.h"
#include "sim/parse_units.h"
#include "sim/utf8.h"

namespace parasim {
namespace {

std::string Join(const std::vector<std::string_view>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ", ";
    out += v[i];
  }
  return out;
}

size_t Levenshtein(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string Describe(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "nothing";
  if (n.IsMap()) return "a mapping";
  if (n.IsSequence()) return "a list";
  std::string s = n.Scalar();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return fmt::format("'{}'", s);
}

}  // namespace

std::string YamlContext::Where(const YAML::Node& node, std::string_view path) const {
  // `path` is `p` or a key or list item below it ("a.b.c", "a.b[2]" below "a.b").
  auto at_or_below = [&](const std::string& p) {
    return path == p || (path.size() > p.size() && path.substr(0, p.size()) == p &&
                         (path[p.size()] == '.' || path[p.size()] == '['));
  };
  // An override applies to its own path and everything below it.
  for (const auto& [p, origin] : overrides) {
    if (at_or_below(p)) {
      return fmt::format("{}:1:{}", origin, p.size() + 7);  // column of the value in "--set p="
    }
  }
  // A value placed from another file (or a case's fragment copied from this one): the deepest.
  const std::string* placed_at = nullptr;
  size_t placed_size = 0;
  for (const auto& [p, where] : placed) {
    if (at_or_below(p) && (placed_at == nullptr || p.size() > placed_size)) {
      placed_at = &where;
      placed_size = p.size();
    }
  }
  if (placed_at != nullptr) return *placed_at;
  // A key that a --set created has no place in the file: the option names it, at the key's
  // segment ("--set a.b=1" for an unknown 'a' points at its 'a').
  const bool unplaced = !node.IsDefined() || node.Mark().line < 0;
  // A key missing from a mapping the option made, not one of the file's it rebuilt ("--set
  // cluster.inter_node.latency=2us" on a cluster without an inter-node fabric lacks its
  // bandwidth), is told at the mapping's segment.
  const size_t dot = path.rfind('.');
  const std::string_view parent = dot == std::string_view::npos ? "" : path.substr(0, dot);
  const bool parent_made = !parent.empty() && !rebuilt.count(std::string(parent));
  for (const std::string_view mine : {path, parent_made ? parent : std::string_view()}) {
    for (const auto& [p, origin] : overrides) {
      if (unplaced && !mine.empty() && p.size() > mine.size() && p.substr(0, mine.size()) == mine &&
          p[mine.size()] == '.') {
        const size_t segment = mine.rfind('.');
        return fmt::format("{}:1:{}", origin,
                           (segment == std::string_view::npos ? 0 : segment + 1) + 7);
      }
    }
  }
  // A node a --set or a sweep's combination rebuilt (or left without a place; yaml-cpp's Clone
  // marks its copies 1:1): the closest mapping above it that the file placed.
  const YAML::Mark mark = node.IsDefined() ? node.Mark() : YAML::Mark::null_mark();
  const bool cloned = mark.line == 0 && mark.column == 0 && mark.pos == 0;
  if (unplaced || (cloned && !rebuilt.empty())) {
    const std::string* best = nullptr;
    size_t best_size = 0;
    for (const auto& [p, where] : rebuilt) {
      if ((p.empty() || at_or_below(p)) && (best == nullptr || p.size() >= best_size)) {
        best = &where;
        best_size = p.size();
      }
    }
    if (best != nullptr) return *best;
  }
  int line = 1, col = 1;
  if (node.IsDefined()) {
    YAML::Mark m = node.Mark();
    if (m.line >= 0) {
      line = m.line + 1;
      col = m.column + 1;
    }
  }
  return fmt::format("{}:{}:{}", file, line, col);
}

Status YamlContext::ErrorAt(const YAML::Node& node, std::string_view path,
                            std::string_view message) const {
  if (path.empty())
    return InvalidArgument(fmt::format("{}: error: {}", Where(node, path), message));
  return InvalidArgument(fmt::format("{}: error: {}: {}", Where(node, path), path, message));
}

namespace {
// The candidates that begin with `word` (two characters or more).
std::vector<std::string_view> Family(std::string_view word,
                                     const std::vector<std::string_view>& candidates) {
  std::vector<std::string_view> out;
  if (word.size() < 2) return out;
  for (auto c : candidates) {
    if (c.size() > word.size() && c.substr(0, word.size()) == word) out.push_back(c);
  }
  return out;
}
}  // namespace

std::string SuggestionHint(std::string_view word, const std::vector<std::string_view>& candidates) {
  const std::vector<std::string_view> family = Family(word, candidates);
  if (family.size() > 1) return fmt::format(" (did you mean one of: {}?)", Join(family));
  const std::string one = DidYouMean(word, candidates);
  return one.empty() ? "" : fmt::format(" (did you mean '{}'?)", one);
}

std::string DidYouMean(std::string_view word, const std::vector<std::string_view>& candidates) {
  if (const auto family = Family(word, candidates); !family.empty()) {
    return std::string(family.front());
  }
  std::string best;
  size_t best_d = std::numeric_limits<size_t>::max();
  for (auto c : candidates) {
    size_t d = Levenshtein(word, c);
    if (d < best_d) {
      best_d = d;
      best = std::string(c);
    }
  }
  size_t limit = std::max<size_t>(2, word.size() / 3);
  return best_d <= limit ? best : "";
}

namespace {

// The most nodes a document may expand to, aliases followed. The largest inputs parasim reads
// (a calibration run's measurements, a validation file of a few hundred cases) are tens of
// thousands of nodes; nested aliases ("billion laughs") expand exponentially and would keep
// every later walk busy for minutes. Checked in about 0.1 s.
constexpr int64_t kMaxExpandedNodes = 2'000'000;

// Whether the quoted scalar that opens at text[pos] is closed before the end of the text.
bool QuoteCloses(std::string_view text, size_t pos) {
  const char q = text[pos];
  for (size_t i = pos + 1; i < text.size(); ++i) {
    if (q == '"' && text[i] == '\\') {
      ++i;  // an escape
    } else if (text[i] == q) {
      if (q == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
        ++i;  // '' is a quote inside a single-quoted string
      } else {
        return true;
      }
    }
  }
  return false;
}

// yaml-cpp reads a quoted string that is never closed to the end of the file, swallowing the
// keys after it: refused where it opens.
Status CheckQuoted(const YAML::Node& n, std::string_view text, const std::string& file) {
  const YAML::Mark m = n.Mark();
  if (m.pos < 0 || static_cast<size_t>(m.pos) >= text.size()) return Status::Ok();
  const char c = text[static_cast<size_t>(m.pos)];
  if ((c != '"' && c != '\'') || QuoteCloses(text, static_cast<size_t>(m.pos))) {
    return Status::Ok();
  }
  return InvalidArgument(fmt::format(
      "{}:{}:{}: error: YAML syntax: the string quoted here with {} is never closed (it would "
      "run to the end of the file); close it with a matching {}",
      file, m.line + 1, m.column + 1, c, c));
}

// yaml-cpp keeps one of two equal keys silently; a repeated key is almost always a mistake.
// The same walk counts the nodes the document expands to and checks its quoted strings.
Status CheckDocument(const YAML::Node& n, std::string_view text, const std::string& file,
                     int64_t* budget, bool duplicate_keys, int depth = 0) {
  if (n.IsScalar()) PARASIM_RETURN_IF_ERROR(CheckQuoted(n, text, file));
  if (--*budget < 0) {
    const YAML::Mark m = n.Mark();
    return InvalidArgument(fmt::format(
        "{}:{}:{}: error: the document expands to more than {} nodes (aliases nested in "
        "aliases?); a scenario is a few hundred nodes, so expand fewer aliases",
        file, m.line + 1, m.column + 1, kMaxExpandedNodes));
  }
  if (depth > 64) return Status::Ok();
  if (n.IsMap()) {
    std::map<std::string, YAML::Mark> seen;
    for (const auto& kv : n) {
      if (kv.first.IsScalar()) {
        PARASIM_RETURN_IF_ERROR(CheckQuoted(kv.first, text, file));
        const std::string key = kv.first.Scalar();
        auto [it, inserted] = seen.emplace(key, kv.first.Mark());
        if (!inserted && !duplicate_keys) {
          const YAML::Mark m = kv.first.Mark();
          return InvalidArgument(fmt::format(
              "{}:{}:{}: error: duplicate key '{}' (first at line {}); keep one of them", file,
              m.line + 1, m.column + 1, key, it->second.line + 1));
        }
      }
      PARASIM_RETURN_IF_ERROR(
          CheckDocument(kv.second, text, file, budget, duplicate_keys, depth + 1));
    }
  } else if (n.IsSequence()) {
    for (const auto& item : n) {
      PARASIM_RETURN_IF_ERROR(CheckDocument(item, text, file, budget, duplicate_keys, depth + 1));
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<YAML::Node> ParseYaml(std::string_view text, const std::string& file,
                               std::string_view expected, bool duplicate_keys) {
  if (const TextEncoding e = DetectEncoding(text); !e.utf8()) {
    return InvalidArgument(fmt::format("{}:1:1: error: {}", file, NotUtf8Message(e)));
  }
  if (text.find('\0') != std::string_view::npos) {
    return InvalidArgument(
        fmt::format("{}:1:1: error: the file holds binary data (a NUL byte), "
                    "not YAML text",
                    file));
  }
  if (const size_t bad = InvalidUtf8At(text); bad != std::string_view::npos) {
    // Every string read may reach JSON, which must be UTF-8 (RFC 8259).
    const auto line = 1 + std::count(text.begin(), text.begin() + bad, '\n');
    const size_t nl = bad == 0 ? std::string_view::npos : text.rfind('\n', bad - 1);
    const size_t col = bad - (nl == std::string_view::npos ? 0 : nl + 1) + 1;
    return InvalidArgument(
        fmt::format("{}:{}:{}: error: byte 0x{:02X} is not UTF-8 text; save the file as UTF-8",
                    file, line, col, static_cast<unsigned char>(text[bad])));
  }
  try {
    YAML::Node n = YAML::Load(std::string(text));
    if (!n.IsDefined() || n.IsNull()) {
      return InvalidArgument(fmt::format(
          "{}:1:1: error: the file is empty; expected a mapping with {}", file, expected));
    }
    int64_t budget = kMaxExpandedNodes;
    PARASIM_RETURN_IF_ERROR(CheckDocument(n, text, file, &budget, duplicate_keys));
    return n;
  } catch (const YAML::Exception& e) {
    return InvalidArgument(fmt::format("{}:{}:{}: error: YAML syntax: {}", file, e.mark.line + 1,
                                       e.mark.column + 1, e.msg));
  }
}

StatusOr<YAML::Node> LoadYamlFile(const std::string& path, std::string_view expected) {
  PARASIM_ASSIGN_OR_RETURN(std::string text, ReadFile(path));  // a regular file, at most 64 MiB
  return ParseYaml(text, path, expected);
}

StatusOr<YAML::Node> LoadYaml(const YamlInput& in, std::string_view expected) {
  if (in.text) return ParseYaml(*in.text, in.name, expected);
  return LoadYamlFile(in.name, expected);
}

StatusOr<MapReader> MapReader::Open(const YamlContext& ctx, const YAML::Node& node,
                                    std::string path,
                                    const std::vector<std::string_view>& allowed) {
  if (!node.IsMap()) {
    return ctx.ErrorAt(
        node, path,
        fmt::format("expected a mapping with keys {}, got {}", Join(allowed), Describe(node)));
  }
  for (const auto& kv : node) {
    std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
    std::string full = path.empty() ? key : path + "." + key;
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) {
      // `recompute:` with nothing after it is YAML's null, which had read as the key left out:
      // a typo that changed the plan without a word (--set refuses `~` likewise).
      if (!kv.second.IsNull()) continue;
      return ctx.ErrorAt(kv.first, full,
                         "no value given (an empty value is YAML's null): give one, or leave "
                         "the key out for its default");
    }
    std::string hint = DidYouMean(key, allowed);
    std::string msg = fmt::format("unknown key '{}'", key);
    if (!hint.empty()) msg += fmt::format("; did you mean '{}'?", hint);
    msg += fmt::format(" (accepted: {})", Join(allowed));
    return ctx.ErrorAt(kv.first, full, msg);
  }
  return MapReader(&ctx, node, std::move(path));
}

bool MapReader::Has(std::string_view key) const {
  YAML::Node n = node_[std::string(key)];
  return n.IsDefined() && !n.IsNull();
}

YAML::Node MapReader::Node(std::string_view key) const { return node_[std::string(key)]; }

std::string MapReader::Path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

Status MapReader::Error(std::string_view key, std::string_view message) const {
  YAML::Node n = Has(key) ? Node(key) : node_;
  return ctx_->ErrorAt(n, Path(key), message);
}

Status MapReader::Require(std::string_view key) const {
  if (Has(key)) return Status::Ok();
  return ctx_->ErrorAt(node_, Path(key), fmt::format("missing required key '{}'", key));
}

StatusOr<std::string> MapReader::Scalar(std::string_view key) const {
  return ReadScalar(*ctx_, Node(key), Path(key));
}

StatusOr<std::string> ReadScalar(const YamlContext& ctx, const YAML::Node& n,
                                 std::string_view path) {
  if (!n.IsScalar()) {
    return ctx.ErrorAt(n, path, fmt::format("expected a single value, got {}", Describe(n)));
  }
  return n.Scalar();
}

StatusOr<int64_t> ParseInteger(std::string_view text, int64_t lo, int64_t hi) {
  const std::string s(text);
  std::string want = fmt::format("expected an integer from {} to {}", lo, hi);
  // A plain decimal integer compares exactly (through a double, 2^62 + 1 passed as 2^62).
  int64_t exact = 0;
  const char* end = s.data() + s.size();
  if (auto [p, ec] = std::from_chars(s.data(), end, exact); ec == std::errc() && p == end) {
    if (exact < lo || exact > hi) return InvalidArgument(fmt::format("{}, got {}", want, s));
    return exact;
  }
  auto v = ParseCount(s);
  if (!v.ok()) {
    if (!s.empty() && s[0] == '-') return InvalidArgument(fmt::format("{}, got {}", want, s));
    return InvalidArgument(fmt::format("{}, got '{}' (counts take no unit)", want, s));
  }
  double d = *v;
  // 2^63 and above do not fit an int64 (hi as a double may round up to it).
  if (d != std::floor(d) || d < static_cast<double>(lo) || d > static_cast<double>(hi) ||
      std::abs(d) >= 9.223372036854775807e18) {
    return InvalidArgument(fmt::format("{}, got {}", want, s));
  }
  return static_cast<int64_t>(d);
}

StatusOr<bool> ParseBool(std::string_view text) {
  if (text == "true" || text == "yes" || text == "on") return true;
  if (text == "false" || text == "no" || text == "off") return false;
  return InvalidArgument(fmt::format("expected true or false, got '{}'", std::string(text)));
}

Status CheckAccepted(std::string_view text, const std::vector<std::string_view>& accepted) {
  if (std::find(accepted.begin(), accepted.end(), text) != accepted.end()) return Status::Ok();
  std::string hint = DidYouMean(text, accepted);
  std::string msg =
      fmt::format("'{}' is not accepted; expected one of: {}", std::string(text), Join(accepted));
  if (!hint.empty()) msg += fmt::format(" (did you mean '{}'?)", hint);
  return InvalidArgument(msg);
}

StatusOr<int64_t> ReadInt(const YamlContext& ctx, const YAML::Node& n, std::string_view path,
                          int64_t lo, int64_t hi) {
  PARASIM_ASSIGN_OR_RETURN(std::string s, ReadScalar(ctx, n, path));
  StatusOr<int64_t> v = ParseInteger(s, lo, hi);
  if (!v.ok()) return ctx.ErrorAt(n, path, v.status().message());
  return *v;
}

Status MapReader::Int(std::string_view key, int64_t* out, int64_t lo, int64_t hi) const {
  if (!Has(key)) return Status::Ok();
  PARASIM_ASSIGN_OR_RETURN(*out, ReadInt(*ctx_, Node(key), Path(key), lo, hi));
  return Status::Ok();
}

Status MapReader::Int(std::string_view key, int* out, int64_t lo, int64_t hi) const {
  int64_t v = *out;
  PARASIM_RETURN_IF_ERROR(Int(key, &v, lo, hi));
  *out = static_cast<int>(v);
  return Status::Ok();
}

Status MapReader::Number(std::string_view key, double* out, double lo, double hi) const {
  if (!Has(key)) return Status::Ok();
  PARASIM_ASSIGN_OR_RETURN(std::string s, Scalar(key));
  auto v = ParseCount(s);
  if (!v.ok() || *v < lo || *v > hi) {
    return Error(key, fmt::format("expected a number from {} to {}, got '{}'", lo, hi, s));
  }
  *out = *v;
  return Status::Ok();
}

Status MapReader::Bool(std::string_view key, bool* out) const {
  if (!Has(key)) return Status::Ok();
  PARASIM_ASSIGN_OR_RETURN(std::string s, Scalar(key));
  StatusOr<bool> v = ParseBool(s);
  if (!v.ok()) return Error(key, v.status().message());
  *out = *v;
  return Status::Ok();
}

Status MapReader::String(std::string_view key, std::string* out) const {
  if (!Has(key)) return Status::Ok();
  PARASIM_ASSIGN_OR_RETURN(*out, Scalar(key));
  return Status::Ok();
}

Status MapReader::Enum(std::string_view key, std::string* out,
                       const std::vector<std::string_view>& accepted) const {
  if (!Has(key)) return Status::Ok();
  PARASIM_ASSIGN_OR_RETURN(std::string s, Scalar(key));
  Status st = CheckAccepted(s, accepted);
  if (!st.ok()) return Error(key, st.message());
  *out = s;
  return Status::Ok();
}

#define PARASIM_UNIT_READER(Method, Type, Parser)                   \
  Status MapReader::Method(std::string_view key, Type* out) const { \
    if (!Has(key)) return Status::Ok();                             \
    PARASIM_ASSIGN_OR_RETURN(std::string s, Scalar(key));           \
    auto v = Parser(s);                                             \
    if (!v.ok()) return Error(key, v.status().message());           \
    *out = *v;                                                      \
    return Status::Ok();                                            \
  }
PARASIM_UNIT_READER(Size, Bytes, ParseBytes)
PARASIM_UNIT_READER(Rate, Bandwidth, ParseBandwidth)
PARASIM_UNIT_READER(Compute, FlopRate, ParseFlopRate)
PARASIM_UNIT_READER(Time, Duration, ParseDuration)
#undef PARASIM_UNIT_READER

namespace {
// A range's end with the largest prefix that keeps it at least 1: "1 PB/s", "100 MB/s".
std::string Prefixed(double v, std::string_view unit) {
  static constexpr std::pair<double, std::string_view> kPrefixes[] = {
      {1e18, "E"}, {1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "K"}};
  for (const auto& [scale, prefix] : kPrefixes) {
    if (v >= scale) return fmt::format("{:g} {}{}", v / scale, prefix, unit);
  }
  return fmt::format("{:g} {}", v, unit);
}
std::string FormatRange(Bandwidth b) { return Prefixed(b.bytes_per_second(), "B/s"); }
std::string FormatRange(FlopRate r) { return Prefixed(r.flops_per_second(), "FLOP/s"); }
std::string FormatRange(Duration d) {
  return d >= Duration::Seconds(1) || d == Duration::Zero() ? fmt::format("{:g} s", d.seconds())
                                                            : FormatDuration(d);
}
}  // namespace

#define PARASIM_RANGED_READER(Method, Type, What)                                               \
  Status MapReader::Method(std::string_view key, Type* out, Type lo, Type hi) const {           \
    Type v = *out;                                                                              \
    PARASIM_RETURN_IF_ERROR(Method(key, &v));                                                   \
    if (!Has(key) || (lo <= v && v <= hi)) {                                                    \
      *out = v;                                                                                 \
      return Status::Ok();                                                                      \
    }                                                                                           \
    return Error(key, fmt::format("expected {} from {} to {}, got '{}'", What, FormatRange(lo), \
                                  FormatRange(hi), Node(key).Scalar()));                        \
  }
PARASIM_RANGED_READER(Rate, Bandwidth, "a bandwidth")
PARASIM_RANGED_READER(Compute, FlopRate, "a compute rate")
PARASIM_RANGED_READER(Time, Duration, "a time")
#undef PARASIM_RANGED_READER

YAML::Node DeepMerge(const YAML::Node& base, const YAML::Node& over) {
  if (!over.IsDefined() || over.IsNull()) return base;
  if (!base.IsDefined() || base.IsNull() || !base.IsMap() || !over.IsMap()) return over;
  YAML::Node out(YAML::NodeType::Map);
  for (const auto& kv : base) {
    std::string k = kv.first.Scalar();
    YAML::Node o = over[k];
    if (o.IsDefined()) {
      out.force_insert(kv.first, DeepMerge(kv.second, o));
    } else {
      out.force_insert(kv.first, kv.second);
    }
  }
  for (const auto& kv : over) {
    if (!base[kv.first.Scalar()].IsDefined()) out.force_insert(kv.first, kv.second);
  }
  return out;
}

YAML::Node WithNodeAt(const YAML::Node& root, const std::vector<std::string>& path,
                      const YAML::Node& value) {
  std::function<YAML::Node(const YAML::Node&, size_t)> set = [&](const YAML::Node& cur,
                                                                 size_t i) -> YAML::Node {
    if (i == path.size()) return value;
    YAML::Node out(YAML::NodeType::Map);
    bool found = false;
    if (cur.IsDefined() && cur.IsMap()) {
      for (const auto& kv : cur) {
        if (kv.first.Scalar() == path[i]) {
          out.force_insert(kv.first, set(kv.second, i + 1));
          found = true;
        } else {
          out.force_insert(kv.first, kv.second);
        }
      }
    }
    if (!found) out.force_insert(path[i], set(YAML::Node(), i + 1));
    return out;
  };
  return set(root, 0);
}

namespace {

// The deepest key a scenario has is four segments (cluster.gpu.peak.bf16, model.moe.imbalance.x);
// a --set key deeper than this is a mistake, and refusing it keeps the rebuild of the document
// along its path short.
constexpr size_t kMaxSetSegments = 16;

// The segments of a --set key, each non-empty; `origin` is the option's text, in which the key
// starts at column 7 ("--set ").
StatusOr<std::vector<std::string>> SetKeySegments(std::string_view key, const std::string& origin) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    const size_t dot = key.find('.', start);
    const std::string_view seg =
        key.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (seg.empty()) {
      return InvalidArgument(fmt::format(
          "{}:1:{}: error: empty key segment in '{}'; a key is names joined by single dots, e.g. "
          "parallelism.tp",
          origin, start + 7, key));
    }
    if (parts.size() == kMaxSetSegments) {
      return InvalidArgument(fmt::format(
          "{}:1:{}: error: the key is more than {} segments deep; scenario keys are at most four "
          "(e.g. cluster.gpu.peak.bf16)",
          origin, start + 7, kMaxSetSegments));
    }
    parts.emplace_back(seg);
    if (dot == std::string_view::npos) return parts;
    start = dot + 1;
  }
}

}  // namespace

Status ApplySet(YAML::Node& root, std::string_view assignment, YamlContext* ctx) {
  // The option's text in messages, cut short: the key and value are echoed in full only when short.
  std::string origin = fmt::format("--set {}", assignment.substr(0, 200));
  if (assignment.size() > 200) origin += "...";
  size_t eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return InvalidArgument(
        fmt::format("{}:1:1: error: expected KEY=VALUE such as "
                    "parallelism.tp=4",
                    origin));
  }
  PARASIM_ASSIGN_OR_RETURN(std::vector<std::string> parts,
                           SetKeySegments(assignment.substr(0, eq), origin));
  std::string path(assignment.substr(0, eq));
  std::string value(assignment.substr(eq + 1));
  if (const size_t bad = InvalidUtf8At(value); bad != std::string_view::npos) {
    return InvalidArgument(fmt::format("{}:1:{}: error: byte 0x{:02X} is not UTF-8 text", origin,
                                       eq + 8 + bad, static_cast<unsigned char>(value[bad])));
  }
  // An empty value is the empty string (`--set cluster.calibration=`: no profile), not null.
  YAML::Node v(std::string{});
  try {
    if (!value.empty()) v = YAML::Load(value);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(fmt::format("{}:1:{}: error: YAML syntax in the value: {}", origin,
                                       eq + 2 + e.mark.column, e.msg));
  }
  if (!v.IsDefined() || v.IsNull()) {
    // An empty or null value would drop the key, and the scenario would fall back to defaults
    // without a word.
    return InvalidArgument(
        fmt::format("{}:1:{}: error: {}: no value given ('{}' is YAML's null); give a value, e.g. "
                    "--set parallelism.tp=4, or edit the file to remove the key",
                    origin, eq + 8, path, value));
  }
  // The file's marks of the mappings along the key, which the rebuild loses.
  YAML::Node cur;
  cur.reset(root);
  std::string prefix;
  for (size_t i = 0; i < parts.size() && cur.IsDefined() && cur.IsMap(); ++i) {
    if (cur.Mark().line >= 0 && !ctx->rebuilt.count(prefix)) {
      ctx->rebuilt[prefix] =
          fmt::format("{}:{}:{}", ctx->file, cur.Mark().line + 1, cur.Mark().column + 1);
    }
    // reset() rebinds; operator= would write into the document.
    YAML::Node next;
    for (const auto& kv : cur) {
      if (kv.first.IsScalar() && kv.first.Scalar() == parts[i]) next.reset(kv.second);
    }
    cur.reset(next);
    prefix += (prefix.empty() ? "" : ".") + parts[i];
  }
  root = WithNodeAt(root, parts, v);
  ctx->overrides[path] = origin;
  return Status::Ok();
}

}  // namespace parasim
