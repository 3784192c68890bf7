// Transformer model descriptions (dense GPT/Llama-style and mixture-of-experts).
//
//   PARASIM_ASSIGN_OR_RETURN(ModelCatalog cat, LoadModelCatalog());
//   const ModelSpec* m = cat.Find("llama3-70b");
//   double p = CountParams(*m).total;     // 70.55e9, computed from the architecture
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/status.h"
#include "sim/yaml_context.h"

namespace parasim {

enum class MlpKind { kGelu, kSwiglu };
enum class NormKind { kLayerNorm, kRmsNorm };
enum class PositionKind { kLearned, kRope, kAlibi };

// What one layer of the stack is. A transformer layer is attention and a dense MLP (kDense) or
// experts (kMoe). A hybrid stack (ModelSpec::hybrid, Megatron-Core's --hybrid-layer-pattern)
// stacks single sublayers instead, each with its own pre-norm and residual
// (megatron/core/models/hybrid/hybrid_layer_specs.py, hybrid_stack_spec): a Mamba-2 mixer (M),
// attention (*), a dense MLP (-) or experts (E).
enum class LayerKind : uint8_t { kDense, kMoe, kMamba, kAttention, kMlp, kExperts };
inline constexpr int kLayerKinds = 6;

struct MoeSpec {
  int experts = 0;  // 0 = dense model
  int top_k = 0;
  int64_t expert_ffn_hidden = 0;
  int shared_experts = 0;
  int dense_layers = 0;        // leading layers with a dense MLP
  int every = 1;               // after those, every `every`-th layer is MoE (Llama 4: 2)
  double capacity_factor = 0;  // 0 = dropless
  // Load imbalance over the expert-parallel ranks: the busiest rank's token copies over the
  // mean, which its expert GEMMs and all-to-alls pay. A fixed factor (`imbalance: 1.2`; 1 =
  // perfectly balanced), or 0 for the routing distribution (`imbalance: {expert_cv: c}`, or
  // the key absent): each token's top_k experts drawn at random, the experts' popularity
  // spread by the coefficient of variation c (0 = a balanced router), and the replay pays
  // the busiest rank's expected load (BusiestRankLoad).
  double imbalance = 0;
  double expert_cv = 0;
  // Node-limited routing: a token reaches experts on at most this many nodes, and crosses the
  // network once per node (DeepSeek-V3, arXiv 2412.19437 Sec. 3.2.2: 4). 0 = no limit, each
  // routed copy sent on its own.
  int node_limit = 0;
  bool operator==(const MoeSpec&) const = default;
  // The busiest of `ep` ranks' expected load over the mean, for `tokens_per_rank` tokens routed
  // from each rank (one micro-batch), capped by the capacity factor when set; 1 for ep = 1, so
  // graphs built for one rank (the model FLOP counts) count each routed token once.
  double BusiestRankLoad(double tokens_per_rank, int ep) const;
};

// E[max of n independent standard normals] (0 for n = 1), by quadrature.
double ExpectedMaxOfNormals(int n);

// Multi-head latent attention (DeepSeek-V2/V3): queries through a low-rank bottleneck
// (q_lora_rank; 0 = a plain projection), keys and values from one compressed latent
// (kv_lora_rank) plus a shared decoupled RoPE key (qk_rope_head_dim). Per head, Q and K have
// qk_nope_head_dim + qk_rope_head_dim dimensions and V has v_head_dim.
// Local attention: layers whose queries see only a window of keys. `sliding`: each query the
// `size` keys before it (GPT-OSS: 128 on every other layer; Mistral 7B: 4,096 on every layer);
// `chunked`: the keys of its own chunk of `size` tokens (Llama 4: 8,192 on three layers of
// four). Every `global_every`-th layer (the last of each run) attends to the whole sequence;
// 0: none does.
struct AttentionWindow {
  int64_t size = 0;  // tokens; 0 = every layer attends to the whole sequence
  bool chunked = false;
  int global_every = 0;
  bool operator==(const AttentionWindow&) const = default;
};

struct MlaSpec {
  int64_t q_lora_rank = 0;
  int64_t kv_lora_rank = 0;  // 0 = no MLA
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
  bool enabled() const { return kv_lora_rank > 0; }
  int64_t qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
  bool operator==(const MlaSpec&) const = default;
};

// Mamba-2 mixers (Dao & Gu 2024, arXiv:2405.21060, the SSD layer) as Megatron-Core builds them
// (megatron/core/ssm/mamba_mixer.py): in_proj to z, x (d_inner each), B and C (groups x state
// each) and one dt per head; a depthwise causal conv1d over x, B and C; the chunked state-space
// scan; a grouped RMSNorm of y * silu(z); out_proj back to the hidden size.
struct MambaSpec {
  int heads = 0;            // 0: 2 * hidden / head_dim (MambaMixer's expand = 2)
  int64_t head_dim = 64;    // --mamba-head-dim's default
  int64_t state_dim = 128;  // --mamba-state-dim's default
  int groups = 8;           // --mamba-num-groups's default
  // MambaMixer's fixed d_conv and chunk_size (no flag sets them).
  static constexpr int64_t kConv = 4;
  static constexpr int64_t kChunk = 128;
  bool operator==(const MambaSpec&) const = default;
};

struct ModelSpec {
  std::string id;      // catalog id, or "inline"
  std::string source;  // where the numbers come from
  int layers = 0;
  int64_t hidden = 0;
  int heads = 0;
  int kv_heads = 0;        // 0 -> heads
  int64_t head_dim = 0;    // 0 -> hidden / heads
  int64_t ffn_hidden = 0;  // 0 -> 4 * hidden (gelu)
  int64_t vocab = 0;
  int64_t max_position = 0;  // learned positions; 0 -> training sequence length
  MlpKind mlp = MlpKind::kGelu;
  NormKind norm = NormKind::kLayerNorm;
  PositionKind position = PositionKind::kLearned;
  bool tied_embeddings = false;
  int bias = -1;  // -1: derived (GELU/LayerNorm models carry biases, SwiGLU/RMSNorm models none)
  MoeSpec moe;
  MlaSpec mla;
  AttentionWindow window;  // `attention_window`
  // Multi-token prediction (DeepSeek-V3 sec. 2.2): D sequential modules after the LM head,
  // each a projection of [norm(h); norm(embedding of the next token)], one transformer layer
  // (an MoE layer in an MoE model) and the shared LM head and loss. Not in `params`.
  int mtp_depth = 0;
  // A hybrid stack: one symbol a layer (M Mamba-2, * attention, - MLP, E experts), `layers`
  // of them; empty: every layer a transformer layer.
  std::string hybrid;
  MambaSpec mamba;
  double published_params = 0;         // catalog only: for tests
  double published_active_params = 0;  // catalog only

  bool is_moe() const { return moe.experts > 0; }
  int kv() const { return kv_heads > 0 ? kv_heads : heads; }
  // Head dimension of Q and K (MLA: nope + rope).
  int64_t hd() const {
    if (mla.enabled()) return mla.qk_head_dim();
    return head_dim > 0 ? head_dim : hidden / heads;
  }
  int64_t ffn() const { return ffn_hidden > 0 ? ffn_hidden : 4 * hidden; }
  bool has_bias() const { return bias >= 0 ? bias == 1 : mlp == MlpKind::kGelu; }
  bool is_hybrid() const { return !hybrid.empty(); }
  bool has_mamba() const { return hybrid.find('M') != std::string::npos; }
  // The Mamba-2 mixer's heads and inner width (heads x head_dim).
  int mamba_heads() const {
    return mamba.heads > 0 ? mamba.heads : static_cast<int>(2 * hidden / mamba.head_dim);
  }
  int64_t mamba_inner() const { return mamba_heads() * mamba.head_dim; }
  // Whether TP `tp` splits the attention heads and, in a stack with Mamba layers, the mixers'
  // heads and groups.
  bool TpSplits(int tp) const {
    if (heads % tp != 0) return false;
    return !has_mamba() || (mamba_heads() % tp == 0 && mamba.groups % tp == 0);
  }
  // Whether layer `i` (0-based) holds experts.
  bool IsMoeLayer(int i) const {
    if (is_hybrid()) return hybrid[static_cast<size_t>(i)] == 'E';  // not moe.dense_layers, every
    return is_moe() && i >= moe.dense_layers && (i - moe.dense_layers) % moe.every == moe.every - 1;
  }
  LayerKind KindOf(int i) const {
    if (!is_hybrid()) return IsMoeLayer(i) ? LayerKind::kMoe : LayerKind::kDense;
    switch (hybrid[static_cast<size_t>(i)]) {
      case 'M':
        return LayerKind::kMamba;
      case '*':
        return LayerKind::kAttention;
      case 'E':
        return LayerKind::kExperts;
      default:
        return LayerKind::kMlp;
    }
  }
  bool operator==(const ModelSpec&) const = default;
};

// Whether a model drops out where its scenario does not say (GraphShape::dropout,
// Training::attention_dropout): GELU models do (GPT-2, GPT-3 and Megatron-LM's GPT), SwiGLU
// models (Llama) not.
inline bool ModelDropsOut(const ModelSpec& m) { return m.mlp == MlpKind::kGelu; }

struct ParamCounts {
  double total = 0;      // every parameter stored
  double active = 0;     // parameters touched per token (MoE: top_k experts)
  double embedding = 0;  // token (+ position) embedding
  double lm_head = 0;    // 0 when tied
  double per_dense_layer = 0;
  double per_moe_layer = 0;
  double per_mamba_layer = 0;  // with its pre-norm (hybrid models)
};

// One Mamba-2 mixer's parameters, without its pre-norm.
double MambaParams(const ModelSpec& m);

// One rank's share of a Mamba-2 mixer (its heads and groups split over TP), and the work of its
// chunked scan (SSD, Dao & Gu 2024 Sec. 6) over chunks of q tokens: C B^T within each chunk and
// group (2 q N a token), its masked product with x (2 q P a token and head), each chunk's state
// B^T x and the states' contribution C h to the outputs (2 N P each). The training graph
// (models/mamba.cc) and the serving cost (strategies/serving_cost.cc) both price it from here.
struct MambaRank {
  double heads = 0, groups = 0, head_dim = 0, state = 0;
  double inner() const { return heads * head_dim; }
  double bc() const { return 2 * groups * state; }  // B and C columns
  // Forward FLOPs of the scan for `tokens` of this rank's part of the sequence; under CP each
  // rank scans whole sequences of 1/cp of the heads, B and C repeated where groups < cp.
  double ScanFlops(double tokens, double q, int cp = 1) const;
  // Its HBM traffic in `a`-byte activations: x and z read, the gated output written, and with
  // `keep_y` the pre-gate y kept for backward; B, C and dt read; each chunk's fp32 state written
  // and read between the kernels.
  double ScanBytes(double tokens, double q, double a, bool keep_y) const;
};
MambaRank MambaRankOf(const ModelSpec& m, int tp);

// Parameter count derived from the architecture (same accounting as the layer graph).
ParamCounts CountParams(const ModelSpec& m, int64_t seq_len = 0);

struct ModelCatalog {
  std::vector<ModelSpec> models;
  const ModelSpec* Find(std::string_view id) const;
  std::vector<std::string_view> Ids() const;
};

StatusOr<ModelCatalog> LoadModelCatalog();

// Reads a model mapping (catalog entry or inline scenario model). `base` holds the values
// inherited through `extends:` (or defaults); keys present override them.
StatusOr<ModelSpec> ParseModelSpec(const YamlContext& ctx, const YAML::Node& node, std::string path,
                                   ModelSpec base, bool catalog_entry);
Status ValidateModel(const ModelSpec& m, const YamlContext& ctx, const YAML::Node& node,
                     std::string_view path);
// A hybrid model's pattern against its layers, experts and Mamba sizes (ValidateModel's part).
Status ValidateHybrid(const ModelSpec& m, const YamlContext& ctx, const YAML::Node& node,
                      std::string_view path);

}  // namespace parasim
