#include "strategies/serving_report.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <utility>

namespace parasim {

namespace {

// The ranks a percentile lies between, and how far past the lower one.
struct Ranks {
  size_t lo, hi;
  double frac;
};
Ranks RanksOf(size_t n, double q) {
  const double pos = std::clamp(q, 0.0, 100.0) / 100 * static_cast<double>(n - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  return {lo, std::min(lo + 1, n - 1), pos - static_cast<double>(lo)};
}

double OfSorted(const std::vector<double>& sorted, double q) {
  const Ranks r = RanksOf(sorted.size(), q);
  return sorted[r.lo] + (sorted[r.hi] - sorted[r.lo]) * r.frac;
}

}  // namespace

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  // The two ranks' values without sorting the rest (the serving sweep's rate search takes
  // thousands of these; a sort was 5% of its time): the lower rank in place, the next the
  // smallest above it. The same values, so the same result, as sorting.
  const Ranks r = RanksOf(v.size(), q);
  const auto at = v.begin() + static_cast<std::ptrdiff_t>(r.lo);
  std::nth_element(v.begin(), at, v.end());
  const double low = *at;
  const double high = r.hi == r.lo ? low : *std::min_element(at + 1, v.end());
  return low + (high - low) * r.frac;
}

LatencyStats StatsOf(const std::vector<double>& v) {
  LatencyStats s;
  s.count = v.size();
  if (v.empty()) return s;
  std::vector<double> sorted = v;  // sorted once for the three
  std::sort(sorted.begin(), sorted.end());
  s.p50 = OfSorted(sorted, 50);
  s.p90 = OfSorted(sorted, 90);
  s.p99 = OfSorted(sorted, 99);
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  return s;
}

namespace {

// Each served request's TTFT, TPOT (more than one output token) and end-to-end latency.
struct Latencies {
  std::vector<double> ttft, tpot, e2e;
};
Latencies LatenciesOf(const ServingReplay& r) {
  Latencies l;
  for (const RequestOutcome& o : r.requests) {
    if (!o.served()) continue;
    l.ttft.push_back(o.first_token_s - o.arrival_s);
    l.e2e.push_back(o.finish_s - o.arrival_s);
    if (o.output > 1) {
      l.tpot.push_back((o.finish_s - o.first_token_s) / static_cast<double>(o.output - 1));
    }
  }
  return l;
}

double MetricOf(const RequestOutcome& o, SloMetric m) {
  switch (m) {
    case SloMetric::kTtft:
      return o.first_token_s - o.arrival_s;
    case SloMetric::kTpot:
      return o.output > 1 ? (o.finish_s - o.first_token_s) / static_cast<double>(o.output - 1) : 0;
    case SloMetric::kE2e:
      return o.finish_s - o.arrival_s;
  }
  return 0;
}

// The targets against the replay, and the share of requests within all of them (DistServe's
// SLO attainment; a request never served is within none).
void CheckSlo(const Slo& slo, const ServingReplay& r, const Latencies& l, ServingReport* rep) {
  rep->meets_slo = true;
  for (const SloTarget& t : slo.targets) {
    const std::vector<double>& v = t.metric == SloMetric::kTtft   ? l.ttft
                                   : t.metric == SloMetric::kTpot ? l.tpot
                                                                  : l.e2e;
    SloCheck c{t, Percentile(v, t.percentile), false, !v.empty()};
    // A TPOT target holds by itself where no served request has a second token to time.
    const bool vacuous = !c.timed && t.metric == SloMetric::kTpot && !l.ttft.empty();
    c.met = (vacuous || (c.timed && c.value_s <= t.seconds)) && r.rejected == 0;
    rep->meets_slo = rep->meets_slo && c.met;
    rep->slo.push_back(c);
  }
  int64_t within = 0;
  for (const RequestOutcome& o : r.requests) {
    if (!o.served()) continue;
    bool ok = true;
    for (const SloTarget& t : slo.targets) ok = ok && MetricOf(o, t.metric) <= t.seconds;
    within += ok;
  }
  rep->goodput =
      r.requests.empty() ? 0 : static_cast<double>(within) / static_cast<double>(r.requests.size());
}

void MemoryOf(const ServingSystem& sys, const ServingReplay& r, ServingReport* rep) {
  // The pool whose GPUs hold the most KV for their capacity speaks for the layout.
  const ServingMemory* worst = nullptr;
  for (int p = 0; p < sys.pools(); ++p) {
    const ServingMemory& m = sys.pool(p).memory();
    if (worst == nullptr || m.kv_bytes < worst->kv_bytes) {
      worst = &m;
    }
    if (!m.fits()) {
      rep->fits = false;
      rep->fit_reason =
          m.states > 0 && m.capacity > m.weights + m.activations
              ? fmt::format(
                    "the Mamba states of max_seqs sequences, {:.1f} GiB, fill the engine's share "
                    "(engine.kv_fraction) of the {:.1f} GiB that weights {:.1f} GiB and "
                    "activations {:.1f} GiB leave of {:.1f} GiB: no room for KV",
                    m.states / (1 << 30), (m.capacity - m.weights - m.activations) / (1 << 30),
                    m.weights / (1 << 30), m.activations / (1 << 30), m.capacity / (1 << 30))
              : fmt::format(
                    "weights {:.1f} GiB and activations {:.1f} GiB leave no room for KV "
                    "in {:.1f} GiB",
                    m.weights / (1 << 30), m.activations / (1 << 30), m.capacity / (1 << 30));
    }
  }
  rep->weights_bytes = worst->weights;
  rep->activations_bytes = worst->activations;
  rep->state_bytes = worst->states;
  rep->memory_capacity_bytes = worst->capacity;
  rep->kv_capacity_bytes = worst->kv_bytes;
  // The KV peak of the pool whose GPUs were fullest, against that pool's own capacity (a
  // disaggregated layout's decode GPUs hold what the prefill GPUs hand over; the fullest share
  // had been taken against the other pool's capacity).
  for (int p = 0; p < sys.pools() && p < static_cast<int>(r.kv_peak_used.size()); ++p) {
    const double share = r.kv_peak_used[static_cast<size_t>(p)];
    const double cap = sys.pool(p).memory().kv_bytes;
    if (p == 0 || share * cap > rep->kv_peak_bytes) {
      rep->kv_peak_bytes = share * cap;
      rep->kv_peak_capacity_bytes = cap;
      rep->kv_peak_pool = sys.pools() == 2 ? (p == 0 ? "prefill" : "decode") : "";
    }
  }
  if (rep->fits && r.rejected > 0) {
    rep->fits = false;
    // Told with each pool that turned requests away, its own count, ranks and tokens: a
    // disaggregated layout's prefill pool holds prompts, its decode pool whole sequences (the
    // pool of least room per GPU had been quoted whichever turned them away).
    std::string why;
    for (int p = 0; p < sys.pools(); ++p) {
      const int64_t n = p < static_cast<int>(r.rejected_by_pool.size())
                            ? r.rejected_by_pool[static_cast<size_t>(p)]
                            : (sys.pools() == 1 ? r.rejected : 0);
      if (n == 0) continue;
      const int64_t tokens = sys.pool(p).memory().kv_tokens;
      const int ranks = sys.pool(p).data_ranks();
      const std::string where =
          sys.pools() == 2 ? (p == 0 ? "a prefill replica" : "a decode replica") : "a replica";
      // With data-parallel attention a sequence's KV lies on one rank, which holds its share.
      why +=
          (why.empty() ? fmt::format("{} of {} requests need more KV than ", n, r.requests.size())
                       : fmt::format("; {} more than ", n)) +
          (ranks > 1 ? fmt::format("one data-parallel attention rank of {} holds ({} tokens; "
                                   "a sequence's KV stays on its rank)",
                                   where, tokens / ranks)
                     : fmt::format("{} holds ({} tokens)", where, tokens));
    }
    rep->fit_reason = why;
  }
}

}  // namespace

bool SteadyWindow(const ServingReplay& r) {
  return r.window_s > 0.2 * (r.makespan_s - r.first_arrival_s) && r.window_tokens > 0;
}

ServingReport Summarize(const ServingScenario& s, const ServingSystem& sys,
                        const ServingReplay& r) {
  ServingReport rep;
  rep.layout = FormatServingLayout(s.serving.layout);
  rep.gpus = s.serving.layout.gpus();
  const Latencies l = LatenciesOf(r);
  double out_tokens = 0, in_tokens = 0;
  for (const RequestOutcome& o : r.requests) {
    if (!o.served()) continue;
    out_tokens += static_cast<double>(o.output);
    in_tokens += static_cast<double>(o.input);
    ++rep.served;
  }
  // Over the whole run, from the first arrival to the last end; or over the steady window where
  // it spans a fifth of the run or more and is the faster. Offered less than the capacity, the
  // window sees the offered load, the whole run that load thinned by its fill and drain. Offered
  // more, the system is busy from the start to the end, so the whole run is the capacity, while
  // the window may fall in the batches' filling (seconds when prompts take most of each
  // iteration: 600 requests a second on 8 Llama 3 8B replicas read 20k tokens/s where the run
  // served 48k).
  const double run_s = r.makespan_s - r.first_arrival_s;
  if (run_s > 0) rep.tokens_per_s = out_tokens / run_s * r.scale;
  if (SteadyWindow(r) && out_tokens > 0) {
    rep.tokens_per_s = std::max(rep.tokens_per_s, r.window_tokens / r.window_s * r.scale);
  }
  if (out_tokens > 0) {
    rep.input_tokens_per_s = rep.tokens_per_s * in_tokens / out_tokens;
    rep.requests_per_s = rep.tokens_per_s * static_cast<double>(rep.served) / out_tokens;
  }
  rep.tokens_per_s_per_gpu = rep.gpus > 0 ? rep.tokens_per_s / static_cast<double>(rep.gpus) : 0;
  rep.ttft = StatsOf(l.ttft);
  rep.tpot = StatsOf(l.tpot);
  rep.e2e = StatsOf(l.e2e);
  rep.requests = static_cast<int64_t>(r.requests.size());
  rep.rejected = r.rejected;
  rep.preemptions = r.preemptions;
  rep.iterations = r.iterations;
  // From the first arrival (none served: a makespan of 0 before a late first arrival).
  rep.makespan_s = std::max(0.0, r.makespan_s - r.first_arrival_s);
  rep.replicas_replayed = r.replayed;
  rep.kv = r.kv;
  CheckSlo(s.serving.slo, r, l, &rep);
  MemoryOf(sys, r, &rep);
  if (s.cluster.gpu_hour_cost > 0 && rep.tokens_per_s > 0) {
    rep.cost_per_million_tokens =
        s.cluster.gpu_hour_cost * static_cast<double>(rep.gpus) / 3600 / rep.tokens_per_s * 1e6;
  }
  return rep;
}

namespace {

// The first and last arrivals of a replay.
std::pair<double, double> ArrivalSpan(const ServingReplay& r) {
  double first = r.requests.front().arrival_s, last = first;
  for (const RequestOutcome& o : r.requests) {
    first = std::min(first, o.arrival_s);
    last = std::max(last, o.arrival_s);
  }
  return {first, last};
}

}  // namespace

bool SteadyHalf(const ServingReplay& r) {
  if (r.requests.empty() || r.median_e2e_s <= 0) return false;
  const auto [first, last] = ArrivalSpan(r);
  return (last - first) / 2 > r.median_e2e_s;
}

bool KeptUp(const ServingReplay& r) {
  if (!SteadyHalf(r)) return false;
  const auto [first, last] = ArrivalSpan(r);
  const double median = r.median_e2e_s;
  // The run's second half, once the system has filled (a median request's time in the system
  // into the first half): as many requests finished in it as arrived a median time in the
  // system before it, within kRateTolerance, or the number in the system grew. The finishes of
  // a steady system are those arrivals, so the arrivals' own clustering cancels (counted over
  // the half itself, 255 Poisson arrivals against 245 finishes read as falling behind at 112
  // requests a second where 245 of the 245 that had arrived a median time before had finished,
  // and the highest rate within the targets came out lower for a 99% prefix-cache hit than for
  // none). No such half: the requests passed as one burst, which says nothing of a stream.
  const double mid = first + (last - first) / 2;
  int64_t arrived = 0, finished = 0, apart = 0;
  for (const RequestOutcome& o : r.requests) {
    const bool a = o.arrival_s > mid - median && o.arrival_s <= last - median;
    const bool f = o.served() && o.finish_s > mid && o.finish_s <= last;
    arrived += a;
    finished += f;
    apart += a != f;
  }
  // Short of them by more than kRateTolerance, and by more than chance: the requests counted on
  // one side only (their time in the system other than the median's carried them across a
  // window's end) each move the difference by one, so a steady system's shortfall stays within
  // about two standard deviations of their count, sqrt(apart); a falling-behind one's requests
  // are all apart one way. (With the 3% alone, Mixtral on 8 H100 at 16 requests a second over
  // 400 requests met every target with 100% goodput and a KV peak of 4%, yet fell short in
  // 11-43% of draws, and the search, halving from the capacity, answered 5 to 15 a second.)
  const double a = static_cast<double>(arrived), f = static_cast<double>(finished);
  return f * kRateTolerance >= a || a - f <= 2 * std::sqrt(static_cast<double>(apart));
}

StatusOr<double> CapacityPerSecond(const ServingScenario& s, ServingSystem& sys) {
  PARASIM_ASSIGN_OR_RETURN(ServingReplay all, ReplayServing(s, sys, 0.0));
  return Summarize(s, sys, all).requests_per_s;
}

namespace {

// Why no rate was found: never a steady half to judge (-1, not judged), or none that holds (0).
RateSearch NoRate(bool judged, bool met) {
  if (!judged) {
    return {-1,
            "not judged: at every rate tried the arrivals' second half lasted no longer than a "
            "request's time in the system (one burst, or too few requests); give more requests"};
  }
  return {0, met ? "none: the targets hold only at rates the replicas fall behind"
                 : "none: the targets are missed at every rate tried, down to a thousandth of "
                   "the capacity"};
}

// The most requests a rate search replays for `s`: kMaxStreamScale times its count, at most
// kMaxStreamRequests more than it.
int64_t StreamCap(const ServingScenario& s) {
  const int64_t count = s.serving.requests.count;
  return std::min(count + kMaxStreamRequests,
                  static_cast<int64_t>(kMaxStreamScale * static_cast<double>(count)));
}

// The requests replayed at a search's rate: the scenario's count, or its lengths repeated.
int64_t StreamLength(const RequestSpec& q) { return std::max(q.count, q.repeat_to); }

// Whether `stream` may be replayed longer: generated requests, short of StreamCap.
bool CanLengthen(const ServingScenario& s, const ServingScenario& stream) {
  const RequestSpec& q = stream.serving.requests;
  return q.trace.empty() && q.arrival.kind != Arrival::Kind::kTrace &&
         StreamLength(q) < StreamCap(s);
}

// The requests a stream needs at a replay's rate for its second half of arrivals to outlast a
// median request's time in the system (SteadyHalf) with kStreamMargin to spare, within
// StreamCap: the count's arrivals pass sooner the higher the rate, so a short list could not be
// judged above about count / (2 x a request's time) a second, whatever the replicas hold (1,500
// requests on eight Llama 3 70B TP2 replicas, 13 s a request: 48 a second where a longer stream
// holds 66; four replicas of the same, replaying the same count at half the rate, had ranked 26%
// above them per GPU). The current length where the stream is long enough, where it may not
// grow (CanLengthen), or where its requests pass at one instant (one burst says nothing of a
// stream).
int64_t LongerStream(const ServingScenario& s, const ServingScenario& stream,
                     const ServingReplay& r) {
  const RequestSpec& q = stream.serving.requests;
  const int64_t now = StreamLength(q);
  if (SteadyHalf(r) || !CanLengthen(s, stream) || r.median_e2e_s <= 0) return now;
  const auto [first, last] = ArrivalSpan(r);
  if (last <= first) return now;
  const double need =
      static_cast<double>(now) * kStreamMargin * 2 * r.median_e2e_s / (last - first);
  return static_cast<int64_t>(std::ceil(std::min(need, static_cast<double>(StreamCap(s)))));
}

// One rate of MaxRateFrom's search: whether it holds the targets and the replicas keep up,
// over the scenario's requests or the longer stream kept so far (LongerStream).
struct RateProbe {
  const ServingScenario& s;
  ServingSystem& sys;
  double share;            // the replayed replicas' share of the system
  ServingScenario stream;  // the requests replayed at each rate
  bool judged = false;     // a replay had a steady half
  bool met = false;        // one met the targets

  StatusOr<bool> Holds(double rate) {
    // A rate so low that its requests would arrive over more than the replay's clock takes
    // (kMaxArrivalSpanS, on the replayed share of the replicas) holds nothing worth a replay;
    // nor is a stream lengthened past it.
    auto fits_clock = [&](int64_t n) {
      return static_cast<double>(n) / (rate * share) <= kMaxArrivalSpanS;
    };
    if (!fits_clock(s.serving.requests.count)) return false;
    // The kept stream's longest prefix that the clock's span holds at this rate (the repeated
    // stream is a prefix of any longer one).
    const ServingScenario* at = &stream;
    ServingScenario prefix;
    if (!fits_clock(StreamLength(stream.serving.requests))) {
      prefix = stream;
      prefix.serving.requests.repeat_to =
          static_cast<int64_t>(std::min(static_cast<double>(StreamLength(stream.serving.requests)),
                                        std::floor(kMaxArrivalSpanS * rate * share)));
      at = &prefix;
    }
    PARASIM_ASSIGN_OR_RETURN(ServingReplay r, ReplayServing(*at, sys, rate));
    // Too short to judge at this rate: replayed longer, and the longer stream kept for the
    // rates tried after it (a stream only grows, so no rate's test is of fewer requests than an
    // earlier one's, but for the clock's span; a length for each rate had made the answer
    // depend on its own draws). The longer stream repeats the scenario's own requests' lengths
    // (RequestSpec::repeat_to): new draws had brought prompts the scenario never had, longer
    // than a replica's cache, and the search answered 0 where its own requests held 11.7 a
    // second.
    auto lengthen = [&](int64_t n) -> Status {
      if (n <= StreamLength(stream.serving.requests) || !fits_clock(n)) return Status::Ok();
      stream.serving.requests.repeat_to = n;
      at = &stream;
      PARASIM_ASSIGN_OR_RETURN(r, ReplayServing(stream, sys, rate));
      return Status::Ok();
    };
    PARASIM_RETURN_IF_ERROR(lengthen(LongerStream(s, *at, r)));
    bool meets = Summarize(*at, sys, r).meets_slo;
    // Within the targets, a half to judge, but the number in the system still growing: a queue
    // filling towards a steady state takes longer the nearer the rate is to the capacity, and a
    // short stream ends within it. Replayed on a stream four times as long (within StreamCap)
    // before the rate is judged lost.
    while (meets && SteadyHalf(r) && !KeptUp(r) && CanLengthen(s, *at)) {
      const int64_t before = StreamLength(stream.serving.requests);
      PARASIM_RETURN_IF_ERROR(
          lengthen(std::min(StreamCap(s), 4 * StreamLength(at->serving.requests))));
      if (StreamLength(stream.serving.requests) == before) break;  // past the clock's span
      meets = Summarize(*at, sys, r).meets_slo;
    }
    judged |= SteadyHalf(r);
    met |= meets;
    return meets && KeptUp(r);
  }
};

// MaxRateAtSlo from the capacity, the requests a second of the requests all at once.
StatusOr<RateSearch> MaxRateFrom(const ServingScenario& s, ServingSystem& sys, double capacity) {
  std::vector<int64_t> replayed;
  const double share = ReplayedShare(s.serving.layout, &replayed);
  RateProbe probe{s, sys, share, s};
  auto holds = [&](double rate) { return probe.Holds(rate); };
  // The highest rate that holds the targets lies below the capacity (there the queue grows
  // without end), most often within a factor of two.
  if (capacity <= 0) return RateSearch{0, "none: the replicas served no request"};
  double hi = capacity, lo = capacity / 2;
  PARASIM_ASSIGN_OR_RETURN(bool at_capacity, holds(hi));
  if (at_capacity) {
    // A short replay's capacity is a low estimate (its batches fill and drain): go up.
    for (int i = 0; i < 10 && at_capacity; ++i) {
      lo = hi;
      hi *= 1.5;
      PARASIM_ASSIGN_OR_RETURN(at_capacity, holds(hi));
    }
    if (at_capacity) return RateSearch{hi, ""};
  } else {
    for (int i = 0;; ++i) {
      PARASIM_ASSIGN_OR_RETURN(bool ok, holds(lo));
      if (ok) break;
      // None down to a thousandth of the capacity.
      if (i == 10) return NoRate(probe.judged, probe.met);
      hi = lo;
      lo /= 2;
    }
  }
  while (hi / lo > kRateTolerance) {
    const double mid = std::sqrt(lo * hi);
    PARASIM_ASSIGN_OR_RETURN(bool ok, holds(mid));
    (ok ? lo : hi) = mid;
  }
  return RateSearch{lo, ""};
}

}  // namespace

StatusOr<RateSearch> MaxRateAtSlo(const ServingScenario& s, ServingSystem& sys) {
  PARASIM_ASSIGN_OR_RETURN(const double capacity, CapacityPerSecond(s, sys));
  return MaxRateFrom(s, sys, capacity);
}

StatusOr<std::vector<LatencyPoint>> LatencyCurve(const ServingScenario& s, int points) {
  PARASIM_ASSIGN_OR_RETURN(ServingSystem sys, ServingSystem::Build(s));
  PARASIM_ASSIGN_OR_RETURN(const double capacity, CapacityPerSecond(s, sys));
  std::vector<LatencyPoint> out;
  for (int i = 1; i <= points && capacity > 0; ++i) {
    const double rate = capacity * i / points;
    PARASIM_ASSIGN_OR_RETURN(ServingReplay r, ReplayServing(s, sys, rate));
    const ServingReport rep = Summarize(s, sys, r);
    out.push_back({rate, rep.tokens_per_s, rep.ttft, rep.tpot});
  }
  return out;
}

namespace {

// The load view of a Poisson stream (ServeOptions::load) from the requests all at once (`all`):
// the capacity, the load, and near it (or with `band`) the latencies at the rate x (1 -/+
// kLoadBand). Not estimated where `all` reaches no steady window (Summarize's): with N requests
// a replica and a batch of B, about where N < 3.3 B, the requests give their own latency rather
// than what the replicas sustain.
Status LoadOf(const ServingScenario& s, ServingSystem& sys, const ServingReplay& all,
              double capacity, bool band, ServingReport* rep) {
  LoadView v;
  if (!SteadyWindow(all) || capacity <= 0) {
    rep->load = v;
    return Status::Ok();
  }
  const double rate = s.serving.requests.arrival.rate_per_s;
  v.estimated = true;
  v.capacity_per_s = capacity;
  v.load = rate / capacity;
  if (band || v.load >= kNearCapacity) {
    v.band = true;
    for (const double scale : {1 - kLoadBand, 1 + kLoadBand}) {
      PARASIM_ASSIGN_OR_RETURN(ServingReplay r, ReplayServing(s, sys, rate * scale));
      const ServingReport at = Summarize(s, sys, r);
      (scale < 1 ? v.ttft_lo : v.ttft_hi) = at.ttft;
      (scale < 1 ? v.tpot_lo : v.tpot_hi) = at.tpot;
    }
  }
  rep->load = v;
  return Status::Ok();
}

}  // namespace

StatusOr<ServingReport> Serve(const ServingScenario& s, const ServeOptions& o) {
  PARASIM_ASSIGN_OR_RETURN(ServingSystem sys, ServingSystem::Build(s, o.cache));
  PARASIM_ASSIGN_OR_RETURN(ServingReplay r, ReplayServing(s, sys));
  ServingReport rep = Summarize(s, sys, r);
  const Arrival& a = s.serving.requests.arrival;
  const bool search = o.search_rate && !s.serving.slo.empty() && rep.fits;
  const bool load = o.load && rep.fits && a.kind == Arrival::Kind::kPoisson && a.rate_per_s > 0;
  if (!search && !load) return rep;
  // The requests all at once, replayed once for both: the capacity.
  PARASIM_ASSIGN_OR_RETURN(ServingReplay all, ReplayServing(s, sys, 0.0));
  const double capacity = Summarize(s, sys, all).requests_per_s;
  if (search) {
    PARASIM_ASSIGN_OR_RETURN(const RateSearch found, MaxRateFrom(s, sys, capacity));
    rep.max_rate_at_slo = found.rate;
    rep.max_rate_note = found.note;
  }
  if (load) PARASIM_RETURN_IF_ERROR(LoadOf(s, sys, all, capacity, o.band_always, &rep));
  return rep;
}

}  // namespace parasim
