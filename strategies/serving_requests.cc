#include "strategies/serving_requests.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace parasim {

double ServingRng::Uniform() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }

double ServingRng::Normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  const double u1 = 1.0 - Uniform();  // (0, 1]
  const double u2 = Uniform();
  const double r = std::sqrt(-2.0 * std::log(u1));
  spare_ = r * std::sin(2 * std::numbers::pi * u2);
  has_spare_ = true;
  return r * std::cos(2 * std::numbers::pi * u2);
}

double ServingRng::Exponential(double rate) { return -std::log(1.0 - Uniform()) / rate; }

int64_t LengthSampler::Draw(ServingRng& rng) const {
  const LengthDist& d = d_;
  double x = d.a;
  switch (d.kind) {
    case LengthDist::Kind::kFixed:
      break;
    case LengthDist::Kind::kUniform:
      // Whole numbers from a to b, each as likely.
      x = std::floor(d.a + rng.Uniform() * (d.b - d.a + 1));
      break;
    case LengthDist::Kind::kLognormal:
      x = std::exp(mu_ + d.b * rng.Normal());
      break;
  }
  int64_t n = std::llround(x);
  n = std::max<int64_t>(n, std::max<int64_t>(1, d.min));
  if (d.max > 0) n = std::min(n, d.max);
  return n;
}

namespace {

// Lengths for `count` requests; arrivals left at 0.
std::vector<ServedRequest> Lengths(const RequestSpec& spec, ServingRng& rng) {
  std::vector<ServedRequest> out(static_cast<size_t>(spec.count));
  const LengthSampler input(spec.input), output(spec.output);
  for (ServedRequest& r : out) {
    r.input = input.Draw(rng);
    r.output = output.Draw(rng);
  }
  return out;
}

// Poisson arrivals of bursts of `burst` requests at `rate_per_s` requests a second.
void StampPoisson(double rate_per_s, int64_t burst, ServingRng& rng,
                  std::vector<ServedRequest>* requests) {
  const int64_t b = std::max<int64_t>(1, burst);
  double t = 0;
  for (size_t i = 0; i < requests->size(); ++i) {
    if (i % static_cast<size_t>(b) == 0) t += rng.Exponential(rate_per_s / static_cast<double>(b));
    (*requests)[i].arrival_s = t;
  }
}

}  // namespace

std::vector<ServedRequest> GenerateRequests(const RequestSpec& spec) {
  if (spec.arrival.kind == Arrival::Kind::kTrace || !spec.trace.empty()) {
    std::vector<ServedRequest> out;
    for (const TraceRow& row : spec.trace) out.push_back({row.arrival_s, row.input, row.output});
    std::stable_sort(out.begin(), out.end(), [](const ServedRequest& a, const ServedRequest& b) {
      return a.arrival_s < b.arrival_s;
    });
    return out;
  }
  ServingRng lengths(spec.seed);
  std::vector<ServedRequest> out = Lengths(spec, lengths);
  const size_t drawn = out.size();
  if (spec.repeat_to > spec.count) out.reserve(static_cast<size_t>(spec.repeat_to));
  for (int64_t i = spec.count; i < spec.repeat_to && drawn > 0; ++i) {
    out.push_back(out[static_cast<size_t>(i) % drawn]);
  }
  if (spec.arrival.kind == Arrival::Kind::kPoisson) {
    // Arrivals from a stream of their own, so that changing the rate keeps the lengths.
    ServingRng arrivals(spec.seed ^ 0x9E3779B97F4A7C15ull);
    StampPoisson(spec.arrival.rate_per_s, spec.arrival.burst, arrivals, &out);
  }
  return out;
}

std::vector<ServedRequest> AtPoissonRate(const RequestSpec& spec, double rate_per_s) {
  std::vector<ServedRequest> out = GenerateRequests(spec);
  ServingRng arrivals(spec.seed ^ 0x9E3779B97F4A7C15ull);
  StampPoisson(rate_per_s, spec.arrival.kind == Arrival::Kind::kPoisson ? spec.arrival.burst : 1,
               arrivals, &out);
  return out;
}

}  // namespace parasim
