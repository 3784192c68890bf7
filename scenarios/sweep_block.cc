#include "scenarios/sweep_block.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "scenarios/cluster_block.h"
#include "scenarios/model_block.h"
#include "sim/yaml_reader.h"
#include "strategies/sweep_keys.h"

namespace parasim {
namespace {

// A hardware key of a sweep block and its values (a list, or one value), as written.
struct HardwareAxis {
  std::string key;
  std::string_view block;
  std::vector<YAML::Node> values;
};

Status ReadObjective(const MapReader& m, SweepSpec* sw) {
  std::string obj;
  if (m.Has("objective")) {
    PARASIM_RETURN_IF_ERROR(
        m.Enum("objective", &obj, {"throughput", "time_to_train", "cost", "memory"}));
    sw->objective = obj == "throughput"      ? Objective::kThroughput
                    : obj == "time_to_train" ? Objective::kTimeToTrain
                    : obj == "cost"          ? Objective::kCost
                                             : Objective::kMemory;
  }
  return m.Int("top", &sw->top, 1, 100000);
}

// A cluster or model key's values: listed (never auto), a cluster's as mappings.
StatusOr<HardwareAxis> ReadHardwareAxis(const YamlContext& ctx, const std::string& key,
                                        std::string_view block, const YAML::Node& v,
                                        const std::string& path) {
  if (v.IsScalar() && v.Scalar() == "auto") {
    return ctx.ErrorAt(v, path,
                       fmt::format("{} cannot be auto; list the values to compare, e.g. {}", key,
                                   key == "gpu" ? "[h100-sxm5-80gb, b200]" : "[64, 128]"));
  }
  if (v.IsSequence() && v.size() == 0) {
    return ctx.ErrorAt(v, path, "an empty list sweeps nothing; list the values to compare");
  }
  HardwareAxis a{key, block, {}};
  if (v.IsSequence()) {
    for (size_t i = 0; i < v.size(); ++i) a.values.push_back(v[i]);
  } else {
    a.values.push_back(v);
  }
  for (const YAML::Node& x : a.values) {
    if (key == "cluster" && !x.IsMap()) {
      return ctx.ErrorAt(x, path,
                         "expected a list of cluster mappings, e.g. [{gpu: h100-sxm5-80gb, "
                         "intra_node: nvlink4-h100}, {gpu: b200, intra_node: nvlink5}]");
    }
  }
  return a;
}

// A key of the table: auto, a list or one value, each value checked by the table now so that
// a bad one is reported at its line. global_batch may instead be {max: N}.
Status ReadLayoutAxis(const YamlContext& ctx, const SweepKey& k, const YAML::Node& v,
                      const std::string& path, SweepSpec* sw) {
  if (k.name == "global_batch" && v.IsMap()) {
    PARASIM_ASSIGN_OR_RETURN(MapReader gb, MapReader::Open(ctx, v, path, {"max"}));
    PARASIM_RETURN_IF_ERROR(gb.Require("max"));
    return gb.Int("max", &sw->global_batch_max, 1, kMaxCount);
  }
  SweepAxis axis;
  if (v.IsScalar() && v.Scalar() == "auto") {
    if (k.name == "global_batch") {
      return ctx.ErrorAt(v, path, "global_batch cannot be auto; give a list or {max: N}");
    }
    axis.is_auto = true;
  } else if (v.IsSequence()) {
    if (v.size() == 0)
      return ctx.ErrorAt(v, path, "an empty list sweeps nothing; give values or auto");
    for (size_t i = 0; i < v.size(); ++i) {
      PARASIM_ASSIGN_OR_RETURN(std::string item,
                               ReadScalar(ctx, v[i], fmt::format("{}[{}]", path, i)));
      axis.values.push_back(item);
    }
  } else if (v.IsScalar()) {
    axis.values.push_back(v.Scalar());
  } else {
    return ctx.ErrorAt(v, path, "expected a list of values, a single value, or auto");
  }
  for (size_t i = 0; i < axis.values.size(); ++i) {
    StatusOr<int64_t> parsed = k.parse(axis.values[i]);
    if (!parsed.ok())
      return ctx.ErrorAt(v.IsSequence() ? v[i] : v, path, parsed.status().message());
  }
  sw->axes.emplace_back(std::string(k.name), axis);
  return Status::Ok();
}

Status ParseSweep(const YamlContext& ctx, const YAML::Node& node, SweepSpec* sw,
                  std::vector<HardwareAxis>* hardware) {
  PARASIM_ASSIGN_OR_RETURN(MapReader m, MapReader::Open(ctx, node, "sweep", SweepBlockKeys()));
  sw->where = ctx.Where(node, "sweep");
  PARASIM_RETURN_IF_ERROR(ReadObjective(m, sw));
  for (const auto& kv : node) {
    std::string key = kv.first.Scalar();
    if (key == "objective" || key == "top") continue;
    const std::string path = "sweep." + key;
    const auto hw = std::find_if(HardwareSweepKeys().begin(), HardwareSweepKeys().end(),
                                 [&](const auto& h) { return h.first == key; });
    if (hw != HardwareSweepKeys().end()) {
      PARASIM_ASSIGN_OR_RETURN(HardwareAxis a,
                               ReadHardwareAxis(ctx, key, hw->second, kv.second, path));
      hardware->push_back(std::move(a));
    } else {
      PARASIM_RETURN_IF_ERROR(ReadLayoutAxis(ctx, *FindSweepKey(key), kv.second, path, sw));
    }
  }
  return Status::Ok();
}

// How a sweep value reads in a label: its text; for a mapping its scalar keys ("gpu=b200
// intra_node=nvlink5"), else its place in the list.
// A mapping's scalars as "a=1 b.c=2" (nested keys joined by dots, lists as [x,y]): two values
// of an axis that differ anywhere label differently (a label left out nested keys, and two GPUs
// differing in their peaks shared one label, so the sweep dropped the second's layouts as
// repeats of the first's).
void FlatParts(const std::string& prefix, const YAML::Node& v, std::vector<std::string>* out) {
  if (v.IsScalar()) {
    out->push_back(fmt::format("{}={}", prefix, v.Scalar()));
  } else if (v.IsSequence()) {
    std::vector<std::string> items;
    for (const auto& x : v) items.push_back(x.IsScalar() ? x.Scalar() : "...");
    out->push_back(fmt::format("{}=[{}]", prefix, fmt::join(items, ",")));
  } else if (v.IsMap()) {
    for (const auto& kv : v) {
      const std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "?";
      FlatParts(prefix.empty() ? k : prefix + "." + k, kv.second, out);
    }
  }
}

std::string ValueLabel(const std::string& key, const YAML::Node& v, size_t i) {
  if (v.IsScalar()) return fmt::format("{}={}", key, v.Scalar());
  std::vector<std::string> parts;
  FlatParts(v.IsMap() && key != "cluster" ? key : "", v, &parts);
  if (parts.empty()) return fmt::format("{}=inline#{}", key, i + 1);
  return fmt::format("{}", fmt::join(parts, " "));
}

// A swept value for a catalog entry the scenario extends (`gpu: {extends: h100, sustained_factor:
// 0.7}`, or a --set under it): a catalog id is extended the same way; any other value stands.
YAML::Node ExtendedLike(const YAML::Node& base, const YAML::Node& v) {
  if (!v.IsScalar() || !base.IsDefined() || !base.IsMap() || !base["extends"].IsDefined()) return v;
  YAML::Node id(YAML::NodeType::Map);
  id["extends"] = v;
  return DeepMerge(base, id);
}

// `root` with the values idx[a] of the hardware axes applied: whole blocks first (the model,
// cluster fragments), so that single keys refine them.
// Every combination starts from the scenario's own root: yaml-cpp's `=` between nodes writes into
// the node assigned to (here the scenario's root, which `r` refers to), so each step rebinds `r` to
// the new node instead (`reset`). Assigning had carried one combination's cluster into the next:
// the co-design example priced its 64-node H100 and H200 clusters on the B200's NVLink 5.
YAML::Node CombinationRoot(const YAML::Node& root, const std::vector<HardwareAxis>& axes,
                           const std::vector<size_t>& idx, bool copies) {
  YAML::Node r = root;
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t a = 0; a < axes.size(); ++a) {
      const HardwareAxis& ax = axes[a];
      if (ax.block.empty() != (pass == 0)) continue;
      // A copy of its own: yaml-cpp links the memory of the nodes it joins into one pool that
      // every later join copies, so joining each combination to the file's values grew with
      // the square of the combinations (4,096 clusters: 32 s to read the scenario).
      // (`copies` false: the file's own nodes, whose marks an error names, at that cost.)
      const YAML::Node v = copies ? YAML::Clone(ax.values[idx[a]]) : ax.values[idx[a]];
      if (ax.key == "cluster") {
        const YAML::Node& cur = static_cast<const YAML::Node&>(r)["cluster"];
        YAML::Node fragment = v;  // (reset, never `=`: yaml-cpp's `=` writes into v)
        if (v.IsMap() && cur.IsDefined() && cur.IsMap()) {
          fragment.reset(YAML::Clone(v));
          for (const char* k : {"gpu", "intra_node", "inter_node"}) {
            if (v[k].IsDefined()) fragment[k] = ExtendedLike(cur[k], v[k]);
          }
        }
        r.reset(WithNodeAt(r, {"cluster"}, DeepMerge(cur, fragment)));
      } else if (ax.key == "model") {
        r.reset(WithNodeAt(r, {"model"}, v));
      } else {
        if (ax.block == "model") r.reset(ExtendingModel(r));
        const YAML::Node& cur = static_cast<const YAML::Node&>(r)[std::string(ax.block)];
        const YAML::Node base = cur.IsDefined() && cur.IsMap() ? cur[ax.key] : YAML::Node();
        r.reset(WithNodeAt(r, {std::string(ax.block), ax.key}, ExtendedLike(base, v)));
      }
    }
  }
  return r;
}

// The cost objective compares clusters by price: each needs one.
Status CheckPriced(const SweepSpec& sw) {
  if (sw.objective != Objective::kCost) return Status::Ok();
  for (const SweepHardware& h : sw.hardware) {
    if (h.cluster.gpu_hour_cost <= 0) {
      return InvalidArgument(fmt::format(
          "{}: error: sweep: objective cost compares clusters by price, but {} has none; give "
          "cluster.gpu_hour_cost, one price per GPU-hour or one per GPU type (e.g. "
          "{{h100-sxm5-80gb: 2.5, b200: 4.0}})",
          sw.where, h.label));
    }
  }
  return Status::Ok();
}

// Every combination of the hardware keys' values applied to the scenario's cluster and model,
// parsed as the scenario's own would be (errors at the swept value, naming the combination).
Status BuildSweepHardware(const YAML::Node& root, const YamlContext& ctx, const Catalogs& cat,
                          const std::string& dir, const std::vector<HardwareAxis>& axes,
                          SweepSpec* sw) {
  if (axes.empty()) return Status::Ok();
  size_t combos = 1;
  for (const HardwareAxis& a : axes) combos *= a.values.size();
  if (combos > 4096) {
    return InvalidArgument(fmt::format(
        "{}: error: sweep: the cluster and model keys span {} combinations, more than 4096; "
        "list fewer values",
        sw->where, combos));
  }
  std::vector<size_t> idx(axes.size(), 0);
  for (size_t n = 0; n < combos; ++n) {
    // Each combination from fresh copies of the blocks it changes (see CombinationRoot).
    YAML::Node fresh(YAML::NodeType::Map);
    for (const char* b : {"cluster", "model"}) {
      if (root[b].IsDefined()) fresh[b] = YAML::Clone(root[b]);
    }
    const YAML::Node r = CombinationRoot(fresh, axes, idx, true);
    std::vector<std::string> label;
    for (size_t a = 0; a < axes.size(); ++a) {
      label.push_back(ValueLabel(axes[a].key, axes[a].values[idx[a]], idx[a]));
    }
    SweepHardware h;
    h.label = fmt::format("{}", fmt::join(label, " "));
    for (const SweepHardware& other : sw->hardware) {
      // Values that label alike (two spellings of one cluster) are still two combinations.
      if (other.label == h.label) h.label += fmt::format(" #{}", n + 1);
    }
    // The combination's blocks are rebuilt (no marks): an error inside one is told at the swept
    // value that made it (its list item), as a --set's rebuild tells the file's mapping.
    // A single key's error at its own value; an error elsewhere in a block at the block's value
    // (a whole cluster or model swept), else at the block's first swept key.
    YamlContext at = ctx;
    for (int pass = 0; pass < 2; ++pass) {
      for (size_t a = 0; a < axes.size(); ++a) {
        const YAML::Node& v = axes[a].values[idx[a]];
        if (v.Mark().line < 0 || axes[a].block.empty() != (pass == 0)) continue;
        if (pass == 0) {
          at.rebuilt[axes[a].key] = ctx.Where(v, "");
        } else {
          const std::string block(axes[a].block);
          at.rebuilt[block + "." + axes[a].key] = ctx.Where(v, "");
          at.rebuilt.try_emplace(block, ctx.Where(v, ""));
        }
      }
    }
    Status st = ParseCluster(at, r["cluster"], cat, &h.cluster, dir);
    if (st.ok()) st = ParseModel(at, r["model"], cat, &h.model);
    if (!st.ok()) {
      // Again on the file's own nodes, for the error's place (the copies have none).
      const YAML::Node placed = CombinationRoot(root, axes, idx, false);
      SweepHardware again;
      Status located = ParseCluster(at, placed["cluster"], cat, &again.cluster, dir);
      if (located.ok()) located = ParseModel(at, placed["model"], cat, &again.model);
      if (!located.ok()) st = located;
      return Status(st.code(),
                    fmt::format("{} (in the sweep's combination {})", st.message(), h.label));
    }
    sw->hardware.push_back(std::move(h));
    for (size_t a = 0; a < axes.size(); ++a) {
      if (++idx[a] < axes[a].values.size()) break;
      idx[a] = 0;
    }
  }
  return CheckPriced(*sw);
}

}  // namespace

const std::vector<std::pair<std::string_view, std::string_view>>& HardwareSweepKeys() {
  static const std::vector<std::pair<std::string_view, std::string_view>> kKeys = {
      {"gpu", "cluster"},
      {"nodes", "cluster"},
      {"gpus_per_node", "cluster"},
      {"nvlink_domain", "cluster"},
      {"intra_node", "cluster"},
      {"inter_node", "cluster"},
      {"nics_per_node", "cluster"},
      {"oversubscription", "cluster"},
      {"pod_gpus", "cluster"},
      {"cluster", ""},
      {"model", ""},
      {"layers", "model"},
      {"hidden", "model"},
      {"ffn_hidden", "model"},
      {"heads", "model"},
      {"kv_heads", "model"},
      {"vocab", "model"}};
  return kKeys;
}

std::vector<std::string_view> SweepBlockKeys() {
  std::vector<std::string_view> keys;
  for (const SweepKey& k : SweepKeys()) keys.push_back(k.name);
  for (const auto& [key, block] : HardwareSweepKeys()) keys.push_back(key);
  keys.push_back("objective");
  keys.push_back("top");
  return keys;
}

Status ParseSweepBlock(const YamlContext& ctx, const YAML::Node& root, const Catalogs& cat,
                       const std::string& scenario_dir, SweepSpec* sw) {
  std::vector<HardwareAxis> hardware;
  PARASIM_RETURN_IF_ERROR(ParseSweep(ctx, root["sweep"], sw, &hardware));
  return BuildSweepHardware(root, ctx, cat, scenario_dir, hardware, sw);
}

}  // namespace parasim
