// The requests a serving replay serves: each one's arrival, prompt and output lengths, drawn
// from the scenario's distributions (strategies/serving_spec.h RequestSpec) with its seed, or
// read from its trace. The same spec gives the same requests on every machine: the draws use
// std::mt19937_64 (whose sequence the C++ standard fixes) and transforms written here, not the
// library's distributions (whose algorithms it leaves to each implementation).
//
//   std::vector<ServedRequest> r = GenerateRequests(spec.requests);
//   r[0].arrival_s, r[0].input, r[0].output
// A closed loop (Arrival::kConcurrency) has no arrival times of its own: every request is
// stamped 0, and the replay sends each when a client is free.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "strategies/serving_spec.h"

namespace parasim {

struct ServedRequest {
  double arrival_s = 0;
  int64_t input = 0;   // prompt tokens
  int64_t output = 0;  // tokens generated, the first one by the prefill
};

// A reproducible stream of uniform, normal and exponential draws.
class ServingRng {
 public:
  explicit ServingRng(uint64_t seed) : gen_(seed) {}
  double Uniform();  // [0, 1), 53 random bits
  double Normal();   // standard normal (Box-Muller)
  double Exponential(double rate);

 private:
  std::mt19937_64 gen_;
  bool has_spare_ = false;
  double spare_ = 0;
};

// Draws of a length distribution, rounded and clipped to [min, max].
class LengthSampler {
 public:
  explicit LengthSampler(const LengthDist& d)
      : d_(d), mu_(d.kind == LengthDist::Kind::kLognormal ? d.LogMean() : 0) {}
  int64_t Draw(ServingRng& rng) const;

 private:
  LengthDist d_;
  double mu_;  // the lognormal's log-mean
};

std::vector<ServedRequest> GenerateRequests(const RequestSpec& spec);
// The same requests arriving as a Poisson process at `rate_per_s` instead of the spec's own
// arrivals (the search for the highest rate that holds the targets).
std::vector<ServedRequest> AtPoissonRate(const RequestSpec& spec, double rate_per_s);

}  // namespace parasim
