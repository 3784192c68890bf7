#include "hardware/profile.h"

#include <fmt/core.h>

#include <algorithm>
#include <tuple>

#include "sim/io.h"
#include "sim/json.h"
#include "sim/parse_units.h"
#include "sim/yaml_reader.h"

namespace parasim {

namespace {

// Optional keys: the field stays empty when the key is absent.
Status Optional(const MapReader& m, const char* key, double lo, double hi,
                std::optional<double>* out) {
  if (!m.Has(key)) return Status::Ok();
  double x = 0;
  PARASIM_RETURN_IF_ERROR(m.Number(key, &x, lo, hi));
  *out = x;
  return Status::Ok();
}

Status Optional(const MapReader& m, const char* key, std::optional<Duration>* out) {
  if (!m.Has(key)) return Status::Ok();
  Duration d;
  // As a catalog GPU's overheads (hardware/spec.cc): at most a second.
  PARASIM_RETURN_IF_ERROR(m.Time(key, &d, Duration::Zero(), Duration::Seconds(1)));
  *out = d;
  return Status::Ok();
}

Status ReadCompute(const YamlContext& ctx, const YAML::Node& node, CalibrationProfile* pp) {
  CalibrationProfile& p = *pp;
  PARASIM_ASSIGN_OR_RETURN(
      MapReader c, MapReader::Open(ctx, node, "compute",
                                   {"gemm_efficiency", "memory_efficiency", "launch_overhead",
                                    "host_op_time", "host_micro_batch_time", "host_step_time",
                                    "sustained_factor", "gemm_efficiency_fp8", "attention_standard",
                                    "attention_flash", "attention_flash2", "contended_compute",
                                    "contended_memory", "elementwise_rates"}));
  PARASIM_RETURN_IF_ERROR(Optional(c, "gemm_efficiency_fp8", 0.01, 1.0, &p.gemm_efficiency_fp8));
  for (auto [key, field] : {std::pair{"attention_standard", &p.attention_standard},
                            {"attention_flash", &p.attention_flash},
                            {"attention_flash2", &p.attention_flash2}}) {
    if (!c.Has(key)) continue;
    AttentionEfficiency e;
    PARASIM_RETURN_IF_ERROR(ReadAttentionEfficiency(c, key, &e));
    *field = e;
  }
  if (c.Has("elementwise_rates")) {
    ElementwiseRates e;
    PARASIM_RETURN_IF_ERROR(ReadElementwiseRates(c, "elementwise_rates", &e));
    p.elementwise_rates = e;
  }
  PARASIM_RETURN_IF_ERROR(Optional(c, "gemm_efficiency", 0.01, 1.0, &p.gemm_efficiency));
  PARASIM_RETURN_IF_ERROR(Optional(c, "memory_efficiency", 0.01, 1.0, &p.memory_efficiency));
  PARASIM_RETURN_IF_ERROR(Optional(c, "sustained_factor", 0.05, 1.0, &p.sustained_factor));
  PARASIM_RETURN_IF_ERROR(Optional(c, "contended_compute", 1.0, 4.0, &p.contended_compute));
  PARASIM_RETURN_IF_ERROR(Optional(c, "contended_memory", 1.0, 4.0, &p.contended_memory));
  PARASIM_RETURN_IF_ERROR(Optional(c, "launch_overhead", &p.launch_overhead));
  PARASIM_RETURN_IF_ERROR(Optional(c, "host_op_time", &p.host_op_time));
  PARASIM_RETURN_IF_ERROR(Optional(c, "host_micro_batch_time", &p.host_micro_batch_time));
  PARASIM_RETURN_IF_ERROR(Optional(c, "host_step_time", &p.host_step_time));
  return Status::Ok();
}

Status ReadGemmShape(const YamlContext& ctx, const YAML::Node& node, size_t i,
                     CalibrationProfile* p) {
  const std::string path = fmt::format("gemm_shapes[{}]", i);
  PARASIM_ASSIGN_OR_RETURN(
      MapReader r, MapReader::Open(ctx, node, path, {"dtype", "m", "n", "k", "efficiency"}));
  for (auto k : {"m", "n", "k", "efficiency"}) PARASIM_RETURN_IF_ERROR(r.Require(k));
  GemmShapeFit g;
  std::string dt = "bf16";
  PARASIM_RETURN_IF_ERROR(r.Enum("dtype", &dt, DtypeNames()));
  g.dtype = *ParseDtype(dt);
  PARASIM_RETURN_IF_ERROR(r.Int("m", &g.m, 1, int64_t{1} << 24));
  PARASIM_RETURN_IF_ERROR(r.Int("n", &g.n, 1, int64_t{1} << 24));
  PARASIM_RETURN_IF_ERROR(r.Int("k", &g.k, 1, int64_t{1} << 24));
  PARASIM_RETURN_IF_ERROR(r.Number("efficiency", &g.efficiency, 0.001, 1.0));
  p->gemm_shapes.push_back(g);
  return Status::Ok();
}

Status ReadCollectiveFit(const YamlContext& ctx, const YAML::Node& node, const std::string& cpath,
                         FabricFit* fit) {
  PARASIM_ASSIGN_OR_RETURN(
      MapReader r, MapReader::Open(ctx, node, cpath,
                                   {"op", "algo", "ranks", "per_node", "efficiency", "latency"}));
  for (auto k : {"op", "algo", "ranks", "efficiency", "latency"}) {
    PARASIM_RETURN_IF_ERROR(r.Require(k));
  }
  FabricSpec::CollectiveFit cf;
  std::string op, algo;
  PARASIM_RETURN_IF_ERROR(r.Enum("op", &op, CollectiveNames()));
  cf.op = *ParseCollective(op);
  PARASIM_RETURN_IF_ERROR(r.Enum("algo", &algo, AlgoNames()));
  cf.algo = *ParseAlgo(algo);
  PARASIM_RETURN_IF_ERROR(r.Int("ranks", &cf.ranks, 1, int64_t{1} << 24));
  cf.per_node = cf.ranks;
  PARASIM_RETURN_IF_ERROR(r.Int("per_node", &cf.per_node, 1, cf.ranks));
  PARASIM_RETURN_IF_ERROR(r.Number("efficiency", &cf.efficiency, 0.01, 1.0));
  // As a catalog fabric's latency (hardware/spec.cc): at most a second.
  PARASIM_RETURN_IF_ERROR(r.Time("latency", &cf.latency, Duration::Zero(), Duration::Seconds(1)));
  fit->collectives.push_back(cf);
  return Status::Ok();
}

Status ReadFabric(const YamlContext& ctx, const YAML::Node& key, const YAML::Node& value,
                  CalibrationProfile* p) {
  FabricFit fit;
  fit.id = key.as<std::string>();
  const std::string path = "fabrics." + fit.id;
  PARASIM_ASSIGN_OR_RETURN(
      MapReader m, MapReader::Open(ctx, value, path, {"efficiency", "latency", "collectives"}));
  PARASIM_RETURN_IF_ERROR(Optional(m, "efficiency", 0.01, 1.0, &fit.efficiency));
  PARASIM_RETURN_IF_ERROR(Optional(m, "latency", &fit.latency));
  if (m.Has("collectives")) {
    const YAML::Node list = m.Node("collectives");
    if (!list.IsSequence()) {
      return ctx.ErrorAt(list, path + ".collectives",
                         "expected a list of {op, algo, ranks, per_node, efficiency, latency}");
    }
    for (size_t i = 0; i < list.size(); ++i) {
      PARASIM_RETURN_IF_ERROR(
          ReadCollectiveFit(ctx, list[i], fmt::format("{}.collectives[{}]", path, i), &fit));
    }
  }
  p->fabrics.push_back(fit);
  return Status::Ok();
}

}  // namespace

StatusOr<CalibrationProfile> ParseCalibrationProfile(const std::string& text,
                                                     const std::string& file) {
  YamlContext ctx{file, {}};
  PARASIM_ASSIGN_OR_RETURN(
      YAML::Node root, ParseYaml(text, file, "keys gpu, source, compute, gemm_shapes, fabrics"));
  PARASIM_ASSIGN_OR_RETURN(
      MapReader top,
      MapReader::Open(ctx, root, "", {"gpu", "source", "compute", "gemm_shapes", "fabrics"}));
  CalibrationProfile p;
  p.file = file;
  PARASIM_RETURN_IF_ERROR(top.Require("gpu"));
  PARASIM_RETURN_IF_ERROR(top.String("gpu", &p.gpu));
  p.gpu_where = ctx.Where(top.Node("gpu"), "gpu");
  PARASIM_RETURN_IF_ERROR(top.String("source", &p.source));
  if (top.Has("compute")) PARASIM_RETURN_IF_ERROR(ReadCompute(ctx, top.Node("compute"), &p));
  if (top.Has("gemm_shapes")) {
    const YAML::Node list = top.Node("gemm_shapes");
    if (!list.IsSequence()) {
      return ctx.ErrorAt(list, "gemm_shapes", "expected a list of {dtype, m, n, k, efficiency}");
    }
    for (size_t i = 0; i < list.size(); ++i) {
      PARASIM_RETURN_IF_ERROR(ReadGemmShape(ctx, list[i], i, &p));
    }
  }
  if (top.Has("fabrics")) {
    const YAML::Node f = top.Node("fabrics");
    if (!f.IsMap()) {
      return ctx.ErrorAt(f, "fabrics", "expected a mapping of fabric id -> {efficiency, latency}");
    }
    for (const auto& kv : f) PARASIM_RETURN_IF_ERROR(ReadFabric(ctx, kv.first, kv.second, &p));
  }
  return p;
}

StatusOr<CalibrationProfile> LoadCalibrationProfile(const std::string& path) {
  PARASIM_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseCalibrationProfile(text, path);
}

namespace {

// The `compute:` section: the values the profile has, or nothing.
std::string FormatCompute(const CalibrationProfile& p) {
  if (!(p.gemm_efficiency || p.memory_efficiency || p.launch_overhead || p.host_op_time ||
        p.host_micro_batch_time || p.host_step_time || p.sustained_factor ||
        p.gemm_efficiency_fp8 || p.attention_standard || p.attention_flash || p.attention_flash2 ||
        p.contended_compute || p.contended_memory || p.elementwise_rates)) {
    return "";
  }
  std::string out = "compute:\n";
  if (p.gemm_efficiency) out += fmt::format("  gemm_efficiency: {:.6g}\n", *p.gemm_efficiency);
  if (p.memory_efficiency) {
    out += fmt::format("  memory_efficiency: {:.6g}\n", *p.memory_efficiency);
  }
  if (p.launch_overhead) {
    out += fmt::format("  launch_overhead: {:.6g}us\n", p.launch_overhead->microseconds());
  }
  if (p.host_op_time) {
    out += fmt::format("  host_op_time: {:.6g}us\n", p.host_op_time->microseconds());
  }
  if (p.host_micro_batch_time) {
    out +=
        fmt::format("  host_micro_batch_time: {:.6g}us\n", p.host_micro_batch_time->microseconds());
  }
  if (p.host_step_time) {
    out += fmt::format("  host_step_time: {:.6g}us\n", p.host_step_time->microseconds());
  }
  if (p.sustained_factor) {
    out += fmt::format("  sustained_factor: {:.6g}\n", *p.sustained_factor);
  }
  if (p.gemm_efficiency_fp8) {
    out += fmt::format("  gemm_efficiency_fp8: {:.6g}\n", *p.gemm_efficiency_fp8);
  }
  if (p.contended_compute) {
    out += fmt::format("  contended_compute: {:.6g}\n", *p.contended_compute);
  }
  if (p.contended_memory) {
    out += fmt::format("  contended_memory: {:.6g}\n", *p.contended_memory);
  }
  for (auto [key, field] : {std::pair{"attention_standard", &p.attention_standard},
                            {"attention_flash", &p.attention_flash},
                            {"attention_flash2", &p.attention_flash2}}) {
    if (*field) {
      out += fmt::format("  {}: {{forward: {:.6g}, backward: {:.6g}}}\n", key, (*field)->forward,
                         (*field)->backward);
    }
  }
  if (const auto& e = p.elementwise_rates) {
    // Only the rates measured: a 0 is no measurement, and the reader takes none as 0.
    std::string fields;
    for (const ElementwiseRateKey& k : kElementwiseRateKeys) {
      const double v = (*e).*k.rate;
      if (v > 0) fields += fmt::format("{}{}: {:.6g}", fields.empty() ? "" : ", ", k.key, v);
    }
    out += fmt::format("  elementwise_rates: {{{}}}\n", fields);
  }
  return out;
}

std::string FormatGemmShapes(const std::vector<GemmShapeFit>& shapes) {
  std::string out = shapes.empty() ? "" : "gemm_shapes:\n";
  for (const GemmShapeFit& g : shapes) {
    out += fmt::format("  - {{dtype: {}, m: {}, n: {}, k: {}, efficiency: {:.6g}}}\n",
                       DtypeName(g.dtype), g.m, g.n, g.k, g.efficiency);
  }
  return out;
}

// One fabric under `fabrics:`: a flow mapping, or a block when it has per-case fits.
std::string FormatFabric(const FabricFit& f) {
  std::string fields;
  if (f.efficiency) fields += fmt::format("efficiency: {:.6g}", *f.efficiency);
  if (f.latency) {
    fields +=
        fmt::format("{}latency: {:.6g}us", fields.empty() ? "" : ", ", f.latency->microseconds());
  }
  if (f.collectives.empty()) return fmt::format("  {}: {{{}}}\n", JsonEscape(f.id), fields);
  std::string out = fmt::format("  {}:\n", JsonEscape(f.id));
  if (f.efficiency) out += fmt::format("    efficiency: {:.6g}\n", *f.efficiency);
  if (f.latency) out += fmt::format("    latency: {:.6g}us\n", f.latency->microseconds());
  out += "    collectives:\n";
  for (const auto& c : f.collectives) {
    out += fmt::format(
        "      - {{op: {}, algo: {}, ranks: {}, per_node: {}, efficiency: {:.6g}, "
        "latency: {:.6g}us}}\n",
        CollectiveName(c.op), AlgoName(c.algo), c.ranks, c.per_node, c.efficiency,
        c.latency.microseconds());
  }
  return out;
}

}  // namespace

std::string FormatCalibrationProfile(const CalibrationProfile& p) {
  std::string out = "# parasim calibration profile (see hardware/profile.h)\n";
  // Strings in double quotes with JSON escapes (a JSON string is a YAML double-quoted scalar).
  out += fmt::format("gpu: {}\n", JsonEscape(p.gpu));
  if (!p.source.empty()) out += fmt::format("source: {}\n", JsonEscape(p.source));
  out += FormatCompute(p);
  out += FormatGemmShapes(p.gemm_shapes);
  if (!p.fabrics.empty()) out += "fabrics:\n";
  for (const FabricFit& f : p.fabrics) out += FormatFabric(f);
  return out;
}

namespace {

// Which of the cluster's figures the profile measured (ClusterSpec::measured).
void MarkMeasured(const CalibrationProfile& p, ClusterSpec* c) {
  ClusterSpec::Measured& m = c->measured;
  m.gemm = m.gemm || p.gemm_efficiency || p.gemm_efficiency_fp8 || !p.gemm_shapes.empty() ||
           p.sustained_factor;
  m.attention = m.attention || p.attention_flash || p.attention_standard || p.attention_flash2;
  m.memory = m.memory || p.memory_efficiency || p.elementwise_rates;
  m.host =
      m.host || p.launch_overhead || p.host_op_time || p.host_micro_batch_time || p.host_step_time;
  for (const FabricFit& f : p.fabrics) {
    const bool fitted = f.efficiency || !f.collectives.empty();
    if (f.id == c->intra.id) m.intra = m.intra || fitted;
    if (f.id == c->inter.id) m.inter = m.inter || fitted;
  }
}

// The lines that say what a profile replaced: each value with the one it replaced, that one
// named the catalog's, or the scenario's where the scenario's GPU or fabric mapping set it.
class Replacements {
 public:
  // The values of a GPU or fabric that `keys` and `inline_spec` describe.
  void Of(const std::vector<std::string>& keys, bool inline_spec) {
    keys_ = &keys;
    inline_ = inline_spec;
  }
  const char* Origin(std::string_view key) const {
    const bool set = inline_ || std::find(keys_->begin(), keys_->end(), key) != keys_->end();
    return set ? "scenario" : "catalog";
  }
  void Num(const std::string& what, std::string_view key, const std::optional<double>& v,
           double* field) {
    if (!v) return;
    lines.push_back(fmt::format("{} {:.3g} ({} {:.3g})", what, *v, Origin(key), *field));
    *field = *v;
  }
  void Time(const std::string& what, std::string_view key, const std::optional<Duration>& v,
            Duration* field) {
    if (!v) return;
    lines.push_back(fmt::format("{} {} ({} {})", what, FormatDuration(*v), Origin(key),
                                FormatDuration(*field)));
    *field = *v;
  }
  std::vector<std::string> lines;

 private:
  const std::vector<std::string>* keys_ = nullptr;
  bool inline_ = false;
};

// The GPU's compute values a profile measured.
void ReplaceCompute(const CalibrationProfile& p, GpuSpec* g, Replacements* r) {
  const double before_fp8 = g->Fp8GemmEfficiency();  // before the profile's 16-bit one
  const std::string fp8_origin =
      r->Origin(g->gemm_efficiency_fp8 > 0 ? "gemm_efficiency_fp8" : "gemm_efficiency");
  for (auto [key, v, field] :
       {std::tuple{"gemm_efficiency", &p.gemm_efficiency, &g->gemm_efficiency},
        {"memory_efficiency", &p.memory_efficiency, &g->memory_efficiency},
        {"sustained_factor", &p.sustained_factor, &g->sustained_factor},
        {"contended_compute", &p.contended_compute, &g->contended_compute},
        {"contended_memory", &p.contended_memory, &g->contended_memory}}) {
    r->Num(key, key, *v, field);
  }
  for (auto [key, v, field] :
       {std::tuple{"launch_overhead", &p.launch_overhead, &g->launch_overhead},
        {"host_op_time", &p.host_op_time, &g->host_op_time},
        {"host_micro_batch_time", &p.host_micro_batch_time, &g->host_micro_batch_time},
        {"host_step_time", &p.host_step_time, &g->host_step_time}}) {
    r->Time(key, key, *v, field);
  }
  if (p.gemm_efficiency_fp8) {
    r->lines.push_back(fmt::format("gemm_efficiency_fp8 {:.3g} ({} {:.3g})", *p.gemm_efficiency_fp8,
                                   fp8_origin, before_fp8));
    g->gemm_efficiency_fp8 = *p.gemm_efficiency_fp8;
  }
  for (auto [key, from, to] :
       {std::tuple{"attention_standard", &p.attention_standard, &g->attention_standard},
        {"attention_flash", &p.attention_flash, &g->attention_flash},
        {"attention_flash2", &p.attention_flash2, &g->attention_flash2}}) {
    if (!*from) continue;
    // An unset FlashAttention 2 figure stood for the fused kernels' (CostModel).
    const bool as_fused = to == &g->attention_flash2 && to->forward <= 0;
    const std::string was =
        to->forward > 0
            ? fmt::format("{} {:.3g}, {:.3g}", r->Origin(key), to->forward, to->backward)
        : as_fused ? "as attention_flash"
                   : fmt::format("{}: derived from gemm_efficiency", r->Origin("gemm_efficiency"));
    r->lines.push_back(fmt::format("{} forward {:.3g}, backward {:.3g} ({})", key, (*from)->forward,
                                   (*from)->backward, was));
    *to = **from;
  }
  if (p.elementwise_rates) {
    r->lines.push_back(
        fmt::format("elementwise_rates ({}: {})", r->Origin("elementwise_rates"),
                    g->elementwise_rates.any() ? "measured rates" : "none, bandwidth alone"));
    g->elementwise_rates = *p.elementwise_rates;
  }
  if (!p.gemm_shapes.empty()) {
    r->lines.push_back(
        fmt::format("{} measured GEMM shapes (catalog: the shape curve)", p.gemm_shapes.size()));
    g->gemm_shapes = p.gemm_shapes;
  }
}

}  // namespace

StatusOr<std::vector<std::string>> ApplyCalibrationProfile(const CalibrationProfile& p,
                                                           ClusterSpec* c) {
  if (!p.gpu.empty() && p.gpu != c->gpu.id) {
    return InvalidArgument(fmt::format(
        "{}: error: gpu: the profile was measured on '{}' but the cluster's GPU is '{}'; "
        "calibrate on the cluster's GPU or drop cluster.calibration",
        p.gpu_where.empty() ? p.file + ":1:1" : p.gpu_where, p.gpu, c->gpu.id));
  }
  Replacements r;
  r.Of(c->gpu.scenario_keys, c->gpu.inline_spec);
  ReplaceCompute(p, &c->gpu, &r);
  for (const FabricFit& f : p.fabrics) {
    for (FabricSpec* spec : {&c->intra, &c->inter}) {
      if (spec->id != f.id) continue;
      r.Of(spec->scenario_keys, spec->inline_spec);
      r.Num(f.id + " efficiency", "efficiency", f.efficiency, &spec->efficiency);
      r.Time(f.id + " latency", "latency", f.latency, &spec->latency);
      if (!f.collectives.empty()) {
        r.lines.push_back(fmt::format("{} alpha-beta for {} collective x algorithm x group cases",
                                      f.id, f.collectives.size()));
        spec->collectives = f.collectives;
      }
    }
  }
  MarkMeasured(p, c);
  return r.lines;
}

}  // namespace parasim
