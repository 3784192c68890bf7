#include "strategies/serving_cost.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "models/layer_graph.h"
#include "sim/engine.h"
#include "strategies/layer_pricing.h"
#include "strategies/lowering.h"

namespace parasim {

// Fitted on the training subset of tests/validation/serving/ (docs/SERVING.md, "Fitted"):
// see tests/validation/serving/subsets.yaml for the command and its result.
const Duration kDefaultIterationOverhead = Duration::Seconds(0);

namespace {

// The kernels of the last stage's head (Head): the final norm, the LM head's GEMM and the
// sampler's pass over the logits.
constexpr int kHeadKernels = 3;

// One op of a stage's chain: its kernels' time and the collective after it.
struct ChainOp {
  Duration compute, comm;
  TaskCat cat = TaskCat::kTp;
  bool rank_local = false;  // priced on the rank's own tokens (ServingChain::rank_local)
  double host_ops = 0;      // calls the host makes for it (its collective's included)
  bool attention = false;   // an attention core: priced apart, its host calls counted here
};

// One stage's ops replayed in the engine as the chain they run in: each op's compute, then the
// collective the next op waits on.
ServingChain ReplayChain(const std::vector<const std::vector<ChainOp>*>& parts) {
  sim::Program p;
  sim::TableCost costs;
  const uint32_t rank = p.AddRank("stage");
  const sim::StreamId compute = p.AddStream(rank, "compute", sim::StreamRole::kCompute);
  const sim::StreamId comm = p.AddStream(rank, "comm", sim::StreamRole::kCommunication);
  const uint32_t label = p.Intern("op");
  sim::TaskId prev = sim::kNone;
  ServingChain chain;
  for (const std::vector<ChainOp>* ops : parts) {
    for (const ChainOp& op : *ops) {
      if (op.attention) {
        chain.attention_host_ops += op.host_ops;
        continue;
      }
      chain.host_ops += op.host_ops;
      const sim::TaskId c = p.AddCompute(compute, costs.AddCompute(op.compute),
                                         static_cast<uint8_t>(TaskCat::kForward), label);
      if (prev != sim::kNone) p.AddDep(prev, c);
      prev = c;
      ++chain.kernels;
      if (op.rank_local) chain.rank_local += op.compute + op.comm;
      if (op.comm <= Duration::Zero()) continue;
      const sim::TaskId k =
          p.AddCompute(comm, costs.AddCompute(op.comm), static_cast<uint8_t>(op.cat), label);
      p.AddDep(prev, k);
      prev = k;
      chain.comm += op.comm;
    }
  }
  sim::RunOptions ro;
  ro.critical_path = false;
  StatusOr<sim::Timeline> tl = sim::Engine().Run(p, costs, ro);
  chain.time = tl.ok() ? tl->makespan : Duration::Zero();
  return chain;
}

}  // namespace

ServingCost::ServingCost(const ModelSpec& m, const ClusterSpec& c, const ServingPrecision& p,
                         const PoolLayout& pool, const EnginePolicy& engine)
    : model_(m),
      cluster_(c),
      precision_(p),
      pool_(pool),
      engine_(engine),
      formats_(ServeFormatsOf(p, c.gpu)),
      cost16_(c, Dtype::kBf16),
      low_(c, formats_.compute),
      overhead_(engine.iteration_overhead.value_or(kDefaultIterationOverhead)) {
  if (pool.max_num_tokens > 0) engine_.max_num_tokens = pool.max_num_tokens;
  if (pool.max_seqs > 0) engine_.max_seqs = pool.max_seqs;
}

std::shared_ptr<ServingChainCache::Table> ServingChainCache::For(const PoolLayout& pool) {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<Table>& t = tables_[{pool.tp, pool.pp, pool.ep, pool.dp_attention}];
  if (!t) t = std::make_shared<Table>();
  return t;
}

StatusOr<ServingCost> ServingCost::Build(const ModelSpec& m, const ClusterSpec& c,
                                         const ServingPrecision& p, const PoolLayout& pool,
                                         const EnginePolicy& engine, ServingChainCache* cache) {
  if (auto problem = CheckPoolLayout(pool, m)) {
    return InvalidArgument(fmt::format("{}: {}", problem->key, problem->message));
  }
  ServingCost cost(m, c, p, pool, engine);
  cost.chains_ = cache != nullptr ? cache->For(pool) : std::make_shared<ServingChainCache::Table>();
  PARASIM_RETURN_IF_ERROR(cost.Init());
  return cost;
}

Status ServingCost::Init() {
  attention_tp_ = pool_.dp_attention ? 1 : pool_.tp;
  // The experts: with data-parallel attention whole over every rank; else over ep of the tp
  // ranks, each EP rank's experts tensor-parallel over the tp / ep ranks it spans (a rank holds
  // E / ep experts of width ffn x ep / tp: the same bytes as E experts over tp, read whole for
  // the experts a step touches).
  graph_ep_ = pool_.dp_attention ? pool_.tp : pool_.ep;
  graph_etp_ = pool_.dp_attention ? 0 : std::max(1, pool_.tp / std::max(1, pool_.ep));
  data_ranks_ = pool_.dp_attention ? pool_.tp : 1;
  stage_layers_ = SplitLayers(model_.layers, pool_.pp);
  stage_kinds_.assign(stage_layers_.size(), {});
  stage_attention_.assign(stage_layers_.size(), 0);
  stage_mamba_.assign(stage_layers_.size(), 0);
  int layer = 0;
  for (size_t s = 0; s < stage_layers_.size(); ++s) {
    for (int i = 0; i < stage_layers_[s]; ++i, ++layer) {
      const LayerKind k = model_.KindOf(layer);
      ++stage_kinds_[s][static_cast<size_t>(k)];
      stage_attention_[s] +=
          k == LayerKind::kDense || k == LayerKind::kMoe || k == LayerKind::kAttention;
      stage_mamba_[s] += k == LayerKind::kMamba;
    }
  }
  grid_ = ServingBucketGrid();
  {
    std::lock_guard<std::mutex> lock(chains_->mu);
    if (chains_->chains.empty()) chains_->chains.assign(grid_.size(), std::nullopt);
  }
  const ModelGraph g = BuildModelGraph(model_, ShapeFor(1, attention_tp_, graph_ep_, graph_etp_));
  InitAttention(g);
  InitMemory(g);
  return Status::Ok();
}

void ServingCost::ReserveWholePrompt(int64_t tokens) {
  if (engine_.chunked_prefill || tokens <= std::max(whole_prompt_, engine_.max_num_tokens)) return;
  whole_prompt_ = tokens;
  InitMemory(BuildModelGraph(model_, ShapeFor(1, attention_tp_, graph_ep_, graph_etp_)));
}

int64_t ServingCost::RankTokens(int64_t tokens) const {
  return std::max<int64_t>(1, (tokens + data_ranks_ - 1) / data_ranks_);
}

void ServingCost::InitAttention(const ModelGraph& g) {
  const Op* core = nullptr;
  for (const Block* b : {&g.dense, &g.moe, &g.attention}) {
    if (core == nullptr) core = FindOp(*b, "attention");
  }
  if (core != nullptr && core->m > 0 && core->n > 0) {
    flops_per_pair_ = core->fwd_flops.flops() / static_cast<double>(core->m * core->n);
    const double heads = static_cast<double>(core->batch);
    const double qk = static_cast<double>(core->k);
    const double v = flops_per_pair_ / (2 * heads) - qk;
    query_bytes_ = heads * (qk + v) * 2;  // Q read, output written, 16-bit
  }
  kv_layer_bytes_ = KvBytesPerTokenLayer(model_, attention_tp_, formats_.kv_bytes);
  int attention_layers = 0, mamba_layers = 0;
  for (size_t s = 0; s < stage_layers_.size(); ++s) {
    attention_layers += stage_attention_[s];
    mamba_layers += stage_mamba_[s];
  }
  kv_model_bytes_ = KvBytesPerTokenLayer(model_, 1, formats_.kv_bytes) * attention_layers;
  if (const Op* head = FindOp(g.head, "lm_head")) lm_head_ = *head;
  if (mamba_layers > 0) InitMamba(mamba_layers);
}

void ServingCost::InitMamba(int mamba_layers) {
  // A rank's share of one Mamba layer (its heads and groups split over TP).
  mamba_ = MambaRankOf(model_, attention_tp_);
  const double inner = mamba_.inner(), bc = mamba_.bc();
  // The SSM state in fp32 (vLLM's mamba_ssm_cache_dtype float32, as NVIDIA's Nemotron-H and
  // Nemotron 3 model cards serve them) and the conv1d's last kConv - 1 inputs in 16 bits.
  const double ssm = inner * mamba_.state * 4, conv = (inner + bc) * (MambaSpec::kConv - 1) * 2;
  state_layer_bytes_ = ssm + conv;
  state_model_bytes_ = (ssm + conv) * attention_tp_ * mamba_layers;
  // A decoding sequence's update (mamba_ssm's selective_state_update and causal_conv1d_update):
  // its SSM and conv states read and written, its token's x, z, B, C, dt read and y written.
  update_bytes_per_seq_ = 2 * state_layer_bytes_ + (3 * inner + bc + mamba_.heads) * 2;
}

double ServingCost::WidestGemm(const ModelGraph& g, double rows) const {
  // 16-bit input and output, over `rows` tokens; a routed expert GEMM's over the rows the rank's
  // experts receive together (top_k copies of a token, the busiest rank's share, as a fused MoE
  // kernel's intermediate buffers hold them), at most a chunk's tokens x top_k: vLLM runs its
  // fused MoE a chunk at a time (engine.moe_chunk_tokens; with its naive EP dispatch it sizes
  // every rank's caches min(tokens, chunk) x top_k, more than the rows below the cap).
  const int64_t replica_tokens = std::max(engine_.max_num_tokens, whole_prompt_);
  const double moe_rows = engine_.moe_chunk_tokens > 0
                              ? static_cast<double>(engine_.moe_chunk_tokens) * model_.moe.top_k
                              : std::numeric_limits<double>::infinity();
  double widest = 0;
  for (int k = 0; k < kLayerKinds; ++k) {
    // Of the layers the model has (a MoE model's graph holds a dense layer it may never run).
    if (!Runs(static_cast<LayerKind>(k))) continue;
    const Block& b = g.Layer(static_cast<LayerKind>(k));
    for (size_t i = 0; i < b.size(); ++i) {
      const Op& op = b.op(i);
      if (op.kind != OpKind::kGemm) continue;
      const auto [per, touched] = GemmRowsOf(op, replica_tokens);
      const double r = op.expert ? std::min(per * touched, moe_rows) : rows;
      widest = std::max(widest, r * static_cast<double>(op.k + op.n));
    }
  }
  return widest * 2;
}

void ServingCost::InitMemory(const ModelGraph& g) {
  auto weights = [&](const Block& b) {
    double bytes = 0;
    for (size_t i = 0; i < b.size(); ++i) {
      const Op& op = b.op(i);
      bytes += op.params * (QuantisedGemm(op) ? formats_.weight_bytes : 2.0);
    }
    return bytes;
  };
  // The live tensors of one layer at the token budget (or the longest prompt an unchunked
  // engine runs whole, on one rank): its input and residual, the widest GEMM's input and output
  // (WidestGemm), and the logits of the sequences sampling (fp32).
  const double rows =
      static_cast<double>(std::max(RankTokens(engine_.max_num_tokens), whole_prompt_));
  const double widest = WidestGemm(g, rows);
  const double sampled = static_cast<double>(std::min(engine_.max_seqs, engine_.max_num_tokens));
  memory_.activations = rows * 2.0 * static_cast<double>(model_.hidden) * 2 + widest +
                        sampled * static_cast<double>(lm_head_.n) * 4;
  memory_.capacity = cluster_.gpu.memory.bytes();
  const int last = pool_.pp - 1;
  int64_t kv_tokens = -1;
  for (int s = 0; s < pool_.pp; ++s) {
    const size_t at = static_cast<size_t>(s);
    double w = 0;
    for (int k = 0; k < kLayerKinds; ++k) {
      if (stage_kinds_[at][static_cast<size_t>(k)] > 0) {
        w += stage_kinds_[at][static_cast<size_t>(k)] * weights(g.Layer(static_cast<LayerKind>(k)));
      }
    }
    if (s == 0) w += weights(g.embedding);
    if (s == last) w += weights(g.head);
    // A hybrid's Mamba layers keep a state per sequence slot (engine.max_seqs of them), set
    // aside before the KV cache takes its share.
    const double states =
        static_cast<double>(engine_.max_seqs) * stage_mamba_[at] * state_layer_bytes_;
    const double kv = engine_.kv_fraction * (memory_.capacity - w - memory_.activations) - states;
    const double per_token = stage_attention_[at] * kv_layer_bytes_;
    // A stage without attention layers holds no KV: the others, or max_seqs, bound the batch.
    constexpr int64_t kNoKvLimit = int64_t{1} << 40;
    // Beyond 2^40 tokens (a memory that large) the cache bounds nothing either; the cap keeps
    // the count an integer (1e24 bytes had overflowed it into "does not fit").
    const int64_t tokens =
        kv <= 0 ? 0
        : per_token <= 0
            ? kNoKvLimit
            : static_cast<int64_t>(std::min(kv / per_token, static_cast<double>(kNoKvLimit))) *
                  data_ranks_;
    if (kv_tokens < 0 || tokens < kv_tokens) {
      kv_tokens = tokens;
      memory_.weights = w;
      memory_.states = states;
      // A model without attention layers (an all-Mamba or all-MLP stack) keeps no KV at all:
      // what is left is not a cache.
      memory_.kv_bytes = per_token > 0 ? std::max(0.0, kv) : 0.0;
      memory_.kv_per_token = per_token;
    }
  }
  memory_.kv_tokens = std::max<int64_t>(0, kv_tokens);
}

bool ServingCost::Runs(LayerKind kind) const {
  return std::any_of(stage_kinds_.begin(), stage_kinds_.end(),
                     [&](const auto& kinds) { return kinds[static_cast<size_t>(kind)] > 0; });
}

ModelGraph ServingCost::GraphFor(int64_t tokens) const {
  return BuildModelGraph(model_,
                         ShapeFor(RankTokens(tokens), attention_tp_, graph_ep_, graph_etp_));
}

std::pair<double, double> ServingCost::GemmRowsOf(const Op& op, int64_t tokens) const {
  if (!op.expert) return {static_cast<double>(op.m), static_cast<double>(op.batch)};
  // The routed experts on the busiest rank: the replica's tokens x top_k over the ranks, with
  // its expected excess, over the most experts some token reaches on one rank (the step waits
  // for the rank reading the most); each of those takes at least a row.
  const MoeSpec& e = model_.moe;
  const int ep = pool_.dp_attention ? pool_.tp : pool_.ep;
  const double all = static_cast<double>(tokens);
  const double load = e.experts > 0 ? e.BusiestRankLoad(all / ep, ep) : 1.0;
  const double touched = BusiestTouchedExperts(e.experts / ep, e.experts, e.top_k, all, ep);
  if (touched <= 0) return {0, 0};
  const double rows = std::max(touched, all * e.top_k / ep * load);
  return {rows / touched, touched};
}

// Experts over ep of the TP ranks without data-parallel attention: every rank holds the
// replica's tokens (TP without SP), each EP rank takes its experts' tokens from them, and the
// TP all-reduce of the block's output (tokens x hidden) combines them; no all-to-all moves
// tokens (the training graph's EP dispatch and combine, and its all-reduce of every routed copy
// after the experts, would price top_k x load times those bytes).
Block ServingCost::ReplicatedTokens(const Block& b, int64_t rank_tokens) const {
  Block out = b;
  for (auto v : out.order) {
    Op& op = out.graph[v];
    if (op.fwd_comm.kind == CommKind::kAllToAll) op.fwd_comm = {};
    if (op.expert && op.fwd_comm.kind == CommKind::kAllReduce) {
      op.fwd_comm.bytes = static_cast<double>(rank_tokens) * static_cast<double>(model_.hidden) * 2;
    }
  }
  return out;
}

std::vector<ServingCost::Chain> ServingCost::Replay(int64_t tokens) const {
  const int64_t rank_tokens = RankTokens(tokens);
  const ModelGraph g = GraphFor(tokens);
  const bool replicated_experts = !pool_.dp_attention && graph_ep_ > 1;
  Training t;
  t.seq_len = rank_tokens;
  t.global_batch = data_ranks_;
  Layout l;
  l.tp = attention_tp_;
  l.dp = data_ranks_;
  l.ep = graph_ep_;
  l.etp = graph_etp_;
  const StepOptions so;
  LoweredStep unused;
  LoweringContext ctx(model_, t, l, cluster_, so, &unused);
  LayerPricer pricer(ctx);
  auto ops_of = [&](const Block& b) {
    BlockTime bt;
    pricer.Price(b, &bt);
    std::vector<ChainOp> out;
    for (size_t i = 0; i < b.size(); ++i) {
      const Op& op = b.op(i);
      // The host's calls: the op's module, and its collective's.
      const double host_ops = bt.ops[i].fwd_comm > Duration::Zero() ? 2 : 1;
      // Priced per iteration by the sequences' contexts: the attention core (Attention) and a
      // Mamba layer's scan (MambaScan).
      if (op.kind == OpKind::kAttention) {
        out.push_back(ChainOp{.host_ops = host_ops, .attention = true});
        continue;
      }
      // A rank's own: all but the routed experts' ops (their GEMMs, and the activation between
      // them, over the copies every rank sends them).
      const bool routed = op.expert || op.name.rfind("expert_", 0) == 0;
      ChainOp c{bt.ops[i].fwd, bt.ops[i].fwd_comm, bt.ops[i].fwd_cat, !routed, host_ops};
      if (op.kind == OpKind::kGemm) {
        const auto [rows, touched] = GemmRowsOf(op, tokens);
        c.compute = ServeGemmTime(cost16_, low_, formats_, op, rows, touched);
      }
      out.push_back(c);
    }
    return out;
  };
  const std::vector<ChainOp> embedding = ops_of(g.embedding);
  std::array<std::vector<ChainOp>, kLayerKinds> kinds;
  for (int k = 0; k < kLayerKinds; ++k) {
    const Block& b = g.Layer(static_cast<LayerKind>(k));
    if (b.size() == 0 || !Runs(static_cast<LayerKind>(k))) continue;
    kinds[static_cast<size_t>(k)] =
        ops_of(replicated_experts ? ReplicatedTokens(b, rank_tokens) : b);
  }
  std::vector<Chain> chains;
  int layer = 0;
  for (int s = 0; s < pool_.pp; ++s) {
    std::vector<const std::vector<ChainOp>*> parts;
    if (s == 0) parts.push_back(&embedding);
    for (int i = 0; i < stage_layers_[static_cast<size_t>(s)]; ++i, ++layer) {
      parts.push_back(&kinds[static_cast<size_t>(model_.KindOf(layer))]);
    }
    chains.push_back(ReplayChain(parts));
    if (s > 0) continue;
    // The embedding's ops, outside any layer (a layer-scoped graph leaves them eager).
    for (const ChainOp& op : embedding) {
      chains.back().outside_host_ops += op.host_ops;
      chains.back().outside_kernels += op.attention ? 0 : 1;
    }
  }
  return chains;
}

ServingCost::Chain ServingCost::ChainAt(size_t at, int s) {
  {
    std::lock_guard<std::mutex> lock(chains_->mu);
    if (chains_->chains[at]) return (*chains_->chains[at])[static_cast<size_t>(s)];
  }
  // Replayed outside the lock: another thread may replay the same bucket, to the same chains.
  std::vector<Chain> replayed = Replay(grid_[at]);
  const Chain out = replayed[static_cast<size_t>(s)];
  std::lock_guard<std::mutex> lock(chains_->mu);
  if (!chains_->chains[at]) chains_->chains[at] = std::move(replayed);
  return out;
}

Duration ServingCost::Head(int64_t sampled) {
  if (sampled <= 0) return Duration::Zero();
  const size_t at = static_cast<size_t>(sampled);
  if (at < heads_.size() && heads_[at] > Duration::Zero()) return heads_[at];
  const double s = static_cast<double>(sampled);
  const double h = static_cast<double>(model_.hidden);
  const double vocab = static_cast<double>(lm_head_.n);  // this rank's share
  // The final norm of the sampled tokens, the LM head in 16 bits, the logits gathered over TP,
  // and the sampler's pass over them.
  Duration t = cost16_.MemoryTime(Bytes(4 * s * h)) + cost16_.Launch();
  t += ServeGemmTime(cost16_, low_, formats_, lm_head_, s, 1);
  if (attention_tp_ > 1) {
    const int per_node = std::min(attention_tp_, cluster_.domain());
    t += cost16_
             .CollectiveTime(Collective::kAllGather, Bytes(2 * s * vocab * attention_tp_),
                             {attention_tp_, per_node})
             .time;
  }
  t += cost16_.MemoryTime(Bytes(2 * s * vocab * attention_tp_)) + cost16_.Launch();
  if (at < (size_t{1} << 20)) {
    if (heads_.size() <= at) heads_.resize(at + 1);
    heads_[at] = t;
  }
  return t;
}

Duration ServingCost::Attention(const IterationShape& it, int64_t* kernels) const {
  // Per layer on one rank. The data-parallel ranks each attend over their own sequences, and
  // the step waits for the slowest (the experts' all-to-all joins them); without the ranks'
  // shares, the sequences are spread evenly.
  *kernels = 0;
  if (!it.ranks.empty()) {
    Duration slowest;
    for (const IterationShape& r : it.ranks) {
      int64_t k = 0;
      slowest = Max(slowest, AttentionShare(r, 1.0, &k));
      *kernels = std::max(*kernels, k);
    }
    return slowest;
  }
  return AttentionShare(it, 1.0 / data_ranks_, kernels);
}

Duration ServingCost::AttentionShare(const IterationShape& it, double share,
                                     int64_t* kernels) const {
  Duration t;
  *kernels = 0;
  if (it.prefill_tokens > 0) {
    AttentionWork w{
        it.prefill_pairs * share, flops_per_pair_,
        share * (static_cast<double>(it.prefill_tokens) * (query_bytes_ + kv_layer_bytes_) +
                 it.prefill_context * kv_layer_bytes_)};
    t += ServeAttentionTime(cost16_, w);
    ++*kernels;
  }
  if (it.decode_seqs > 0) {
    AttentionWork w{it.decode_context * share, flops_per_pair_,
                    share * (static_cast<double>(it.decode_seqs) * query_bytes_ +
                             it.decode_context * kv_layer_bytes_)};
    t += ServeAttentionTime(cost16_, w);
    ++*kernels;
  }
  return t;
}

Duration ServingCost::MambaScan(const IterationShape& it, int64_t* kernels) const {
  Duration t;
  *kernels = 0;
  if (it.prefill_tokens > 0) {
    // A prompt's chunked scan (MambaRank), in 16 bits, as the training graph's.
    const double n = static_cast<double>(it.prefill_tokens);
    const double q = static_cast<double>(MambaSpec::kChunk);
    t += ServeAttentionTime(cost16_, {1, mamba_.ScanFlops(n, q), mamba_.ScanBytes(n, q, 2, false)});
    ++*kernels;
  }
  if (it.decode_seqs > 0) {
    const double n = static_cast<double>(it.decode_seqs);
    t += ServeAttentionTime(cost16_, {0, 0, n * update_bytes_per_seq_});
    ++*kernels;
  }
  return t;
}

GraphMode ServingCost::GraphsFor(const IterationShape& it) const {
  // vLLM's piecewise graphs hold every iteration up to their largest size; larger ones run
  // eagerly, decode-only or not.
  if (engine_.piecewise_graphs) {
    return it.tokens() <= engine_.graph_max_tokens ? GraphMode::kPiecewise : GraphMode::kEager;
  }
  // Megatron-Core's capture holds prompt chunks too, up to its largest size.
  if (engine_.mixed_graphs && it.tokens() <= engine_.graph_max_tokens) return GraphMode::kWhole;
  return engine_.cuda_graphs && it.decode_only() ? GraphMode::kWhole : GraphMode::kEager;
}

ServingCost::Chain ServingCost::ChainFor(int64_t tokens, int s) {
  const size_t hi = std::min(
      static_cast<size_t>(std::lower_bound(grid_.begin(), grid_.end(), tokens) - grid_.begin()),
      grid_.size() - 1);
  const Chain upper = ChainAt(hi, s);
  Chain chain = upper;
  if (hi > 0 && grid_[hi] != tokens) {
    const Chain lower = ChainAt(hi - 1, s);
    const double f = static_cast<double>(tokens - grid_[hi - 1]) /
                     static_cast<double>(grid_[hi] - grid_[hi - 1]);
    chain.time = lower.time + (upper.time - lower.time) * f;
    chain.comm = lower.comm + (upper.comm - lower.comm) * f;
    chain.rank_local = lower.rank_local + (upper.rank_local - lower.rank_local) * f;
  }
  return chain;
}

StageCost ServingCost::StageBreakdown(int s, const IterationShape& it, GraphMode graphs) {
  const int64_t tokens = std::max<int64_t>(1, it.tokens());
  Chain chain = ChainFor(tokens, s);
  // With data-parallel attention each rank runs its own tokens through its own ops (the
  // attention's projections, norms, dense layers, its all-to-all's sends) and the experts wait
  // for the busiest, as for its attention (Attention): its own ops at its tokens, not the mean's
  // (a rank prefilling an 8K chunk beside seven decoding had been priced at an eighth of the
  // sum).
  int64_t busiest = 0;
  for (const IterationShape& r : it.ranks) busiest = std::max(busiest, r.tokens());
  if (busiest > RankTokens(tokens)) {
    chain.time += ChainFor(busiest * data_ranks_, s).rank_local - chain.rank_local;
  }
  int64_t attention_kernels = 0, scan_kernels = 0;
  const int layers = stage_attention_[static_cast<size_t>(s)];
  const int mamba = stage_mamba_[static_cast<size_t>(s)];
  StageCost out;
  out.attention = Attention(it, &attention_kernels) * static_cast<double>(layers);
  if (mamba > 0) out.attention += MambaScan(it, &scan_kernels) * static_cast<double>(mamba);
  // The attention kernels, and a Mamba layer's scan and state updates beside them.
  attention_kernels = attention_kernels * layers + scan_kernels * mamba;
  out.comm = chain.comm;
  out.total = chain.time + out.attention;
  int64_t kernels = chain.kernels + attention_kernels;
  const bool last = s == pool_.pp - 1;
  if (last) {
    out.total += Head(it.sampled);
    kernels += kHeadKernels;
  }
  // The host's eager calls and the graphs it launches. Eagerly every op's call. A piecewise
  // graph (vLLM): the attention cores' calls, and a launch per piece (one between each two
  // mixers, attention or Mamba). A whole graph: its launch. Layer-scoped graphs (Megatron-Core's):
  // a launch per layer, the embedding's calls beside them; the head's calls (the logits and the
  // sampler) outside any graph.
  double calls = chain.host_ops + chain.attention_host_ops, launches = 0;
  const int stage_layers = stage_layers_[static_cast<size_t>(s)];
  const bool layer_scope = graphs == GraphMode::kWhole && engine_.layer_graphs;
  if (graphs == GraphMode::kPiecewise) {
    // The attention kernels stay outside a piecewise graph.
    kernels -= attention_kernels;
    calls = chain.attention_host_ops;
    launches = layers + mamba + 1;  // split at every attention and Mamba mixer
  } else if (layer_scope) {
    kernels = chain.kernels - chain.outside_kernels + attention_kernels;
    calls = chain.outside_host_ops;
    launches = stage_layers;
  } else if (graphs == GraphMode::kWhole) {
    calls = 0;
    launches = 1;
  }
  if (last) calls += kHeadKernels;
  if (graphs != GraphMode::kEager) {
    out.total = Max(Duration::Zero(), out.total - cost16_.Launch() * static_cast<double>(kernels));
  }
  // The GPU runs each op once the host has issued it: the stage takes the longer of the two
  // (the host runs ahead of a busy GPU; an idle one waits on the host). A call costs the
  // engine's host_ops_per_op framework ops at the host's rate (GpuSpec::host_op_time, fitted
  // per host type on training runs), a graph's launch host_ops_per_graph.
  out.host = cluster_.gpu.host_op_time *
             (engine_.host_ops_per_op * calls + engine_.host_ops_per_graph * launches);
  out.total = Max(out.total, out.host);
  return out;
}

Duration ServingCost::StageTime(int s, const IterationShape& it, GraphMode graphs) {
  return StageBreakdown(s, it, graphs).total;
}

Duration ServingCost::TransferTime(const IterationShape& it) const {
  if (pool_.pp <= 1) return Duration::Zero();
  // The hidden states of the iteration's tokens, each TP rank sending its share.
  const double bytes =
      static_cast<double>(it.tokens()) * static_cast<double>(model_.hidden) * 2 / attention_tp_;
  const bool inter = pool_.gpus_per_replica() > cluster_.domain();
  return cost16_.CollectiveTime(Collective::kSendRecv, Bytes(bytes), {2, inter ? 1 : 2}).time;
}

}  // namespace parasim
