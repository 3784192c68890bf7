#include "scenarios/serving_validate.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "scenarios/model_block.h"
#include "scenarios/serving_scenario.h"
#include "sim/yaml_reader.h"
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
    double* seconds;
  };
  LatencyFigures& l = vc->latency;
  for (const Latency& t :
       {Latency{"ttft_p99", &l.ttft_p99.measured}, Latency{"tpot_p99", &l.tpot_p99.measured},
        Latency{"ttft_p50", &l.ttft_p50.measured}, Latency{"tpot_p50", &l.tpot_p50.measured},
        Latency{"e2e_mean", &vc->e2e_mean}, Latency{"tpot_mean", &vc->tpot_mean.measured}}) {
    Duration d;
    PARASIM_RETURN_IF_ERROR(m.Time(t.key, &d));
    if (m.Has(t.key) && d <= Duration::Zero()) return m.Error(t.key, "a latency must be positive");
    *t.seconds = d.seconds();
  }
  if (!vc->tokens.given() && !l.ttft_p99.given() && !l.tpot_p99.given() && !l.ttft_p50.given() &&
      !l.tpot_p50.given()) {
    return c.Error("measured",
                   "give at least one of tokens_per_s, ttft_p99, tpot_p99, ttft_p50, "
                   "tpot_p50");
  }
  if (m.Has("e2e_mean") != m.Has("tpot_mean")) {
    return m.Error(m.Has("e2e_mean") ? "e2e_mean" : "tpot_mean",
                   "give e2e_mean and tpot_mean together (the run's concurrency is its rate x "
                   "e2e_mean, and its mean TPOT is compared there)");
  }
  PARASIM_RETURN_IF_ERROR(m.String("offline_case", &vc->offline_case));
  return m.String("note", &vc->note);
}

void Compare(ServingFigure* f, double predicted) {
  f->predicted = predicted;
  if (f->given()) f->error = predicted / f->measured - 1;
}

void Compare(LatencyFigures* f, const LatencyStats& ttft, const LatencyStats& tpot) {
  Compare(&f->ttft_p99, ttft.p99);
  Compare(&f->tpot_p99, tpot.p99);
  Compare(&f->ttft_p50, ttft.p50);
  Compare(&f->tpot_p50, tpot.p50);
}
void Compare(LatencyFigures* f, const ServingReport& r) { Compare(f, r.ttft, r.tpot); }

void Add(const ServingFigure& f, FigureSummary* s) {
  if (!f.given()) return;
  ++s->cases;
  s->mape += std::abs(f.error);  // a sum until Finish
  s->max_abs_error = std::max(s->max_abs_error, std::abs(f.error));
  s->within += std::abs(f.error) <= kWithin;
}

void Finish(FigureSummary* s) {
  if (s->cases > 0) s->mape /= s->cases;
}

// The views that need a case's own scenario: at its stated settings, the search, and at the
// run's concurrency. `cache`: the case's chains, which its views share (they differ only in how
// requests arrive).
Status ReplayCase(ServingValidationInput& in, bool search, ServingChainCache* cache) {
  ServingValidationCase& c = in.measured;
  const ServingScenario& s = in.scenario;
  c.layout = FormatServingLayout(s.serving.layout);
  const Arrival& a = s.serving.requests.arrival;
  if (a.kind == Arrival::Kind::kPoisson) c.rate_per_s = a.rate_per_s;
  const bool rate_search = search && !s.serving.slo.empty() && c.rate_per_s > 0;
  const LatencyFigures& l = c.latency;
  const bool latency =
      l.ttft_p99.given() || l.tpot_p99.given() || l.ttft_p50.given() || l.tpot_p50.given();
  PARASIM_ASSIGN_OR_RETURN(
      ServingReport r,
      Serve(s, {.search_rate = rate_search, .load = latency, .band_always = true, .cache = cache}));
  if (!r.fits) {
    c.ok = false;
    c.failure = "does not fit: " + r.fit_reason;
    return Status::Ok();
  }
  Compare(&c.tokens, r.tokens_per_s);
  Compare(&c.latency, r);
  if (r.load && r.load->band) {
    c.load = r.load->load;
    c.capacity_per_s = r.load->capacity_per_s;
    c.band_lo = c.band_hi = c.latency;
    Compare(&c.band_lo, r.load->ttft_lo, r.load->tpot_lo);
    Compare(&c.band_hi, r.load->ttft_hi, r.load->tpot_hi);
  }
  // A search that could not judge its requests (too few for a steady half) compares nothing.
  if (rate_search && r.max_rate_at_slo >= 0) {
    c.max_rate.measured = c.rate_per_s;
    Compare(&c.max_rate, r.max_rate_at_slo);
  }
  if (c.tpot_mean.given() && c.rate_per_s > 0) {
    // Little's law: the requests in flight are the rate times their mean time in the system.
    c.concurrency = c.rate_per_s * c.e2e_mean;
    ServingScenario closed = s;
    // Whole clients, at least one and at most a scenario's own limit (2^24).
    closed.serving.requests.arrival = {
        .kind = Arrival::Kind::kConcurrency,
        .concurrency = std::llround(std::clamp(c.concurrency, 1.0, double{1 << 24}))};
    PARASIM_ASSIGN_OR_RETURN(ServingReport at,
                             Serve(closed, {.search_rate = false, .cache = cache}));
    Compare(&c.tpot_mean, at.tpot.mean);
  }
  return Status::Ok();
}

// The view at the run's load fraction, once every case's own replay is done.
Status ReplayAtLoad(ServingValidationInput& in, const std::vector<ServingValidationInput>& all,
                    ServingChainCache* cache) {
  ServingValidationCase& c = in.measured;
  if (in.offline_index < 0 || !c.ok || c.rate_per_s <= 0) return Status::Ok();
  const ServingValidationCase& off = all[static_cast<size_t>(in.offline_index)].measured;
  if (!off.ok) return Status::Ok();
  c.load_scale = off.tokens.predicted / off.tokens.measured;
  ServingScenario s = in.scenario;
  s.serving.requests.arrival.rate_per_s = c.rate_per_s * c.load_scale;
  PARASIM_ASSIGN_OR_RETURN(ServingReport r, Serve(s, {.search_rate = false, .cache = cache}));
  c.at_load = c.latency;
  Compare(&c.at_load, r);
  return Status::Ok();
}

}  // namespace

std::pair<double, double> PredictedSpan(const ServingFigure& stated, const ServingFigure& lo,
                                        const ServingFigure& hi) {
  return {std::min({stated.predicted, lo.predicted, hi.predicted}),
          std::max({stated.predicted, lo.predicted, hi.predicted})};
}

bool BandWithin(const ServingFigure& stated, const ServingFigure& lo, const ServingFigure& hi) {
  if (!stated.given()) return false;
  const auto [low, high] = PredictedSpan(stated, lo, hi);
  // The span [low, high] meets [measured x (1 - kWithin), measured x (1 + kWithin)].
  return low <= stated.measured * (1 + kWithin) && high >= stated.measured * (1 - kWithin);
}

const std::vector<std::string_view>& ServingMeasuredKeys() {
  static const std::vector<std::string_view> kKeys = {"tokens_per_s", "ttft_p99",     "tpot_p99",
                                                      "ttft_p50",     "tpot_p50",     "e2e_mean",
                                                      "tpot_mean",    "offline_case", "note"};
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
    // As a scenario's --set: a key under a catalog model, GPU or fabric extends it.
    PARASIM_RETURN_IF_ERROR(ApplyScenarioSets(sets, &merged, &case_ctx));
    StatusOr<ServingScenario> s = ServingScenarioFromNode(merged, case_ctx, cat);
    if (!s.ok()) return InCase(s.status(), in.measured.name);
    in.scenario = *std::move(s);
    if (in.scenario.name.empty()) in.scenario.name = in.measured.name;
    file.cases.push_back(std::move(in));
  }
  // Each offline_case names a case of the file that gives a throughput.
  for (size_t i = 0; i < file.cases.size(); ++i) {
    const std::string& name = file.cases[i].measured.offline_case;
    if (name.empty()) continue;
    const auto found = std::find_if(file.cases.begin(), file.cases.end(), [&](const auto& o) {
      return o.measured.name == name && o.measured.tokens.given();
    });
    file.cases[i].offline_index = found - file.cases.begin();
    if (found == file.cases.end()) {
      return ctx.ErrorAt(
          cases[i]["measured"]["offline_case"], fmt::format("cases[{}].measured.offline_case", i),
          fmt::format("'{}' names no case of this file that gives tokens_per_s", name));
    }
  }
  return file;
}

StatusOr<ServingValidationReport> ValidateServing(const YamlInput& input,
                                                  const std::vector<std::string>& sets, int jobs,
                                                  bool search) {
  PARASIM_ASSIGN_OR_RETURN(ServingValidationFile file, LoadServingValidationFile(input, sets));
  ServingValidationReport rep;
  rep.source = file.source;
  std::vector<size_t> items(file.cases.size());
  for (size_t i = 0; i < items.size(); ++i) items[i] = i;
  std::vector<ServingChainCache> caches(file.cases.size());  // a case's chains, for its views
  PARASIM_RETURN_IF_ERROR(ParallelFor(items, jobs, [&](size_t i) -> Status {
    return ReplayCase(file.cases[i], search, &caches[i]);
  }));
  PARASIM_RETURN_IF_ERROR(ParallelFor(items, jobs, [&](size_t i) -> Status {
    return ReplayAtLoad(file.cases[i], file.cases, &caches[i]);
  }));
  for (ServingValidationInput& in : file.cases) {
    const ServingValidationCase& c = in.measured;
    if (!c.ok) {
      ++rep.failed;
    } else {
      Add(c.tokens, &rep.throughput);
      for (const ServingFigure* f : {&c.latency.ttft_p99, &c.latency.ttft_p50}) Add(*f, &rep.ttft);
      for (const ServingFigure* f : {&c.latency.tpot_p99, &c.latency.tpot_p50}) Add(*f, &rep.tpot);
      if (c.load_scale > 0) {
        for (const ServingFigure* f : {&c.at_load.ttft_p99, &c.at_load.ttft_p50}) {
          Add(*f, &rep.load_ttft);
        }
        for (const ServingFigure* f : {&c.at_load.tpot_p99, &c.at_load.tpot_p50}) {
          Add(*f, &rep.load_tpot);
        }
      }
      {
        // A case with no span (no Poisson rate, or too few requests for a capacity) counts its
        // figures at the stated rate alone: the span of three equal predictions.
        const LatencyFigures &m = c.latency, &lo = c.load > 0 ? c.band_lo : m,
                             &hi = c.load > 0 ? c.band_hi : m;
        rep.band_ttft_within += BandWithin(m.ttft_p99, lo.ttft_p99, hi.ttft_p99) +
                                BandWithin(m.ttft_p50, lo.ttft_p50, hi.ttft_p50);
        rep.band_tpot_within += BandWithin(m.tpot_p99, lo.tpot_p99, hi.tpot_p99) +
                                BandWithin(m.tpot_p50, lo.tpot_p50, hi.tpot_p50);
      }
      if (c.concurrency > 0) Add(c.tpot_mean, &rep.concurrency_tpot);
      Add(c.max_rate, &rep.max_rate);
    }
    rep.cases.push_back(c);
  }
  for (FigureSummary* s : {&rep.throughput, &rep.ttft, &rep.tpot, &rep.load_ttft, &rep.load_tpot,
                           &rep.concurrency_tpot, &rep.max_rate}) {
    Finish(s);
  }
  return rep;
}

}  // namespace parasim
