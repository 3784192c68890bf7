#include "scenarios/serving_validate.h"

#include <fmt/core.h>

#include <cmath>

#include "scenarios/serving_scenario.h"
#include "strategies/serving_report.h"
#include "strategies/sweep_executor.h"

namespace parasim {
namespace {

// A case's scenario error, naming the case.
Status InCase(const Status& error, const std::string& name) {
  return Status(error.code(),
                fmt::format("{} (case '{}', over the file's defaults)", error.message(), name));
}

Status ReadMeasured(const MapReader& c, ServingValidationCase* vc) {
  PARASIM_ASSIGN_OR_RETURN(MapReader m, MapReader::Open(c.ctx(), c.Node("measured"),
                                                        c.Path("measured"), ServingMeasuredKeys()));
  PARASIM_RETURN_IF_ERROR(m.Number("tokens_per_s", &vc->tokens.measured, 1e-9, 1e15));
  struct Latency {
    const char* key;
    ServingFigure* figure;
  };
  for (const Latency& l :
       {Latency{"ttft_p99", &vc->ttft_p99}, Latency{"tpot_p99", &vc->tpot_p99},
        Latency{"ttft_p50", &vc->ttft_p50}, Latency{"tpot_p50", &vc->tpot_p50}}) {
    Duration d;
    PARASIM_RETURN_IF_ERROR(m.Time(l.key, &d));
    if (m.Has(l.key) && d <= Duration::Zero()) return m.Error(l.key, "a latency must be positive");
    l.figure->measured = d.seconds();
  }
  if (!vc->tokens.given() && !vc->ttft_p99.given() && !vc->tpot_p99.given() &&
      !vc->ttft_p50.given() && !vc->tpot_p50.given()) {
    return c.Error("measured",
                   "give at least one of tokens_per_s, ttft_p99, tpot_p99, ttft_p50, "
                   "tpot_p50");
  }
  return m.String("note", &vc->note);
}

void Compare(ServingFigure* f, double predicted) {
  f->predicted = predicted;
  if (f->given()) f->error = predicted / f->measured - 1;
}

void Add(const ServingFigure& f, FigureSummary* s, double* sum) {
  if (!f.given()) return;
  ++s->cases;
  *sum += std::abs(f.error);
  s->max_abs_error = std::max(s->max_abs_error, std::abs(f.error));
}

}  // namespace

const std::vector<std::string_view>& ServingMeasuredKeys() {
  static const std::vector<std::string_view> kKeys = {"tokens_per_s", "ttft_p99", "tpot_p99",
                                                      "ttft_p50",     "tpot_p50", "note"};
  return kKeys;
}

bool IsServingValidationFile(const YamlInput& input) {
  StatusOr<YAML::Node> root = LoadYaml(input, "keys source, defaults, cases");
  if (!root.ok() || !root->IsMap()) return false;
  const YAML::Node d = (*root)["defaults"];
  if (d.IsMap() && d["serving"].IsDefined()) return true;
  // A missing key of a const node is an invalid node, which answers IsDefined() but throws on
  // IsMap(): ask IsDefined() first (a validation file's first case may hold `import` alone).
  const YAML::Node c = (*root)["cases"];
  if (!c.IsDefined() || !c.IsSequence() || c.size() == 0 || !c[0].IsMap()) return false;
  const YAML::Node s = c[0]["scenario"];
  return s.IsDefined() && s.IsMap() && s["serving"].IsDefined();
}

StatusOr<ServingValidationFile> LoadServingValidationFile(const YamlInput& input,
                                                          const std::vector<std::string>& sets) {
  PARASIM_ASSIGN_OR_RETURN(Catalogs cat, LoadCatalogs());
  PARASIM_ASSIGN_OR_RETURN(YAML::Node root, LoadYaml(input, "keys source, defaults, cases"));
  YamlContext ctx{input.name, {}};
  PARASIM_ASSIGN_OR_RETURN(MapReader top,
                           MapReader::Open(ctx, root, "", {"source", "defaults", "cases"}));
  ServingValidationFile file;
  file.path = input.name;
  PARASIM_RETURN_IF_ERROR(top.String("source", &file.source));
  PARASIM_RETURN_IF_ERROR(top.Require("cases"));
  const YAML::Node cases = top.Node("cases");
  if (!cases.IsSequence() || cases.size() == 0) {
    return ctx.ErrorAt(cases, "cases",
                       "expected a list of cases, each {name, source, scenario, "
                       "measured}");
  }
  const YAML::Node defaults =
      top.Has("defaults") ? top.Node("defaults") : YAML::Node(YAML::NodeType::Map);
  for (size_t i = 0; i < cases.size(); ++i) {
    PARASIM_ASSIGN_OR_RETURN(MapReader c,
                             MapReader::Open(ctx, cases[i], fmt::format("cases[{}]", i),
                                             {"name", "source", "scenario", "measured"}));
    ServingValidationInput in;
    for (auto k : {"name", "source", "scenario", "measured"}) PARASIM_RETURN_IF_ERROR(c.Require(k));
    PARASIM_RETURN_IF_ERROR(c.String("name", &in.measured.name));
    PARASIM_RETURN_IF_ERROR(c.String("source", &in.measured.source));
    PARASIM_RETURN_IF_ERROR(ReadMeasured(c, &in.measured));
    YAML::Node merged = DeepMerge(YAML::Clone(defaults), c.Node("scenario"));
    YamlContext case_ctx = ctx;
    for (const auto& s : sets) PARASIM_RETURN_IF_ERROR(ApplySet(merged, s, &case_ctx));
    StatusOr<ServingScenario> s = ServingScenarioFromNode(merged, case_ctx, cat);
    if (!s.ok()) return InCase(s.status(), in.measured.name);
    in.scenario = *std::move(s);
    if (in.scenario.name.empty()) in.scenario.name = in.measured.name;
    file.cases.push_back(std::move(in));
  }
  return file;
}

StatusOr<ServingValidationReport> ValidateServing(const YamlInput& input,
                                                  const std::vector<std::string>& sets, int jobs) {
  PARASIM_ASSIGN_OR_RETURN(ServingValidationFile file, LoadServingValidationFile(input, sets));
  ServingValidationReport rep;
  rep.source = file.source;
  std::vector<size_t> items(file.cases.size());
  for (size_t i = 0; i < items.size(); ++i) items[i] = i;
  PARASIM_RETURN_IF_ERROR(ParallelFor(items, jobs, [&](size_t i) -> Status {
    ServingValidationInput& in = file.cases[i];
    ServingValidationCase& c = in.measured;
    c.layout = FormatServingLayout(in.scenario.serving.layout);
    PARASIM_ASSIGN_OR_RETURN(ServingReport r, Serve(in.scenario, {.search_rate = false}));
    if (!r.fits) {
      c.ok = false;
      c.failure = "does not fit: " + r.fit_reason;
      return Status::Ok();
    }
    Compare(&c.tokens, r.tokens_per_s);
    Compare(&c.ttft_p99, r.ttft.p99);
    Compare(&c.tpot_p99, r.tpot.p99);
    Compare(&c.ttft_p50, r.ttft.p50);
    Compare(&c.tpot_p50, r.tpot.p50);
    return Status::Ok();
  }));
  double tokens = 0, ttft = 0, tpot = 0;
  for (ServingValidationInput& in : file.cases) {
    const ServingValidationCase& c = in.measured;
    if (!c.ok) {
      ++rep.failed;
    } else {
      Add(c.tokens, &rep.throughput, &tokens);
      Add(c.ttft_p99, &rep.ttft, &ttft);
      Add(c.ttft_p50, &rep.ttft, &ttft);
      Add(c.tpot_p99, &rep.tpot, &tpot);
      Add(c.tpot_p50, &rep.tpot, &tpot);
    }
    rep.cases.push_back(c);
  }
  auto mape = [](FigureSummary* s, double sum) { s->mape = s->cases > 0 ? sum / s->cases : 0; };
  mape(&rep.throughput, tokens);
  mape(&rep.ttft, ttft);
  mape(&rep.tpot, tpot);
  return rep;
}

}  // namespace parasim
