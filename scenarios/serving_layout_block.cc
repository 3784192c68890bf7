// The `parallelism` and `sweep` blocks of a serving scenario (scenarios/serving_block.h).
#include <fmt/core.h>

#include <algorithm>

#include "scenarios/serving_block.h"
#include "sim/yaml_reader.h"

namespace parasim {
namespace {

const std::vector<std::string_view>& PoolKeys() {
  static const std::vector<std::string_view> kKeys = {
      "tp", "pp", "ep", "replicas", "dp_attention", "max_num_tokens", "max_seqs"};
  return kKeys;
}

// One pool's layout; `replicas` is left 0 for `auto` (or absent).
Status ReadPool(const MapReader& m, PoolLayout* p) {
  *p = PoolLayout{};
  PARASIM_RETURN_IF_ERROR(m.Int("tp", &p->tp, 1, 1 << 16));
  PARASIM_RETURN_IF_ERROR(m.Int("pp", &p->pp, 1, 1 << 12));
  PARASIM_RETURN_IF_ERROR(m.Bool("dp_attention", &p->dp_attention));
  p->ep = p->dp_attention ? p->tp : 1;
  PARASIM_RETURN_IF_ERROR(m.Int("ep", &p->ep, 1, 1 << 16));
  PARASIM_RETURN_IF_ERROR(m.Int("max_num_tokens", &p->max_num_tokens, 1, int64_t{1} << 24));
  PARASIM_RETURN_IF_ERROR(m.Int("max_seqs", &p->max_seqs, 1, int64_t{1} << 24));
  p->replicas = 0;
  if (m.Has("replicas") &&
      !(m.Node("replicas").IsScalar() && m.Node("replicas").Scalar() == "auto")) {
    PARASIM_RETURN_IF_ERROR(m.Int("replicas", &p->replicas, 1, int64_t{1} << 24));
  }
  return Status::Ok();
}

// `replicas: auto`: the GPUs left over the replica's.
Status ResolveReplicas(const MapReader& m, int64_t gpus, PoolLayout* p) {
  if (p->replicas > 0) return Status::Ok();
  p->replicas = gpus / p->gpus_per_replica();
  if (p->replicas < 1) {
    return m.Error(
        m.Has("tp") ? "tp" : "replicas",
        fmt::format("a replica of tp x pp = {} GPUs does not fit the {} GPUs left for it",
                    p->gpus_per_replica(), gpus));
  }
  return Status::Ok();
}

// A list of whole numbers, one number, or `auto` (left empty: every value that fits).
Status ReadAxis(const YamlContext& ctx, const MapReader& m, std::string_view key,
                std::vector<int>* out) {
  if (!m.Has(key)) return Status::Ok();
  const YAML::Node n = m.Node(key);
  if (n.IsScalar() && n.Scalar() == "auto") return Status::Ok();
  if (n.IsScalar()) {
    int v = 1;
    PARASIM_RETURN_IF_ERROR(m.Int(key, &v, 1, 1 << 16));
    out->push_back(v);
    return Status::Ok();
  }
  if (!n.IsSequence() || n.size() == 0) {
    return m.Error(key, "expected a list of values such as [1, 2, 4], one value, or auto");
  }
  for (size_t i = 0; i < n.size(); ++i) {
    PARASIM_ASSIGN_OR_RETURN(int64_t v,
                             ReadInt(ctx, n[i], fmt::format("{}[{}]", m.Path(key), i), 1, 1 << 16));
    // A value listed twice would replay (and rank) its layouts twice.
    if (std::find(out->begin(), out->end(), static_cast<int>(v)) != out->end()) continue;
    out->push_back(static_cast<int>(v));
  }
  return Status::Ok();
}

}  // namespace

Status ParseServingLayout(const YamlContext& ctx, const YAML::Node& node, int64_t gpus,
                          ServingLayout* l) {
  *l = ServingLayout{};
  if (!node.IsDefined() || node.IsNull()) {
    l->unified.replicas = gpus;
    return Status::Ok();
  }
  std::vector<std::string_view> keys = PoolKeys();
  keys.push_back("prefill");
  keys.push_back("decode");
  PARASIM_ASSIGN_OR_RETURN(MapReader m, MapReader::Open(ctx, node, "parallelism", keys));
  l->disaggregated = m.Has("prefill") || m.Has("decode");
  if (!l->disaggregated) {
    PARASIM_RETURN_IF_ERROR(ReadPool(m, &l->unified));
    return ResolveReplicas(m, gpus, &l->unified);
  }
  for (std::string_view k : PoolKeys()) {
    if (m.Has(k)) {
      return m.Error(k,
                     "a disaggregated layout gives each pool its own: put it under prefill "
                     "and decode");
    }
  }
  PARASIM_RETURN_IF_ERROR(m.Require("prefill"));
  PARASIM_RETURN_IF_ERROR(m.Require("decode"));
  PARASIM_ASSIGN_OR_RETURN(
      MapReader p, MapReader::Open(ctx, m.Node("prefill"), "parallelism.prefill", PoolKeys()));
  PARASIM_ASSIGN_OR_RETURN(
      MapReader d, MapReader::Open(ctx, m.Node("decode"), "parallelism.decode", PoolKeys()));
  PARASIM_RETURN_IF_ERROR(ReadPool(p, &l->prefill));
  PARASIM_RETURN_IF_ERROR(ReadPool(d, &l->decode));
  if (l->prefill.replicas == 0) {
    return p.Error("replicas",
                   "give the prefill pool's replicas; the decode pool may take the "
                   "rest (replicas: auto)");
  }
  if (l->decode.replicas == 0 && l->prefill.gpus() >= gpus) {
    return p.Error(
        "replicas",
        fmt::format("{} prefill replicas of {} GPU(s) each take {} of the cluster's {} "
                    "GPUs, leaving none for the decode pool: fewer replicas",
                    l->prefill.replicas, l->prefill.gpus_per_replica(), l->prefill.gpus(), gpus));
  }
  return ResolveReplicas(d, gpus - l->prefill.gpus(), &l->decode);
}

Status ParseServingSweep(const YamlContext& ctx, const YAML::Node& node, ServingSweepSpec* sw) {
  PARASIM_ASSIGN_OR_RETURN(
      MapReader m,
      MapReader::Open(ctx, node, "sweep", {"tp", "pp", "ep", "gpus", "disaggregated", "top"}));
  std::vector<int> gpus;
  PARASIM_RETURN_IF_ERROR(ReadAxis(ctx, m, "gpus", &gpus));
  sw->gpus.assign(gpus.begin(), gpus.end());
  PARASIM_RETURN_IF_ERROR(ReadAxis(ctx, m, "tp", &sw->tp));
  PARASIM_RETURN_IF_ERROR(ReadAxis(ctx, m, "pp", &sw->pp));
  PARASIM_RETURN_IF_ERROR(ReadAxis(ctx, m, "ep", &sw->ep));
  PARASIM_RETURN_IF_ERROR(m.Int("top", &sw->top, 1, 1000));
  if (m.Has("disaggregated")) {
    const YAML::Node n = m.Node("disaggregated");
    sw->disaggregated.clear();
    if (n.IsSequence() && n.size() == 0) {
      return m.Error("disaggregated",
                     "expected true, false, or a list of them such as "
                     "[false, true]; an empty list spans no layout");
    }
    if (n.IsSequence()) {
      for (size_t i = 0; i < n.size(); ++i) {
        const std::string at = fmt::format("{}[{}]", m.Path("disaggregated"), i);
        PARASIM_ASSIGN_OR_RETURN(std::string s, ReadScalar(ctx, n[i], at));
        StatusOr<bool> b = ParseBool(s);
        if (!b.ok()) return ctx.ErrorAt(n[i], at, b.status().message());
        if (std::find(sw->disaggregated.begin(), sw->disaggregated.end(), *b) ==
            sw->disaggregated.end()) {
          sw->disaggregated.push_back(*b);
        }
      }
    } else {
      bool b = false;
      PARASIM_RETURN_IF_ERROR(m.Bool("disaggregated", &b));
      sw->disaggregated = {b};
    }
  }
  return Status::Ok();
}

}  // namespace parasim
