#include "strategies/serving_sweep.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "strategies/serving_replay.h"
#include "strategies/sweep_executor.h"

namespace parasim {
namespace {

// A score (output tokens a second per GPU) to a thousandth of a token: layouts whose scores
// differ by a few ulps (a rate scaled by two shares) rank as equal but where a thousandth's
// boundary falls between them; a key's order is a strict weak one.
int64_t ScoreKey(double score) { return std::llround(score * 1e3); }

// The shares of a disaggregated layout's GPUs given to its prefill pool (DistServe, OSDI'24,
// searches the split; these bracket its and Splitwise's choices), and its pools' TP: prefill no
// wider than decode (prefill is compute-bound and gains from replicas; decode is bound by
// reading the weights and gains from TP, DistServe sec. 3).
constexpr double kPrefillShares[] = {0.25, 0.5, 0.75};

std::vector<int> PowersOfTwo(int64_t most) {
  std::vector<int> out;
  for (int64_t v = 1; v <= most; v *= 2) out.push_back(static_cast<int>(v));
  return out;
}

std::vector<int> TpAxis(const ServingScenario& s, const ServingSweepSpec& sw, int64_t gpus) {
  if (!sw.tp.empty()) return sw.tp;
  // TP within an NVLink domain, dividing the heads (and a hybrid's Mamba heads and groups).
  std::vector<int> out;
  for (int tp : PowersOfTwo(std::min<int64_t>(gpus, s.cluster.domain()))) {
    if (s.model.TpSplits(tp)) out.push_back(tp);
  }
  return out;
}

std::vector<int> PpAxis(const ServingSweepSpec& sw) {
  return sw.pp.empty() ? std::vector<int>{1, 2, 4} : sw.pp;
}

std::vector<int> EpAxis(const ServingScenario& s, const ServingSweepSpec& sw, int tp) {
  if (!sw.ep.empty()) return sw.ep;
  if (!s.model.is_moe() || tp == 1) return {1};
  return {1, tp};
}

void Unified(const ServingScenario& s, const ServingSweepSpec& sw, int64_t g,
             std::vector<ServingLayout>* out) {
  for (int tp : TpAxis(s, sw, g)) {
    for (int pp : PpAxis(sw)) {
      const int64_t per = static_cast<int64_t>(tp) * pp;
      if (per > g || g % per != 0) continue;
      for (int ep : EpAxis(s, sw, tp)) {
        ServingLayout l;
        l.unified = {.tp = tp, .pp = pp, .ep = ep, .replicas = g / per};
        out->push_back(l);
      }
    }
  }
}

void Disaggregated(const ServingScenario& s, const ServingSweepSpec& sw, int64_t g,
                   std::vector<ServingLayout>* out) {
  for (int tp_p : TpAxis(s, sw, g)) {
    for (int tp_d : TpAxis(s, sw, g)) {
      if (tp_p > tp_d) continue;
      for (double share : kPrefillShares) {
        const int64_t prefill = std::llround(static_cast<double>(g) * share / tp_p);
        const int64_t left = g - prefill * tp_p;
        if (prefill < 1 || left < tp_d || left % tp_d != 0) continue;
        ServingLayout l;
        l.disaggregated = true;
        l.prefill = {.tp = tp_p, .replicas = prefill};
        l.decode = {.tp = tp_d, .replicas = left / tp_d};
        if (std::find(out->begin(), out->end(), l) == out->end()) out->push_back(l);
      }
    }
  }
}

// Output tokens a second per GPU at the highest rate that holds the targets, or at the
// scenario's own arrivals when it has none.
void Score(const ServingScenario& s, ServingCandidate* c) {
  const ServingReport& r = c->report;
  if (!r.fits) {
    c->reason = r.fit_reason;
    return;
  }
  if (s.serving.slo.empty()) {
    c->score = r.tokens_per_s_per_gpu;
  } else if (r.max_rate_at_slo > 0 && r.requests_per_s > 0) {
    const double tokens_per_request = r.tokens_per_s / r.requests_per_s;
    c->score = r.max_rate_at_slo * tokens_per_request / static_cast<double>(r.gpus);
  } else {
    c->reason = r.max_rate_note.empty() ? "no arrival rate holds the latency targets"
                                        : "highest rate within the targets " + r.max_rate_note;
    return;
  }
  c->ok = c->score > 0;
}

const ServingCandidate* BestWhere(const std::vector<ServingCandidate>& ranked,
                                  const std::function<bool(const ServingCandidate&)>& pred) {
  for (const ServingCandidate& c : ranked) {
    if (pred(c)) return &c;
  }
  return nullptr;
}

int64_t ReplicaGpus(const ServingLayout& l) {
  return l.disaggregated ? std::max(l.prefill.gpus_per_replica(), l.decode.gpus_per_replica())
                         : l.unified.gpus_per_replica();
}

// Replicate or shard: the best layout against the best one of the fewest GPUs a replica needs.
void ReplicationAdvice(const ServingSweepOutcome& o, std::vector<std::string>* advice) {
  const ServingCandidate& best = o.ranked.front();
  int64_t fewest = ReplicaGpus(best.layout);
  for (const ServingCandidate& c : o.ranked) fewest = std::min(fewest, ReplicaGpus(c.layout));
  const ServingCandidate* small = BestWhere(o.ranked, [&](const ServingCandidate& c) {
    return !c.layout.disaggregated && c.layout.unified.gpus_per_replica() == fewest;
  });
  if (small == nullptr || small == &best) {
    advice->push_back(fmt::format(
        "replicate rather than shard: the model fits in {} GPU{} a replica, and {} replicas of "
        "that beat every wider layout per GPU (seed 002: replication over sharding for small "
        "models)",
        fewest, fewest > 1 ? "s" : "", small ? small->layout.unified.replicas : 0));
    return;
  }
  advice->push_back(fmt::format(
      "shard: {} serves {:.0f}% more tokens a second per GPU within the targets than {}, the "
      "smallest replica that fits ({} GPU{}): its KV cache or its latency needs the wider replica",
      FormatServingLayout(best.layout), 100 * (best.score / small->score - 1),
      FormatServingLayout(small->layout), fewest, fewest > 1 ? "s" : ""));
}

// What a pipeline costs every token: a pp > 1 layout against the replica of the same GPUs split
// by TP alone, at the same replicas (a layout with pp times the replicas had stood beside it,
// each replica then carrying less load: its lower TPOT was the load's, not the pipeline's).
void PipelineAdvice(const ServingSweepOutcome& o, std::vector<std::string>* advice) {
  std::vector<const ServingCandidate*> all;
  for (const auto* v : {&o.ranked, &o.excluded}) {
    for (const ServingCandidate& c : *v) all.push_back(&c);
  }
  for (const ServingCandidate* p : all) {
    if (p->layout.disaggregated || p->layout.unified.pp <= 1 || p->report.tpot.p50 <= 0) continue;
    for (const ServingCandidate* q : all) {
      const PoolLayout& a = p->layout.unified;
      const PoolLayout& b = q->layout.unified;
      if (q->layout.disaggregated || b.pp != 1 || b.tp != a.tp * a.pp || b.ep != a.ep ||
          b.replicas != a.replicas || q->report.tpot.p50 <= 0 ||
          q->report.tpot.p50 >= p->report.tpot.p50) {
        continue;
      }
      advice->push_back(fmt::format(
          "PP adds latency to every token: {} decodes at a TPOT P50 of {:.1f} ms against {:.1f} "
          "ms for {}, the same GPUs a replica split by TP (each token passes its {} stages one "
          "after another, where TP splits every layer)",
          FormatServingLayout(p->layout), 1e3 * p->report.tpot.p50, 1e3 * q->report.tpot.p50,
          FormatServingLayout(q->layout), a.pp));
      return;
    }
  }
}

void DisaggregationAdvice(const ServingSweepOutcome& o, std::vector<std::string>* advice) {
  const ServingCandidate* d =
      BestWhere(o.ranked, [](const ServingCandidate& c) { return c.layout.disaggregated; });
  const ServingCandidate* u =
      BestWhere(o.ranked, [](const ServingCandidate& c) { return !c.layout.disaggregated; });
  if (d == nullptr || u == nullptr) return;
  const double gain = d->score / u->score - 1;
  advice->push_back(
      gain > 0
          ? fmt::format("disaggregation pays: {} serves {:.0f}% more per GPU within the targets "
                        "than {} (prefills no longer stall the decodes' tokens)",
                        FormatServingLayout(d->layout), 100 * gain, FormatServingLayout(u->layout))
          : fmt::format("disaggregation does not pay here: the best split, {}, serves {:.0f}% less "
                        "per GPU than {} (its KV transfers and the idle share of each pool cost "
                        "more than the interference they remove)",
                        FormatServingLayout(d->layout), -100 * gain,
                        FormatServingLayout(u->layout)));
}

}  // namespace

std::vector<ServingLayout> ServingLayouts(const ServingScenario& s, std::string* refused) {
  const ServingSweepSpec sw = s.serving.sweep.value_or(ServingSweepSpec{});
  const std::vector<int64_t> sizes =
      sw.gpus.empty() ? std::vector<int64_t>{s.cluster.gpus()} : sw.gpus;
  std::vector<ServingLayout> all, out;
  for (int64_t g : sizes) {
    for (bool disaggregated : sw.disaggregated) {
      if (disaggregated) {
        Disaggregated(s, sw, g, &all);
      } else {
        Unified(s, sw, g, &all);
      }
    }
  }
  for (const ServingLayout& l : all) {
    const std::optional<ServingLayoutProblem> p = CheckServingLayout(l, s.model, s.cluster);
    if (!p) {
      out.push_back(l);
    } else if (refused != nullptr && refused->empty()) {
      *refused = fmt::format("{} ({}: {})", FormatServingLayout(l), p->key, p->message);
    }
  }
  return out;
}

namespace {

// A layout with each pool's replicas as replayed (ServingReplay's symmetry): layouts with the
// same one replay the same replicas, their highest rates within the targets in the ratio of the
// shares of the requests they replay.
ServingLayout Replayed(const ServingLayout& l, double* share) {
  std::vector<int64_t> replayed;
  *share = ReplayedShare(l, &replayed);
  ServingLayout out = l;
  if (l.disaggregated) {
    out.prefill.replicas = replayed[0];
    out.decode.replicas = replayed[1];
  } else {
    out.unified.replicas = replayed[0];
  }
  return out;
}

// Replays one layout: with the search for its highest rate, or (`known` >= 0) with that rate
// taken from a layout of the same replayed replicas, scaled by the shares.
Status Evaluate(const ServingScenario& s, double known_rate, ServingChainCache* cache,
                ServingCandidate* c) {
  ServingScenario one = s;
  one.serving.layout = c->layout;
  one.serving.sweep.reset();
  const bool search = !s.serving.slo.empty() && known_rate < 0;
  StatusOr<ServingReport> r = Serve(one, {.search_rate = search, .cache = cache});
  if (!r.ok()) {
    c->reason = r.status().message();
    return Status::Ok();
  }
  c->report = *std::move(r);
  if (known_rate >= 0 && c->report.fits) c->report.max_rate_at_slo = known_rate;
  Score(s, c);
  return Status::Ok();
}

}  // namespace

StatusOr<ServingSweepOutcome> RunServingSweep(const ServingScenario& s, int jobs) {
  const auto t0 = std::chrono::steady_clock::now();
  ServingSweepOutcome o;
  std::string refused;
  const std::vector<ServingLayout> layouts = ServingLayouts(s, &refused);
  if (layouts.empty()) {
    return InvalidArgument(
        fmt::format("sweep: none of the layouts the sweep block spans is valid for {} on {} GPUs{}",
                    s.model.id, s.cluster.gpus(),
                    refused.empty() ? ": no replica's tp x pp divides the GPUs of a size it lists"
                                    : fmt::format("; the first, {}", refused)));
  }
  o.layouts = static_cast<int64_t>(layouts.size());
  std::vector<ServingCandidate> found(layouts.size());
  // The first layout of each replayed shape searches its rate; the others take it.
  std::vector<size_t> first, rest;
  std::vector<size_t> shape_of(layouts.size());
  std::vector<double> share(layouts.size());
  std::vector<ServingLayout> shapes;
  for (size_t i = 0; i < layouts.size(); ++i) {
    found[i].layout = layouts[i];
    const ServingLayout shape = Replayed(layouts[i], &share[i]);
    auto at = std::find(shapes.begin(), shapes.end(), shape);
    shape_of[i] = static_cast<size_t>(at - shapes.begin());
    if (at == shapes.end()) {
      shapes.push_back(shape);
      first.push_back(i);
    } else {
      rest.push_back(i);
    }
  }
  std::vector<size_t> searched(shapes.size());
  for (size_t i : first) searched[shape_of[i]] = i;
  ServingChainCache cache;  // each pool shape's chains replayed once
  PARASIM_RETURN_IF_ERROR(
      ParallelFor(first, jobs, [&](size_t i) { return Evaluate(s, -1, &cache, &found[i]); }));
  PARASIM_RETURN_IF_ERROR(ParallelFor(rest, jobs, [&](size_t i) {
    const size_t j = searched[shape_of[i]];
    PARASIM_RETURN_IF_ERROR(
        Evaluate(s, std::max(0.0, found[j].report.max_rate_at_slo) * share[j] / share[i], &cache,
                 &found[i]));
    // The same replay answers for both: what it found nothing for, or could not judge, too.
    if (found[i].report.fits && !found[j].report.max_rate_note.empty()) {
      found[i].report.max_rate_at_slo = found[j].report.max_rate_at_slo;
      found[i].report.max_rate_note = found[j].report.max_rate_note;
      Score(s, &found[i]);
    }
    return Status::Ok();
  }));
  for (ServingCandidate& c : found) (c.ok ? o.ranked : o.excluded).push_back(std::move(c));
  // Best per GPU first; layouts that score alike (the same replicas scaled, whose rates differ
  // by the shares' rounding) the fewest GPUs first, as a deployment would grow (they had come
  // in the rounding's order: tp2 x8, x32, x16).
  std::stable_sort(o.ranked.begin(), o.ranked.end(),
                   [](const ServingCandidate& a, const ServingCandidate& b) {
                     const int64_t sa = ScoreKey(a.score), sb = ScoreKey(b.score);
                     if (sa != sb) return sa > sb;
                     return a.layout.gpus() < b.layout.gpus();
                   });
  if (!o.ranked.empty()) {
    ReplicationAdvice(o, &o.advice);
    PipelineAdvice(o, &o.advice);
    DisaggregationAdvice(o, &o.advice);
  }
  o.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return o;
}

}  // namespace parasim
