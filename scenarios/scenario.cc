#include "scenarios/scenario.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>

#include "hardware/profile.h"
#include "sim/parse_units.h"
#include "strategies/schedule.h"

namespace parasim {
namespace {

Status ParseCompression(std::string_view s, Layout* l) {
  auto bad = [&] {
    return InvalidArgument(
        fmt::format("'{}' is not a compression; expected none, fp16, int8, "
                    "topk:FRACTION (e.g. topk:0.01) or powersgd:RANK",
                    std::string(s)));
  };
  if (s == "none") {
    l->compression = CompressionKind::kNone;
  } else if (s == "fp16") {
    l->compression = CompressionKind::kFp16;
  } else if (s == "int8") {
    l->compression = CompressionKind::kInt8;
  } else if (s.starts_with("topk:")) {
    auto v = ParseCount(s.substr(5));
    if (!v.ok() || *v <= 0 || *v > 1) return bad();
    l->compression = CompressionKind::kTopK;
    l->compression_param = *v;
  } else if (s.starts_with("powersgd:")) {
    auto v = ParseCount(s.substr(9));
    if (!v.ok() || *v < 1 || *v != std::floor(*v) || *v > 4096) return bad();
    l->compression = CompressionKind::kPowerSgd;
    l->compression_param = *v;
  } else {
    return bad();
  }
  return Status::Ok();
}

Status ReadClusterGpu(const YamlContext& ctx, const MapReader& m, const Catalogs& cat,
                      ClusterSpec* c) {
  YAML::Node g = m.Node("gpu");
  if (g.IsScalar()) {
    const GpuSpec* spec = cat.hardware.FindGpu(g.Scalar());
    if (!spec) {
      std::string hint = DidYouMean(g.Scalar(), cat.hardware.GpuIds());
      return m.Error(
          "gpu",
          fmt::format("unknown GPU '{}'{}; catalog GPUs: {} (or an inline "
                      "mapping with memory, hbm_bandwidth, peak)",
                      g.Scalar(), hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint),
                      fmt::join(cat.hardware.GpuIds(), ", ")));
    }
    c->gpu = *spec;
  } else {
    PARASIM_ASSIGN_OR_RETURN(c->gpu, ParseGpuSpec(ctx, g, "cluster.gpu", "inline"));
  }
  return Status::Ok();
}

Status ReadFabric(const YamlContext& ctx, const MapReader& m, const Catalogs& cat,
                  std::string_view key, FabricKind want, FabricSpec* out, bool needed) {
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
    const FabricSpec* spec = cat.hardware.FindFabric(f.Scalar());
    if (!spec) {
      std::string hint = DidYouMean(f.Scalar(), cat.hardware.FabricIds());
      return m.Error(key,
                     fmt::format("unknown fabric '{}'{}; catalog fabrics: {}", f.Scalar(),
                                 hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint),
                                 fmt::join(cat.hardware.FabricIds(), ", ")));
    }
    *out = *spec;
  } else {
    PARASIM_ASSIGN_OR_RETURN(*out, ParseFabricSpec(ctx, f, m.Path(key), "inline"));
    out->kind = want;
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

Status ParseCluster(const YamlContext& ctx, const YAML::Node& node, const Catalogs& cat,
                    ClusterSpec* c, const std::string& scenario_dir) {
  PARASIM_ASSIGN_OR_RETURN(
      MapReader m, MapReader::Open(ctx, node, "cluster",
                                   {"gpu", "nodes", "gpus_per_node", "intra_node", "inter_node",
                                    "nics_per_node", "nvlink_domain", "oversubscription",
                                    "pod_gpus", "calibration", "gpu_hour_cost"}));
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
  PARASIM_RETURN_IF_ERROR(
      ReadFabric(ctx, m, cat, "intra_node", FabricKind::kIntra, &c->intra, c->domain() > 1));
  PARASIM_RETURN_IF_ERROR(
      ReadFabric(ctx, m, cat, "inter_node", FabricKind::kInter, &c->inter, c->nodes > 1));
  if (m.Has("calibration")) PARASIM_RETURN_IF_ERROR(ReadCalibration(m, c, scenario_dir));
  return Status::Ok();
}

Status ParseModel(const YamlContext& ctx, const YAML::Node& node, const Catalogs& cat,
                  ModelSpec* out) {
  auto lookup = [&](const YAML::Node& n, std::string path) -> StatusOr<ModelSpec> {
    PARASIM_ASSIGN_OR_RETURN(std::string id, ReadScalar(ctx, n, path));
    const ModelSpec* spec = cat.models.Find(id);
    if (!spec) {
      std::string hint = DidYouMean(id, cat.models.Ids());
      return ctx.ErrorAt(
          n, path,
          fmt::format("unknown model '{}'{}; catalog models: {} (or an inline "
                      "mapping with layers, hidden, heads, vocab)",
                      id, hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint),
                      fmt::join(cat.models.Ids(), ", ")));
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

Status ParseTraining(const YamlContext& ctx, const YAML::Node& node, Training* t) {
  PARASIM_ASSIGN_OR_RETURN(
      MapReader m, MapReader::Open(ctx, node, "training",
                                   {"seq_len", "global_batch", "micro_batch", "precision",
                                    "optimizer", "grad_dtype", "recompute", "recompute_layers",
                                    "tokens", "finetune", "attention", "fp8_recipe", "moments",
                                    "grad_accumulation", "cross_entropy", "expert_gemm"}));
  PARASIM_RETURN_IF_ERROR(m.Require("seq_len"));
  PARASIM_RETURN_IF_ERROR(m.Require("global_batch"));
  PARASIM_RETURN_IF_ERROR(m.Int("seq_len", &t->seq_len, 1, int64_t{1} << 32));
  PARASIM_RETURN_IF_ERROR(m.Int("global_batch", &t->global_batch, 1, kMaxCount));
  PARASIM_RETURN_IF_ERROR(m.Int("micro_batch", &t->micro_batch, 1, kMaxCount));
  std::string s;
  const std::vector<std::string_view> dtypes = DtypeNames();
  if (m.Has("precision")) {
    PARASIM_RETURN_IF_ERROR(m.Enum("precision", &s, dtypes));
    t->precision = *ParseDtype(s);
  }
  t->grad_dtype = t->precision == Dtype::kFp8 ? Dtype::kBf16 : t->precision;
  if (t->grad_dtype == Dtype::kTf32) t->grad_dtype = Dtype::kFp32;
  if (m.Has("grad_dtype")) {
    PARASIM_RETURN_IF_ERROR(m.Enum("grad_dtype", &s, {"fp32", "fp16", "bf16"}));
    t->grad_dtype = *ParseDtype(s);
  }
  if (m.Has("fp8_recipe")) {
    if (t->precision != Dtype::kFp8) {
      return m.Error("fp8_recipe",
                     "applies to precision: fp8 (set precision: fp8, or leave fp8_recipe out)");
    }
    PARASIM_RETURN_IF_ERROR(m.Enum("fp8_recipe", &s, Fp8RecipeNames()));
    t->fp8_recipe = *ParseFp8Recipe(s);
  }
  if (m.Has("moments")) {
    PARASIM_RETURN_IF_ERROR(m.Enum("moments", &s, {"fp32", "bf16"}));
    t->moments = *ParseDtype(s);
  }
  if (m.Has("optimizer")) {
    PARASIM_RETURN_IF_ERROR(m.Enum("optimizer", &s, {"adam", "sgd"}));
    t->optimizer = s == "adam" ? OptimizerKind::kAdam : OptimizerKind::kSgd;
  }
  if (m.Has("recompute")) {
    PARASIM_RETURN_IF_ERROR(m.Enum("recompute", &s, RecomputeNames()));
    t->recompute = *ParseRecompute(s);
  }
  if (m.Has("recompute_layers")) {
    if (t->recompute == RecomputeKind::kNone) {
      return m.Error("recompute_layers",
                     "applies to a recompute mode (set recompute to one other than none, or "
                     "leave recompute_layers out)");
    }
    PARASIM_RETURN_IF_ERROR(m.Int("recompute_layers", &t->recompute_layers, 0, 1 << 20));
  }
  if (m.Has("attention")) {
    PARASIM_RETURN_IF_ERROR(m.Enum("attention", &s, {"flash", "standard"}));
    t->attention = s == "flash" ? AttentionKind::kFlash : AttentionKind::kStandard;
  }
  if (m.Has("cross_entropy")) {
    PARASIM_RETURN_IF_ERROR(m.Enum("cross_entropy", &s, {"unfused", "fused"}));
    t->fused_cross_entropy = s == "fused";
  }
  if (m.Has("expert_gemm")) {
    PARASIM_RETURN_IF_ERROR(m.Enum("expert_gemm", &s, {"grouped", "per_expert"}));
    t->per_expert_gemm = s == "per_expert";
  }
  if (m.Has("grad_accumulation")) {
    PARASIM_RETURN_IF_ERROR(m.Enum("grad_accumulation", &s, GradAccumulationNames()));
    t->grad_accumulation = *ParseGradAccumulation(s);
  }
  PARASIM_RETURN_IF_ERROR(m.Number("tokens", &t->tokens, 0, 1e18));
  if (m.Has("finetune")) {
    PARASIM_ASSIGN_OR_RETURN(MapReader f, MapReader::Open(ctx, m.Node("finetune"),
                                                          "training.finetune", {"method", "rank"}));
    PARASIM_RETURN_IF_ERROR(f.Require("method"));
    PARASIM_RETURN_IF_ERROR(f.Enum("method", &s, {"lora", "qlora", "none"}));
    t->finetune = s == "lora" ? FinetuneKind::kLora
                              : (s == "qlora" ? FinetuneKind::kQlora : FinetuneKind::kNone);
    PARASIM_RETURN_IF_ERROR(f.Int("rank", &t->lora_rank, 1, 65536));
  }
  return Status::Ok();
}

Status ParseParallelism(const YamlContext& ctx, const YAML::Node& node, Scenario* s) {
  Layout& l = s->layout;
  PARASIM_ASSIGN_OR_RETURN(
      MapReader m,
      MapReader::Open(ctx, node, "parallelism",
                      {"tp", "pp", "dp", "cp", "ep", "etp", "sp", "zero", "schedule",
                       "virtual_stages", "stage_layers", "account_for", "overlap", "grad_reduce",
                       "cp_comm", "zero3_copies", "bucket", "compression", "order"}));
  PARASIM_RETURN_IF_ERROR(m.Int("tp", &l.tp, 1, 65536));
  PARASIM_RETURN_IF_ERROR(m.Int("pp", &l.pp, 1, 65536));
  PARASIM_RETURN_IF_ERROR(m.Int("cp", &l.cp, 1, 65536));
  PARASIM_RETURN_IF_ERROR(m.Int("ep", &l.ep, 1, 65536));
  PARASIM_RETURN_IF_ERROR(m.Int("etp", &l.etp, 1, 65536));
  s->dp_auto = !m.Has("dp");
  if (m.Has("dp")) {
    if (m.Node("dp").IsScalar() && m.Node("dp").Scalar() == "auto") {
      s->dp_auto = true;
    } else {
      PARASIM_RETURN_IF_ERROR(m.Int("dp", &l.dp, 1, kMaxGpus));
    }
  }
  PARASIM_RETURN_IF_ERROR(m.Bool("sp", &l.sp));
  PARASIM_RETURN_IF_ERROR(m.Int("zero", &l.zero, 0, 3));
  std::string str;
  if (m.Has("schedule")) {
    std::vector<std::string_view> names;
    for (ScheduleId id : AllSchedules()) names.push_back(ScheduleName(id));
    PARASIM_RETURN_IF_ERROR(m.Enum("schedule", &str, names));
    l.schedule = *FindSchedule(str);
  }
  PARASIM_RETURN_IF_ERROR(m.Int("virtual_stages", &l.virtual_stages, 1, 1024));
  if (m.Has("stage_layers")) {
    YAML::Node sl = m.Node("stage_layers");
    if (!sl.IsSequence()) {
      return m.Error("stage_layers",
                     "expected a list of layer counts, one per stage, e.g. [7, 8, 8, 7]");
    }
    l.stage_layers.clear();
    for (size_t i = 0; i < sl.size(); ++i) {
      PARASIM_ASSIGN_OR_RETURN(
          int64_t v,
          ReadInt(ctx, sl[i], fmt::format("parallelism.stage_layers[{}]", i), 1, 100000));
      l.stage_layers.push_back(static_cast<int>(v));
    }
  }
  if (m.Has("account_for")) {
    YAML::Node af = m.Node("account_for");
    bool ok = af.IsSequence();
    for (size_t i = 0; ok && i < af.size(); ++i) {
      const std::string v = af[i].IsScalar() ? af[i].Scalar() : "";
      bool& flag = v == "embedding" ? l.split_embedding : l.split_loss;
      ok = (v == "embedding" || v == "loss") && !flag;
      flag = true;
    }
    if (!ok) {
      return m.Error("account_for",
                     "expected a list of what the pipeline split counts as a layer: "
                     "[embedding], [loss] or [embedding, loss]");
    }
  }
  if (m.Has("overlap")) {
    PARASIM_ASSIGN_OR_RETURN(
        MapReader o,
        MapReader::Open(ctx, m.Node("overlap"), "parallelism.overlap", {"dp", "tp", "ep"}));
    PARASIM_RETURN_IF_ERROR(o.Bool("dp", &l.overlap_dp));
    if (o.Has("tp")) {
      // true / false as for dp, or `backward`: only what Megatron-LM overlaps by default.
      std::string tp;
      PARASIM_RETURN_IF_ERROR(o.String("tp", &tp));
      if (tp == "backward") {
        l.overlap_tp = Layout::TpOverlap::kBackward;
      } else {
        bool all = false;
        if (!o.Bool("tp", &all).ok()) {
          return o.Error("tp", fmt::format("expected true, false or backward, got '{}'", tp));
        }
        l.overlap_tp = all ? Layout::TpOverlap::kAll : Layout::TpOverlap::kNone;
      }
    }
    PARASIM_RETURN_IF_ERROR(o.Bool("ep", &l.overlap_ep));
  }
  if (m.Has("grad_reduce")) {
    std::string gr;
    PARASIM_RETURN_IF_ERROR(m.Enum("grad_reduce", &gr, GradReduceNames()));
    l.grad_reduce = *ParseGradReduce(gr);
  }
  if (m.Has("cp_comm")) {
    std::string cc;
    PARASIM_RETURN_IF_ERROR(m.Enum("cp_comm", &cc, CpCommNames()));
    l.cp_comm = *ParseCpComm(cc);
  }
  PARASIM_RETURN_IF_ERROR(m.Bool("zero3_copies", &l.zero3_copies));
  PARASIM_RETURN_IF_ERROR(m.Size("bucket", &l.bucket));
  if (m.Has("bucket") && l.bucket.bytes() < 1024) {
    return m.Error("bucket", "a gradient bucket must be at least 1KiB, e.g. '25MiB'");
  }
  if (m.Has("compression")) {
    PARASIM_ASSIGN_OR_RETURN(std::string c,
                             ReadScalar(ctx, m.Node("compression"), "parallelism.compression"));
    Status st = ParseCompression(c, &l);
    if (!st.ok()) return m.Error("compression", st.message());
  }
  if (m.Has("order")) {
    YAML::Node o = m.Node("order");
    std::vector<RankDim> order;
    for (size_t i = 0; o.IsSequence() && i < o.size(); ++i) {
      auto d =
          o[i].IsScalar() ? ParseRankDim(o[i].Scalar()) : StatusOr<RankDim>(InvalidArgument(""));
      if (d.ok() && std::find(order.begin(), order.end(), *d) == order.end()) order.push_back(*d);
    }
    if (!o.IsSequence() || order.size() != 5 || o.size() != 5) {
      return m.Error("order", "expected a permutation of [tp, cp, ep, dp, pp], innermost first");
    }
    l.order = order;
  }
  return Status::Ok();
}

// Cluster and model keys a sweep block may list to compare clusters and models (hardware
// co-design), each with the block of the scenario it replaces a key of ("" = the model itself,
// or for `cluster` a list of cluster fragments merged over the scenario's cluster).
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

// A hardware key of a sweep block and its values (a list, or one value), as written.
struct HardwareAxis {
  std::string key;
  std::string_view block;
  std::vector<YAML::Node> values;
};

Status ParseSweep(const YamlContext& ctx, const YAML::Node& node, SweepSpec* sw,
                  std::vector<HardwareAxis>* hardware) {
  std::vector<std::string_view> keys(SweepableKeys().begin(), SweepableKeys().end());
  for (const auto& [key, block] : HardwareSweepKeys()) keys.push_back(key);
  keys.push_back("objective");
  keys.push_back("top");
  PARASIM_ASSIGN_OR_RETURN(MapReader m, MapReader::Open(ctx, node, "sweep", keys));
  sw->where = ctx.Where(node, "sweep");
  std::string obj;
  if (m.Has("objective")) {
    PARASIM_RETURN_IF_ERROR(
        m.Enum("objective", &obj, {"throughput", "time_to_train", "cost", "memory"}));
    sw->objective = obj == "throughput"      ? Objective::kThroughput
                    : obj == "time_to_train" ? Objective::kTimeToTrain
                    : obj == "cost"          ? Objective::kCost
                                             : Objective::kMemory;
  }
  PARASIM_RETURN_IF_ERROR(m.Int("top", &sw->top, 1, 100000));
  for (const auto& kv : node) {
    std::string key = kv.first.Scalar();
    if (key == "objective" || key == "top") continue;
    SweepAxis axis;
    const YAML::Node& v = kv.second;
    std::string path = "sweep." + key;
    const auto hw = std::find_if(HardwareSweepKeys().begin(), HardwareSweepKeys().end(),
                                 [&](const auto& h) { return h.first == key; });
    if (hw != HardwareSweepKeys().end()) {
      if (v.IsScalar() && v.Scalar() == "auto") {
        return ctx.ErrorAt(v, path,
                           fmt::format("{} cannot be auto; list the values to compare, e.g. {}",
                                       key, key == "gpu" ? "[h100-sxm5-80gb, b200]" : "[64, 128]"));
      }
      if (v.IsSequence() && v.size() == 0) {
        return ctx.ErrorAt(v, path, "an empty list sweeps nothing; list the values to compare");
      }
      HardwareAxis a{key, hw->second, {}};
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
      hardware->push_back(std::move(a));
      continue;
    }
    if (key == "global_batch" && v.IsMap()) {
      PARASIM_ASSIGN_OR_RETURN(MapReader gb, MapReader::Open(ctx, v, path, {"max"}));
      PARASIM_RETURN_IF_ERROR(gb.Require("max"));
      PARASIM_RETURN_IF_ERROR(gb.Int("max", &sw->global_batch_max, 1, kMaxCount));
      continue;
    }
    if (v.IsScalar() && v.Scalar() == "auto") {
      if (key == "global_batch") {
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
    // Type-check each value now, so a bad value is reported at its line.
    Scenario probe;
    for (size_t i = 0; i < axis.values.size(); ++i) {
      Status st = ApplySweepValue(&probe, key, axis.values[i]);
      if (!st.ok()) {
        YAML::Node at = v.IsSequence() ? v[i] : v;
        return ctx.ErrorAt(at, path, st.message());
      }
    }
    sw->axes.emplace_back(key, axis);
  }
  return Status::Ok();
}

// `root` with a catalog model id turned into `model: {extends: id}`, so that a key set under
// it (`--set model.layers=80`, a swept model key) extends that model.
YAML::Node ExtendingModel(const YAML::Node& root) {
  const YAML::Node model = root["model"];
  if (!model.IsDefined() || !model.IsScalar()) return root;
  YAML::Node extended(YAML::NodeType::Map);
  extended["extends"] = model.Scalar();
  return WithNodeAt(root, {"model"}, extended);
}

// How a sweep value reads in a label: its text; for a mapping its scalar keys ("gpu=b200
// intra_node=nvlink5"), else its place in the list.
std::string ValueLabel(const std::string& key, const YAML::Node& v, size_t i) {
  if (v.IsScalar()) return fmt::format("{}={}", key, v.Scalar());
  std::vector<std::string> parts;
  if (v.IsMap()) {
    for (const auto& kv : v) {
      if (kv.second.IsScalar()) {
        parts.push_back(fmt::format("{}={}", kv.first.Scalar(), kv.second.Scalar()));
      }
    }
  }
  if (parts.empty()) return fmt::format("{}=inline#{}", key, i + 1);
  return fmt::format("{}", fmt::join(parts, " "));
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
    YAML::Node r = root;
    std::vector<std::string> label;
    // Whole blocks first (the model, cluster fragments), so that single keys refine them.
    for (int pass = 0; pass < 2; ++pass) {
      for (size_t a = 0; a < axes.size(); ++a) {
        const HardwareAxis& ax = axes[a];
        if (ax.block.empty() != (pass == 0)) continue;
        const YAML::Node& v = ax.values[idx[a]];
        if (ax.key == "cluster") {
          r = WithNodeAt(r, {"cluster"},
                         DeepMerge(static_cast<const YAML::Node&>(r)["cluster"], v));
        } else if (ax.key == "model") {
          r = WithNodeAt(r, {"model"}, v);
        } else {
          if (ax.block == "model") r = ExtendingModel(r);
          r = WithNodeAt(r, {std::string(ax.block), ax.key}, v);
        }
      }
    }
    for (size_t a = 0; a < axes.size(); ++a) {
      label.push_back(ValueLabel(axes[a].key, axes[a].values[idx[a]], idx[a]));
    }
    SweepHardware h;
    h.label = fmt::format("{}", fmt::join(label, " "));
    const YAML::Node& cr = r;
    Status st = ParseCluster(ctx, cr["cluster"], cat, &h.cluster, dir);
    if (st.ok()) st = ParseModel(ctx, cr["model"], cat, &h.model);
    if (!st.ok()) {
      return Status(st.code(),
                    fmt::format("{} (in the sweep's combination {})", st.message(), h.label));
    }
    sw->hardware.push_back(std::move(h));
    for (size_t a = 0; a < axes.size(); ++a) {
      if (++idx[a] < axes[a].values.size()) break;
      idx[a] = 0;
    }
  }
  if (sw->objective == Objective::kCost) {
    for (const SweepHardware& h : sw->hardware) {
      if (h.cluster.gpu_hour_cost <= 0) {
        return InvalidArgument(fmt::format(
            "{}: error: sweep: objective cost compares clusters by price, but {} has none; give "
            "cluster.gpu_hour_cost, one price per GPU-hour or one per GPU type (e.g. "
            "{{h100-sxm5-80gb: 2.5, b200: 4.0}})",
            sw->where, h.label));
      }
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<Catalogs> LoadCatalogs() {
  Catalogs c;
  PARASIM_ASSIGN_OR_RETURN(c.hardware, LoadHardwareCatalog());
  PARASIM_ASSIGN_OR_RETURN(c.models, LoadModelCatalog());
  return c;
}

// A failure rate per component-day, or the component's MTBF as a time ("2000d").
Status ReadRate(const MapReader& m, std::string_view key, double* out) {
  if (!m.Has(key)) return Status::Ok();
  const YAML::Node n = m.Node(key);
  const std::string text = n.IsScalar() ? n.Scalar() : std::string();
  if (StatusOr<double> v = ParseCount(text); v.ok() && *v >= 0 && *v <= 1e3) {
    *out = *v;
    return Status::Ok();
  }
  if (StatusOr<double> d = ParseSeconds(text); d.ok() && *d > 0) {
    *out = 86400.0 / *d;
    return Status::Ok();
  }
  return m.Error(key, fmt::format("'{}' is neither a rate per component-day (a number from 0 "
                                  "to 1000, e.g. 4.9e-4) nor an MTBF with a time unit (e.g. "
                                  "2000d)",
                                  text));
}

Status ParseReliability(const YamlContext& ctx, const YAML::Node& node, Reliability* r) {
  if (node.IsScalar()) {
    PARASIM_ASSIGN_OR_RETURN(std::string v, ReadScalar(ctx, node, "reliability"));
    if (v == "none") {
      r->enabled = false;
      return Status::Ok();
    }
    return ctx.ErrorAt(node, "reliability",
                       fmt::format("'{}' is not accepted; expected `none` or a mapping with "
                                   "keys such as gpu, detection, checkpoint, storage_write",
                                   v));
  }
  PARASIM_ASSIGN_OR_RETURN(
      MapReader m,
      MapReader::Open(ctx, node, "reliability",
                      {"gpu", "node", "link", "switch", "planned_per_day", "detection", "relaunch",
                       "checkpoint", "checkpoint_interval", "storage_write", "storage_read",
                       "host_copy", "window", "straggler", "seed", "runs", "step_samples"}));
  r->block = true;
  PARASIM_RETURN_IF_ERROR(ReadRate(m, "gpu", &r->gpu));
  PARASIM_RETURN_IF_ERROR(ReadRate(m, "node", &r->node));
  PARASIM_RETURN_IF_ERROR(ReadRate(m, "link", &r->link));
  PARASIM_RETURN_IF_ERROR(ReadRate(m, "switch", &r->switches));
  PARASIM_RETURN_IF_ERROR(m.Number("planned_per_day", &r->planned_per_day, 0, 1e4));
  PARASIM_RETURN_IF_ERROR(m.Time("detection", &r->detection));
  PARASIM_RETURN_IF_ERROR(m.Time("relaunch", &r->relaunch));
  std::string mode = r->async_checkpoint ? "async" : "sync";
  PARASIM_RETURN_IF_ERROR(m.Enum("checkpoint", &mode, {"sync", "async"}));
  r->async_checkpoint = mode == "async";
  PARASIM_RETURN_IF_ERROR(m.Time("checkpoint_interval", &r->checkpoint_interval));
  for (auto [key, bw] :
       {std::pair{"storage_write", &r->storage_write}, std::pair{"storage_read", &r->storage_read},
        std::pair{"host_copy", &r->host_copy}}) {
    PARASIM_RETURN_IF_ERROR(m.Rate(key, bw));
    if (bw->bytes_per_second() <= 0)
      return m.Error(key, "expected a positive bandwidth, e.g. 2TB/s");
  }
  if (m.Has("window")) {
    PARASIM_ASSIGN_OR_RETURN(std::string w, ReadScalar(ctx, m.Node("window"), m.Path("window")));
    StatusOr<double> sec = ParseSeconds(w);
    if (!sec.ok()) return m.Error("window", sec.status().message());
    r->window_s = *sec;
  }
  PARASIM_RETURN_IF_ERROR(m.Number("straggler", &r->straggler, 0, 1));
  int64_t seed = static_cast<int64_t>(r->seed);
  PARASIM_RETURN_IF_ERROR(m.Int("seed", &seed, 0, int64_t{1} << 62));
  r->seed = static_cast<uint64_t>(seed);
  PARASIM_RETURN_IF_ERROR(m.Int("runs", &r->runs, 1, 100000));
  PARASIM_RETURN_IF_ERROR(m.Int("step_samples", &r->step_samples, 0, 100000));
  return Status::Ok();
}

Status ValidateLayout(const Scenario& s, const YamlContext& ctx, const YAML::Node& where) {
  const std::optional<LayoutProblem> problem = CheckLayout(s);
  if (!problem) return Status::Ok();
  // The key's own node when the parallelism block has it, else the block (or the file).
  // (Assigning to a missing key's node throws in yaml-cpp: bind with reset instead.)
  YAML::Node n;
  bool found = false;
  if (where.IsDefined() && where.IsMap()) {
    const YAML::Node child = where[problem->key];
    if (child.IsDefined()) {
      n.reset(child);
      found = true;
    }
  }
  if (!found) n.reset(where);
  return ctx.ErrorAt(n, "parallelism." + problem->key, problem->message);
}

// The training's number format on GPU `g` (PrecisionProblem), located at the training key at
// fault; `combination` names a co-design sweep's cluster, empty for the scenario's own.
Status CheckPrecisionOnGpu(const YamlContext& ctx, const YAML::Node& training, const Training& t,
                           const GpuSpec& g, const std::string& combination) {
  const std::optional<LayoutProblem> problem = PrecisionProblem(t, g);
  if (!problem) return Status::Ok();
  const YAML::Node at = training[problem->key].IsDefined() ? training[problem->key] : training;
  return ctx.ErrorAt(at, "training." + problem->key,
                     combination.empty() ? problem->message
                                         : fmt::format("{} (in the sweep's combination {})",
                                                       problem->message, combination));
}

StatusOr<Scenario> ScenarioFromNode(const YAML::Node& root, const YamlContext& ctx,
                                    const Catalogs& cat) {
  PARASIM_ASSIGN_OR_RETURN(MapReader top, MapReader::Open(ctx, root, "",
                                                          {"name", "cluster", "model", "training",
                                                           "parallelism", "sweep", "reliability"}));
  Scenario s;
  s.file = ctx.file;
  PARASIM_RETURN_IF_ERROR(top.String("name", &s.name));
  for (auto k : {"cluster", "model", "training"}) PARASIM_RETURN_IF_ERROR(top.Require(k));
  std::string dir = std::filesystem::path(ctx.file).parent_path().string();
  PARASIM_RETURN_IF_ERROR(ParseCluster(ctx, top.Node("cluster"), cat, &s.cluster, dir));
  PARASIM_RETURN_IF_ERROR(ParseModel(ctx, top.Node("model"), cat, &s.model));
  PARASIM_RETURN_IF_ERROR(ParseTraining(ctx, top.Node("training"), &s.training));
  PARASIM_RETURN_IF_ERROR(
      CheckPrecisionOnGpu(ctx, top.Node("training"), s.training, s.cluster.gpu, ""));
  YAML::Node par = top.Node("parallelism");
  if (par.IsDefined() && !par.IsNull()) {
    PARASIM_RETURN_IF_ERROR(ParseParallelism(ctx, par, &s));
  } else {
    s.dp_auto = true;
  }
  if (top.Has("sweep")) {
    SweepSpec sw;
    std::vector<HardwareAxis> hardware;
    PARASIM_RETURN_IF_ERROR(ParseSweep(ctx, top.Node("sweep"), &sw, &hardware));
    PARASIM_RETURN_IF_ERROR(BuildSweepHardware(root, ctx, cat, dir, hardware, &sw));
    for (const SweepHardware& h : sw.hardware) {
      PARASIM_RETURN_IF_ERROR(
          CheckPrecisionOnGpu(ctx, top.Node("training"), s.training, h.cluster.gpu, h.label));
    }
    s.sweep = sw;
  }
  if (top.Has("reliability")) {
    PARASIM_RETURN_IF_ERROR(ParseReliability(ctx, top.Node("reliability"), &s.reliability));
  }
  if (s.dp_auto) {
    const int64_t denom = static_cast<int64_t>(s.layout.tp) * s.layout.pp * s.layout.cp;
    if (s.cluster.gpus() % denom != 0) {
      YAML::Node n = par.IsDefined() && par.IsMap() && par["tp"].IsDefined() ? par["tp"] : par;
      return ctx.ErrorAt(
          n, "parallelism",
          fmt::format("dp = auto needs tp*pp*cp = {}*{}*{} = {} to divide the "
                      "cluster's {} GPUs",
                      s.layout.tp, s.layout.pp, s.layout.cp, denom, s.cluster.gpus()));
    }
    s.layout.dp = s.cluster.gpus() / denom;
  }
  // A scenario whose sweep block varies the layout is checked per layout by the sweep; the
  // fixed layout must still be valid when no sweep is present.
  const Status own = ValidateLayout(s, ctx, par.IsDefined() ? par : root);
  if (!s.sweep) PARASIM_RETURN_IF_ERROR(own);
  s.fixed_layout = own;
  return s;
}

StatusOr<Scenario> LoadScenario(const YamlInput& input, const std::vector<std::string>& sets,
                                const Catalogs& cat) {
  PARASIM_ASSIGN_OR_RETURN(YAML::Node root, LoadYaml(input));
  YamlContext ctx{input.name, {}};
  for (const auto& s : sets) {
    if (s.rfind("model.", 0) == 0) root = ExtendingModel(root);
    PARASIM_RETURN_IF_ERROR(ApplySet(root, s, &ctx));
  }
  return ScenarioFromNode(root, ctx, cat);
}

}  // namespace parasim
