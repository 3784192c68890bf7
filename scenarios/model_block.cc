#include "scenarios/model_block.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <string>

#include "sim/yaml_reader.h"

namespace parasim {

Status ParseModel(const YamlContext& ctx, const YAML::Node& node, const Catalogs& cat,
                  ModelSpec* out) {
  auto lookup = [&](const YAML::Node& n, std::string path) -> StatusOr<ModelSpec> {
    PARASIM_ASSIGN_OR_RETURN(std::string id, ReadScalar(ctx, n, path));
    const ModelSpec* spec = cat.models.Find(id);
    if (!spec) {
      return ctx.ErrorAt(
          n, path,
          fmt::format("unknown model '{}'{}; catalog models: {} (or an inline "
                      "mapping with layers, hidden, heads, vocab)",
                      id, SuggestionHint(id, cat.models.Ids()), fmt::join(cat.models.Ids(), ", ")));
    }
    return *spec;
  };
  if (node.IsScalar()) {
    PARASIM_ASSIGN_OR_RETURN(*out, lookup(node, "model"));
    return Status::Ok();
  }
  ModelSpec base;
  base.id = "inline";
  if (node.IsMap() && node["extends"].IsDefined()) {
    PARASIM_ASSIGN_OR_RETURN(base, lookup(node["extends"], "model.extends"));
    base.id = base.id + "+overrides";
    base.published_params = 0;
    base.published_active_params = 0;
  }
  PARASIM_ASSIGN_OR_RETURN(*out, ParseModelSpec(ctx, node, "model", base, false));
  return Status::Ok();
}

YAML::Node ExtendingAt(const YAML::Node& root, const std::vector<std::string>& path) {
  YAML::Node node = root;
  for (const std::string& key : path) {
    if (!node.IsMap()) return root;
    const YAML::Node child = static_cast<const YAML::Node&>(node)[key];
    if (!child.IsDefined()) return root;  // (an absent key's node cannot be rebound to)
    node.reset(child);
  }
  if (!node.IsScalar()) return root;
  YAML::Node extended(YAML::NodeType::Map);
  extended["extends"] = node.Scalar();
  return WithNodeAt(root, path, extended);
}

YAML::Node ExtendingModel(const YAML::Node& root) { return ExtendingAt(root, {"model"}); }

Status ApplyScenarioSets(const std::vector<std::string>& sets, YAML::Node* root, YamlContext* ctx) {
  // The catalog entries a key set under them extends (`--set cluster.gpu.sms=100`).
  static const std::vector<std::vector<std::string>> kExtendable = {
      {"model"}, {"cluster", "gpu"}, {"cluster", "intra_node"}, {"cluster", "inter_node"}};
  for (size_t i = 0; i < sets.size(); ++i) {
    const std::string& s = sets[i];
    // A key set after keys under it would drop them without a word (`--set
    // cluster.gpu.memory=40GiB --set cluster.gpu=h100-sxm5-80gb` had run with 80 GiB).
    const std::string key = s.substr(0, s.find('='));
    for (size_t j = 0; j < i; ++j) {
      const std::string earlier = sets[j].substr(0, sets[j].find('='));
      if (earlier.size() > key.size() && earlier.rfind(key + ".", 0) == 0) {
        return InvalidArgument(fmt::format(
            "--set {}:1:1: error: {}: replaces {}, which an earlier --set gave; set {} first, "
            "then the keys under it (with diff, both on the side that changes it)",
            s, key, earlier, key));
      }
    }
    for (const auto& path : kExtendable) {
      const std::string prefix = fmt::format("{}.", fmt::join(path, "."));
      if (s.rfind(prefix, 0) == 0) *root = ExtendingAt(*root, path);
    }
    PARASIM_RETURN_IF_ERROR(ApplySet(*root, s, ctx));
  }
  return Status::Ok();
}

}  // namespace parasim
