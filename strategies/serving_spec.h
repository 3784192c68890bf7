// A serving problem: what a serving scenario (docs/SCENARIO.md, "Serving scenarios") states
// besides its cluster and model: the number formats, the requests (lengths, arrivals), the
// latency targets, the engine's policy and the layout of its replicas, and an optional sweep of
// layouts. The loader (scenarios/serving_block.h) reads YAML into these; the replay
// (strategies/serving_replay.h) and the sweep (strategies/serving_sweep.h) read them.
//
//   ServingSpec s;                                   // defaults: bf16, one TP1 replica
//   s.requests.input = LengthDist::Fixed(1024);
//   s.requests.arrival = Arrival::Poisson(20);       // 20 requests a second
//   s.slo.targets.push_back({SloMetric::kTtft, 99, 2.0});
//   s.layout.unified = {.tp = 4, .replicas = 2};
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hardware/spec.h"
#include "models/model_spec.h"
#include "sim/status.h"
#include "sim/units.h"

namespace parasim {

// Number formats of a served model: weights, activations (the GEMMs' inputs) and the KV cache.
enum class ServeDtype : uint8_t { kBf16, kFp16, kFp8, kFp4 };
std::string_view ServeDtypeName(ServeDtype d);
StatusOr<ServeDtype> ParseServeDtype(std::string_view s);
std::vector<std::string_view> ServeDtypeNames();  // bf16, fp16, fp8, fp4
// Bytes an element takes in memory, scales included. NVFP4 (NVIDIA's 4-bit format, which
// TensorRT-LLM serves): E2M1 values with one E4M3 scale per 16 of them (NVIDIA technical blog
// "Introducing NVFP4 for efficient and accurate low-precision inference", 2025), 0.5 + 1/16 bytes.
double ServeDtypeBytes(ServeDtype d);

struct ServingPrecision {
  ServeDtype weights = ServeDtype::kBf16;
  ServeDtype activations = ServeDtype::kBf16;
  ServeDtype kv = ServeDtype::kBf16;
};

// A distribution of token counts: fixed, uniform on [a, b], or lognormal with `b` the standard
// deviation of its logarithm and mean `a` tokens once clipped; every draw clipped to [min, max]
// when given.
struct LengthDist {
  enum class Kind : uint8_t { kFixed, kUniform, kLognormal };
  Kind kind = Kind::kFixed;
  double a = 128, b = 0;
  int64_t min = 1, max = 0;  // max 0: no upper clip
  static LengthDist Fixed(int64_t n) { return {Kind::kFixed, static_cast<double>(n), 0, 1, 0}; }
  double Mean() const;
  // The lognormal's log-mean mu that gives a mean of `a` after the clips at `min` and `max`:
  // E[clamp(X, m, M)] = m Phi((ln m - mu) / s) + e^(mu + s^2/2) [Phi((ln M - mu - s^2) / s) -
  // Phi((ln m - mu - s^2) / s)] + M (1 - Phi((ln M - mu) / s)), solved by bisection (near
  // ln(a) - s^2 / 2 where the clips are far). `a` must lie between `min` and `max`.
  double LogMean() const;
};

// How requests arrive: all at t = 0 (offline), a Poisson process (`burst` requests at a time,
// the bursts Poisson at rate / burst), a closed loop of `concurrency` clients each sending the
// next request when its last one finishes, or a trace's own arrival times.
// The replay's clock counts picoseconds in 64 bits (sim::Duration): 106.7 days. Arrivals span
// at most kMaxArrivalSpanS, which leaves the requests room to be served; a replay whose clock
// passes kMaxReplayClockS stops with an error instead of saturating.
inline constexpr double kMaxArrivalSpanS = 30.0 * 86400;  // 30 days (chosen)
// The most requests a scenario replays (serving.requests.count, a trace's rows); chosen (a
// trace of 40M rows had run out of memory).
inline constexpr int64_t kMaxServedRequests = int64_t{1} << 22;
inline constexpr double kMaxReplayClockS = 90.0 * 86400;  // below 2^63 ps = 106.7 days

struct Arrival {
  enum class Kind : uint8_t { kOffline, kPoisson, kConcurrency, kTrace };
  Kind kind = Kind::kOffline;
  double rate_per_s = 0;
  int64_t burst = 1;
  int64_t concurrency = 0;
  static Arrival Poisson(double rate) { return {Kind::kPoisson, rate, 1, 0}; }
};

// One row of a trace file: a request's arrival (seconds from the start), input and output
// tokens.
struct TraceRow {
  double arrival_s = 0;
  int64_t input = 0, output = 0;
};

struct RequestSpec {
  LengthDist input;
  LengthDist output;
  Arrival arrival;
  int64_t count = 1000;  // requests replayed (a trace's rows when a trace is given)
  // The share of each prompt whose KV a prefix cache already holds: not computed again, but it
  // is attended to and held.
  double prefix_hit = 0;
  uint64_t seed = 1;
  std::vector<TraceRow> trace;  // from requests.trace; empty without one
  // Not a scenario key: a rate search's longer stream (serving_report's LongerStream), `count`
  // drawn requests' lengths repeated in order to this many, so that the stream judged holds the
  // scenario's own requests and no others; 0 or at most `count`: `count`.
  int64_t repeat_to = 0;
};

enum class SloMetric : uint8_t { kTtft, kTpot, kE2e };
std::string_view SloMetricName(SloMetric m);  // ttft, tpot, e2e
// A latency target: the `percentile` (0-100] of `metric` over requests at most `seconds`.
struct SloTarget {
  SloMetric metric = SloMetric::kTtft;
  double percentile = 99;
  double seconds = 0;
  std::string Key() const;  // "ttft_p99", "tpot_p99.9"
};
struct Slo {
  std::vector<SloTarget> targets;
  bool empty() const { return targets.empty(); }
};

// The serving engine's scheduling policy (vLLM, SGLang, TensorRT-LLM: continuous batching of
// iterations under a token budget, a paged KV cache).
struct EnginePolicy {
  // Tokens one iteration computes (prefill chunks plus one per decoding sequence): vLLM's
  // max_num_batched_tokens, TensorRT-LLM's max_num_tokens (its default 8192, TensorRT-LLM
  // docs, "Tuning max batch size and max num tokens").
  int64_t max_num_tokens = 8192;
  // Sequences one iteration holds: vLLM's max_num_seqs, TensorRT-LLM's max_batch_size (vLLM's
  // default 256, vllm/config EngineArgs).
  int64_t max_seqs = 256;
  // A prompt split over iterations to fill the token budget beside the decodes (Sarathi-Serve,
  // OSDI'24; vLLM V1's default); off: a prompt enters whole or waits.
  bool chunked_prefill = true;
  // The most prompt tokens one sequence computes in an iteration, 0: no cap beyond the budget
  // (vLLM's long_prefill_token_threshold: its V1 scheduler cuts a longer chunk to this many
  // tokens, so that several prompts advance together; vllm/v1/core/sched/scheduler.py).
  int64_t long_prefill_threshold = 0;
  int64_t block_size = 16;  // tokens per KV block (vLLM's default, PagedAttention, SOSP'23)
  // The share of the memory left after weights and activations given to the KV cache
  // (TensorRT-LLM's kv_cache_free_gpu_mem_fraction, default 0.9).
  double kv_fraction = 0.9;
  // When the KV cache is full: recompute (vLLM's default: the newest running request gives
  // its blocks back and is prefilled again later), or none: a request is admitted only with
  // blocks for its whole output reserved (TensorRT-LLM's GUARANTEED_NO_EVICT).
  bool preempt = true;
  // Decode-only iterations replayed as one CUDA graph: no launch overhead per kernel
  // (TensorRT-LLM captures generation-only batches).
  bool cuda_graphs = true;
  // Every iteration of at most graph_max_tokens tokens replayed as CUDA graphs between its
  // attention kernels, which launch one by one: vLLM V1's piecewise capture (vLLM docs,
  // "CUDA Graphs": PIECEWISE mode; its largest capture size, `cuda_graph_sizes`, 512 by default).
  bool piecewise_graphs = false;
  // Every iteration of at most graph_max_tokens tokens, prompt chunks included, replayed as
  // CUDA graphs, and decode-only iterations at any size: Megatron-Core's dynamic engine
  // (use_cuda_graphs_for_non_decode_steps, its default, with cuda_graph_max_tokens 512:
  // megatron/core/inference/config.py at NVIDIA/Megatron-LM d98e8a6).
  bool mixed_graphs = false;
  // A captured iteration as one graph a layer, launched one after another, with the embedding
  // and the head run eagerly: Megatron-Core's inference graphs (--inference-cuda-graph-scope
  // layer, the default of its local implementation: megatron/core/transformer/
  // cuda_graph_config.py normalize_inference_cuda_graph_scope; transformer_layer.py gives each
  // layer its CudaGraphManager). false: one graph an iteration.
  bool layer_graphs = false;
  int64_t graph_max_tokens = 512;
  // The most tokens a fused MoE kernel takes at once: a longer batch runs its routed experts in
  // chunks of this many, whose intermediate buffers (tokens x top_k rows) are all it holds (vLLM's
  // VLLM_FUSED_MOE_CHUNK_SIZE, 16 * 1024 in vllm/envs.py; fused_experts_impl sizes its caches
  // min(tokens, chunk)); 0: one pass over every token.
  int64_t moe_chunk_tokens = 16384;
  // Host time per iteration before its kernels start (scheduling, sampling, detokenising);
  // unset: kDefaultIterationOverhead (strategies/serving_cost.h).
  std::optional<Duration> iteration_overhead;
  // The host's time for each op of the layer graph (a module's call, a collective's) the engine
  // runs outside a CUDA graph, in framework ops of the training replay's host model
  // (GpuSpec::host_op_time, fitted per host type): an eager engine's Python between launches.
  // A stage takes at least its calls' time. Zero: the host keeps ahead of the GPU (TensorRT-LLM's
  // C++ executor, vLLM V1's graphs); the Megatron-LM cases state their engine's, fitted
  // (docs/SERVING.md).
  double host_ops_per_op = 0;
  // The host's time for each CUDA graph it launches (a whole iteration's, a piece's, a layer's),
  // in the same framework ops; 0 by default.
  double host_ops_per_graph = 0;
};

// One pool's replicas: each tp x pp GPUs; experts over ep of the tp ranks (ep divides tp), or
// with dp_attention the attention data-parallel over the tp ranks (each its own sequences and
// KV, the attention's weights whole on each) and the experts over all of them.
struct PoolLayout {
  int tp = 1;
  int pp = 1;
  int ep = 1;
  int64_t replicas = 1;
  bool dp_attention = false;
  // The engine's token budget and sequence cap for this pool's replicas (a disaggregated
  // layout's pools run engines of their own); 0: the scenario's engine's.
  int64_t max_num_tokens = 0;
  int64_t max_seqs = 0;
  int64_t gpus_per_replica() const { return static_cast<int64_t>(tp) * pp; }
  int64_t gpus() const { return gpus_per_replica() * replicas; }
  bool operator==(const PoolLayout&) const = default;
};

// The cluster's GPUs as one pool of replicas doing both phases, or disaggregated: a prefill
// pool and a decode pool, each request's KV moved from one to the other over the fabric
// (DistServe, OSDI'24; Splitwise, ISCA'24).
struct ServingLayout {
  PoolLayout unified;
  bool disaggregated = false;
  PoolLayout prefill, decode;
  int64_t gpus() const { return disaggregated ? prefill.gpus() + decode.gpus() : unified.gpus(); }
  bool operator==(const ServingLayout&) const = default;
};
// "tp4 pp1 x2" or "prefill tp4 x3 + decode tp8 x1".
std::string FormatServingLayout(const ServingLayout& l);

// A serving sweep: layouts over the cluster's GPUs (replicas = GPUs / (tp x pp)), and with
// `disaggregated` the splits of the GPUs between a prefill and a decode pool.
struct ServingSweepSpec {
  std::vector<int> tp, pp, ep;  // empty: the powers of two that fit (ep: 1 and tp for MoE)
  std::vector<bool> disaggregated = {false};
  std::vector<int64_t> gpus;  // GPUs to lay out; empty: the cluster's
  int top = 10;
};

struct ServingSpec {
  ServingPrecision precision;
  RequestSpec requests;
  Slo slo;
  EnginePolicy engine;
  ServingLayout layout;
  std::optional<ServingSweepSpec> sweep;
};

// A serving scenario: cluster x model x serving.
struct ServingScenario {
  std::string name;
  std::string file;
  ClusterSpec cluster;
  ModelSpec model;
  ServingSpec serving;
};

// What is wrong with a pool's layout on a model and cluster: the key at fault and why, or none.
struct ServingLayoutProblem {
  std::string key;  // "tp", "ep", "replicas", ...
  std::string message;
};
std::optional<ServingLayoutProblem> CheckPoolLayout(const PoolLayout& p, const ModelSpec& m);
// The layout's GPUs against the cluster's, and each pool's layout.
// A replay serves a share of the replicas, kMaxReplayedReplicas of the largest pool, the others
// in its ratio: each pool's replayed replicas within kPoolRatioTolerance of the first pool's
// share of its own (chosen: the 1% a closed loop's client share keeps), replaying more of the
// largest pool where 8 cannot keep it (24 prefill and 1 decode replicas replay whole), up to
// kMaxRatioReplicas (chosen: a replay's events scan its replicas, so 65,535 + 1 took 11 s for
// 2,000 requests and minutes for 20,000; a layout whose ratio needs more is refused).
inline constexpr int64_t kMaxReplayedReplicas = 8;
inline constexpr double kPoolRatioTolerance = 0.01;
inline constexpr int64_t kMaxRatioReplicas = 1024;
// The replicas replayed of each pool (`pools`: replicas per pool, the first's share counting),
// the largest pool's replayed share at least `least`; returns the first pool's share.
double ReplayedPools(const std::vector<int64_t>& pools, std::vector<int64_t>* replayed,
                     double least = 0);

std::optional<ServingLayoutProblem> CheckServingLayout(const ServingLayout& l, const ModelSpec& m,
                                                       const ClusterSpec& c);
// What the number formats ask of the GPU: its tensor cores for the activations' format.
std::optional<ServingLayoutProblem> CheckServingPrecision(const ServingPrecision& p,
                                                          const GpuSpec& g);

}  // namespace parasim
