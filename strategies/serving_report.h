// What a serving replay answers (docs/SCENARIO.md, "Serving scenarios"; `parasim serve`):
// throughput in total and per GPU, output and input tokens a second, TTFT, TPOT and end-to-end
// latency at P50, P90 and P99 and their mean, the share of requests within the latency targets
// (goodput), the highest Poisson arrival rate that holds every target, the KV cache's peak and
// use over time, what a million output tokens cost, and whether the layout fits.
//
//   PARASIM_ASSIGN_OR_RETURN(ServingReport r, Serve(scenario, {.search_rate = true}));
//   r.tokens_per_s, r.ttft.p99, r.max_rate_at_slo
//
// Percentiles are over requests, linear between the nearest ranks (numpy's default); a request's
// TPOT is its mean time between output tokens, (end - first token) / (output - 1), as MLPerf's
// LoadGen counts it (loadgen/logging.cc), over requests of more than one output token.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/status.h"
#include "strategies/serving_replay.h"
#include "strategies/serving_spec.h"

namespace parasim {

struct LatencyStats {
  double p50 = 0, p90 = 0, p99 = 0, mean = 0;
  size_t count = 0;  // the requests measured: none for TPOT where every output is one token
};
// The q-th percentile (0-100) of `v` (sorted here), linear between ranks; 0 when empty.
double Percentile(std::vector<double> v, double q);
LatencyStats StatsOf(const std::vector<double>& v);

// One target against the replay: its percentile's value and whether it holds.
struct SloCheck {
  SloTarget target;
  double value_s = 0;
  bool met = false;
  bool timed = true;  // false: no request to time (TPOT where every output is one token)
};

// How close a Poisson stream of arrivals comes to what the layout serves. The capacity is the
// requests a second the replicas serve with every request queued at once (the replay's offline
// throughput), the load the arrival rate over it. Near capacity a queue's delay moves steeply with
// the load (M/M/1: a relative error e in the capacity moves the mean wait by about e / (1 - load),
// 20% for e = 2% at a load of 0.9), so there the latencies are also replayed at the rate scaled
// by 1 - kLoadBand and 1 + kLoadBand: how far an error of kLoadBand in the predicted capacity
// moves them (with the replay's own noise, below).
inline constexpr double kLoadBand = 0.02;
// The load from which `parasim serve` replays that span (a 2% error moves waits by 10%).
inline constexpr double kNearCapacity = 0.8;
// Not estimated where the requests all at once reach no steady window (SteadyWindow; about where
// a replica's requests are fewer than 3.3 times its batch): they give their own latency rather
// than what the replicas sustain. The capacity of a replay of a few thousand requests varies by
// a few percent with their number (the 8-H100 example: 25.9, 26.8 and 25.3 requests/s at 2,000,
// 3,000 and 50,000), and so do the latencies at the two ends of the span: a P99 may come out
// lower at the higher rate.
struct LoadView {
  bool estimated = false;     // false: too few requests for a capacity (no steady window)
  double capacity_per_s = 0;  // requests a second, every request queued at once
  double load = 0;            // the arrival rate over capacity_per_s
  bool band = false;          // the latencies at the rate x (1 -/+ kLoadBand) below were replayed
  LatencyStats ttft_lo, ttft_hi, tpot_lo, tpot_hi;  // seconds: at x (1 - kLoadBand), x (1 + ...)
};

struct ServingReport {
  std::string layout;  // FormatServingLayout
  int64_t gpus = 0;
  double tokens_per_s = 0;        // output tokens a second, every GPU of the layout
  double input_tokens_per_s = 0;  // prompt tokens a second
  double tokens_per_s_per_gpu = 0;
  double requests_per_s = 0;
  LatencyStats ttft, tpot, e2e;  // seconds
  double goodput = 0;            // share of requests within every target (1 without targets)
  bool meets_slo = true;         // every target's percentile within it
  std::vector<SloCheck> slo;
  double max_rate_at_slo = -1;   // requests a second; -1 when not searched, 0 when none holds
  std::string max_rate_note;     // why none was found, or why it was not judged (-1)
  std::optional<LoadView> load;  // Poisson arrivals with ServeOptions::load only
  double kv_peak_bytes = 0;      // per GPU, the fullest replica's (of the fullest pool)
  double kv_capacity_bytes = 0;  // per GPU (the pool with the least room)
  // The KV capacity per GPU of the pool kv_peak_bytes is from, and that pool's name where the
  // layout has two ("prefill" or "decode"; empty otherwise).
  double kv_peak_capacity_bytes = 0;
  std::string kv_peak_pool;
  double weights_bytes = 0;  // per GPU (the stage with the least room for KV)
  double state_bytes = 0;    // per GPU: a hybrid's Mamba states (0 for a transformer)
  double activations_bytes = 0;
  double memory_capacity_bytes = 0;
  bool fits = true;
  std::string fit_reason;              // why not, when it does not fit
  double cost_per_million_tokens = 0;  // cluster.gpu_hour_cost per million output tokens; 0: none
  std::vector<KvPoint> kv;
  int64_t requests = 0, served = 0, rejected = 0, preemptions = 0, iterations = 0;
  double makespan_s = 0;
  std::vector<int64_t> replicas_replayed;  // per pool
  std::vector<std::string> warnings;
  // A model that fits with no room counted for KV has no attention layers (ServingMemory::
  // kv_bytes): it keeps no KV cache.
  bool no_kv_cache() const { return fits && kv_capacity_bytes <= 0; }
};

// Whether a replay has a steady window (from the median request's time in the system, when the
// batches have filled, to the last admission) spanning a fifth of its run or more: its
// throughput is then the window's, else the whole run's. All at once, with N requests a replica
// and a batch of B, the window is about (N / 2 - B) of N: there where N > 3.3 B.
bool SteadyWindow(const ServingReplay& r);

// The report of one replay of `s` on `sys`.
ServingReport Summarize(const ServingScenario& s, const ServingSystem& sys, const ServingReplay& r);

struct ServeOptions {
  bool search_rate = true;  // max_rate_at_slo (a replay per rate tried; needs targets)
  // The load against the capacity (Poisson arrivals only; the replay of the requests all at once,
  // shared with the rate search) and, from kNearCapacity (or at any load with band_always), the
  // latencies at x (1 -/+ kLoadBand), two replays more.
  bool load = false;
  bool band_always = false;
  ServingChainCache* cache = nullptr;  // chains shared across a sweep's layouts
};
// Latency against throughput: the scenario's requests replayed as a Poisson process at `points`
// rates evenly spread up to the capacity (the requests all at once), a point each.
struct LatencyPoint {
  double rate_per_s = 0;
  double tokens_per_s = 0;  // output tokens, every GPU
  LatencyStats ttft, tpot;
};
StatusOr<std::vector<LatencyPoint>> LatencyCurve(const ServingScenario& s, int points);

// Builds the system, replays the scenario, and (with targets) searches the highest rate.
StatusOr<ServingReport> Serve(const ServingScenario& s, const ServeOptions& o = {});

// The highest Poisson arrival rate (requests a second, the whole system) at which every target
// holds and the replicas keep up (KeptUp), bisected to kRateTolerance between half the
// capacity (the requests replayed all at once) and the capacity, halving further down where half
// does not hold; a stream too short to judge replayed longer (below). 0 when no rate holds them.
inline constexpr double kRateTolerance = 1.03;
// A stream too short to judge at a rate tried is replayed longer: where its second half of
// arrivals is no longer than a median request's time in the system, to kStreamMargin times the
// length needed; where the targets hold but the number in the system grows, four times as long;
// at most kMaxStreamScale times the scenario's requests (both chosen: the margin for the
// requests' time in the system, which grows with the queue; the cap bounds a search's cost).
inline constexpr double kStreamMargin = 1.5;
inline constexpr double kMaxStreamScale = 8.0;
// And at most this many requests beyond the scenario's own (chosen: under a second's replay and
// about 200 MB of outcomes, where 2^22 requests hold about 3 GB a sweep job).
inline constexpr int64_t kMaxStreamRequests = int64_t{1} << 18;
// Whether a replay's replicas kept up with its arrivals: over the second half of its arrivals
// as many requests finished as arrived, within kRateTolerance or within chance (two standard
// deviations of the requests counted on one side only), whichever is wider (the number in the
// system did not grow). A list of requests passed as one burst (its half no longer than a median
// request's time in the system), or a queue that grows, is not a rate the system holds, though the
// targets may hold for it.
bool KeptUp(const ServingReplay& r);
// Whether the second half of a replay's arrivals outlasts a median request's time in the
// system: without it, whether the replicas keep up cannot be judged.
bool SteadyHalf(const ServingReplay& r);
// The search's answer: a rate; or 0 with why none holds; or -1 with why it could not be judged.
struct RateSearch {
  double rate = -1;
  std::string note;
};
StatusOr<RateSearch> MaxRateAtSlo(const ServingScenario& s, ServingSystem& sys);
// The requests a second `sys` serves with the scenario's requests all queued at once.
StatusOr<double> CapacityPerSecond(const ServingScenario& s, ServingSystem& sys);

}  // namespace parasim
