#include "strategies/serving_replay.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "strategies/serving_report.h"
#include "strategies/serving_testing.h"

namespace parasim {
namespace {

ServingScenario Make(const std::string& gpu, int gpus, const std::string& model) {
  ServingScenario s = testing::ServingOn(gpu, gpus, model);
  ServingSpec& sv = s.serving;
  sv.requests.input = {LengthDist::Kind::kLognormal, 1000, 0.5, 1, 4096};
  sv.requests.output = {LengthDist::Kind::kLognormal, 200, 0.5, 1, 1024};
  sv.requests.count = 1500;
  return s;
}

ServingReport Run(const ServingScenario& s) {
  StatusOr<ServingReport> r = Serve(s, {.search_rate = false});
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  return *std::move(r);
}

TEST_CASE("percentiles: linear between the nearest ranks, as sorting the whole list gives") {
  // Percentile picks the two ranks without sorting; the reference sorts. Ties, one element,
  // the ends and ranks that fall exactly on an element included.
  uint64_t x = 7;
  auto next = [&x] {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>((x >> 33) % 50);  // few values: ties
  };
  for (size_t n : {1, 2, 3, 10, 101, 1000}) {
    std::vector<double> v(n);
    for (double& e : v) e = next() * 0.001;
    std::vector<double> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    const LatencyStats stats = StatsOf(v);
    for (double q : {0.0, 1.0, 50.0, 90.0, 99.0, 99.9, 100.0}) {
      CAPTURE(n);
      CAPTURE(q);
      const double pos = q / 100 * static_cast<double>(n - 1);
      const size_t lo = static_cast<size_t>(pos), hi = std::min(lo + 1, n - 1);
      const double want = sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
      CHECK(Percentile(v, q) == want);
    }
    CHECK(stats.p50 == Percentile(v, 50));
    CHECK(stats.p90 == Percentile(v, 90));
    CHECK(stats.p99 == Percentile(v, 99));
  }
  CHECK(Percentile({}, 50) == 0);
}

TEST_CASE("seed 002: on 8 GPUs at high load, 8 replicas of an 8B model beat one TP8 replica") {
  ServingScenario s = Make("h100-sxm5-80gb", 8, "llama3-8b");
  s.serving.requests.count = 4000;  // all at once: the highest load
  s.serving.layout.unified = {.tp = 1, .replicas = 8};
  const ServingReport replicated = Run(s);
  s.serving.layout.unified = {.tp = 8, .replicas = 1};
  const ServingReport sharded = Run(s);
  CHECK(replicated.tokens_per_s > 1.2 * sharded.tokens_per_s);
  // TP8 answers one request faster, though: its latency is what it buys.
  s.serving.requests.arrival = {Arrival::Kind::kConcurrency, 0, 1, 1};
  s.serving.requests.count = 20;
  const double tp8 = Run(s).tpot.p50;
  s.serving.layout.unified = {.tp = 1, .replicas = 8};
  CHECK(Run(s).tpot.p50 > 2 * tp8);
}

TEST_CASE("seed 002: each pipeline stage adds latency to every token") {
  // One request at a time on 8 GPUs: TP splits each token's work, PP runs it stage after stage.
  ServingScenario s = Make("h100-sxm5-80gb", 8, "llama3-70b");
  s.serving.requests.arrival = {Arrival::Kind::kConcurrency, 0, 1, 1};
  s.serving.requests.count = 20;
  double last = 0;
  for (int pp : {1, 2, 4, 8}) {
    s.serving.layout.unified = {.tp = 8 / pp, .pp = pp, .replicas = 1};
    const double tpot = Run(s).tpot.p50;
    CAPTURE(pp);
    CHECK(tpot > 1.3 * last);
    last = tpot;
  }
}

TEST_CASE("Little's law: a closed loop of N clients completes N / E2E requests a second") {
  ServingScenario s = Make("h100-sxm5-80gb", 2, "llama3-8b");
  s.serving.requests.arrival = {Arrival::Kind::kConcurrency, 0, 1, 48};
  s.serving.requests.count = 3000;
  s.serving.layout.unified = {.tp = 1, .replicas = 2};
  const ServingReport r = Run(s);
  CHECK(r.requests_per_s == doctest::Approx(48 / r.e2e.mean).epsilon(0.05));
  CHECK(r.served == 3000);
}

TEST_CASE("Poisson arrivals below capacity: throughput is the offered load") {
  ServingScenario s = Make("h100-sxm5-80gb", 8, "llama3-70b");
  s.serving.requests.input = LengthDist::Fixed(500);
  s.serving.requests.output = LengthDist::Fixed(100);
  s.serving.requests.arrival = Arrival::Poisson(4);
  s.serving.requests.count = 2000;
  s.serving.layout.unified = {.tp = 4, .replicas = 2};
  const ServingReport r = Run(s);
  CHECK(r.requests_per_s == doctest::Approx(4).epsilon(0.05));
  CHECK(r.tokens_per_s == doctest::Approx(400).epsilon(0.05));
  CHECK(r.input_tokens_per_s == doctest::Approx(2000).epsilon(0.05));
  // TTFT at least one prefill; TPOT at least one decode step of the replica.
  CHECK(r.ttft.p50 > 0);
  CHECK(r.tpot.p50 > 0);
  CHECK(r.e2e.p50 > r.ttft.p50 + 98 * r.tpot.p50 * 0.9);
}

TEST_CASE("the same scenario replays to the same answer") {
  ServingScenario s = Make("h100-sxm5-80gb", 8, "llama3-70b");
  s.serving.requests.arrival = Arrival::Poisson(6);
  s.serving.layout.unified = {.tp = 2, .replicas = 4};
  const ServingReport a = Run(s), b = Run(s);
  CHECK(a.tokens_per_s == b.tokens_per_s);
  CHECK(a.ttft.p99 == b.ttft.p99);
  CHECK(a.kv.size() == b.kv.size());
}

TEST_CASE("a small KV cache preempts and recomputes; the report says so") {
  ServingScenario s = Make("h100-sxm5-80gb", 1, "llama3-8b");
  s.serving.engine.kv_fraction = 0.03;  // about 2 GiB of KV
  s.serving.requests.count = 600;
  const ServingReport r = Run(s);
  CHECK(r.fits);
  CHECK(r.preemptions > 0);
  CHECK(r.served == 600);
  CHECK(r.kv_peak_bytes <= r.kv_capacity_bytes);
  CHECK(r.kv_peak_bytes > 0.8 * r.kv_capacity_bytes);
}

TEST_CASE("disaggregated pools: prompts on one, decodes on the other, KV in between") {
  ServingScenario s = Make("h100-sxm5-80gb", 8, "llama3-70b");
  s.serving.requests.arrival = Arrival::Poisson(3);
  s.serving.layout.disaggregated = true;
  s.serving.layout.prefill = {.tp = 4, .replicas = 1};
  s.serving.layout.decode = {.tp = 4, .replicas = 1};
  const ServingReport r = Run(s);
  CHECK(r.served == s.serving.requests.count);
  CHECK(r.requests_per_s == doctest::Approx(3).epsilon(0.06));
  CHECK(r.replicas_replayed == std::vector<int64_t>{1, 1});
  // The decode pool never prefills, so no prompt stalls its tokens: a steady TPOT.
  CHECK(r.tpot.p99 < 1.5 * r.tpot.p50);
}

// Llama 3 70B (bf16) on 8 H100, disaggregated: prompts on `prefill`, decodes on one TP4
// replica; `count` requests of `input` + `output` tokens all at once.
ServingScenario Disaggregated70b(const PoolLayout& prefill, int64_t input, int64_t output,
                                 int64_t count) {
  ServingScenario s = testing::ServingOn("h100-sxm5-80gb", 8, "llama3-70b");
  s.serving.precision = {};
  s.serving.requests.input = LengthDist::Fixed(input);
  s.serving.requests.output = LengthDist::Fixed(output);
  s.serving.requests.count = count;
  s.serving.layout.disaggregated = true;
  s.serving.layout.prefill = prefill;
  s.serving.layout.decode = {.tp = 4, .replicas = 1};
  return s;
}

TEST_CASE("disaggregated pools: the KV peak is the fullest pool's, against its own capacity") {
  // Llama 3 70B (bf16): prefill on two TP2 replicas, decode on one TP4; 64 requests of 2,048 +
  // 512 tokens all at once. The decode GPUs hold every sequence's KV as it grows, up to about
  // 64 x 2,560 tokens x 80 layers x 2 x 2 heads x 128 x 2 B = 12.5 GiB of their 41.6; the
  // prefill GPUs hold a budget of prompts. The decode pool's share had been taken of the
  // prefill pool's 11.8 GiB ("3.3 GiB of 11.8 GiB", neither pool's).
  const ServingReport r = Run(Disaggregated70b({.tp = 2, .replicas = 2}, 2048, 512, 64));
  CHECK(r.kv_peak_pool == "decode");
  CHECK(r.kv_peak_capacity_bytes > 3 * r.kv_capacity_bytes);  // the decode pool's, not TP2's
  CHECK(r.kv_peak_bytes > 10.0 * (1 << 30));
  CHECK(r.kv_peak_bytes < 12.6 * (1 << 30));
}

TEST_CASE("disaggregated pools: a request turned away is told with the pool that turned it away") {
  // Llama 3 70B (bf16) on H100s, prefill on a TP2 replica, decode on a TP4. KV takes 160 KiB a
  // token on a TP2 GPU, 80 KiB on a TP4: the prefill GPUs' 12.6 GB hold about 77,000 tokens,
  // the decode GPUs' 44.6 GB about 544,000. A 70,000-token prompt with 480,000 tokens out fits
  // the prefill replica and not the decode replica: the message had quoted the pool of least
  // room per GPU (the prefill pool's 77,000 tokens) whichever pool refused the request.
  ServingScenario s = Disaggregated70b({.tp = 2, .replicas = 1}, 70000, 480000, 2);
  const ServingReport r = Run(s);
  INFO(r.fit_reason);
  CHECK(r.rejected == 2);
  CHECK(r.fit_reason.find("than a decode replica holds (54") != std::string::npos);
  // And a prompt the prefill pool cannot hold is told with the prefill pool's tokens.
  s.serving.requests.input = LengthDist::Fixed(90000);
  s.serving.requests.output = LengthDist::Fixed(10);
  const ServingReport p = Run(s);
  INFO(p.fit_reason);
  CHECK(p.rejected == 2);
  CHECK(p.fit_reason.find("than a prefill replica holds (7") != std::string::npos);
  // Both pools turning requests away: each told with its own count.
  s.serving.requests.input = {LengthDist::Kind::kUniform, 60000, 90000, 1, 0};
  s.serving.requests.output = LengthDist::Fixed(490000);
  s.serving.requests.count = 40;
  const ServingReport both = Run(s);
  INFO(both.fit_reason);
  CHECK(both.rejected == 40);
  CHECK(both.fit_reason.find("a prefill replica holds") != std::string::npos);
  CHECK(both.fit_reason.find(" more than a decode replica holds (54") != std::string::npos);
}

TEST_CASE("disaggregated pools replay in their own ratio: the decode pool's size counts") {
  // 24 prefill and 1 decode replicas once replayed as 8 and 1 on a third of the requests: the
  // decode replica served three times its share, and 1 to 4 decode replicas answered alike.
  ServingLayout l;
  l.disaggregated = true;
  l.prefill = {.tp = 1, .replicas = 24};
  l.decode = {.tp = 1, .replicas = 1};
  std::vector<int64_t> replayed;
  CHECK(ReplayedShare(l, &replayed) == 1.0);
  CHECK(replayed == std::vector<int64_t>{24, 1});
  l.decode.replicas = 8;  // 24:8 = 3:1, replayed as 9 and 3
  replayed.clear();
  CHECK(ReplayedShare(l, &replayed) == doctest::Approx(9.0 / 24));
  CHECK(replayed == std::vector<int64_t>{9, 3});
  l.prefill.replicas = 16;  // 16:8, as before: 8 and 4
  replayed.clear();
  CHECK(ReplayedShare(l, &replayed) == 0.5);
  CHECK(replayed == std::vector<int64_t>{8, 4});
  ServingLayout one;
  one.unified = {.tp = 1, .replicas = 1000};  // one pool: 8 of its 1000 replicas
  replayed.clear();
  CHECK(ReplayedShare(one, &replayed) == 0.008);
  CHECK(replayed == std::vector<int64_t>{8});
  // A closed loop's least share lifts every pool alike.
  l.prefill.replicas = 24;
  l.decode.replicas = 8;
  replayed.clear();
  CHECK(ReplayedShare(l, &replayed, 0.5) == 0.5);
  CHECK(replayed == std::vector<int64_t>{12, 4});
  // A ratio only a replay of thousands of replicas keeps is refused at the layout (65,535 + 1
  // replayed 64,887 + 1: 11 s for 2,000 requests, minutes for 20,000).
  l.prefill.replicas = 65535;
  l.decode.replicas = 1;
  ClusterSpec c = testing::ServingOn("h100-sxm5-80gb", 65536, "llama3-8b").cluster;
  const ModelSpec m = testing::ServingOn("h100-sxm5-80gb", 8, "llama3-8b").model;
  const std::optional<ServingLayoutProblem> p = CheckServingLayout(l, m, c);
  REQUIRE(p.has_value());
  CHECK(p->key == "decode.replicas");
  CHECK(p->message.find("only with 64887 replicas of the larger pool, more than the 1024") !=
        std::string::npos);
  l.prefill.replicas = 1000;  // 1000:1 replays 991 + 1
  CHECK_FALSE(CheckServingLayout(l, m, c).has_value());

  // Offered more than one decode replica can take, the decode pool's size sets the throughput.
  ServingScenario s = Make("h100-sxm5-80gb", 32, "llama3-8b");
  s.serving.requests.input = LengthDist::Fixed(256);
  s.serving.requests.output = LengthDist::Fixed(256);
  s.serving.requests.count = 3000;
  s.serving.requests.arrival = Arrival::Poisson(200);
  s.serving.layout.disaggregated = true;
  s.serving.layout.prefill = {.tp = 1, .replicas = 24};
  s.serving.layout.decode = {.tp = 1, .replicas = 1};
  const ServingReport one_decode = Run(s);
  s.serving.layout.decode.replicas = 4;
  const ServingReport four_decode = Run(s);
  // 200 requests a second of 256 tokens: 51.2k tokens/s offered; four decode replicas take it
  // all, one about 30k (replayed as 8 and 1 it took 51k).
  CHECK(four_decode.tokens_per_s == doctest::Approx(51200).epsilon(0.03));
  CHECK(one_decode.tokens_per_s < 0.75 * four_decode.tokens_per_s);
  // And more prefill replicas do not add decode capacity.
  s.serving.layout.decode.replicas = 1;
  s.serving.layout.prefill.replicas = 8;
  const ServingReport fewer_prefill = Run(s);
  CHECK(one_decode.tokens_per_s == doctest::Approx(fewer_prefill.tokens_per_s).epsilon(0.1));
}

TEST_CASE("throughput counts from the first arrival and never falls as more is offered") {
  ServingScenario s = Make("h100-sxm5-80gb", 8, "llama3-8b");
  s.serving.layout.unified = {.tp = 1, .replicas = 8};
  s.serving.requests.input = LengthDist::Fixed(512);
  s.serving.requests.output = LengthDist::Fixed(128);
  // A trace, and the same trace 1,000 s later: the same throughput (it read 2.5k and 232
  // tokens/s: the window and the run were timed from 0).
  s.serving.requests.arrival = {.kind = Arrival::Kind::kTrace};
  s.serving.requests.count = 400;
  for (int i = 0; i < 400; ++i) s.serving.requests.trace.push_back({0.05 * i, 512, 128});
  const ServingReport at_zero = Run(s);
  for (TraceRow& t : s.serving.requests.trace) t.arrival_s += 1000;
  const ServingReport later = Run(s);
  CHECK(later.tokens_per_s == doctest::Approx(at_zero.tokens_per_s).epsilon(1e-6));
  CHECK(at_zero.tokens_per_s == doctest::Approx(20 * 128).epsilon(0.05));
  // Offered more than the replicas serve (about 580 requests a second), the throughput is
  // theirs at every rate: the window once fell in the batches' filling (with bf16 weights, whose
  // replicas serve 380 a second: 20k tokens/s at 600 requests a second, 11k at 700, 49k at
  // 1000, all 4,000 served in about 10.5 s).
  s.serving.requests.trace.clear();
  s.serving.requests.count = 4000;
  std::vector<double> served;
  for (double rate : {900.0, 1050.0, 3000.0}) {
    s.serving.requests.arrival = Arrival::Poisson(rate);
    served.push_back(Run(s).tokens_per_s);
  }
  CAPTURE(served);
  CHECK(served[0] > 0.95 * served[2]);
  CHECK(served[1] > 0.95 * served[2]);
}

TEST_CASE("kept up: as many requests finish as arrive over the second half, no burst") {
  // Requests each a second apart; each in the system 1.5 s: the system keeps up.
  ServingReplay steady;
  steady.median_e2e_s = 1.5;
  for (int i = 0; i < 100; ++i) {
    steady.requests.push_back(
        {.arrival_s = 1.0 * i, .first_token_s = i + 0.5, .finish_s = i + 1.5});
  }
  CHECK(KeptUp(steady));
  // Served one every 1.1 s: the number in the system grows by one in eleven. Over 100 requests
  // the second half's 4 missing finishes are within chance (4 requests apart, all one way: one
  // in sixteen); over 1,000 its 44 are not.
  ServingReplay growing;
  for (int i = 0; i < 1000; ++i) {
    growing.requests.push_back(
        {.arrival_s = 1.0 * i, .first_token_s = i + 0.5, .finish_s = 1.5 + 1.1 * i});
  }
  growing.median_e2e_s = 1.5 + 0.1 * 500;
  CHECK_FALSE(KeptUp(growing));
  // Steady, a few times in the system off the median carrying finishes across the window's
  // ends both ways (three late out of it, one early into it): 2 of 49 short, over 3%, and kept
  // up, by chance and not by a growing queue's one-way drift (the 3% alone had failed it).
  ServingReplay jitter = steady;
  for (int i : {95, 96, 97}) jitter.requests[i].finish_s = 100.5;
  jitter.requests[47].finish_s = 50;
  CHECK(KeptUp(jitter));
  // The same requests arriving within 2 s and each served in 1.5 s: one burst, no steady half.
  ServingReplay burst = steady;
  for (int i = 0; i < 100; ++i) {
    burst.requests[i].arrival_s = 0.02 * i;
    burst.requests[i].finish_s = 0.02 * i + 1.5;
  }
  CHECK_FALSE(KeptUp(burst));
}

TEST_CASE("max rate at SLO: a short list of requests is not taken for a stream") {
  ServingScenario s = Make("h100-sxm5-80gb", 8, "llama3-8b");
  s.serving.layout.unified = {.tp = 1, .replicas = 8};
  // Targets a burst of 64 requests meets at any rate: the search without the check that the
  // replicas keep up found 1997 requests/s for 64 and 1163 for 1500 (a prefill of 145k tokens a
  // second per H100, more than its FP8 peak computes); with it, 51 and 230.
  s.serving.slo.targets = {{SloMetric::kTtft, 99, 2}, {SloMetric::kTpot, 99, 0.1}};
  s.serving.requests.count = 1500;
  StatusOr<ServingReport> many = Serve(s, {});
  REQUIRE(many.ok());
  s.serving.requests.count = 64;
  StatusOr<ServingReport> few = Serve(s, {});
  REQUIRE(few.ok());
  CHECK(few->max_rate_at_slo > 0);
  // The short list finds no more than the long one.
  CHECK(few->max_rate_at_slo <= 1.03 * many->max_rate_at_slo);
}

TEST_CASE("the load against the capacity, and near it the span a 2% capacity error gives") {
  ServingScenario s = Make("h100-sxm5-80gb", 8, "llama3-8b");
  s.serving.layout.unified = {.tp = 1, .replicas = 8};
  s.serving.requests.count = 3000;
  s.serving.engine.max_seqs = 64;  // 375 requests a replica: a steady window all at once
  s.serving.requests.arrival = Arrival::Poisson(20);
  StatusOr<ServingReport> low = Serve(s, {.search_rate = false, .load = true});
  REQUIRE(low.ok());
  REQUIRE(low->load.has_value());
  CHECK(low->load->estimated);
  const double capacity = low->load->capacity_per_s;
  CHECK(capacity > 20);
  CHECK(low->load->load == doctest::Approx(20 / capacity));
  CHECK_FALSE(low->load->band);  // far from capacity: no span replayed
  // The capacity is the same requests all at once: what an offline replay serves.
  ServingScenario offline = s;
  offline.serving.requests.arrival = {};
  CHECK(Run(offline).requests_per_s == doctest::Approx(capacity));

  // At 95% of it the span is replayed; waits there grow with the load, and the 2% more load
  // costs TTFT more than the 2% less saves (the queue's delay is convex in the load).
  s.serving.requests.arrival = Arrival::Poisson(0.95 * capacity);
  StatusOr<ServingReport> near = Serve(s, {.search_rate = false, .load = true});
  REQUIRE(near.ok());
  REQUIRE(near->load.has_value());
  CHECK(near->load->load == doctest::Approx(0.95));
  REQUIRE(near->load->band);
  const LoadView& v = *near->load;
  CHECK(v.ttft_lo.mean < near->ttft.mean);
  CHECK(v.ttft_hi.mean > near->ttft.mean);
  CHECK(v.ttft_hi.mean - near->ttft.mean > near->ttft.mean - v.ttft_lo.mean);
  CHECK(v.tpot_lo.p50 > 0);
  CHECK(v.tpot_hi.p50 > 0);
  // Too few requests to keep the batches full: no capacity, so no view.
  ServingScenario few = s;
  few.serving.requests.count = 64 * 8;  // a batch a replica
  StatusOr<ServingReport> too_few = Serve(few, {.search_rate = false, .load = true});
  REQUIRE(too_few->load.has_value());
  CHECK_FALSE(too_few->load->estimated);
  CHECK_FALSE(too_few->load->band);
  // Without ServeOptions::load, or for arrivals that are not a rate, no view.
  CHECK_FALSE(Serve(s, {.search_rate = false})->load.has_value());
  CHECK_FALSE(Serve(offline, {.search_rate = false, .load = true})->load.has_value());
}

TEST_CASE("a closed loop's clients are whole however many replicas share them") {
  // One client on 8, 32 and 64 replicas: one request in flight, the same requests a second
  // (beyond 8 replicas the replay took a share of the clients, rounded up to one: 4x and 8x).
  ServingScenario s = Make("h100-sxm5-80gb", 64, "llama3-8b");
  s.serving.requests.arrival = {Arrival::Kind::kConcurrency, 0, 1, 1};
  s.serving.requests.count = 40;
  std::vector<double> rates;
  for (int64_t replicas : {8, 32, 64}) {
    s.serving.layout.unified = {.tp = 1, .replicas = replicas};
    const ServingReport r = Run(s);
    CAPTURE(replicas);
    CHECK(r.requests_per_s * r.e2e.mean == doctest::Approx(1).epsilon(0.02));
    rates.push_back(r.requests_per_s);
  }
  CHECK(rates[1] == doctest::Approx(rates[0]).epsilon(0.01));
  CHECK(rates[2] == doctest::Approx(rates[0]).epsilon(0.01));
  // Many clients on many replicas keep their count too (Little's law within 2%).
  s.serving.requests.arrival.concurrency = 100;
  s.serving.requests.count = 600;
  const ServingReport many = Run(s);
  CHECK(many.requests_per_s * many.e2e.mean == doctest::Approx(100).epsilon(0.02));
  // More clients than requests: all of them in flight at once, as with as many clients.
  s.serving.requests.count = 100;
  const ServingReport all = Run(s);
  s.serving.requests.arrival.concurrency = 100000;
  const ServingReport more = Run(s);
  CHECK(more.ttft.p50 == doctest::Approx(all.ttft.p50));
  CHECK(more.requests_per_s == doctest::Approx(all.requests_per_s));
  // No more clients than replicas: each on a replica of its own, so 100 clients answer alike on
  // 128 and on 65,536 replicas, replaying 64 of them (not 41,943).
  ServingScenario wide = Make("h100-sxm5-80gb", 65536, "llama3-8b");
  wide.serving.requests.arrival = {Arrival::Kind::kConcurrency, 0, 1, 100};
  wide.serving.requests.count = 600;
  wide.serving.layout.unified = {.tp = 1, .replicas = 65536};
  const ServingReport huge = Run(wide);
  wide.serving.layout.unified = {.tp = 1, .replicas = 128};
  const ServingReport some = Run(wide);
  CHECK(huge.requests_per_s == doctest::Approx(some.requests_per_s));
  CHECK(huge.ttft.p99 == doctest::Approx(some.ttft.p99));
  CHECK(huge.replicas_replayed == std::vector<int64_t>{64});
}

TEST_CASE("requests all at once on more replicas than replayed: each replica its share") {
  // Every request went to the 8 replayed replicas: 16,384 replicas' offline requests queued on
  // 8, TTFT P50 55 s where it is 28 ms. The same requests a replica answer alike at 8 and 64.
  ServingScenario s = Make("h100-sxm5-80gb", 64, "llama3-8b");
  s.serving.requests.count = 400;
  s.serving.layout.unified = {.tp = 1, .replicas = 8};
  const ServingReport eight = Run(s);
  s.serving.requests.count = 3200;
  s.serving.layout.unified = {.tp = 1, .replicas = 64};
  const ServingReport many = Run(s);
  CHECK(many.replicas_replayed == std::vector<int64_t>{8});
  CHECK(many.ttft.p50 == doctest::Approx(eight.ttft.p50).epsilon(0.02));
  CHECK(many.tokens_per_s == doctest::Approx(8 * eight.tokens_per_s).epsilon(0.02));
}

TEST_CASE("requests of one instant share the first iteration") {
  // Two prompts of 100 tokens all at once fit one iteration's budget: both are prefilled
  // together and see their first token at the same time (the first had run an iteration alone,
  // the second waited for it: TTFT 8.5 and 17.2 ms, 11 iterations where 10 serve them).
  ServingScenario s = Make("h100-sxm5-80gb", 1, "llama3-8b");
  s.serving.requests.input = {LengthDist::Kind::kFixed, 100, 0, 100, 100};
  s.serving.requests.output = {LengthDist::Kind::kFixed, 10, 0, 10, 10};
  s.serving.requests.count = 2;
  const ServingReport r = Run(s);
  CHECK(r.iterations == 10);
  CHECK(r.ttft.p50 == doctest::Approx(r.ttft.p99).epsilon(1e-9));
}

TEST_CASE(
    "a trace whose times start late: its run and its KV series count from its first arrival") {
  // Arrivals from 1,000 s: the report had said "1004.964 s simulated" and put the KV series in 2
  // of its 100 spans (counted from 0).
  ServingScenario s = Make("h100-sxm5-80gb", 1, "llama3-8b");
  s.serving.requests.arrival.kind = Arrival::Kind::kTrace;
  for (int i = 0; i < 40; ++i) {
    s.serving.requests.trace.push_back({1000.0 + 0.1 * i, 500, 50});
  }
  s.serving.requests.count = 40;
  const ServingReport late = Run(s);
  CHECK(late.makespan_s < 100);
  CHECK(late.kv.size() > 50);
  CHECK(late.kv.front().time_s == 0);
  for (TraceRow& row : s.serving.requests.trace) row.arrival_s -= 1000;
  const ServingReport early = Run(s);
  CHECK(late.makespan_s == doctest::Approx(early.makespan_s).epsilon(1e-6));
  CHECK(late.kv.size() == early.kv.size());
  // None served (each request longer than the KV cache holds): 0, not -1,000 s.
  for (TraceRow& row : s.serving.requests.trace) {
    row.arrival_s += 1000;
    row.input = int64_t{1} << 30;
  }
  const ServingReport none = Run(s);
  CHECK(none.makespan_s == 0);
}

TEST_CASE("a replay past 90 days of its clock stops with an error, never a saturated time") {
  // 20 requests at 0.03 an hour arrive over 28 days, within the scenario's limit; on 512
  // replicas the replay serves them on 8 at a 64th of the rate: 4.9 years. (A clamp past the
  // clock's int64 picoseconds once turned such an arrival negative: TTFT 9.2e6 s, exit 0.)
  ServingScenario s = Make("h100-sxm5-80gb", 512, "llama3-8b");
  s.serving.layout.unified = {.tp = 1, .replicas = 512};
  s.serving.requests.count = 20;
  s.serving.requests.arrival = Arrival::Poisson(0.03 / 3600);
  const StatusOr<ServingReport> r = Serve(s, {.search_rate = false});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().exit_code() == 2);
  CHECK(r.status().message().find("passed 90 days of simulated time") != std::string::npos);
}

TEST_CASE("one output token: no TPOT to time, its target holds, and the KV peak is the prompts'") {
  ServingScenario s = Make("h100-sxm5-80gb", 8, "llama3-8b");
  s.serving.requests.output = LengthDist::Fixed(1);
  s.serving.requests.arrival = Arrival::Poisson(20);
  s.serving.slo.targets = {{SloMetric::kTtft, 99, 2.0}, {SloMetric::kTpot, 99, 0.1}};
  const ServingReport r = Run(s);
  CHECK(r.tpot.count == 0);
  CHECK(r.ttft.count == static_cast<size_t>(r.served));
  REQUIRE(r.slo.size() == 2);
  CHECK(r.slo[1].met);  // no token after the first: nothing misses 100 ms
  CHECK(r.meets_slo == (r.slo[0].met && r.rejected == 0));
  // Each prompt's KV is written before it finishes and frees it: the peak holds at least one.
  CHECK(r.kv_peak_bytes > 0);
}

TEST_CASE("targets no rate holds: a highest rate of 0, not the clock's error") {
  // 2,000 prompts of 8k tokens on one TP8 replica of a 405B model, and a TTFT target of 1 ms:
  // the search halves the rate down to a 2048th of the capacity, whose requests would arrive
  // over 4 months; such a rate holds nothing without a replay (it stopped the search with the
  // replay clock's error).
  ServingScenario s = Make("h100-sxm5-80gb", 8, "llama3-405b");
  s.serving.layout.unified = {.tp = 8, .replicas = 1};
  s.serving.requests.input = {LengthDist::Kind::kLognormal, 8000, 0.5, 1, 20000};
  s.serving.requests.output = {LengthDist::Kind::kLognormal, 600, 0.5, 1, 4000};
  s.serving.requests.count = 2000;
  s.serving.requests.arrival = Arrival::Poisson(0.3);
  s.serving.slo.targets = {{SloMetric::kTtft, 99, 0.001}};
  const StatusOr<ServingReport> r = Serve(s, {.search_rate = true});
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  CHECK(r->max_rate_at_slo == 0);
  CHECK(r->max_rate_note.find("none: the targets are missed at every rate") == 0);
}

TEST_CASE("one request, or one burst: the highest rate is not judged, not 0 that holds") {
  // It printed "max rate at SLO 0 requests/s (Poisson) holds every target" beside targets met.
  ServingScenario s = Make("h100-sxm5-80gb", 8, "llama3-8b");
  s.serving.layout.unified = {.tp = 1, .replicas = 8};
  s.serving.slo.targets = {{SloMetric::kTtft, 99, 1}, {SloMetric::kTpot, 99, 0.05}};
  s.serving.requests.count = 1;
  const StatusOr<ServingReport> one = Serve(s, {.search_rate = true});
  REQUIRE_MESSAGE(one.ok(), one.status().message());
  CHECK(one->meets_slo);
  CHECK(one->max_rate_at_slo == -1);
  CHECK(one->max_rate_note.find("not judged") == 0);
  s.serving.requests.count = 500;
  s.serving.requests.arrival = {Arrival::Kind::kPoisson, 20, 500, 0};
  const StatusOr<ServingReport> burst = Serve(s, {.search_rate = true});
  REQUIRE_MESSAGE(burst.ok(), burst.status().message());
  CHECK(burst->max_rate_at_slo == -1);
  CHECK(burst->max_rate_note.find("not judged") == 0);
}

TEST_CASE("max rate at SLO: less work per request never lowers it") {
  // Counting the second half's own arrivals, a 99% prefix-cache hit held 107.7 requests a second
  // where none held 157.8: 255 Poisson arrivals against 245 finishes read as falling behind.
  ServingScenario s = Make("h100-sxm5-80gb", 8, "llama3-8b");
  s.serving.layout.unified = {.tp = 1, .replicas = 8};
  s.serving.requests.input = LengthDist::Fixed(512);
  s.serving.requests.output = LengthDist::Fixed(128);
  s.serving.requests.count = 500;
  s.serving.slo.targets = {{SloMetric::kTtft, 99, 1}, {SloMetric::kTpot, 99, 0.05}};
  std::vector<double> rates;
  for (double hit : {0.0, 0.5, 0.9, 0.99}) {
    s.serving.requests.prefix_hit = hit;
    const StatusOr<ServingReport> r = Serve(s, {.search_rate = true});
    REQUIRE_MESSAGE(r.ok(), r.status().message());
    rates.push_back(r->max_rate_at_slo);
  }
  CAPTURE(rates);
  for (size_t i = 1; i < rates.size(); ++i) CHECK(rates[i] >= rates[i - 1] / kRateTolerance);
  CHECK(rates.back() > 1.1 * rates.front());
}

TEST_CASE("max rate at SLO: a short list is replayed longer where its arrivals pass too soon") {
  // Llama 3 8B on eight H100 as TP1 x8, 500 requests of 512 + 128 tokens. Above about 160 a
  // second the 500 arrivals pass in less than twice a request's time in the system, and nearer
  // the capacity the queue fills for longer than they last, so no replay of them could be
  // judged kept up and the search answered 157.8, the count's limit rather than the replicas';
  // 4,000 requests hold about 600, and the 500 replayed longer where they must come within 10%.
  ServingScenario s = Make("h100-sxm5-80gb", 8, "llama3-8b");
  s.serving.layout.unified = {.tp = 1, .replicas = 8};
  s.serving.requests.input = LengthDist::Fixed(512);
  s.serving.requests.output = LengthDist::Fixed(128);
  s.serving.slo.targets = {{SloMetric::kTtft, 99, 1}, {SloMetric::kTpot, 99, 0.05}};
  std::vector<double> rates;
  for (int64_t count : {500, 4000}) {
    s.serving.requests.count = count;
    const StatusOr<ServingReport> r = Serve(s, {.search_rate = true});
    REQUIRE_MESSAGE(r.ok(), r.status().message());
    rates.push_back(r->max_rate_at_slo);
  }
  CAPTURE(rates);
  CHECK(rates[0] > 2 * 157.8);
  CHECK(rates[0] == doctest::Approx(rates[1]).epsilon(0.1));
}

TEST_CASE("max rate at SLO: a longer stream repeats the scenario's own requests, no new ones") {
  // Llama 3 70B (FP8, bf16 KV) on two TP4 replicas, 130 prompts of a heavy-tailed length (a
  // lognormal of sigma 2 around 1,000 tokens) and a tenth of the memory for KV: every one of
  // the 130 fits a replica's cache and the targets hold. A longer stream of new draws had
  // brought a prompt longer than the cache, turned away at every rate, and the search answered
  // 0 ("missed at every rate") where the scenario's own requests hold about 12 a second.
  ServingScenario s = testing::ServingOn("h100-sxm5-80gb", 8, "llama3-70b");
  s.serving.precision.kv = ServeDtype::kBf16;
  s.serving.requests.input = {LengthDist::Kind::kLognormal, 1000, 2.0, 1, 1000000};
  s.serving.requests.output = {LengthDist::Kind::kLognormal, 250, 0.6, 1, 2048};
  s.serving.requests.count = 130;
  s.serving.engine.kv_fraction = 0.1;
  s.serving.layout.unified = {.tp = 4, .replicas = 2};
  s.serving.slo.targets = {{SloMetric::kTtft, 90, 5.0}, {SloMetric::kTpot, 90, 0.2}};
  const StatusOr<ServingReport> r = Serve(s, {.search_rate = true});
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  CHECK(r->rejected == 0);
  CHECK(r->meets_slo);
  CAPTURE(r->max_rate_note);
  CHECK(r->max_rate_at_slo > 5);
}

TEST_CASE("data-parallel attention: a lone prompt's attention runs on one rank, not an eighth") {
  // DeepSeek-V3 (FP8) on 8 H200 as TP8, one 32K-token prompt. With the attention data-parallel
  // the prompt lies on one rank, whose attention computes all its 5.4e8 causal pairs a layer
  // (2.7e15 FLOPs over 61 layers, about 7.5 s): it cannot prefill faster than on TP8, where the
  // heads split it over eight GPUs. It had been priced at an eighth of its pairs: 1.43 s.
  ServingScenario s = testing::ServingOn("h200-sxm-141gb", 8, "deepseek-v3");
  s.serving.requests.input = LengthDist::Fixed(32768);
  s.serving.requests.output = LengthDist::Fixed(2);
  s.serving.requests.count = 1;
  s.serving.layout.unified.tp = 8;
  const double tp8 = Run(s).ttft.p50;
  s.serving.layout.unified.dp_attention = true;
  const double dp = Run(s).ttft.p50;
  CHECK(dp > tp8);
  CHECK(dp > 7.0);
}

TEST_CASE("a model that does not fit is a result, not an error") {
  ServingScenario s = Make("h100-sxm5-80gb", 1, "llama3-405b");
  s.serving.precision = {};
  s.serving.requests.count = 10;
  const ServingReport r = Run(s);
  CHECK_FALSE(r.fits);
  CHECK(r.fit_reason.find("leave no room for KV") != std::string::npos);
  CHECK(r.served == 0);
}

// Two requests of a 200,000-token prompt and 4 tokens out on one H100.
ServingScenario LongPrompt(const std::string& model) {
  ServingScenario s = Make("h100-sxm5-80gb", 1, model);
  s.serving.requests.count = 2;
  s.serving.requests.input = LengthDist::Fixed(200000);
  s.serving.requests.output = LengthDist::Fixed(4);
  return s;
}

TEST_CASE(
    "a fused MoE kernel runs a long prompt's routed experts in chunks, its buffers a chunk's") {
  // Qwen3-30B-A3B on one H100, a 200,000-token prompt run whole. Unchunked, its routed experts'
  // widest GEMM would hold 200,000 x 8 copies x (2,048 + 1,536) columns (11.5 GB at 16 bits);
  // vLLM's fused MoE runs 16,384 tokens at a time (VLLM_FUSED_MOE_CHUNK_SIZE), whose 1.0 GB
  // is under the attention's QKV GEMM's 200,000 x (2,048 + 5,120) columns (2.9 GB), which then
  // is the widest. The buffers had been the whole prompt's (8.0 GiB more).
  ServingScenario s = LongPrompt("qwen3-30b-a3b");
  s.serving.engine.chunked_prefill = false;
  const ServingSystem chunks = *ServingSystem::Build(s);
  s.serving.engine.moe_chunk_tokens = 0;
  const ServingSystem one_pass = *ServingSystem::Build(s);
  const double rows = 200003;  // the prompt and, prefilled again after a preemption, its output
  CHECK(one_pass.pool(0).memory().activations - chunks.pool(0).memory().activations ==
        doctest::Approx((rows * 8 * 3584 - rows * 7168) * 2).epsilon(1e-6));
  // The layer's input and residual, the QKV GEMM, and 256 sequences' fp32 logits. The graph's
  // dense layer, which this model never runs (its 2,048 + 11,264 columns), had been the widest.
  CHECK(chunks.pool(0).memory().activations ==
        doctest::Approx((rows * 2 * 2048 + rows * 7168) * 2 + 256.0 * 151936 * 4).epsilon(1e-9));
  // Under EP each rank's kernel takes its own chunk: Qwen3-30B-A3B on TP8 EP8 with a budget of
  // 131,072 tokens, every rank's routed copies (131,072 x 8 / 8, times the busiest rank's excess)
  // capped at a chunk's 16,384 x 8 rows of 2,048 + 1,536 columns, now the widest (the QKV
  // GEMM's 2,048 + 640); the chunk had been taken before the EP split, an eighth of that.
  {
    ServingScenario e = Make("h100-sxm5-80gb", 8, "qwen3-30b-a3b");
    e.serving.layout.unified = {.tp = 8, .ep = 8};
    e.serving.engine.max_num_tokens = 131072;
    const double act = ServingSystem::Build(e)->pool(0).memory().activations;
    CHECK(act ==
          doctest::Approx((131072.0 * 2 * 2048 + 16384.0 * 8 * 3584) * 2 + 256.0 * (151936 / 8) * 4)
              .epsilon(1e-9));
    e.serving.engine.moe_chunk_tokens = 0;
    CHECK(ServingSystem::Build(e)->pool(0).memory().activations > act);
  }
  // Within a chunk, the experts' buffers are the batch's: a budget of 8,192 tokens is unchanged.
  s.serving.engine.chunked_prefill = true;
  const ServingSystem budget_one_pass = *ServingSystem::Build(s);
  s.serving.engine.moe_chunk_tokens = 16384;
  CHECK(ServingSystem::Build(s)->pool(0).memory().activations ==
        budget_one_pass.pool(0).memory().activations);
}

TEST_CASE(
    "unchunked, a prompt longer than the budget holds its own live tensors, not the budget's") {
  // A 200,000-token prompt on one H100 runs whole, alone in its iteration (ReplicaScheduler):
  // its layer's input, residual and widest GEMM (Llama 3 8B: 2 x 4096 + 4096 + 2 x 14336
  // columns, 16-bit) take 200,000 x 40,960 x 2 B = 16.4 GB, where the 8,192-token budget's
  // take 0.67 GB; the KV cache gets what is left (it had kept the budget's 0.8 GB and 14 GiB of
  // KV that was not there).
  ServingScenario s = LongPrompt("llama3-8b");
  s.serving.engine.max_num_tokens = 8192;
  s.serving.engine.chunked_prefill = true;
  const ServingSystem chunked = *ServingSystem::Build(s);
  s.serving.engine.chunked_prefill = false;
  const ServingSystem whole = *ServingSystem::Build(s);
  const double live = 200000.0 * (2 * 4096 + 4096 + 2 * 14336) * 2;
  CHECK(chunked.pool(0).memory().activations < 0.1 * live);
  CHECK(whole.pool(0).memory().activations >= live);
  CHECK(whole.pool(0).memory().activations < 1.1 * live);
  CHECK(whole.pool(0).memory().kv_bytes ==
        doctest::Approx(
            chunked.pool(0).memory().kv_bytes -
            0.9 * (whole.pool(0).memory().activations - chunked.pool(0).memory().activations)));
  // Under preemption a prompt is prefilled again with what it generated: up to 200,003 tokens.
  CHECK(
      whole.pool(0).memory().activations - live ==
      doctest::Approx(chunked.pool(0).memory().activations - 8192.0 * 40960 * 2 + 3.0 * 40960 * 2));
  // Disaggregated: the prefill pool runs the prompt whole; the decode pool, which prefills again
  // what it preempts (the prompt and what it generated), holds as much under preemption.
  s.serving.layout.disaggregated = true;
  s.serving.layout.prefill = {.tp = 1, .replicas = 1};
  s.serving.layout.decode = {.tp = 1, .replicas = 1};
  const ServingSystem split = *ServingSystem::Build(s);
  CHECK(split.pool(0).memory().activations ==
        doctest::Approx(whole.pool(0).memory().activations - 3.0 * 40960 * 2));
  CHECK(split.pool(1).memory().activations == whole.pool(0).memory().activations);
  s.serving.engine.preempt = false;
  CHECK(ServingSystem::Build(s)->pool(1).memory().activations ==
        chunked.pool(0).memory().activations);
  s.serving.engine.preempt = true;
  s.serving.layout.disaggregated = false;
  // Prompts within the budget keep the budget's, chunked or not.
  s.serving.requests.input = LengthDist::Fixed(1000);
  CHECK(ServingSystem::Build(s)->pool(0).memory().activations ==
        chunked.pool(0).memory().activations);
}

}  // namespace
}  // namespace parasim
