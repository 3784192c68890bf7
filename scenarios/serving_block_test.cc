#include "scenarios/serving_block.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "scenarios/block_testing.h"
#include "sim/yaml_reader.h"

namespace parasim {
namespace {

Status Read(const std::string& text, ServingSpec* sv) {
  return testing::ReadBlock(text, "serving", [&](const YamlContext& ctx, const YAML::Node& n) {
    return ParseServing(ctx, n, ".", sv);
  });
}

Status ReadLayout(const std::string& text, int64_t gpus, ServingLayout* l) {
  return testing::ReadBlock(text, "parallelism", [&](const YamlContext& ctx, const YAML::Node& n) {
    return ParseServingLayout(ctx, n, gpus, l);
  });
}

TEST_CASE("a serving block: formats, lengths, arrivals, targets, policy") {
  ServingSpec sv;
  REQUIRE(Read("serving:\n"
               "  precision: fp8\n"
               "  weights: fp4\n"
               "  kv_dtype: fp8\n"
               "  requests:\n"
               "    input_tokens: {lognormal: {mean: 800, sigma: 0.6}, max: 1024}\n"
               "    output_tokens: {uniform: [100, 300]}\n"
               "    arrival: {rate: 1200/min, burst: 4}\n"
               "    count: 500\n"
               "    prefix_cache_hit: 0.25\n"
               "    seed: 7\n"
               "  slo: {ttft_p99: 2s, tpot_p90: 50ms, e2e_p99.9: 1min}\n"
               "  engine: {max_num_tokens: 2048, max_seqs: 64, chunked_prefill: false,\n"
               "           block_size: 32, kv_fraction: 0.8, preemption: none,\n"
               "           cuda_graphs: false, iteration_overhead: 2ms}\n",
               &sv)
              .ok());
  CHECK(sv.precision.weights == ServeDtype::kFp4);
  CHECK(sv.precision.activations == ServeDtype::kFp8);
  CHECK(sv.precision.kv == ServeDtype::kFp8);
  CHECK(sv.requests.input.kind == LengthDist::Kind::kLognormal);
  CHECK(sv.requests.input.a == 800);
  CHECK(sv.requests.input.b == doctest::Approx(0.6));
  CHECK(sv.requests.input.max == 1024);
  CHECK(sv.requests.output.kind == LengthDist::Kind::kUniform);
  CHECK(sv.requests.output.Mean() == 200);
  CHECK(sv.requests.arrival.kind == Arrival::Kind::kPoisson);
  CHECK(sv.requests.arrival.rate_per_s == doctest::Approx(20));
  CHECK(sv.requests.arrival.burst == 4);
  CHECK(sv.requests.count == 500);
  CHECK(sv.requests.prefix_hit == doctest::Approx(0.25));
  CHECK(sv.requests.seed == 7);
  REQUIRE(sv.slo.targets.size() == 3);
  CHECK(sv.slo.targets[0].Key() == "ttft_p99");
  CHECK(sv.slo.targets[0].seconds == doctest::Approx(2));
  CHECK(sv.slo.targets[1].Key() == "tpot_p90");
  CHECK(sv.slo.targets[2].Key() == "e2e_p99.9");
  CHECK(sv.slo.targets[2].seconds == doctest::Approx(60));
  CHECK(sv.engine.max_num_tokens == 2048);
  CHECK(sv.engine.max_seqs == 64);
  CHECK_FALSE(sv.engine.chunked_prefill);
  CHECK(sv.engine.block_size == 32);
  CHECK(sv.engine.kv_fraction == doctest::Approx(0.8));
  CHECK_FALSE(sv.engine.preempt);
  CHECK_FALSE(sv.engine.cuda_graphs);
  CHECK(sv.engine.iteration_overhead->seconds() == doctest::Approx(2e-3));
  // vLLM's engine: a long-prefill cap, piecewise graphs up to its largest capture size.
  ServingSpec v;
  REQUIRE(Read("serving:\n  engine: {long_prefill_threshold: 256, cuda_graphs: piecewise,\n"
               "           cuda_graph_max_tokens: 4232, moe_chunk_tokens: 65536}\n",
               &v)
              .ok());
  CHECK(v.engine.moe_chunk_tokens == 65536);
  CHECK(sv.engine.moe_chunk_tokens == 16384);  // vLLM's VLLM_FUSED_MOE_CHUNK_SIZE
  CHECK(v.engine.long_prefill_threshold == 256);
  CHECK(v.engine.cuda_graphs);
  CHECK(v.engine.piecewise_graphs);
  CHECK(v.engine.graph_max_tokens == 4232);
  CHECK_FALSE(sv.engine.piecewise_graphs);
  CHECK(sv.engine.host_ops_per_op == 0);  // the host keeps ahead unless told
  // Megatron-Core's dynamic engine: mixed steps captured whole, its Python's calls priced.
  ServingSpec m;
  REQUIRE(
      Read("serving:\n  engine: {cuda_graphs: mixed, cuda_graph_max_tokens: 64,\n"
           "           host_ops_per_op: 9.1, host_ops_per_graph: 5.3, cuda_graph_scope: layer}\n",
           &m)
          .ok());
  CHECK(m.engine.layer_graphs);
  CHECK(m.engine.host_ops_per_graph == doctest::Approx(5.3));
  CHECK_FALSE(sv.engine.layer_graphs);
  CHECK(m.engine.cuda_graphs);
  CHECK(m.engine.mixed_graphs);
  CHECK_FALSE(m.engine.piecewise_graphs);
  CHECK(m.engine.graph_max_tokens == 64);
  CHECK(m.engine.host_ops_per_op == doctest::Approx(9.1));
  CHECK_FALSE(v.engine.mixed_graphs);
}

TEST_CASE("bad serving input is located and says what is accepted") {
  ServingSpec sv;
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"serving: {precision: fp6}\n",
       "x.yaml:1:22: error: serving.precision: 'fp6' is not accepted; expected one of: bf16, fp16, "
       "fp8, fp4 (did you mean 'fp16'?)"},
      {"serving: {requests: {arrival: {rate: 20}}}\n",
       "x.yaml:1:38: error: serving.requests.arrival.rate: expected requests per unit of time, "
       "e.g. 20/s, 1200/min or 0.5/s, got '20'"},
      {"serving: {requests: {input_tokens: {normal: 3}}}\n",
       "x.yaml:1:37: error: serving.requests.input_tokens.normal: unknown key 'normal'"},
      {"serving: {requests: {arrival: {rate: 2/s, concurrency: 4}}}\n",
       "x.yaml:1:31: error: serving.requests.arrival: give one of rate or concurrency"},
      {"serving: {slo: {ttft_p98: 1s}}\n",
       "x.yaml:1:17: error: serving.slo.ttft_p98: unknown key 'ttft_p98'"},
      {"serving: {slo: {ttft_p99: 2}}\n", "x.yaml:1:27: error: serving.slo.ttft_p99:"},
      {"serving: {engine: {preemption: swap}}\n",
       "x.yaml:1:32: error: serving.engine.preemption: 'swap' is not accepted; expected one of: "
       "recompute, none"},
      {"serving: {engine: {cuda_graphs: full}}\n",
       "x.yaml:1:33: error: serving.engine.cuda_graphs: expected true, false, piecewise or "
       "mixed"},
      {"serving: {engine: {host_ops_per_op: -1}}\n",
       "x.yaml:1:37: error: serving.engine.host_ops_per_op: expected a number from 0 to 10000"},
      {"serving: {engine: {cuda_graphs: piecewise, cuda_graph_scope: layer}}\n",
       "x.yaml:1:62: error: serving.engine.cuda_graph_scope: layer applies to cuda_graphs: true "
       "or mixed"},
      {"serving: {engine: {cuda_graph_scope: block}}\n",
       "x.yaml:1:38: error: serving.engine.cuda_graph_scope: 'block' is not accepted; expected "
       "one of: whole, layer"},
      {"serving: {requests: {trace: missing.csv}}\n",
       "x.yaml:1:29: error: serving.requests.trace: cannot read the trace file"},
      // A device would be read without end (found by fuzzing).
      {"serving: {requests: {trace: /dev/zero}}\n",
       "x.yaml:1:29: error: serving.requests.trace: /dev/zero is not a regular file; expected a "
       "text file of 'arrival_s, input_tokens, output_tokens' lines"},
      {"serving: {requests: {output_tokens: {uniform: [300, 100]}}}\n",
       "x.yaml:1:53: error: serving.requests.output_tokens.uniform[1]: expected an integer from "
       "300"},
      // The mean of a lognormal clipped below at its mean or above could not be met.
      {"serving: {requests: {input_tokens: {lognormal: {mean: 1000, sigma: 0.5}, min: 2000}}}\n",
       "x.yaml:1:79: error: serving.requests.input_tokens.min: the lognormal's mean (1000) must "
       "lie above min (2000)"},
      // The replay's clock (int64 picoseconds) holds 106 days: arrivals span at most 30.
      {"serving: {requests: {arrival: {rate: 1/h}, count: 2000}}\n",
       "x.yaml:1:31: error: serving.requests.arrival: 2000 requests at 0.000277778 a second "
       "arrive over 7.2e+06 s; the replay takes at most 2592000 s (30 days) of arrivals"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    const Status st = Read(c.text, &sv);
    REQUIRE_FALSE(st.ok());
    CHECK_MESSAGE(st.message().rfind(c.message, 0) == 0, st.message());
  }
}

TEST_CASE("a trace's bad row is told at the scenario's key and at the trace's line") {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/bad-trace.csv";
  std::ofstream(path) << "arrival_s,input,output\n0.5, 100, 20\n1.0, -3, 20\n";
  ServingSpec sv;
  const Status st = Read("serving: {requests: {trace: " + path + "}}\n", &sv);
  REQUIRE_FALSE(st.ok());
  CHECK_MESSAGE(st.message().rfind("x.yaml:1:29: error: serving.requests.trace: " + path +
                                       ":3: expected arrival_s, input_tokens, output_tokens",
                                   0) == 0,
                st.message());
}

TEST_CASE("a trace's arrivals fit the replay's clock") {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/late-trace.csv";
  std::ofstream(path) << "0, 100, 10\n1e30, 30, 20\n";
  ServingSpec sv;
  const Status st = Read("serving: {requests: {trace: " + path + "}}\n", &sv);
  REQUIRE_FALSE(st.ok());
  CHECK_MESSAGE(st.message().find(":2: expected arrival_s, input_tokens, output_tokens (seconds "
                                  "from 0 to 2592000, 30 days") != std::string::npos,
                st.message());
}

TEST_CASE("a trace holds no more requests than count may (2^22)") {
  // 40M rows within the 512 MiB cap had run out of memory.
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/long-trace.csv";
  {
    std::ofstream out(path);
    for (int i = 0; i <= (1 << 22); ++i) out << "0 1 1\n";
  }
  ServingSpec sv;
  const Status st = Read("serving: {requests: {trace: " + path + "}}\n", &sv);
  CHECK(st.message().find(":4194305: more than 4194304 requests") != std::string::npos);
}

TEST_CASE("a trace's header may follow comments; its tokens lie within the lengths' limit") {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/commented-trace.csv";
  std::ofstream(path) << "# from the gateway's log\n\narrival,in,out\n0.5, 100, 20\n1.0, 30, 20\n";
  ServingSpec sv;
  const Status ok = Read("serving: {requests: {trace: " + path + "}}\n", &sv);
  REQUIRE_MESSAGE(ok.ok(), ok.message());
  CHECK(sv.requests.trace.size() == 2);
  // A letter after the first row is an error, not a second header.
  const std::string late = std::string(std::getenv("TEST_TMPDIR")) + "/late-header.csv";
  std::ofstream(late) << "0.5, 100, 20\narrival,in,out\n";
  CHECK(Read("serving: {requests: {trace: " + late + "}}\n", &sv).message().find(":2: expected") !=
        std::string::npos);
  // 9e11 output tokens were accepted (a YAML length stops at 2^24).
  const std::string huge = std::string(std::getenv("TEST_TMPDIR")) + "/huge-trace.csv";
  std::ofstream(huge) << "0, 100, 900000000000\n";
  const Status st = Read("serving: {requests: {trace: " + huge + "}}\n", &sv);
  CHECK_MESSAGE(st.message().find(":1: expected arrival_s, input_tokens, output_tokens (seconds "
                                  "from 0 to 2592000, 30 days; tokens from 1 to 16777216)") !=
                    std::string::npos,
                st.message());
}

TEST_CASE("rates take a unit of time") {
  CHECK(*ParseRequestRate("20/s") == doctest::Approx(20));
  CHECK(*ParseRequestRate("90/min") == doctest::Approx(1.5));
  CHECK(*ParseRequestRate("7200/h") == doctest::Approx(2));
  CHECK_FALSE(ParseRequestRate("20").ok());
  CHECK_FALSE(ParseRequestRate("20/day").ok());
  CHECK_FALSE(ParseRequestRate("0/s").ok());
}

TEST_CASE("a layout: replicas auto, or a prefill and a decode pool") {
  ServingLayout l;
  REQUIRE(ReadLayout("parallelism: {tp: 2}\n", 8, &l).ok());
  CHECK(l.unified.tp == 2);
  CHECK(l.unified.replicas == 4);
  REQUIRE(ReadLayout("parallelism: {tp: 4, pp: 2, replicas: 1}\n", 16, &l).ok());
  CHECK(l.unified.replicas == 1);
  const Status dp = ReadLayout("parallelism: {tp: 8, dp_attention: true}\n", 8, &l);
  REQUIRE_MESSAGE(dp.ok(), dp.message());
  CHECK(l.unified.ep == 8);
  REQUIRE(ReadLayout("parallelism:\n  prefill: {tp: 2, replicas: 2}\n  decode: {tp: 4}\n", 16, &l)
              .ok());
  CHECK(l.disaggregated);
  CHECK(l.prefill.gpus() == 4);
  CHECK(l.decode.replicas == 3);
  CHECK(ReadLayout("parallelism: {tp: 16}\n", 8, &l)
            .message()
            .rfind("x.yaml:1:19: error: parallelism.tp: a replica of tp x pp = 16 GPUs does not "
                   "fit the 8 "
                   "GPUs left for it",
                   0) == 0);
  CHECK(
      ReadLayout("parallelism: {tp: 2, prefill: {tp: 1}}\n", 8, &l)
          .message()
          .rfind(
              "x.yaml:1:19: error: parallelism.tp: a disaggregated layout gives each pool its own",
              0) == 0);
  CHECK(ReadLayout("parallelism: {prefill: {tp: 1}, decode: {tp: 1}}\n", 8, &l)
            .message()
            .find("give the prefill pool's replicas") != std::string::npos);
  // Prefill replicas that take every GPU are told at their key (it said "does not fit the -6
  // GPUs left for it" at decode.tp).
  CHECK(ReadLayout("parallelism: {prefill: {tp: 1, replicas: 70}, decode: {tp: 1}}\n", 64, &l)
            .message()
            .find("parallelism.prefill.replicas: 70 prefill replicas of 1 GPU(s) each take 70 "
                  "of the cluster's 64 GPUs, leaving none for the decode pool") ==
        std::string("x.yaml:1:43: error: ").size());
}

Status ReadSweep(const std::string& text, ServingSweepSpec* sw) {
  return testing::ReadBlock(text, "sweep", [&](const YamlContext& ctx, const YAML::Node& n) {
    return ParseServingSweep(ctx, n, sw);
  });
}

TEST_CASE("a serving sweep's axes: a value listed twice spans its layouts once") {
  ServingSweepSpec sw;
  REQUIRE(ReadSweep("sweep: {gpus: [8, 8, 16], tp: [1, 1], disaggregated: [false, false]}\n", &sw)
              .ok());
  CHECK(sw.gpus == std::vector<int64_t>{8, 16});
  CHECK(sw.tp == std::vector<int>{1});
  CHECK(sw.disaggregated == std::vector<bool>{false});
  CHECK(ReadSweep("sweep: {disaggregated: []}\n", &sw)
            .message()
            .find("sweep.disaggregated: expected true, false, or a list") != std::string::npos);
}

}  // namespace
}  // namespace parasim
