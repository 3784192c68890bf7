#include "scenarios/cluster_block.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "hardware/profile.h"
#include "sim/yaml_reader.h"
#include "strategies/plan.h"

namespace parasim {
namespace {

// The catalog entry a scalar names, or an inline mapping's `extends` names (at `path`): `find`
// looks it up among `ids`; an unknown one is refused with them, `what` naming the kind.
template <class Spec, class Find>
StatusOr<const Spec*> CatalogEntry(const YamlContext& ctx, const YAML::Node& id,
                                   const std::string& path, std::string_view what,
                                   const std::vector<std::string_view>& ids, Find find) {
  PARASIM_ASSIGN_OR_RETURN(std::string name, ReadScalar(ctx, id, path));
  const Spec* spec = find(name);
  if (!spec) {
    return ctx.ErrorAt(id, path,
                       fmt::format("unknown {} '{}'{}; catalog {}s: {}", what, name,
                                   SuggestionHint(name, ids), what, fmt::join(ids, ", ")));
  }
  return spec;
}

StatusOr<const GpuSpec*> CatalogGpu(const YamlContext& ctx, const YAML::Node& id,
                                    const std::string& path, const Catalogs& cat) {
  StatusOr<const GpuSpec*> gpu =
      CatalogEntry<GpuSpec>(ctx, id, path, "GPU", cat.hardware.GpuIds(),
                            [&](const std::string& n) { return cat.hardware.FindGpu(n); });
  if (gpu.ok()) return gpu;
  return Status(
      gpu.status().code(),
      gpu.status().message() + " (or an inline mapping with memory, hbm_bandwidth, peak)");
}

StatusOr<const FabricSpec*> CatalogFabric(const YamlContext& ctx, const YAML::Node& id,
                                          const std::string& path, const Catalogs& cat) {
  return CatalogEntry<FabricSpec>(ctx, id, path, "fabric", cat.hardware.FabricIds(),
                                  [&](const std::string& n) { return cat.hardware.FindFabric(n); });
}

Status ReadClusterGpu(const YamlContext& ctx, const MapReader& m, const Catalogs& cat,
                      ClusterSpec* c) {
  YAML::Node g = m.Node("gpu");
  if (g.IsScalar()) {
    PARASIM_ASSIGN_OR_RETURN(const GpuSpec* spec, CatalogGpu(ctx, g, m.Path("gpu"), cat));
    c->gpu = *spec;
    return Status::Ok();
  }
  const GpuSpec* base = nullptr;
  if (g.IsMap() && g["extends"].IsDefined()) {
    PARASIM_ASSIGN_OR_RETURN(base, CatalogGpu(ctx, g["extends"], "cluster.gpu.extends", cat));
  }
  PARASIM_ASSIGN_OR_RETURN(c->gpu, ParseGpuSpec(ctx, g, "cluster.gpu", "inline", base));
  c->gpu.inline_spec = base == nullptr;
  return Status::Ok();
}

Status ReadFabric(const YamlContext& ctx, const MapReader& m, const Catalogs& cat,
                  std::string_view key, FabricKind want, FabricSpec* out, bool needed,
                  std::string_view gpu_server_intra = "") {
  if (!m.Has(key) && needed && want == FabricKind::kIntra) {
    // The GPU's usual server names its NVLink or Infinity Fabric (the catalog's `server.intra`):
    // an H100 SXM's is nvlink4-h100 (DGX H100). SCENARIO.md documents this default.
    if (const FabricSpec* server = cat.hardware.FindFabric(gpu_server_intra)) {
      *out = *server;
      out->kind = want;
      return Status::Ok();
    }
  }
  if (!m.Has(key)) {
    if (needed) {
      return m.Error(key,
                     fmt::format("missing required key '{}' (a catalog fabric id such as {} "
                                 "or an inline {{bandwidth, latency}})",
                                 key, want == FabricKind::kIntra ? "nvlink3-a100" : "ib-hdr-200g"));
    }
    out->id = "none";
    out->kind = want;
    out->bandwidth = Bandwidth(1);
    return Status::Ok();
  }
  YAML::Node f = m.Node(key);
  if (f.IsScalar()) {
    PARASIM_ASSIGN_OR_RETURN(const FabricSpec* spec, CatalogFabric(ctx, f, m.Path(key), cat));
    *out = *spec;
  } else {
    const FabricSpec* base = nullptr;
    if (f.IsMap() && !f["extends"].IsDefined() && !f["bandwidth"].IsDefined() &&
        want == FabricKind::kIntra) {
      // Keys set under the default NVLink (`--set cluster.intra_node.efficiency=0.5` where the
      // GPU's server names it) extend that default.
      base = cat.hardware.FindFabric(gpu_server_intra);
    }
    if (f.IsMap() && f["extends"].IsDefined()) {
      PARASIM_ASSIGN_OR_RETURN(base,
                               CatalogFabric(ctx, f["extends"], m.Path(key) + ".extends", cat));
    }
    PARASIM_ASSIGN_OR_RETURN(*out, ParseFabricSpec(ctx, f, m.Path(key), "inline", base));
    out->kind = want;
    out->inline_spec = base == nullptr;
  }
  return Status::Ok();
}

// A calibration profile named by the scenario, relative to the scenario's folder.
Status ReadCalibration(const MapReader& m, ClusterSpec* c, const std::string& scenario_dir) {
  PARASIM_RETURN_IF_ERROR(m.String("calibration", &c->calibration));
  if (c->calibration.empty()) return Status::Ok();  // `--set cluster.calibration=`: defaults
  std::filesystem::path p(c->calibration);
  if (p.is_relative() && !scenario_dir.empty()) p = std::filesystem::path(scenario_dir) / p;
  if (!std::filesystem::exists(p)) {
    return m.Error("calibration", fmt::format("calibration profile '{}' not found (make one with "
                                              "`parasim fit MEASUREMENTS --out FILE`)",
                                              p.string()));
  }
  c->calibration = p.string();
  // Errors name the profile's own line and column, after the scenario's reference to it.
  StatusOr<CalibrationProfile> prof = LoadCalibrationProfile(c->calibration);
  if (!prof.ok()) return m.Error("calibration", prof.status().message());
  StatusOr<std::vector<std::string>> changed = ApplyCalibrationProfile(*prof, c);
  if (!changed.ok()) return m.Error("calibration", changed.status().message());
  c->calibrated = *changed;
  return Status::Ok();
}

// The price of one GPU-hour: one number, or a mapping from GPU id to price (a co-design sweep
// over `gpu` prices each type; the cluster's own GPU must be among them).
Status ReadGpuHourCost(const YamlContext& ctx, const MapReader& m, const Catalogs& cat,
                       ClusterSpec* c) {
  if (!m.Has("gpu_hour_cost") || !m.Node("gpu_hour_cost").IsMap()) {
    return m.Number("gpu_hour_cost", &c->gpu_hour_cost, 0, 1e6);
  }
  std::vector<std::string_view> ids = cat.hardware.GpuIds();
  ids.push_back(c->gpu.id);
  PARASIM_ASSIGN_OR_RETURN(MapReader prices, MapReader::Open(ctx, m.Node("gpu_hour_cost"),
                                                             m.Path("gpu_hour_cost"), ids));
  if (!prices.Has(c->gpu.id)) {
    std::vector<std::string> priced;
    for (const auto& kv : prices.node()) priced.push_back(kv.first.Scalar());
    return m.Error("gpu_hour_cost",
                   fmt::format("no price for gpu '{}' (priced: {}); add '{}: PRICE' per GPU-hour, "
                               "or give one price for every GPU",
                               c->gpu.id, fmt::join(priced, ", "), c->gpu.id));
  }
  return prices.Number(c->gpu.id, &c->gpu_hour_cost, 0, 1e6);
}

}  // namespace

const std::vector<std::string_view>& ClusterKeys() {
  static const std::vector<std::string_view> kKeys = {
      "gpu",        "nodes",         "gpus_per_node", "intra_node",
      "inter_node", "nics_per_node", "nvlink_domain", "oversubscription",
      "pod_gpus",   "calibration",   "gpu_hour_cost"};
  return kKeys;
}

Status ParseCluster(const YamlContext& ctx, const YAML::Node& node, const Catalogs& cat,
                    ClusterSpec* c, const std::string& scenario_dir) {
  PARASIM_ASSIGN_OR_RETURN(MapReader m, MapReader::Open(ctx, node, "cluster", ClusterKeys()));
  PARASIM_RETURN_IF_ERROR(m.Require("gpu"));
  PARASIM_RETURN_IF_ERROR(ReadClusterGpu(ctx, m, cat, c));
  PARASIM_RETURN_IF_ERROR(m.Int("nodes", &c->nodes, 1, kMaxGpus));
  PARASIM_RETURN_IF_ERROR(m.Int("gpus_per_node", &c->gpus_per_node, 1, 1024));
  PARASIM_RETURN_IF_ERROR(m.Int("nics_per_node", &c->nics_per_node, 1, 1024));
  PARASIM_RETURN_IF_ERROR(m.Int("nvlink_domain", &c->nvlink_domain, 1, 1 << 20));
  if (c->nvlink_domain > 0 && c->nvlink_domain % c->gpus_per_node != 0) {
    return m.Error("nvlink_domain",
                   fmt::format("{} GPUs is not a whole number of {}-GPU nodes; expected a "
                               "multiple of gpus_per_node (e.g. 72 for GB200 NVL72 with 4 per "
                               "node)",
                               c->nvlink_domain, c->gpus_per_node));
  }
  PARASIM_RETURN_IF_ERROR(m.Number("oversubscription", &c->oversubscription, 1.0, 1000.0));
  PARASIM_RETURN_IF_ERROR(m.Int("pod_gpus", &c->pod_gpus, 1, kMaxGpus));
  PARASIM_RETURN_IF_ERROR(ReadGpuHourCost(ctx, m, cat, c));
  if (c->nodes * c->gpus_per_node > kMaxGpus) {
    return m.Error("nodes", fmt::format("{} nodes x {} GPUs is over the limit of {} GPUs", c->nodes,
                                        c->gpus_per_node, kMaxGpus));
  }
  PARASIM_RETURN_IF_ERROR(ReadFabric(ctx, m, cat, "intra_node", FabricKind::kIntra, &c->intra,
                                     c->domain() > 1, c->gpu.server.intra));
  PARASIM_RETURN_IF_ERROR(
      ReadFabric(ctx, m, cat, "inter_node", FabricKind::kInter, &c->inter, c->nodes > 1));
  if (m.Has("calibration")) PARASIM_RETURN_IF_ERROR(ReadCalibration(m, c, scenario_dir));
  return Status::Ok();
}

}  // namespace parasim
