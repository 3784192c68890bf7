#include "hardware/readers/kernel_classes.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>

#include "hardware/readers/bounded_input.h"
#include "sim/enum_names.h"
#include "sim/yaml_reader.h"

extern const char kKernelClassesYaml[];

namespace parasim {
namespace {

constexpr EnumNames<KernelClass, kNumKernelClasses> kClassKeys(
    "kernel class", {{{KernelClass::kGemm, "gemm"},
                      {KernelClass::kAttention, "attention"},
                      {KernelClass::kCommunication, "communication"},
                      {KernelClass::kMemcpy, "memcpy"},
                      {KernelClass::kMemset, "memset"},
                      {KernelClass::kNormalization, "normalization"},
                      {KernelClass::kElementwise, "elementwise"}}});
constexpr EnumNames<KernelClass, kNumKernelClasses> kClassNames(
    "kernel class", {{{KernelClass::kGemm, "GEMM"},
                      {KernelClass::kAttention, "attention"},
                      {KernelClass::kCommunication, "communication"},
                      {KernelClass::kMemcpy, "memcpy"},
                      {KernelClass::kMemset, "memset"},
                      {KernelClass::kNormalization, "normalization"},
                      {KernelClass::kElementwise, "element-wise"}}});

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

StatusOr<KernelClassRow> ParseRow(const YamlContext& ctx, const YAML::Node& node,
                                  const std::string& path) {
  PARASIM_ASSIGN_OR_RETURN(MapReader m,
                           MapReader::Open(ctx, node, path, {"kind", "family", "match"}));
  PARASIM_RETURN_IF_ERROR(m.Require("kind"));
  PARASIM_RETURN_IF_ERROR(m.Require("match"));
  std::string kind;
  PARASIM_RETURN_IF_ERROR(m.Enum("kind", &kind, kClassKeys.Names()));
  KernelClassRow row;
  row.kind = *kClassKeys.Parse(kind);
  row.family = std::string(kind);
  PARASIM_RETURN_IF_ERROR(m.String("family", &row.family));
  row.where = ctx.Where(node, path);
  const YAML::Node match = m.Node("match");
  if (match.IsScalar()) {
    PARASIM_ASSIGN_OR_RETURN(std::string p, ReadScalar(ctx, match, m.Path("match")));
    row.patterns.push_back(Lower(p));
  } else if (match.IsSequence() && match.size() > 0) {
    for (size_t i = 0; i < match.size(); ++i) {
      PARASIM_ASSIGN_OR_RETURN(
          std::string p, ReadScalar(ctx, match[i], fmt::format("{}[{}]", m.Path("match"), i)));
      row.patterns.push_back(Lower(p));
    }
  } else {
    return m.Error("match", "expected a glob or a list of globs, e.g. [\"*gemm*\", \"nvjet_*\"]");
  }
  for (const std::string& p : row.patterns) {
    if (p.empty()) return m.Error("match", "an empty pattern matches no kernel name");
  }
  return row;
}

}  // namespace

std::string_view KernelClassName(KernelClass k) { return kClassNames.Name(k); }
std::string_view KernelClassKey(KernelClass k) { return kClassKeys.Name(k); }
StatusOr<KernelClass> ParseKernelClass(std::string_view key) { return kClassKeys.Parse(key); }

bool GlobMatch(std::string_view pattern, std::string_view text) {
  // Greedy with one backtrack point (the last '*'): linear for the patterns of the table.
  size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p, ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

StatusOr<KernelClassTable> KernelClassTable::Parse(std::string_view yaml, const std::string& file) {
  PARASIM_ASSIGN_OR_RETURN(YAML::Node root,
                           ParseYaml(yaml, file, "a mapping with a `classes` list"));
  YamlContext ctx{file, {}};
  PARASIM_ASSIGN_OR_RETURN(MapReader m, MapReader::Open(ctx, root, "", {"classes", "replace"}));
  PARASIM_RETURN_IF_ERROR(m.Require("classes"));
  KernelClassTable table;
  PARASIM_RETURN_IF_ERROR(m.Bool("replace", &table.replace_));
  const YAML::Node list = m.Node("classes");
  if (!list.IsSequence()) {
    return m.Error("classes", "expected a list of {kind, family, match} rows");
  }
  for (size_t i = 0; i < list.size(); ++i) {
    PARASIM_ASSIGN_OR_RETURN(KernelClassRow row,
                             ParseRow(ctx, list[i], fmt::format("classes[{}]", i)));
    table.rows_.push_back(std::move(row));
  }
  return table;
}

StatusOr<KernelClassTable> KernelClassTable::Builtin() {
  return Parse(kKernelClassesYaml, "hardware/readers/kernel_classes.yaml");
}

KernelMatch KernelClassTable::Classify(std::string_view name) const {
  const std::string lower = Lower(name);
  for (size_t r = 0; r < rows_.size(); ++r) {
    for (const std::string& p : rows_[r].patterns) {
      if (GlobMatch(p, lower)) return {rows_[r].kind, rows_[r].family, static_cast<int>(r)};
    }
  }
  return {KernelClass::kElementwise, "unmatched", -1};
}

KernelMatch KernelClassTable::Classify(std::string_view name, GpuEventCategory category) const {
  if (category == GpuEventCategory::kMemcpy) return {KernelClass::kMemcpy, "memcpy", -1};
  if (category == GpuEventCategory::kMemset) return {KernelClass::kMemset, "memset", -1};
  return Classify(name);
}

std::vector<KernelMatch> KernelClassTable::ClassifyNames(const ProfilerTrace& trace) const {
  // A name's category is the same on every event that carries it (Kineto names copies
  // "Memcpy ..." and memsets "Memset ..."), so the first event decides.
  std::vector<int8_t> category(trace.names.size(), -1);
  for (const GpuEvent& e : trace.events) {
    if (category[e.name] < 0) category[e.name] = static_cast<int8_t>(e.category);
  }
  std::vector<KernelMatch> out;
  out.reserve(trace.names.size());
  for (size_t i = 0; i < trace.names.size(); ++i) {
    const auto c = static_cast<GpuEventCategory>(std::max<int8_t>(category[i], 0));
    out.push_back(Classify(trace.names[i], c));
  }
  return out;
}

KernelClassTable KernelClassTable::Over(const KernelClassTable& base) const {
  KernelClassTable out = *this;
  out.replace_ = false;
  if (!replace_) out.rows_.insert(out.rows_.end(), base.rows_.begin(), base.rows_.end());
  return out;
}

StatusOr<KernelClassTable> LoadKernelClasses(const std::string& user_file) {
  PARASIM_ASSIGN_OR_RETURN(KernelClassTable builtin, KernelClassTable::Builtin());
  if (user_file.empty()) return builtin;
  InputLimits limits;
  limits.max_bytes = int64_t{16} << 20;
  PARASIM_ASSIGN_OR_RETURN(std::string text, ReadBoundedFile(user_file, limits));
  PARASIM_ASSIGN_OR_RETURN(KernelClassTable user, KernelClassTable::Parse(text, user_file));
  return user.Over(builtin);
}

}  // namespace parasim
