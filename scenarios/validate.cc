#include "scenarios/validate.h"

#include <fmt/core.h>

#include <cmath>

#include "scenarios/scenario.h"
#include "sim/parse_units.h"
#include "sim/yaml_reader.h"
#include "strategies/layout_format.h"

namespace parasim {

StatusOr<ValidationReport> Validate(const std::string& path, const std::vector<std::string>& sets,
                                    const SweepOptions& options) {
  PARASIM_ASSIGN_OR_RETURN(Catalogs cat, LoadCatalogs());
  PARASIM_ASSIGN_OR_RETURN(YAML::Node root, LoadYamlFile(path, "keys source, defaults, cases"));
  YamlContext ctx{path, {}};
  PARASIM_ASSIGN_OR_RETURN(MapReader top,
                           MapReader::Open(ctx, root, "", {"source", "defaults", "cases"}));
  ValidationReport rep;
  PARASIM_RETURN_IF_ERROR(top.String("source", &rep.source));
  PARASIM_RETURN_IF_ERROR(top.Require("cases"));
  const YAML::Node cases = top.Node("cases");
  if (!cases.IsSequence() || cases.size() == 0) {
    return ctx.ErrorAt(cases, "cases", "expected a list of cases, each {name, scenario, measured}");
  }
  YAML::Node defaults =
      top.Has("defaults") ? top.Node("defaults") : YAML::Node(YAML::NodeType::Map);
  if (!defaults.IsMap()) {
    return ctx.ErrorAt(defaults, "defaults", "expected a mapping (a scenario fragment)");
  }
  double sum = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string at = fmt::format("cases[{}]", i);
    PARASIM_ASSIGN_OR_RETURN(MapReader c,
                             MapReader::Open(ctx, cases[i], at, {"name", "scenario", "measured"}));
    ValidationCase vc;
    for (auto k : {"name", "scenario", "measured"}) PARASIM_RETURN_IF_ERROR(c.Require(k));
    PARASIM_RETURN_IF_ERROR(c.String("name", &vc.name));
    PARASIM_ASSIGN_OR_RETURN(MapReader m, MapReader::Open(ctx, c.Node("measured"), at + ".measured",
                                                          {"step_time", "note"}));
    PARASIM_RETURN_IF_ERROR(m.Require("step_time"));
    Duration measured;
    PARASIM_RETURN_IF_ERROR(m.Time("step_time", &measured));
    if (measured <= Duration::Zero()) {
      return m.Error("step_time", "a measured step time must be positive");
    }
    PARASIM_RETURN_IF_ERROR(m.String("note", &vc.note));
    vc.measured_s = measured.seconds();
    // The case's scenario over a fresh copy of the defaults (DeepMerge shares nodes).
    YAML::Node merged = DeepMerge(YAML::Clone(defaults), c.Node("scenario"));
    YamlContext case_ctx = ctx;
    for (const auto& s : sets) PARASIM_RETURN_IF_ERROR(ApplySet(merged, s, &case_ctx));
    PARASIM_ASSIGN_OR_RETURN(Scenario s, ScenarioFromNode(merged, case_ctx, cat));
    if (s.name.empty()) s.name = vc.name;
    if (s.sweep) {
      SweepOptions o = options;
      o.out_csv.clear();
      o.resume = false;
      PARASIM_ASSIGN_OR_RETURN(SweepOutcome r, RunSweep(s, o));
      if (r.ranked.empty()) {
        return ctx.ErrorAt(cases[i], at,
                           fmt::format("case '{}': no layout of its sweep fits in memory "
                                       "({} valid layouts)",
                                       vc.name, r.valid));
      }
      vc.predicted_s = r.ranked[0].step_time_s;
      vc.layout = r.ranked[0].key;
    } else {
      PARASIM_ASSIGN_OR_RETURN(StepReport r,
                               SimulateStep(s.model, s.training, s.layout, s.cluster, {}));
      vc.predicted_s = r.step_time_s;
      vc.layout = FormatLayout(s.layout, s.training, LayoutStyle::kKey);
    }
    vc.error = vc.predicted_s / vc.measured_s - 1;
    sum += std::abs(vc.error);
    rep.max_abs_error = std::max(rep.max_abs_error, std::abs(vc.error));
    rep.cases.push_back(vc);
  }
  rep.mape = sum / static_cast<double>(rep.cases.size());
  return rep;
}

}  // namespace parasim
