// A serving scenario replayed request by request: a discrete-event loop on the engine's event
// queue (sim/event_queue.h: events in (time, sequence) order, so a seed gives one answer) over
// arrivals, iterations ending and KV transfers ending. Requests go to the least loaded replica;
// each replica's scheduler (strategies/serving_scheduler.h) forms its iterations, each priced
// stage by stage (strategies/serving_cost.h): a pipeline's groups are in flight together, one
// iteration per stage at a time, so every stage adds its time to every token. A disaggregated
// layout sends each prompt's KV from its prefill replica to a decode replica over the fabric.
//
// Replicas behave alike, so beyond kMaxReplayedReplicas per pool the replay serves a share of
// the requests on that many (the arrival rate, or the closed loop's clients, scaled by it) and
// the throughput is scaled back up.
//
//   PARASIM_ASSIGN_OR_RETURN(ServingSystem sys, ServingSystem::Build(scenario));
//   PARASIM_ASSIGN_OR_RETURN(ServingReplay r, ReplayServing(scenario, sys));
//   r.requests[i].first_token_s, r.kv (KV use over time), r.scale
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "sim/status.h"
#include "strategies/serving_cost.h"
#include "strategies/serving_series.h"
#include "strategies/serving_spec.h"

namespace parasim {

// kMaxReplayedReplicas and kPoolRatioTolerance: strategies/serving_spec.h.
// A closed loop replays at least this many of its clients (or all of them), more replicas than
// kMaxReplayedReplicas where it takes that: whole clients on a share of the replicas, within 1%
// of the system's clients per replica (chosen: 0.5 / 64).
inline constexpr int64_t kLeastReplayedClients = 64;

// The cost models of a scenario's pools: one unified pool, or a prefill and a decode pool.
class ServingSystem {
 public:
  // `cache`: replayed chains shared with other layouts of the same scenario (a sweep's).
  static StatusOr<ServingSystem> Build(const ServingScenario& s,
                                       ServingChainCache* cache = nullptr);
  bool disaggregated() const { return costs_.size() == 2; }
  ServingCost& pool(int i) { return costs_[static_cast<size_t>(i)]; }
  const ServingCost& pool(int i) const { return costs_[static_cast<size_t>(i)]; }
  int pools() const { return static_cast<int>(costs_.size()); }

 private:
  std::vector<ServingCost> costs_;
};

struct RequestOutcome {
  double arrival_s = 0;
  double first_token_s = -1;
  double finish_s = -1;
  int64_t input = 0, output = 0;
  int32_t preemptions = 0;
  bool served() const { return finish_s >= 0; }
};

struct ServingReplay {
  std::vector<RequestOutcome> requests;
  std::vector<KvPoint> kv;  // at most kKvPoints, each the most in use over its span
  // Per pool, the most of one replica's KV blocks in use at once (its fullest rank's share).
  std::vector<double> kv_peak_used;
  double makespan_s = 0;       // to the last request's end
  double first_arrival_s = 0;  // the run's origin: a trace's times may start anywhere
  // The steady window: from the median request's time in the system after the first arrival
  // (once the batches have filled) to the last request's admission (its first iteration), and
  // the output tokens
  // generated within it. A replay of a few thousand requests starts with the batches filling and
  // ends in a drain, which a run of hours (MLPerf's) does not see.
  double window_s = 0;
  double window_tokens = 0;
  double median_e2e_s = 0;  // the median served request's time in the system
  int64_t iterations = 0;
  int64_t preemptions = 0;
  int64_t rejected = 0;  // requests whose KV cannot fit a replica's cache
  // Per pool, the requests it could not hold (a disaggregated layout's prefill pool holds the
  // prompt's KV, its decode pool the whole sequence's).
  std::vector<int64_t> rejected_by_pool;
  double scale = 1;               // the system's replicas over those replayed
  std::vector<int64_t> replayed;  // replicas replayed per pool
};
inline constexpr size_t kKvPoints = 100;

// The replicas replayed of each pool of `l` (kMaxReplayedReplicas of the largest pool, or more
// where the pools' ratio must be kept within kPoolRatioTolerance, or the share must be at least
// `least`), and the share of the requests they serve (replayed over the system's replicas).
double ReplayedShare(const ServingLayout& l, std::vector<int64_t>* replayed, double least = 0);

// `rate_per_s`: replay the scenario's requests arriving as a Poisson process at this rate
// instead of their own arrivals (the search for the highest rate that holds the targets); 0:
// all at once (the capacity).
StatusOr<ServingReplay> ReplayServing(const ServingScenario& s, ServingSystem& sys,
                                      std::optional<double> rate_per_s = std::nullopt);

}  // namespace parasim
