// The cost of one serving iteration on one replica, stage by stage, and what a replica holds in
// memory. An iteration is a batch of prompt chunks (prefill) and of sequences decoding one token
// each; its cost is lowered through the same op costs as a training step: the layer graph of
// models/ built for the iteration's tokens, its memory-bound ops and collectives priced by
// strategies/layer_pricing.h (the TP all-reduces and EP all-to-alls at their sizes, so that
// decode's small ones cost their latency), its GEMMs by strategies/serving_kernels.h in the
// served number formats (decode reads every weight once: memory-bound; prefill is
// compute-bound), and each pipeline stage's ops replayed in the engine (sim/engine.h) as the
// chain they run in: compute, then the collective the next op waits on. That replay is kept
// per bucket of tokens (exact to 64, then 1/16 apart, interpolated between) so that the request
// loop (strategies/serving_replay.h) pays a lookup per iteration. Attention depends on each
// sequence's context, not on the tokens alone: it is priced per iteration from the batch's
// query-key pairs and the KV it reads (ServeAttentionTime) and runs on the stage's compute
// stream after the replayed chain.
//
//   PARASIM_ASSIGN_OR_RETURN(ServingCost cost, ServingCost::Build(model, cluster, precision, pool,
//                                                                 engine));
//   IterationShape it{.decode_seqs = 64, .decode_context = 64 * 1500, .sampled = 64};
//   Duration d = cost.StageTime(0, it, GraphMode::kWhole);
//   cost.memory().kv_tokens      // KV-cache tokens one replica holds
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "hardware/cost_model.h"
#include "hardware/spec.h"
#include "models/model_spec.h"
#include "models/op.h"
#include "sim/status.h"
#include "sim/units.h"
#include "strategies/serving_kernels.h"
#include "strategies/serving_spec.h"

namespace parasim {

struct ModelGraph;  // models/layer_graph.h

// Host time per iteration when the scenario states none (EnginePolicy::iteration_overhead):
// the engine's scheduling, sampling and the launch of the iteration's first kernels, before its
// GPU work starts. See its definition for the fit it comes from.
extern const Duration kDefaultIterationOverhead;

// What one iteration of a replica computes.
struct IterationShape {
  int64_t prefill_tokens = 0;  // prompt tokens computed (the chunks')
  double prefill_pairs = 0;    // their causal query-key pairs: c (context before + (c + 1) / 2)
  double prefill_context = 0;  // KV tokens the chunks read from before them
  int64_t decode_seqs = 0;     // sequences decoding a token
  double decode_context = 0;   // the KV tokens they attend to, summed
  int64_t sampled = 0;         // sequences sampling a token (decodes, and prompts completed)
  // With data-parallel attention, each rank's own sequences' share of the above (empty: spread
  // evenly over the ranks).
  std::vector<IterationShape> ranks;
  int64_t tokens() const { return prefill_tokens + decode_seqs; }
  bool decode_only() const { return prefill_tokens == 0; }
};

// A stage's chain of ops replayed for a number of tokens: its time, of it the blocking
// collectives, and the kernels it launches.
struct ServingChain {
  Duration time, comm;
  // Of `time`, the ops priced on the rank's own tokens (all but the routed experts': the
  // attention's projections, norms, dense layers, the dispatch's permutation and its
  // all-to-all's sends), compute and collectives: with data-parallel attention, a rank's own.
  Duration rank_local;
  int64_t kernels = 0;
  // Calls the host makes for the chain (one an op, one a collective), and for the attention
  // cores priced beside it (EnginePolicy::host_ops_per_op prices them).
  double host_ops = 0, attention_host_ops = 0;
  // Of them, the embedding's (the first stage's ops outside its layers), and its kernels.
  double outside_host_ops = 0;
  int64_t outside_kernels = 0;
};

// The replayed chains of the pool shapes of one scenario (its model, cluster and formats), kept
// across the ServingCosts of a sweep's layouts that share a shape (tp, pp, ep, dp_attention), so
// each bucket of tokens is replayed once. Safe to share between threads.
class ServingChainCache {
 public:
  struct Table {
    std::mutex mu;
    std::vector<std::optional<std::vector<ServingChain>>> chains;  // per bucket, per stage
  };
  std::shared_ptr<Table> For(const PoolLayout& pool);

 private:
  std::mutex mu_;
  std::map<std::tuple<int, int, int, bool>, std::shared_ptr<Table>> tables_;
};

// How an iteration's kernels launch: one by one; as one CUDA graph (a decode-only iteration,
// as TensorRT-LLM captures generation batches); or as graphs between its attention kernels,
// which launch one by one (vLLM V1's piecewise capture).
enum class GraphMode : uint8_t { kEager, kWhole, kPiecewise };

// One stage's time for an iteration and what it is made of.
struct StageCost {
  Duration total;
  Duration comm;       // the blocking collectives (TP all-reduces, EP all-to-alls)
  Duration attention;  // the attention kernels
  Duration host;       // the host's issue of the ops launched outside a CUDA graph
};

// What a GPU of the replica holds, bytes (the stage with the least room for KV).
struct ServingMemory {
  double capacity = 0;
  double weights = 0;       // per GPU, in the served formats
  double activations = 0;   // the live tensors of one layer at the token budget, and the logits
  double states = 0;        // a hybrid's Mamba states, one per sequence slot (engine.max_seqs)
  double kv_per_token = 0;  // KV-cache bytes a token takes on a GPU of that stage
  double kv_bytes = 0;      // KV-cache bytes a GPU holds: kv_fraction of what is left
  int64_t kv_tokens = 0;    // tokens of KV one replica holds (data-parallel ranks together)
  bool fits() const { return kv_tokens > 0; }
};

class ServingCost {
 public:
  // `cache`: chains shared with other layouts of the same scenario (null: this cost's own).
  static StatusOr<ServingCost> Build(const ModelSpec& m, const ClusterSpec& c,
                                     const ServingPrecision& p, const PoolLayout& pool,
                                     const EnginePolicy& engine,
                                     ServingChainCache* cache = nullptr);
  int stages() const { return pool_.pp; }
  // The data-parallel attention ranks of a replica (1 without dp_attention).
  int data_ranks() const { return data_ranks_; }
  const PoolLayout& pool() const { return pool_; }
  // The engine's policy on this pool's replicas (the pool's own budget and cap applied).
  const EnginePolicy& engine() const { return engine_; }
  const ServingMemory& memory() const { return memory_; }
  Duration iteration_overhead() const { return overhead_; }
  // Unchunked, the scheduler runs a prompt longer than the token budget whole, alone in its
  // iteration: the live tensors are then that prompt's, not the budget's, and the KV cache gets
  // what they leave (`tokens`: the longest prompt a replica of this pool computes at once).
  void ReserveWholePrompt(int64_t tokens);
  // Stage `s`'s time for the iteration; the kernels a CUDA graph holds pay no launch overhead
  // (kWhole: every kernel of the iteration, as GraphsFor captures decode-only iterations, and
  // with mixed graphs small ones; with layer-scoped graphs the layers' kernels alone;
  // kPiecewise: all but the attention's), nor host calls.
  Duration StageTime(int s, const IterationShape& it, GraphMode graphs);
  StageCost StageBreakdown(int s, const IterationShape& it, GraphMode graphs);
  // How the engine launches the kernels of iteration `it`.
  GraphMode GraphsFor(const IterationShape& it) const;
  // The activations one stage sends the next (zero with one stage).
  Duration TransferTime(const IterationShape& it) const;
  // Bytes of KV one token takes over the whole model (every stage's GPUs together): what a
  // disaggregated prefill sends its decode pool.
  double KvBytesPerTokenModel() const { return kv_model_bytes_; }
  // Bytes of a hybrid model's Mamba state one sequence takes over the whole model (the SSM and
  // conv states of every Mamba layer; 0 for a transformer): sent beside its KV.
  double StateBytesPerSequenceModel() const { return state_model_bytes_; }
  // The GEMMs one rank runs in an iteration of `tokens` tokens that all sample (a decode-only
  // batch of that many sequences; fewer sample in a prefill chunk, but its layers' GEMMs are
  // these), as the replay prices them: every layer kind's, the embedding's and the LM head's,
  // each distinct shape once.
  std::vector<ServeGemmShape> GemmShapes(int64_t tokens) const;
  // The token counts whose GEMMs a calibration times (parasim calibrate --scenario): 1, 2, 4,
  // ... up to the larger of engine.max_seqs and engine.max_num_tokens, each cap, and the first
  // of the replay's token buckets at or above each cap (an iteration at a cap is interpolated
  // toward it). Between two of them the cost model interpolates the measured efficiencies.
  std::vector<int64_t> CalibrationTokens() const;

 private:
  ServingCost(const ModelSpec& m, const ClusterSpec& c, const ServingPrecision& p,
              const PoolLayout& pool, const EnginePolicy& engine);
  using Chain = ServingChain;
  // Stage `s`'s chain for the bucket `at` of the token grid, replayed when first asked.
  Chain ChainAt(size_t at, int s);
  // Stage `s`'s chain at `tokens`, interpolated between the buckets around them.
  Chain ChainFor(int64_t tokens, int s);
  Status Init();
  // From the model's graph at one token a rank (built once for both).
  void InitAttention(const ModelGraph& g);
  void InitMemory(const ModelGraph& g);
  // The bytes of the widest GEMM's live input and output in a layer the model runs, at `rows`.
  double WidestGemm(const ModelGraph& g, double rows) const;
  // A hybrid model's Mamba layers (`mamba_layers` in the model): their state and scan costs.
  void InitMamba(int mamba_layers);
  std::vector<Chain> Replay(int64_t tokens) const;
  // The graph of an iteration of `tokens` on a rank.
  ModelGraph GraphFor(int64_t tokens) const;
  // Whether some stage runs layers of this kind (a MoE model's graph holds a dense block its
  // stack may never use: neither replayed nor listed).
  bool Runs(LayerKind kind) const;
  // A GEMM op's rows per product and the products whose weights it reads, for an iteration of
  // `tokens` tokens on the replica: the op's own for a dense GEMM; for the routed experts the
  // tokens each receives (the busiest rank's share) and the experts some token reaches.
  std::pair<double, double> GemmRowsOf(const Op& op, int64_t tokens) const;
  Duration Head(int64_t sampled);
  Duration Attention(const IterationShape& it, int64_t* kernels) const;
  // The attention of `share` of the iteration's sequences on one rank.
  Duration AttentionShare(const IterationShape& it, double share, int64_t* kernels) const;
  // One Mamba layer's scan on a rank for the iteration: the prompts' chunked scan, the decoding
  // sequences' state updates.
  Duration MambaScan(const IterationShape& it, int64_t* kernels) const;
  int64_t RankTokens(int64_t tokens) const;

  ModelSpec model_;
  ClusterSpec cluster_;
  ServingPrecision precision_;
  PoolLayout pool_;
  EnginePolicy engine_;
  ServeFormats formats_;
  CostModel cost16_, low_;
  Duration overhead_;
  Block ReplicatedTokens(const Block& b, int64_t rank_tokens) const;
  int attention_tp_ = 1, graph_ep_ = 1, graph_etp_ = 0, data_ranks_ = 1;
  int64_t whole_prompt_ = 0;       // ReserveWholePrompt's tokens (0: none beyond the budget)
  std::vector<int> stage_layers_;  // layers per stage
  // Per stage, its layers of each kind (LayerKind), its attention layers (which hold KV) and
  // its Mamba layers (which hold a state per sequence).
  std::vector<std::array<int, kLayerKinds>> stage_kinds_;
  std::vector<int> stage_attention_, stage_mamba_;
  // The attention core's shape on a rank: FLOPs per query-key pair, bytes per query (Q and
  // output), KV bytes per token per layer.
  double flops_per_pair_ = 0, query_bytes_ = 0, kv_layer_bytes_ = 0, kv_model_bytes_ = 0;
  // A Mamba layer on a rank: its shape, its state per sequence (and the model's), and the bytes a
  // decoding sequence's state update moves.
  MambaRank mamba_;
  double state_layer_bytes_ = 0, state_model_bytes_ = 0, update_bytes_per_seq_ = 0;
  Op lm_head_;
  std::vector<Duration> heads_;  // Head's time per tokens sampled, as asked
  ServingMemory memory_;
  std::vector<int64_t> grid_;                         // bucket token counts
  std::shared_ptr<ServingChainCache::Table> chains_;  // this pool shape's, maybe shared
};

}  // namespace parasim
