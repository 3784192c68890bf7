// parasim serve: a serving scenario's requests replayed, its latency and throughput, and with
// --sweep the layouts that serve the most tokens a second per GPU within its targets (SCENARIO.md
// "Serving scenarios"; docs/SERVING.md).
#include "tools/verbs/serve.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "scenarios/serving_scenario.h"
#include "sim/parse_units.h"
#include "tools/report_serving.h"
#include "tools/text.h"

namespace parasim {
namespace {

struct Options {
  Document scenario;
  std::vector<std::string> sets;
  bool sweep = false;
  bool no_search = false;
  int jobs = 0;
};

Json Stats(const LatencyStats& s) {
  Json j = Json::Object();
  if (s.count == 0) {  // nothing measured (TPOT where every output is one token)
    return j.Set("p50", Json()).Set("p90", Json()).Set("p99", Json()).Set("mean", Json());
  }
  j.Set("p50", s.p50).Set("p90", s.p90).Set("p99", s.p99).Set("mean", s.mean);
  return j;
}

Json LayoutJson(const ServingLayout& l) {
  auto pool = [](const PoolLayout& p) {
    Json j = Json::Object();
    j.Set("tp", p.tp).Set("pp", p.pp).Set("ep", p.ep).Set("replicas", p.replicas);
    j.Set("dp_attention", p.dp_attention);
    return j;
  };
  if (!l.disaggregated) return pool(l.unified);
  Json j = Json::Object();
  j.Set("prefill", pool(l.prefill)).Set("decode", pool(l.decode));
  return j;
}

Json LoadJson(const LoadView& v) {
  Json j = Json::Object();
  if (!v.estimated) return j.Set("capacity_per_s", Json()).Set("load", Json()).Set("band", Json());
  j.Set("capacity_per_s", v.capacity_per_s).Set("load", v.load);
  if (!v.band) return j.Set("band", Json());
  Json band = Json::Object();
  band.Set("rate_scale", Json::Array().Push(1 - kLoadBand).Push(1 + kLoadBand));
  band.Set("ttft_s", Json::Array().Push(Stats(v.ttft_lo)).Push(Stats(v.ttft_hi)));
  band.Set("tpot_s", Json::Array().Push(Stats(v.tpot_lo)).Push(Stats(v.tpot_hi)));
  return j.Set("band", band);
}

const std::string& NameOf(const ServingScenario& s) { return s.name.empty() ? s.file : s.name; }

std::string Ms(double s) { return FormatDuration(Duration::Seconds(s)); }

// `why`: what an empty figure means (nothing timed).
std::string StatsText(const LatencyStats& s, std::string_view why = "no request served") {
  if (s.count == 0) return fmt::format("none: {}", why);
  return fmt::format("P50 {}, P90 {}, P99 {}, mean {}", Ms(s.p50), Ms(s.p90), Ms(s.p99),
                     Ms(s.mean));
}

std::string ArrivalText(const RequestSpec& r) {
  switch (r.arrival.kind) {
    case Arrival::Kind::kOffline:
      return "all at once (offline)";
    case Arrival::Kind::kPoisson:
      return fmt::format(
          "Poisson {:.4g}/s{}", r.arrival.rate_per_s,
          r.arrival.burst > 1 ? fmt::format(" in bursts of {}", r.arrival.burst) : std::string());
    case Arrival::Kind::kConcurrency:
      return fmt::format("a closed loop of {} clients", r.arrival.concurrency);
    case Arrival::Kind::kTrace:
      return "the trace's arrivals";
  }
  return "";
}

std::string SloText(const ServingReport& r) {
  std::string out;
  for (const SloCheck& c : r.slo) {
    out += fmt::format("{}{} <= {}: {} {}", out.empty() ? "" : "; ", c.target.Key(),
                       Ms(c.target.seconds), c.timed ? Ms(c.value_s) : "none",
                       c.met ? "ok" : "MISSED");
  }
  return out;
}

std::string MemoryText(const ServingReport& r) {
  const std::string states =
      r.state_bytes > 0 ? fmt::format(", Mamba states {}", FormatBytes(Bytes(r.state_bytes))) : "";
  const std::string kv =
      r.no_kv_cache() ? "" : fmt::format(", KV cache {}", FormatBytes(Bytes(r.kv_capacity_bytes)));
  return fmt::format("  memory per GPU   weights {}, activations {}{}{} of {}{}: {}\n",
                     FormatBytes(Bytes(r.weights_bytes)), FormatBytes(Bytes(r.activations_bytes)),
                     states, kv, FormatBytes(Bytes(r.memory_capacity_bytes)),
                     r.no_kv_cache() ? " (no KV cache)" : "",
                     r.fits ? "fits" : "DOES NOT FIT (" + r.fit_reason + ")");
}

// The arrivals against the capacity and, near it, how far a small error in the capacity moves the
// latencies (ServingReport::load), in the column of the other figures.
std::string LoadText(const ServingReport& r) {
  std::string out;
  for (const auto& [label, text] : LoadRows(r)) out += fmt::format("  {:<17}{}\n", label, text);
  return out;
}

std::string ReportText(const ServingScenario& s, const ServingReport& r) {
  if (!r.fits && r.served == 0) {
    // Nothing was served: no latency or throughput to print, only why.
    return MemoryText(r) +
           "  served           none: the layout does not fit (`parasim serve --sweep` ranks the "
           "layouts that do)\n";
  }
  std::string out = fmt::format(
      "  throughput       {} output tokens/s ({} per GPU), {} input "
      "tokens/s, {:.3g} requests/s\n",
      Human(r.tokens_per_s), Human(r.tokens_per_s_per_gpu), Human(r.input_tokens_per_s),
      r.requests_per_s);
  out += fmt::format("  TTFT             {}\n", StatsText(r.ttft));
  out += fmt::format("  TPOT             {}\n",
                     StatsText(r.tpot, "no request has a second token to time"));
  out += fmt::format("  end to end       {}\n", StatsText(r.e2e));
  if (!r.slo.empty()) {
    out += fmt::format("  targets          {}\n", SloText(r));
    out += fmt::format("  goodput          {:.1f}% of requests within every target\n",
                       100 * r.goodput);
  }
  if (!r.max_rate_note.empty()) {
    out += fmt::format("  max rate at SLO  {}\n", r.max_rate_note);
  } else if (r.max_rate_at_slo >= 0) {
    out += fmt::format("  max rate at SLO  {:.4g} requests/s (Poisson) holds every target\n",
                       r.max_rate_at_slo);
  }
  out += LoadText(r);
  if (r.no_kv_cache()) {
    out += "  KV cache         none: the model has no attention layers\n";
  } else {
    out += fmt::format(
        "  KV cache         peak {} of {} per GPU{} ({:.0f}%); {} preemptions\n",
        FormatBytes(Bytes(r.kv_peak_bytes)), FormatBytes(Bytes(r.kv_peak_capacity_bytes)),
        r.kv_peak_pool.empty() ? "" : " of the " + r.kv_peak_pool + " pool",
        r.kv_peak_capacity_bytes > 0 ? 100 * r.kv_peak_bytes / r.kv_peak_capacity_bytes : 0.0,
        r.preemptions);
  }
  out += MemoryText(r);
  if (r.cost_per_million_tokens > 0) {
    out +=
        fmt::format("  cost             {:.3g} per million output tokens ({:.3g} per GPU-hour)\n",
                    r.cost_per_million_tokens, s.cluster.gpu_hour_cost);
  }
  out += fmt::format(
      "  replay           {} requests ({} served), {} iterations, {} simulated; replicas "
      "replayed {}\n",
      r.requests, r.served, r.iterations, Ms(r.makespan_s), fmt::join(r.replicas_replayed, " + "));
  return out;
}

std::string SweepText(const ServeOutcome& o) {
  const ServingSweepOutcome& w = *o.sweep;
  std::string out = fmt::format(
      "{} layouts replayed; {} hold the targets, best first (output "
      "tokens/s per GPU {}; TTFT and TPOT P99 at the scenario's arrivals, {}):\n",
      w.layouts, w.ranked.size(),
      o.s.serving.slo.empty() ? "at the scenario's arrivals" : "at the highest rate within them",
      ArrivalText(o.s.serving.requests));
  const size_t top = o.s.serving.sweep ? static_cast<size_t>(o.s.serving.sweep->top) : 10;
  for (size_t i = 0; i < w.ranked.size() && i < top; ++i) {
    const ServingCandidate& c = w.ranked[i];
    out += fmt::format("  {:>2}. {:<34} {:>6} GPUs  {:>8.1f} tok/s/GPU  TTFT P99 {}  TPOT P99 {}\n",
                       i + 1, FormatServingLayout(c.layout), c.report.gpus, c.score,
                       Ms(c.report.ttft.p99), LatencyText(c.report.tpot, c.report.tpot.p99));
  }
  for (const ServingCandidate& c : w.excluded) {
    out += fmt::format("  --  {:<34} {}\n", FormatServingLayout(c.layout), c.reason);
  }
  for (const std::string& a : w.advice) out += fmt::format("advice: {}\n", a);
  return out;
}

StatusOr<ServeOutcome> Run(const Options& o, const VerbContext&) {
  return ServeDocument(o.scenario, o.sets, {o.sweep, o.no_search, o.jobs});
}

Json ToJson(const ServeOutcome& o) { return ServeJson(o); }
std::string ToText(const ServeOutcome& o) { return ServeText(o); }
std::string Notes(const ServeOutcome& o) { return ServeNotes(o); }

}  // namespace

StatusOr<ServeOutcome> ServeDocument(const Document& doc, const std::vector<std::string>& sets,
                                     const ServeFlags& flags) {
  PARASIM_ASSIGN_OR_RETURN(Catalogs cat, LoadCatalogs());
  ServeOutcome out;
  PARASIM_ASSIGN_OR_RETURN(out.s, LoadServingScenario(doc.Input(), sets, cat));
  if (flags.sweep) {
    // A sweep ranks its layouts by the highest rate within the targets: it searches always.
    if (flags.no_search) {
      return InvalidArgument(
          "--no-search: a serving sweep ranks its layouts by the highest rate within the "
          "targets, which it searches for each; drop --no-search, or --sweep to replay one "
          "layout without the search");
    }
    PARASIM_ASSIGN_OR_RETURN(ServingSweepOutcome w, RunServingSweep(out.s, flags.jobs));
    out.sweep = std::move(w);
    return out;
  }
  if (out.s.serving.sweep) {
    if (auto p = CheckServingLayout(out.s.serving.layout, out.s.model, out.s.cluster)) {
      return InvalidArgument(fmt::format(
          "parallelism.{}: {} (the scenario has a sweep block: `parasim serve --sweep` ranks its "
          "layouts)",
          p->key, p->message));
    }
  }
  PARASIM_ASSIGN_OR_RETURN(out.report,
                           Serve(out.s, {.search_rate = !flags.no_search, .load = true}));
  return out;
}

Json ServingReportJson(const ServingReport& r, bool kv_use, bool load_key) {
  Json j = Json::Object();
  j.Set("layout", r.layout).Set("gpus", r.gpus);
  j.Set("tokens_per_s", r.tokens_per_s).Set("input_tokens_per_s", r.input_tokens_per_s);
  j.Set("tokens_per_s_per_gpu", r.tokens_per_s_per_gpu).Set("requests_per_s", r.requests_per_s);
  j.Set("ttft_s", Stats(r.ttft)).Set("tpot_s", Stats(r.tpot)).Set("e2e_s", Stats(r.e2e));
  j.Set("goodput", r.goodput).Set("meets_slo", r.meets_slo);
  Json slo = Json::Array();
  for (const SloCheck& c : r.slo) {
    Json t = Json::Object();
    t.Set("target", c.target.Key()).Set("limit_s", c.target.seconds);
    t.Set("value_s", c.timed ? Json(c.value_s) : Json());
    slo.Push(t.Set("met", c.met));
  }
  j.Set("slo", slo);
  j.Set("max_rate_at_slo", r.max_rate_at_slo >= 0 ? Json(r.max_rate_at_slo) : Json());
  if (!r.max_rate_note.empty()) j.Set("max_rate_note", r.max_rate_note);
  if (load_key) j.Set("load", r.load ? LoadJson(*r.load) : Json());
  // Whole bytes (the KV peak is a mean over replicas of blocks' bytes).
  auto whole = [](double v) { return std::round(v); };
  j.Set("kv_peak_bytes", whole(r.kv_peak_bytes))
      .Set("kv_capacity_bytes", whole(r.kv_capacity_bytes));
  // The capacity per GPU of the pool the peak is from, and which pool where there are two.
  j.Set("kv_peak_capacity_bytes", whole(r.kv_peak_capacity_bytes));
  if (!r.kv_peak_pool.empty()) j.Set("kv_peak_pool", r.kv_peak_pool);
  j.Set("weights_bytes", whole(r.weights_bytes))
      .Set("activations_bytes", whole(r.activations_bytes));
  if (r.state_bytes > 0) j.Set("state_bytes", whole(r.state_bytes));  // a hybrid model's only
  j.Set("memory_capacity_bytes", whole(r.memory_capacity_bytes));
  j.Set("fits", r.fits).Set("fit_reason", r.fit_reason);
  j.Set("cost_per_million_tokens", r.cost_per_million_tokens);
  j.Set("requests", r.requests).Set("served", r.served).Set("rejected", r.rejected);
  j.Set("preemptions", r.preemptions).Set("iterations", r.iterations);
  j.Set("makespan_s", r.makespan_s);
  Json replayed = Json::Array();
  for (int64_t n : r.replicas_replayed) replayed.Push(n);
  j.Set("replicas_replayed", replayed);
  if (!kv_use) return j;
  Json kv = Json::Array();
  for (const KvPoint& p : r.kv) kv.Push(Json::Array().Push(p.time_s).Push(p.used));
  j.Set("kv_use", kv);
  return j;
}

Json ServeJson(const ServeOutcome& o) {
  if (!o.sweep) {
    Json j = ServingReportJson(o.report, /*kv_use=*/true, /*load_key=*/true);
    j.Set("layout_detail", LayoutJson(o.s.serving.layout));
    return j;
  }
  const ServingSweepOutcome& w = *o.sweep;
  Json j = Json::Object();
  j.Set("layouts", w.layouts).Set("elapsed_s", w.elapsed_s);
  Json results = Json::Array();
  for (const auto* v : {&w.ranked, &w.excluded}) {
    for (const ServingCandidate& c : *v) {
      Json r = ServingReportJson(c.report, /*kv_use=*/false, /*load_key=*/false);
      r.Set("layout", FormatServingLayout(c.layout)).Set("layout_detail", LayoutJson(c.layout));
      r.Set("score_tokens_per_s_per_gpu", c.score).Set("ok", c.ok).Set("reason", c.reason);
      results.Push(r);
    }
  }
  j.Set("results", results);
  Json advice = Json::Array();
  for (const std::string& a : w.advice) advice.Push(a);
  return j.Set("advice", advice);
}

std::string ServeText(const ServeOutcome& o) {
  const ServingScenario& s = o.s;
  const ServingSpec& sv = s.serving;
  std::string out = fmt::format("{}: {} on {} x {}\n", NameOf(s), s.model.id, s.cluster.gpus(),
                                s.cluster.gpu.name);
  out += fmt::format("serving: {} weights, {} activations, {} KV; {} requests, {}\n",
                     ServeDtypeName(sv.precision.weights), ServeDtypeName(sv.precision.activations),
                     ServeDtypeName(sv.precision.kv), sv.requests.count, ArrivalText(sv.requests));
  if (o.sweep) return out + "\n" + SweepText(o);
  out += fmt::format("layout: {} ({} GPUs)\n\n", FormatServingLayout(sv.layout), sv.layout.gpus());
  return out + ReportText(s, o.report);
}

std::string ServeNotes(const ServeOutcome& o) {
  if (!o.sweep) return "";
  return fmt::format("serve --sweep: {} layouts in {:.2f} s\n", o.sweep->layouts,
                     o.sweep->elapsed_s);
}

Verb ServeVerb() {
  using O = Options;
  return MakeVerb<O, ServeOutcome>({
      .name = "serve",
      .help = "replay a serving scenario's requests: latency, throughput and KV cache",
      .flags =
          {Arg(&O::scenario, "file", "serving scenario YAML file").Python("scenario").Required(),
           SetFlag(&O::sets), JsonFlag<O>(),
           Opt(&O::sweep, "--sweep",
               "rank the layouts of the sweep block (or TP x PP x EP over the cluster's GPUs) "
               "by output tokens/s per GPU within the targets"),
           Opt(&O::no_search, "--no-search",
               "skip the search for the highest arrival rate that holds the targets"),
           JobsFlag(&O::jobs, "threads of --sweep (0 = every core)")},
      .run = Run,
      .json = ToJson,
      .text = ToText,
      .notes = Notes,
  });
}

}  // namespace parasim
