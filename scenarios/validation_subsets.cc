#include "scenarios/validation_subsets.h"

#include <fmt/core.h>

#include <filesystem>
#include <system_error>

#include "sim/yaml_reader.h"

namespace parasim {
namespace {

// The subsets.yaml of a validation file: beside it, else a folder up
// (tests/validation/subsets.yaml lists regimes/*.yaml); `file` absolute (Absolute).
std::string SubsetsPath(const std::filesystem::path& file) {
  const std::string beside = (file.parent_path() / "subsets.yaml").string();
  if (std::filesystem::exists(beside)) return beside;
  return (file.parent_path().parent_path() / "subsets.yaml").string();
}

// A validation file's path made absolute, so that its folder and its folder's name are known
// however it was given (a bare name in its own folder).
std::filesystem::path Absolute(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(path, ec);
  return ec ? std::filesystem::path(path) : p.lexically_normal();
}

// A located error in a subsets.yaml.
Status SubsetsError(const std::string& subsets, const YAML::Node& at, std::string_view what) {
  const YAML::Mark m = at.Mark();
  return InvalidArgument(
      fmt::format("{}:{}:{}: error: {}", subsets, m.line + 1, m.column + 1, what));
}

// Whether a subsets.yaml entry names `file` (its name, or its folder's and its name).
bool Names(const std::string& entry, const std::filesystem::path& file) {
  return entry == file.filename().string() ||
         (file.has_parent_path() &&
          entry == (file.parent_path().filename() / file.filename()).string());
}

// Whether scenario fragment `n` has a value at dotted path `key`.
bool Defines(const YAML::Node& n, const std::string& key) {
  YAML::Node at;
  at.reset(n);  // rebinds (operator= would write into the fragment)
  size_t from = 0;
  while (true) {
    if (!at.IsMap()) return false;
    const size_t dot = key.find('.', from);
    const std::string part = key.substr(from, dot == std::string::npos ? dot : dot - from);
    const YAML::Node& view = at;
    const YAML::Node next = view[part];
    if (!next.IsDefined()) return false;
    if (dot == std::string::npos) return true;
    at.reset(next);
    from = dot + 1;
  }
}

// One stated key: as --set takes it, its path and where subsets.yaml states it.
struct Stated {
  std::string set, key, at;
};

StatusOr<std::vector<Stated>> StatedSets(const std::string& path) {
  std::vector<Stated> out;
  const std::filesystem::path file = Absolute(path);
  const std::string subsets = SubsetsPath(file);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(subsets) || std::filesystem::file_size(subsets, ec) == 0) {
    return out;
  }
  PARASIM_ASSIGN_OR_RETURN(YAML::Node root, LoadYaml(YamlInput(subsets), "subset lists"));
  const YAML::Node stated = root.IsMap() ? root["stated"] : YAML::Node();
  if (!stated.IsDefined()) return out;
  if (!stated.IsMap()) {
    return SubsetsError(subsets, stated, "stated: expected a map of file -> {key: value}");
  }
  for (const auto& entry : stated) {
    if (!Names(entry.first.Scalar(), file)) continue;
    if (!entry.second.IsMap()) {
      return SubsetsError(
          subsets, entry.second,
          fmt::format("stated.{}: expected a map of scenario key -> value", entry.first.Scalar()));
    }
    for (const auto& kv : entry.second) {
      const std::string key = kv.first.Scalar();
      if (!kv.second.IsScalar()) {
        return SubsetsError(subsets, kv.second,
                            fmt::format("stated.{}.{}: expected a value (as --set takes)",
                                        entry.first.Scalar(), key));
      }
      const YAML::Mark m = kv.second.Mark();
      out.push_back({key + "=" + kv.second.Scalar(), key,
                     fmt::format("{}:{}:{}", subsets, m.line + 1, m.column + 1)});
    }
  }
  return out;
}

}  // namespace

StatusOr<Subset> LoadSubset(const std::string& path, const std::string& name) {
  Subset out;
  if (name.empty()) return out;
  out.any = false;
  const std::filesystem::path file = Absolute(path);
  const std::string subsets = SubsetsPath(file);
  PARASIM_ASSIGN_OR_RETURN(YAML::Node root, LoadYaml(YamlInput(subsets), "subset lists"));
  const YAML::Node list = root.IsMap() ? root[name] : YAML::Node();
  if (list.IsDefined() && !list.IsSequence()) {
    const YAML::Mark m = list.Mark();
    return InvalidArgument(
        fmt::format("{}:{}:{}: error: {}: expected a list of case names (or "
                    "file names), such as [case-a, case-b]",
                    subsets, m.line + 1, m.column + 1, name));
  }
  if (!list.IsDefined()) {
    // The lists it has: the keys whose value is a list (stated, a map, is not a subset).
    std::string keys;
    if (root.IsMap()) {
      for (const auto& kv : root) {
        if (kv.second.IsSequence()) keys += (keys.empty() ? "" : ", ") + kv.first.Scalar();
      }
    }
    return InvalidArgument(fmt::format("--subset={}:1:1: error: {} has no list '{}' (it has: {})",
                                       name, subsets, name, keys));
  }
  for (const YAML::Node& n : list) {
    if (!n.IsScalar()) {
      // A mapping or a list here selected nothing and said nothing.
      const YAML::Mark m = n.Mark();
      return InvalidArgument(
          fmt::format("{}:{}:{}: error: {}: expected a case name (or a file "
                      "name), not a {}",
                      subsets, m.line + 1, m.column + 1, name,
                      n.IsMap()    ? "mapping"
                      : n.IsNull() ? "empty entry"
                                   : "list"));
    }
    const std::string entry = n.Scalar();
    if (Names(entry, file)) out.whole_file = true;
    out.cases.insert(entry);
  }
  return out;
}

Status ApplyStated(const std::string& path, YAML::Node* defaults, YamlContext* ctx,
                   std::vector<std::string>* stated) {
  PARASIM_ASSIGN_OR_RETURN(const std::vector<Stated> sets, StatedSets(path));
  for (const Stated& st : sets) {
    YamlContext scratch = *ctx;
    PARASIM_RETURN_IF_ERROR(ApplySet(*defaults, st.set, &scratch));
    ctx->placed[st.key] = st.at;
    stated->push_back(st.set);
  }
  return Status::Ok();
}

void ForgetOwnKeys(const YAML::Node& scenario, YamlContext* ctx) {
  for (auto it = ctx->placed.begin(); it != ctx->placed.end();) {
    it = Defines(scenario, it->first) ? ctx->placed.erase(it) : std::next(it);
  }
}

namespace {
// A leaf's own place in the file (not through the file's context, whose stated keys a case's
// own value overrides); mappings are left to the keys below them, so that a key the defaults
// give under a mapping the case also writes is not taken for the case's.
void PlaceNode(const YAML::Node& n, const std::string& path, const YamlContext& file,
               YamlContext* ctx) {
  if (!path.empty() && !n.IsMap() && n.Mark().line >= 0) {
    ctx->placed[path] = fmt::format("{}:{}:{}", file.file, n.Mark().line + 1, n.Mark().column + 1);
  }
  if (n.IsMap()) {
    for (const auto& kv : n) {
      const std::string key = kv.first.Scalar();
      PlaceNode(kv.second, path.empty() ? key : path + "." + key, file, ctx);
    }
  } else if (n.IsSequence()) {
    for (size_t i = 0; i < n.size(); ++i) {
      PlaceNode(n[i], fmt::format("{}[{}]", path, i), file, ctx);
    }
  }
}
}  // namespace

void PlaceOwnKeys(const YAML::Node& scenario, const YamlContext& file, YamlContext* ctx) {
  PlaceNode(scenario, "", file, ctx);
}

}  // namespace parasim
