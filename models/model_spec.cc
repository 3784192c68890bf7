#include "models/model_spec.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "sim/yaml_reader.h"

extern const char kModelsYaml[];

namespace parasim {

double MambaParams(const ModelSpec& m) {
  const double h = static_cast<double>(m.hidden), di = static_cast<double>(m.mamba_inner());
  const double heads = m.mamba_heads();
  const double bc = 2.0 * m.mamba.groups * static_cast<double>(m.mamba.state_dim);
  // in_proj (no bias), the conv1d's weights and bias over x, B and C, dt_bias, A_log and D a
  // head, the gated RMSNorm's weight, out_proj (no bias): MambaMixer.__init__.
  return h * (2 * di + bc + heads) + (di + bc) * (MambaSpec::kConv + 1) + 3 * heads + di + di * h;
}

MambaRank MambaRankOf(const ModelSpec& m, int tp) {
  return {static_cast<double>(m.mamba_heads()) / tp, static_cast<double>(m.mamba.groups) / tp,
          static_cast<double>(m.mamba.head_dim), static_cast<double>(m.mamba.state_dim)};
}

double MambaRank::ScanFlops(double tokens, double q, int cp) const {
  const double cp_groups = std::max(groups, static_cast<double>(cp));
  const double P = head_dim, N = state;
  return tokens * cp * (cp_groups / cp * 2 * q * N + heads / cp * (2 * q * P + 4 * N * P));
}

double MambaRank::ScanBytes(double tokens, double q, double a, bool keep_y) const {
  const double states = tokens / q * inner() * state * 4;
  return tokens * ((keep_y ? 4 : 3) * inner() + bc() + heads) * a + 2 * states;
}

ParamCounts CountParams(const ModelSpec& m, int64_t seq_len) {
  ParamCounts c;
  const double h = static_cast<double>(m.hidden);
  const double q = static_cast<double>(m.heads) * m.hd();
  const double kv = static_cast<double>(m.kv()) * m.hd();
  const double bias = m.has_bias() ? 1.0 : 0.0;
  const double norm = m.norm == NormKind::kLayerNorm ? 2 * h : h;  // weight (+ bias)
  // Attention: Q, K, V projections and the output projection (Megatron SC21 layout); MLA: the
  // query bottleneck and its norm, the KV latent (+ the shared RoPE key) and its norm, the
  // up-projections of keys and values, and the output projection.
  double attn = h * (q + 2 * kv) + bias * (q + 2 * kv) + q * h + bias * h;
  if (m.mla.enabled()) {
    const MlaSpec& a = m.mla;
    const double heads = m.heads;
    const double qk = static_cast<double>(a.qk_head_dim()), ql = a.q_lora_rank;
    const double kvl = a.kv_lora_rank, v = a.v_head_dim;
    const double q_proj = ql > 0 ? h * ql + ql + ql * heads * qk : h * heads * qk;
    attn = q_proj + h * (kvl + a.qk_rope_head_dim) + kvl + kvl * heads * (a.qk_nope_head_dim + v) +
           heads * v * h;
  }
  auto mlp = [&](double f) {
    if (m.mlp == MlpKind::kSwiglu) return 3 * h * f + bias * (2 * f + h);
    return 2 * h * f + bias * (f + h);
  };
  c.per_dense_layer = attn + mlp(static_cast<double>(m.ffn())) + 2 * norm;
  double router = 0, experts = 0, active_experts = 0;
  if (m.is_moe()) {
    const double e = mlp(static_cast<double>(m.moe.expert_ffn_hidden));
    router = h * m.moe.experts;
    experts = (m.moe.experts + m.moe.shared_experts) * e;
    active_experts = (m.moe.top_k + m.moe.shared_experts) * e;
    c.per_moe_layer = attn + 2 * norm + router + experts;
  }
  int64_t positions = m.max_position > 0 ? m.max_position : seq_len;
  c.embedding = static_cast<double>(m.vocab) * h +
                (m.position == PositionKind::kLearned ? static_cast<double>(positions) * h : 0.0);
  c.lm_head = m.tied_embeddings ? 0.0 : static_cast<double>(m.vocab) * h;
  const double outer = c.embedding + c.lm_head + norm;  // final norm
  if (m.is_hybrid()) c.per_mamba_layer = MambaParams(m) + norm;
  // Each kind's parameters, all and touched per token, in LayerKind's order.
  const double all[kLayerKinds] = {c.per_dense_layer,
                                   c.per_moe_layer,
                                   c.per_mamba_layer,
                                   attn + norm,
                                   mlp(static_cast<double>(m.ffn())) + norm,
                                   norm + router + experts};
  const double active[kLayerKinds] = {c.per_dense_layer,
                                      attn + 2 * norm + router + active_experts,
                                      c.per_mamba_layer,
                                      all[3],
                                      all[4],
                                      norm + router + active_experts};
  int count[kLayerKinds] = {};
  for (int i = 0; i < m.layers; ++i) ++count[static_cast<int>(m.KindOf(i))];
  c.total = c.active = outer;
  for (int k = 0; k < kLayerKinds; ++k) {
    c.total += count[k] * all[k];
    c.active += count[k] * active[k];
  }
  return c;
}

namespace {

constexpr int64_t kBig = int64_t{1} << 40;

// The model's sizes and kinds: layers, widths, heads, vocabulary, positions, MLP, norm, bias,
// and a catalog entry's published parameter counts.
Status ReadShape(const MapReader& r, ModelSpec* m) {
  PARASIM_RETURN_IF_ERROR(r.String("source", &m->source));
  PARASIM_RETURN_IF_ERROR(r.Int("layers", &m->layers, 1, 100000));
  PARASIM_RETURN_IF_ERROR(r.Int("hidden", &m->hidden, 1, 1 << 24));
  PARASIM_RETURN_IF_ERROR(r.Int("heads", &m->heads, 1, 1 << 20));
  PARASIM_RETURN_IF_ERROR(r.Int("kv_heads", &m->kv_heads, 1, 1 << 20));
  PARASIM_RETURN_IF_ERROR(r.Int("head_dim", &m->head_dim, 1, 1 << 20));
  PARASIM_RETURN_IF_ERROR(r.Int("ffn_hidden", &m->ffn_hidden, 1, 1 << 26));
  PARASIM_RETURN_IF_ERROR(r.Int("vocab", &m->vocab, 1, 1 << 26));
  PARASIM_RETURN_IF_ERROR(r.Int("max_position", &m->max_position, 1, kBig));
  std::string s;
  if (r.Has("mlp")) {
    PARASIM_RETURN_IF_ERROR(r.Enum("mlp", &s, {"gelu", "swiglu"}));
    m->mlp = s == "gelu" ? MlpKind::kGelu : MlpKind::kSwiglu;
  }
  if (r.Has("norm")) {
    PARASIM_RETURN_IF_ERROR(r.Enum("norm", &s, {"layernorm", "rmsnorm"}));
    m->norm = s == "layernorm" ? NormKind::kLayerNorm : NormKind::kRmsNorm;
  }
  if (r.Has("position")) {
    PARASIM_RETURN_IF_ERROR(r.Enum("position", &s, {"learned", "rope", "alibi"}));
    m->position = s == "learned" ? PositionKind::kLearned
                                 : (s == "rope" ? PositionKind::kRope : PositionKind::kAlibi);
  }
  PARASIM_RETURN_IF_ERROR(r.Bool("tied_embeddings", &m->tied_embeddings));
  PARASIM_RETURN_IF_ERROR(r.Int("mtp_depth", &m->mtp_depth, 0, 16));
  if (r.Has("bias")) {
    bool b = false;
    PARASIM_RETURN_IF_ERROR(r.Bool("bias", &b));
    m->bias = b ? 1 : 0;
  }
  PARASIM_RETURN_IF_ERROR(r.Number("params", &m->published_params, 0, 1e18));
  PARASIM_RETURN_IF_ERROR(r.Number("active_params", &m->published_active_params, 0, 1e18));
  return Status::Ok();
}

// `moe`: the experts, their routing and its imbalance.
Status ReadMoe(const YamlContext& ctx, const MapReader& r, ModelSpec* m) {
  PARASIM_ASSIGN_OR_RETURN(
      MapReader e,
      MapReader::Open(ctx, r.Node("moe"), r.Path("moe"),
                      {"experts", "top_k", "expert_ffn_hidden", "shared_experts", "dense_layers",
                       "every", "capacity_factor", "imbalance", "node_limit"}));
  // A model that extends an MoE model may change one key of its `moe`.
  if (!m->is_moe()) PARASIM_RETURN_IF_ERROR(e.Require("experts"));
  PARASIM_RETURN_IF_ERROR(e.Int("experts", &m->moe.experts, 1, 1 << 16));
  PARASIM_RETURN_IF_ERROR(e.Int("top_k", &m->moe.top_k, 1, 1 << 16));
  PARASIM_RETURN_IF_ERROR(e.Int("expert_ffn_hidden", &m->moe.expert_ffn_hidden, 1, 1 << 26));
  PARASIM_RETURN_IF_ERROR(e.Int("shared_experts", &m->moe.shared_experts, 0, 1 << 16));
  PARASIM_RETURN_IF_ERROR(e.Int("dense_layers", &m->moe.dense_layers, 0, 100000));
  PARASIM_RETURN_IF_ERROR(e.Int("every", &m->moe.every, 1, 1000));
  PARASIM_RETURN_IF_ERROR(e.Number("capacity_factor", &m->moe.capacity_factor, 0, 1000));
  if (e.Has("imbalance") && e.Node("imbalance").IsMap()) {
    PARASIM_ASSIGN_OR_RETURN(
        MapReader b, MapReader::Open(ctx, e.Node("imbalance"), e.Path("imbalance"), {"expert_cv"}));
    m->moe.imbalance = 0;
    PARASIM_RETURN_IF_ERROR(b.Number("expert_cv", &m->moe.expert_cv, 0, 10));
  } else if (!e.Number("imbalance", &m->moe.imbalance, 1, 1000).ok()) {
    return e.Error("imbalance",
                   fmt::format("expected the busiest rank's load over the mean, a number from 1 "
                               "to 1000, or the routing distribution {{expert_cv: c}}, got '{}'",
                               YAML::Dump(e.Node("imbalance"))));
  }
  PARASIM_RETURN_IF_ERROR(e.Int("node_limit", &m->moe.node_limit, 0, 1 << 16));
  if (m->moe.top_k == 0) m->moe.top_k = std::min(2, m->moe.experts);
  if (m->moe.expert_ffn_hidden == 0) m->moe.expert_ffn_hidden = m->ffn();
  if (m->moe.top_k > m->moe.experts) {
    return e.Error(
        "top_k", fmt::format("top_k {} is more than the {} experts", m->moe.top_k, m->moe.experts));
  }
  return Status::Ok();
}

// `attention_window`: local attention's window, its kind and the global layers among it.
Status ReadAttentionWindow(const YamlContext& ctx, const MapReader& r, ModelSpec* m) {
  PARASIM_ASSIGN_OR_RETURN(
      MapReader w, MapReader::Open(ctx, r.Node("attention_window"), r.Path("attention_window"),
                                   {"size", "kind", "global_every"}));
  // A model that extends a windowed model may change its kind or global layers alone.
  if (m->window.size <= 0) PARASIM_RETURN_IF_ERROR(w.Require("size"));
  PARASIM_RETURN_IF_ERROR(w.Int("size", &m->window.size, 1, kBig));
  if (w.Has("kind")) {
    std::string kind;
    PARASIM_RETURN_IF_ERROR(w.Enum("kind", &kind, {"sliding", "chunked"}));
    m->window.chunked = kind == "chunked";
  }
  PARASIM_RETURN_IF_ERROR(w.Int("global_every", &m->window.global_every, 0, 100000));
  return Status::Ok();
}

// `mla`: multi-head latent attention's ranks and head dimensions.
Status ReadMla(const YamlContext& ctx, const MapReader& r, ModelSpec* m) {
  PARASIM_ASSIGN_OR_RETURN(MapReader a,
                           MapReader::Open(ctx, r.Node("mla"), r.Path("mla"),
                                           {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                                            "qk_rope_head_dim", "v_head_dim"}));
  // A model that extends an MLA model may change one key of its `mla`.
  if (!m->mla.enabled()) {
    for (auto k : {"kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"}) {
      PARASIM_RETURN_IF_ERROR(a.Require(k));
    }
  }
  PARASIM_RETURN_IF_ERROR(a.Int("q_lora_rank", &m->mla.q_lora_rank, 0, 1 << 20));
  PARASIM_RETURN_IF_ERROR(a.Int("kv_lora_rank", &m->mla.kv_lora_rank, 1, 1 << 20));
  PARASIM_RETURN_IF_ERROR(a.Int("qk_nope_head_dim", &m->mla.qk_nope_head_dim, 1, 1 << 16));
  PARASIM_RETURN_IF_ERROR(a.Int("qk_rope_head_dim", &m->mla.qk_rope_head_dim, 0, 1 << 16));
  PARASIM_RETURN_IF_ERROR(a.Int("v_head_dim", &m->mla.v_head_dim, 1, 1 << 16));
  return Status::Ok();
}

// `hybrid`: the layer pattern and the Mamba-2 mixers' sizes.
Status ReadHybrid(const YamlContext& ctx, const MapReader& r, ModelSpec* m) {
  PARASIM_ASSIGN_OR_RETURN(
      MapReader hy, MapReader::Open(ctx, r.Node("hybrid"), r.Path("hybrid"), {"pattern", "mamba"}));
  // A model that extends a hybrid may change its mixers' sizes alone.
  if (!m->is_hybrid()) PARASIM_RETURN_IF_ERROR(hy.Require("pattern"));
  PARASIM_RETURN_IF_ERROR(hy.String("pattern", &m->hybrid));
  const size_t bad = m->hybrid.find_first_not_of("M*-E");
  if (m->hybrid.empty() || bad != std::string::npos) {
    return hy.Error("pattern",
                    bad == std::string::npos
                        ? std::string("an empty pattern: expected one symbol a layer")
                        : fmt::format("'{}' at {} is not a layer symbol: expected M (Mamba-2), * "
                                      "(attention), - (MLP) or E (experts), one a layer",
                                      m->hybrid[bad], bad + 1));
  }
  if (!hy.Has("mamba")) return Status::Ok();
  PARASIM_ASSIGN_OR_RETURN(MapReader mb,
                           MapReader::Open(ctx, hy.Node("mamba"), hy.Path("mamba"),
                                           {"heads", "head_dim", "state_dim", "groups"}));
  PARASIM_RETURN_IF_ERROR(mb.Int("heads", &m->mamba.heads, 1, 1 << 20));
  PARASIM_RETURN_IF_ERROR(mb.Int("head_dim", &m->mamba.head_dim, 1, 1 << 16));
  PARASIM_RETURN_IF_ERROR(mb.Int("state_dim", &m->mamba.state_dim, 1, 1 << 16));
  PARASIM_RETURN_IF_ERROR(mb.Int("groups", &m->mamba.groups, 1, 1 << 16));
  return Status::Ok();
}

}  // namespace

StatusOr<ModelSpec> ParseModelSpec(const YamlContext& ctx, const YAML::Node& node, std::string path,
                                   ModelSpec m, bool catalog_entry) {
  std::vector<std::string_view> keys = {
      "extends",         "layers", "hidden",       "heads", "kv_heads",  "head_dim",
      "ffn_hidden",      "vocab",  "max_position", "mlp",   "norm",      "position",
      "tied_embeddings", "bias",   "moe",          "mla",   "mtp_depth", "attention_window",
      "hybrid"};
  if (catalog_entry) {
    keys.push_back("source");
    keys.push_back("params");
    keys.push_back("active_params");
  }
  PARASIM_ASSIGN_OR_RETURN(MapReader r, MapReader::Open(ctx, node, path, keys));
  PARASIM_RETURN_IF_ERROR(ReadShape(r, &m));
  if (r.Has("moe")) PARASIM_RETURN_IF_ERROR(ReadMoe(ctx, r, &m));
  if (r.Has("attention_window")) PARASIM_RETURN_IF_ERROR(ReadAttentionWindow(ctx, r, &m));
  if (r.Has("mla")) PARASIM_RETURN_IF_ERROR(ReadMla(ctx, r, &m));
  if (r.Has("hybrid")) PARASIM_RETURN_IF_ERROR(ReadHybrid(ctx, r, &m));
  if (m.mlp == MlpKind::kSwiglu && m.ffn_hidden == 0 && m.hidden > 0) {
    // SwiGLU default keeps the parameter count of a 4h GELU MLP: 2/3 * 4h, rounded to 256
    // (Shazeer 2020; Llama's multiple_of rounding).
    m.ffn_hidden = ((8 * m.hidden / 3 + 255) / 256) * 256;
  }
  PARASIM_RETURN_IF_ERROR(ValidateModel(m, ctx, node, path));
  return m;
}

Status ValidateModel(const ModelSpec& m, const YamlContext& ctx, const YAML::Node& node,
                     std::string_view path) {
  auto missing = [&](std::string_view key) {
    return ctx.ErrorAt(node, fmt::format("{}.{}", path, key),
                       fmt::format("missing required key '{}' (or use extends: CATALOG_ID)", key));
  };
  if (m.layers <= 0) return missing("layers");
  if (m.hidden <= 0) return missing("hidden");
  if (m.heads <= 0) return missing("heads");
  if (m.vocab <= 0) return missing("vocab");
  if (m.head_dim == 0 && !m.mla.enabled() && m.hidden % m.heads != 0) {
    return ctx.ErrorAt(
        node[std::string("heads")], fmt::format("{}.heads", path),
        fmt::format("hidden {} is not divisible by heads {}; set head_dim", m.hidden, m.heads));
  }
  if (m.kv() > m.heads || m.heads % m.kv() != 0) {
    return ctx.ErrorAt(node[std::string("kv_heads")], fmt::format("{}.kv_heads", path),
                       fmt::format("kv_heads {} must divide heads {}", m.kv(), m.heads));
  }
  if (m.is_moe() && !m.is_hybrid() && m.moe.dense_layers > m.layers) {
    return ctx.ErrorAt(
        node[std::string("moe")], fmt::format("{}.moe.dense_layers", path),
        fmt::format("dense_layers {} is more than layers {}", m.moe.dense_layers, m.layers));
  }
  if (m.is_hybrid()) PARASIM_RETURN_IF_ERROR(ValidateHybrid(m, ctx, node, path));
  return Status::Ok();
}

Status ValidateHybrid(const ModelSpec& m, const YamlContext& ctx, const YAML::Node& node,
                      std::string_view path) {
  const YAML::Node hy = node[std::string("hybrid")];
  // The pattern where this node gives it, else its layers (an inherited pattern's count).
  const YAML::Node layers = node[std::string("layers")];
  const YAML::Node at = hy && hy["pattern"] ? hy["pattern"] : layers ? layers : node;
  const std::string where = fmt::format("{}.hybrid.pattern", path);
  if (static_cast<int>(m.hybrid.size()) != m.layers) {
    return ctx.ErrorAt(at, where,
                       fmt::format("the pattern has {} layers and layers is {}: give one symbol "
                                   "a layer",
                                   m.hybrid.size(), m.layers));
  }
  const bool experts = m.hybrid.find('E') != std::string::npos;
  if (experts != m.is_moe()) {
    return ctx.ErrorAt(at, where,
                       experts ? std::string("E (experts) layers need a moe block")
                               : std::string("a moe block needs E (experts) layers in the "
                                             "pattern, which places them"));
  }
  // The pattern places the experts: the moe block's own dense_layers and every contradict it
  // (those a catalog model passes on through `extends` are not read).
  const YAML::Node moe = node[std::string("moe")];
  for (const char* key : {"dense_layers", "every"}) {
    if (moe && moe.IsMap() && moe[key]) {
      return ctx.ErrorAt(moe[key], fmt::format("{}.moe.{}", path, key),
                         fmt::format("moe.{} does not apply to a hybrid model: its pattern's E "
                                     "layers are the experts",
                                     key));
    }
  }
  const int heads = m.mamba_heads();
  if (m.has_mamba() && (heads <= 0 || heads % m.mamba.groups != 0)) {
    return ctx.ErrorAt(at, fmt::format("{}.hybrid.mamba", path),
                       fmt::format("Mamba heads {} must be a positive multiple of its groups {} "
                                   "(MambaMixer: nheads % ngroups == 0)",
                                   heads, m.mamba.groups));
  }
  return Status::Ok();
}

StatusOr<ModelCatalog> LoadModelCatalog() {
  ModelCatalog cat;
  YamlContext ctx{"models/catalog/models.yaml", {}};
  PARASIM_ASSIGN_OR_RETURN(YAML::Node root, ParseYaml(kModelsYaml, ctx.file));
  for (const auto& kv : root) {
    ModelSpec base;
    base.id = kv.first.Scalar();
    PARASIM_ASSIGN_OR_RETURN(ModelSpec m,
                             ParseModelSpec(ctx, kv.second, kv.first.Scalar(), base, true));
    cat.models.push_back(std::move(m));
  }
  return cat;
}

const ModelSpec* ModelCatalog::Find(std::string_view id) const {
  for (const auto& m : models) {
    if (m.id == id) return &m;
  }
  return nullptr;
}

std::vector<std::string_view> ModelCatalog::Ids() const {
  std::vector<std::string_view> out;
  for (const auto& m : models) out.push_back(m.id);
  return out;
}

double ExpectedMaxOfNormals(int n) {
  if (n <= 1) return 0;
  // E[max] = integral of x n phi(x) Phi(x)^(n-1) dx, by Simpson's rule on [-12, 12]: the
  // integrand is smooth and below 1e-30 outside for any int n.
  constexpr double kLo = -12, kHi = 12;
  constexpr int kSteps = 4800;  // even; h = 0.005
  const double h = (kHi - kLo) / kSteps;
  const double inv_sqrt_2pi = 1 / std::sqrt(2 * M_PI);
  double sum = 0;
  for (int i = 0; i <= kSteps; ++i) {
    const double x = kLo + i * h;
    const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
    const double f =
        cdf > 0 ? x * n * inv_sqrt_2pi * std::exp(-0.5 * x * x + (n - 1) * std::log(cdf)) : 0.0;
    sum += f * (i == 0 || i == kSteps ? 1 : (i % 2 ? 4 : 2));
  }
  return sum * h / 3;
}

double MoeSpec::BusiestRankLoad(double tokens_per_rank, int ep) const {
  // One rank holds every expert: no rank waits for another (a fixed factor included).
  double load = ep > 1 ? imbalance : 1;
  if (load <= 0) {
    load = 1;
    const double E = experts, k = top_k, g = static_cast<double>(experts) / ep;
    if (experts > 1 && tokens_per_rank > 0) {
      // A rank's token copies: each of the N tokens of the ep ranks sends its k distinct experts,
      // X of them to this rank's g, hypergeometric (mean k g/E); the experts' popularity, spread
      // by expert_cv, makes a rank's share the mean of g of the E experts' (drawn without
      // replacement). Both sums are fixed, so the ranks' loads are exchangeable with
      // correlation -1/(ep-1): E[max] = sd e_n sqrt(n/(n-1)) for n = ep normals.
      const double q = g / E;
      const double mean_x = k * q;
      const double var_x = k * q * (1 - q) * (E - k) / (E - 1);
      const double tokens = tokens_per_rank * ep;
      const double rel_var =
          var_x / (tokens * mean_x * mean_x) + expert_cv * expert_cv * (E - g) / (g * (E - 1));
      load += ExpectedMaxOfNormals(ep) * std::sqrt(rel_var * ep / (ep - 1.0));
    }
  }
  return capacity_factor > 0 ? std::min(load, capacity_factor) : load;
}

}  // namespace parasim
