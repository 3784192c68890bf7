#include "hardware/profile.h"

#include <fmt/core.h>

#include "sim/io.h"
#include "sim/parse_units.h"
#include "sim/yaml_reader.h"

namespace parasim {

StatusOr<CalibrationProfile> ParseCalibrationProfile(const std::string& text,
                                                     const std::string& file) {
  YamlContext ctx{file, {}};
  PARASIM_ASSIGN_OR_RETURN(YAML::Node root, ParseYaml(text, file));
  PARASIM_ASSIGN_OR_RETURN(MapReader top,
                           MapReader::Open(ctx, root, "", {"gpu", "source", "compute", "fabrics"}));
  CalibrationProfile p;
  p.file = file;
  PARASIM_RETURN_IF_ERROR(top.Require("gpu"));
  PARASIM_RETURN_IF_ERROR(top.String("gpu", &p.gpu));
  p.gpu_where = ctx.Where(top.Node("gpu"), "gpu");
  PARASIM_RETURN_IF_ERROR(top.String("source", &p.source));
  if (top.Has("compute")) {
    PARASIM_ASSIGN_OR_RETURN(MapReader c, MapReader::Open(ctx, top.Node("compute"), "compute",
                                                          {"gemm_efficiency", "memory_efficiency",
                                                           "launch_overhead", "sustained_factor"}));
    double x = 0;
    if (c.Has("gemm_efficiency")) {
      PARASIM_RETURN_IF_ERROR(c.Number("gemm_efficiency", &x, 0.01, 1.0));
      p.gemm_efficiency = x;
    }
    if (c.Has("memory_efficiency")) {
      PARASIM_RETURN_IF_ERROR(c.Number("memory_efficiency", &x, 0.01, 1.0));
      p.memory_efficiency = x;
    }
    if (c.Has("sustained_factor")) {
      PARASIM_RETURN_IF_ERROR(c.Number("sustained_factor", &x, 0.05, 1.0));
      p.sustained_factor = x;
    }
    if (c.Has("launch_overhead")) {
      Duration d;
      PARASIM_RETURN_IF_ERROR(c.Time("launch_overhead", &d));
      p.launch_overhead = d;
    }
  }
  if (top.Has("fabrics")) {
    const YAML::Node f = top.Node("fabrics");
    if (!f.IsMap()) {
      return ctx.ErrorAt(f, "fabrics", "expected a mapping of fabric id -> {efficiency, latency}");
    }
    for (const auto& kv : f) {
      FabricFit fit;
      fit.id = kv.first.as<std::string>();
      const std::string path = "fabrics." + fit.id;
      PARASIM_ASSIGN_OR_RETURN(MapReader m,
                               MapReader::Open(ctx, kv.second, path, {"efficiency", "latency"}));
      double x = 0;
      if (m.Has("efficiency")) {
        PARASIM_RETURN_IF_ERROR(m.Number("efficiency", &x, 0.01, 1.0));
        fit.efficiency = x;
      }
      if (m.Has("latency")) {
        Duration d;
        PARASIM_RETURN_IF_ERROR(m.Time("latency", &d));
        fit.latency = d;
      }
      p.fabrics.push_back(fit);
    }
  }
  return p;
}

StatusOr<CalibrationProfile> LoadCalibrationProfile(const std::string& path) {
  PARASIM_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseCalibrationProfile(text, path);
}

std::string FormatCalibrationProfile(const CalibrationProfile& p) {
  std::string out = "# parasim calibration profile (see hardware/profile.h)\n";
  out += fmt::format("gpu: {}\n", p.gpu);
  if (!p.source.empty()) out += fmt::format("source: \"{}\"\n", p.source);
  if (p.gemm_efficiency || p.memory_efficiency || p.launch_overhead || p.sustained_factor) {
    out += "compute:\n";
    if (p.gemm_efficiency) out += fmt::format("  gemm_efficiency: {:.6g}\n", *p.gemm_efficiency);
    if (p.memory_efficiency) {
      out += fmt::format("  memory_efficiency: {:.6g}\n", *p.memory_efficiency);
    }
    if (p.launch_overhead) {
      out += fmt::format("  launch_overhead: {:.6g}us\n", p.launch_overhead->microseconds());
    }
    if (p.sustained_factor) {
      out += fmt::format("  sustained_factor: {:.6g}\n", *p.sustained_factor);
    }
  }
  if (!p.fabrics.empty()) {
    out += "fabrics:\n";
    for (const FabricFit& f : p.fabrics) {
      std::string fields;
      if (f.efficiency) fields += fmt::format("efficiency: {:.6g}", *f.efficiency);
      if (f.latency) {
        fields += fmt::format("{}latency: {:.6g}us", fields.empty() ? "" : ", ",
                              f.latency->microseconds());
      }
      out += fmt::format("  {}: {{{}}}\n", f.id, fields);
    }
  }
  return out;
}

StatusOr<std::vector<std::string>> ApplyCalibrationProfile(const CalibrationProfile& p,
                                                           ClusterSpec* c) {
  if (!p.gpu.empty() && p.gpu != c->gpu.id) {
    return InvalidArgument(fmt::format(
        "{}: error: gpu: the profile was measured on '{}' but the cluster's GPU is '{}'; "
        "calibrate on the cluster's GPU or drop cluster.calibration",
        p.gpu_where.empty() ? p.file + ":1:1" : p.gpu_where, p.gpu, c->gpu.id));
  }
  std::vector<std::string> changed;
  auto num = [&](const char* what, const std::optional<double>& v, double* field) {
    if (!v) return;
    changed.push_back(fmt::format("{} {:.3g} (catalog {:.3g})", what, *v, *field));
    *field = *v;
  };
  auto time = [&](const std::string& what, const std::optional<Duration>& v, Duration* field) {
    if (!v) return;
    changed.push_back(
        fmt::format("{} {} (catalog {})", what, FormatDuration(*v), FormatDuration(*field)));
    *field = *v;
  };
  num("gemm_efficiency", p.gemm_efficiency, &c->gpu.gemm_efficiency);
  num("memory_efficiency", p.memory_efficiency, &c->gpu.memory_efficiency);
  time("launch_overhead", p.launch_overhead, &c->gpu.launch_overhead);
  num("sustained_factor", p.sustained_factor, &c->gpu.sustained_factor);
  for (const FabricFit& f : p.fabrics) {
    for (FabricSpec* spec : {&c->intra, &c->inter}) {
      if (spec->id != f.id) continue;
      num((f.id + " efficiency").c_str(), f.efficiency, &spec->efficiency);
      time(f.id + " latency", f.latency, &spec->latency);
    }
  }
  return changed;
}

}  // namespace parasim
