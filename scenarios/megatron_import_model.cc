// The model and training flags of `parasim import megatron` (scenarios/megatron_import.h).
#include <fmt/core.h>

#include <algorithm>
#include <set>
#include <string_view>

#include "scenarios/megatron_exprs.h"
#include "scenarios/megatron_import_parts.h"

namespace parasim::megatron_import {

const char* HybridFlag(const FlagReader& r) {
  if (r.Has("--hybrid-layer-pattern")) return "--hybrid-layer-pattern";
  if (r.Has("--hybrid-override-pattern")) return "--hybrid-override-pattern";
  return nullptr;
}

namespace {

constexpr int64_t kMaxWidth = 67108864;  // the model block's limit on ffn_hidden and vocab

// Vocabularies of the tokenizers whose size Megatron-LM does not take from a flag.
struct Tokenizer {
  std::string_view type;
  int64_t vocab;
  std::string_view source;
};
constexpr Tokenizer kTokenizers[] = {
    {"GPT2BPETokenizer", 50257, "GPT-2's byte-level BPE (Radford et al. 2019: 50,257 tokens)"},
    {"Llama2Tokenizer", 32000, "Llama 2's SentencePiece (Touvron et al. 2023: 32K tokens)"},
    {"BertWordPieceLowerCase", 30522, "BERT's uncased WordPiece (bert-base-uncased: 30,522)"},
    {"BertWordPieceCase", 28996, "BERT's cased WordPiece (bert-base-cased: 28,996)"},
};

// A hybrid pattern's layer symbols and MTP parts checked: `*main` gets the stack (one symbol a
// layer, without '|'), `*depth` the MTP modules.
Status CheckHybridPattern(const FlagReader& r, const std::string& flag, std::string* main,
                          int* depth) {
  const HybridPattern p = SplitHybridPattern(r.Value(flag));
  *main = p.Stack();
  const size_t bad = main->find_first_not_of("M*-E");
  if (bad != std::string::npos) {
    return r.Error(flag, fmt::format("layer symbol '{}': parasim builds M (Mamba-2), * "
                                     "(attention), - (MLP) and E (experts); not G (gated "
                                     "delta net), D (sparse attention) or + (MLA)",
                                     (*main)[bad]));
  }
  if (main->empty()) return r.Error(flag, "no layer before the first '/'");
  *depth = static_cast<int>(p.mtp.size());
  const std::string mtp = r.Has("--num-experts") ? "*E" : "*-";
  for (const std::string& part : p.mtp) {
    if (part != mtp) {
      return r.Error(flag, fmt::format("multi-token-prediction module '{}': parasim builds one "
                                       "attention layer and the {} each ('{}')",
                                       part, mtp == "*E" ? "experts" : "MLP", mtp));
    }
  }
  return Status::Ok();
}

// --hybrid-layer-pattern, or --hybrid-override-pattern (its deprecated name): the hybrid stack,
// its layer count, MTP depth and Mamba-2 sizes.
Status ReadHybrid(Context& c, int64_t hidden) {
  const FlagReader& r = c.r;
  const std::string flag = HybridFlag(r);
  if (r.Has("--hybrid-layer-pattern") && r.Has("--hybrid-override-pattern")) {
    return r.Error("--hybrid-override-pattern",
                   "contradicts --hybrid-layer-pattern: give one pattern");
  }
  std::string main;
  int depth = 0;
  PARASIM_RETURN_IF_ERROR(CheckHybridPattern(r, flag, &main, &depth));
  c.Derived(
      "model.layers", std::to_string(main.size()),
      fmt::format("{}: {} layers (Megatron-LM counts them from the pattern)", flag, main.size()),
      flag);
  c.Use("--num-layers");
  c.Use("--is-hybrid-model");
  if (const MegatronArg* spec = r.Get("--spec")) {
    // Megatron-Core's own hybrid stack (hybrid_layer_specs.hybrid_stack_spec), which the pattern
    // builds; another spec stays listed as not modelled.
    for (const std::string& v : spec->values) {
      if (v == "hybrid_stack_spec") c.Use("--spec");
    }
  }
  c.Set("model.hybrid.pattern", main, flag);
  if (depth > 0) {
    c.Derived("model.mtp_depth", std::to_string(depth),
              fmt::format("{}: {} multi-token-prediction parts", flag, depth), flag);
  }
  if (r.Has("--mtp-num-layers")) {
    PARASIM_ASSIGN_OR_RETURN(int64_t given, r.Int("--mtp-num-layers", 0, 16));
    if (given != depth) {
      // Megatron-LM warns and takes the pattern's (arguments.py at d98e8a6).
      c.NotModelled(
          "--mtp-num-layers",
          fmt::format("the pattern's {} multi-token-prediction parts are the depth", depth));
    } else {
      c.Use("--mtp-num-layers");
    }
  }
  // MambaMixer's defaults (megatron/core/ssm/mamba_mixer.py; the flags' defaults in
  // TransformerConfig): heads 2 * hidden / head_dim (expand 2).
  PARASIM_ASSIGN_OR_RETURN(int64_t head_dim, r.Int("--mamba-head-dim", 1, 65536, 64));
  if (!r.Has("--mamba-num-heads") && (2 * hidden) % head_dim != 0) {
    return r.Error(r.Has("--mamba-head-dim") ? "--mamba-head-dim" : flag,
                   fmt::format("the Mamba heads default to 2 x --hidden-size / head dim, and "
                               "{} does not divide {}: give --mamba-num-heads",
                               head_dim, 2 * hidden));
  }
  PARASIM_ASSIGN_OR_RETURN(int64_t heads,
                           r.Int("--mamba-num-heads", 1, 1048576, 2 * hidden / head_dim));
  struct Dim {
    const char* flag;
    const char* key;
    int64_t value;
    const char* fallback;
  };
  PARASIM_ASSIGN_OR_RETURN(int64_t state, r.Int("--mamba-state-dim", 1, 65536, 128));
  PARASIM_ASSIGN_OR_RETURN(int64_t groups, r.Int("--mamba-num-groups", 1, 65536, 8));
  for (const Dim& d : {Dim{"--mamba-num-heads", "heads", heads, "2 x hidden / head dim"},
                       Dim{"--mamba-head-dim", "head_dim", head_dim, "64"},
                       Dim{"--mamba-state-dim", "state_dim", state, "128"},
                       Dim{"--mamba-num-groups", "groups", groups, "8"}}) {
    c.Derived(
        std::string("model.hybrid.mamba.") + d.key, std::to_string(d.value),
        r.Has(d.flag) ? r.Text(d.flag) : fmt::format("Megatron-LM's default ({})", d.fallback),
        r.Has(d.flag) ? d.flag : "");
  }
  return Status::Ok();
}

Status ReadShape(Context& c) {
  const FlagReader& r = c.r;
  for (const char* f : {"--num-layers", "--hidden-size", "--num-attention-heads"}) {
    if (!r.Has(f) && !(f == std::string_view("--num-layers") && HybridFlag(r) != nullptr)) {
      return InvalidArgument(
          fmt::format("{}: error: no {}: the model's shape needs --num-layers, "
                      "--hidden-size and --num-attention-heads",
                      r.args().file, f));
    }
  }
  PARASIM_ASSIGN_OR_RETURN(int64_t hidden, r.Int("--hidden-size", 1, 16777216));
  PARASIM_ASSIGN_OR_RETURN(int64_t heads, r.Int("--num-attention-heads", 1, 1048576));
  if (HybridFlag(r) == nullptr) {
    PARASIM_ASSIGN_OR_RETURN(int64_t layers, r.Int("--num-layers", 1, 100000));
    c.Set("model.layers", std::to_string(layers), "--num-layers");
  } else {
    PARASIM_RETURN_IF_ERROR(ReadHybrid(c, hidden));
  }
  c.Set("model.hidden", std::to_string(hidden), "--hidden-size");
  c.Set("model.heads", std::to_string(heads), "--num-attention-heads");
  // Megatron-LM passes num_query_groups to the model only under --group-query-attention
  // (megatron/training/argument_utils.py, the transformer config's kwargs: None otherwise, and
  // TransformerConfig then takes one group per head): without it attention stays multi-head.
  if (r.Has("--num-query-groups") && !r.Has("--group-query-attention")) {
    c.NotModelled("--num-query-groups",
                  "has no effect without --group-query-attention: Megatron-LM then keeps one "
                  "key/value head per attention head (multi-head attention)");
  } else if (r.Has("--num-query-groups")) {
    PARASIM_ASSIGN_OR_RETURN(int64_t kv, r.Int("--num-query-groups", 1, heads));
    c.Use("--group-query-attention");
    c.Set("model.kv_heads", std::to_string(kv), "--num-query-groups");
  } else if (r.Has("--group-query-attention")) {
    c.Set("model.kv_heads", "1", "--group-query-attention");  // num_query_groups' default: 1
  }
  if (r.Has("--kv-channels")) {
    PARASIM_ASSIGN_OR_RETURN(int64_t hd, r.Int("--kv-channels", 1, 1048576));
    c.Set("model.head_dim", std::to_string(hd), "--kv-channels");
  }
  const bool swiglu = r.Has("--swiglu");
  c.Use("--swiglu");
  if (r.Has("--ffn-hidden-size")) {
    PARASIM_ASSIGN_OR_RETURN(int64_t ffn, r.Int("--ffn-hidden-size", 1, kMaxWidth));
    c.Set("model.ffn_hidden", std::to_string(ffn), "--ffn-hidden-size");
  } else {
    // Megatron-LM's default (arguments.py): 4h, or under SwiGLU 8h/3 rounded down to 64.
    const int64_t ffn = swiglu ? (4 * hidden * 2 / 3) / 64 * 64 : 4 * hidden;
    c.Derived("model.ffn_hidden", std::to_string(ffn),
              swiglu ? "Megatron-LM's default under --swiglu: 8h/3 rounded down to 64"
                     : "Megatron-LM's default: 4h");
  }
  c.Switch("model.mlp", "--swiglu", "swiglu", "gelu", "Megatron-LM's default (GeLU)");
  return Status::Ok();
}

Status ReadLayerKinds(Context& c) {
  const FlagReader& r = c.r;
  PARASIM_ASSIGN_OR_RETURN(std::string norm,
                           r.Choice("--normalization", {"LayerNorm", "RMSNorm"}, "LayerNorm"));
  c.Derived("model.norm", norm == "RMSNorm" ? "rmsnorm" : "layernorm",
            r.Has("--normalization") ? r.Text("--normalization") : "Megatron-LM's default",
            "--normalization");
  PARASIM_ASSIGN_OR_RETURN(
      std::string pos,
      r.Choice("--position-embedding-type",
               {"learned_absolute", "rope", "none", "relative", "yarn", "mrope"},
               r.Has("--use-rotary-position-embeddings") ? "rope" : "learned_absolute"));
  c.Use("--use-rotary-position-embeddings");
  const std::string pos_from = r.Has("--position-embedding-type")
                                   ? r.Text("--position-embedding-type")
                                   : (r.Has("--use-rotary-position-embeddings")
                                          ? "--use-rotary-position-embeddings"
                                          : "Megatron-LM's default (learned_absolute)");
  if (pos == "learned_absolute") {
    c.Derived("model.position", "learned", pos_from, "--position-embedding-type");
    if (r.Has("--max-position-embeddings")) {
      PARASIM_ASSIGN_OR_RETURN(int64_t mp, r.Int("--max-position-embeddings", 1, int64_t{1} << 40));
      c.Set("model.max_position", std::to_string(mp), "--max-position-embeddings");
    }
  } else {
    c.Use("--max-position-embeddings");  // no table without learned positions
    c.Derived("model.position", "rope", pos_from, "--position-embedding-type");
    if (pos != "rope") {
      c.NotModelled("--position-embedding-type",
                    "no learned table and no rotation of its own: priced as RoPE (no parameters)");
    }
  }
  c.Switch("model.tied_embeddings", "--untie-embeddings-and-output-weights", "false", "true",
           "Megatron-LM's default: the output layer shares the embedding");
  c.Switch("model.bias", "--disable-bias-linear", "false", "true",
           "Megatron-LM's default: linear layers with biases");
  return Status::Ok();
}

// The vocabulary before padding, and what it came from.
StatusOr<std::pair<int64_t, std::string>> BaseVocab(Context& c) {
  const FlagReader& r = c.r;
  if (r.Has("--vocab-size")) {
    PARASIM_ASSIGN_OR_RETURN(int64_t v, r.Int("--vocab-size", 1, kMaxWidth));
    c.Use("--tokenizer-type");
    return std::pair<int64_t, std::string>{v, r.Text("--vocab-size")};
  }
  std::string type = r.Value("--tokenizer-type");
  std::string from = r.Text("--tokenizer-type");
  c.Use("--tokenizer-type");
  if (type.empty() && r.Has("--merge-file")) {
    type = "GPT2BPETokenizer";  // a BPE vocabulary with merges and no type: GPT-2's
    from = "--merge-file with no --tokenizer-type";
    c.Use("--merge-file");
  }
  for (const Tokenizer& t : kTokenizers) {
    if (type != t.type) continue;
    int64_t v = t.vocab;
    if (type.rfind("BertWordPiece", 0) == 0 && r.Has("--vocab-extra-ids")) {
      PARASIM_ASSIGN_OR_RETURN(int64_t extra, r.Int("--vocab-extra-ids", 0, 1 << 20));
      c.Use("--vocab-extra-ids");
      v += extra;
    }
    return std::pair<int64_t, std::string>{v, fmt::format("{}: {}", from, t.source)};
  }
  if (c.o.vocab > 0) {
    return std::pair<int64_t, std::string>{c.o.vocab, "the vocabulary given to the import"};
  }
  const std::string flag = r.Has("--tokenizer-type") ? "--tokenizer-type" : "--vocab-file";
  MegatronArg none;
  const MegatronArg* at = r.Get(flag) ? r.Get(flag) : &none;
  return r.args().ErrorAt(
      *at, fmt::format("the vocabulary size cannot be read from the arguments ({}); give "
                       "--vocab-size N among them, or the vocabulary to the import (parasim "
                       "import megatron --vocab N; a validation case's import.vocab)",
                       type.empty() ? "no --tokenizer-type and no --merge-file"
                                    : "the " + type + " reads it from its model file"));
}

Status ReadVocab(Context& c, int tp) {
  PARASIM_ASSIGN_OR_RETURN(auto base, BaseVocab(c));
  PARASIM_ASSIGN_OR_RETURN(int64_t div, c.r.Int("--make-vocab-size-divisible-by", 1, 1 << 20, 128));
  c.Use("--make-vocab-size-divisible-by");
  // Megatron-LM pads the embedding to a multiple of this x TP (build_tokenizer.py).
  const int64_t multiple = div * tp;
  const int64_t padded = (base.first + multiple - 1) / multiple * multiple;
  c.Derived("model.vocab", std::to_string(padded),
            fmt::format("{} padded to a multiple of {} x TP {}", base.second, div, tp),
            c.r.Has("--vocab-size") ? "--vocab-size" : "--tokenizer-type");
  return Status::Ok();
}

// parasim's MoE placement (models/model_spec.h): `dense` leading dense layers, then layer i is
// MoE when (i - dense) % every == every - 1. Finds the (dense, every) that gives `pattern`
// exactly; false when none does. The first MoE layer f and the gap to the next fix both.
bool ExactPlacement(const std::vector<int>& pattern, int* dense, int* every) {
  const int layers = static_cast<int>(pattern.size());
  std::vector<int> at;
  for (int i = 0; i < layers; ++i) {
    if (pattern[i] != 0) at.push_back(i);
  }
  if (at.empty()) {
    *dense = layers;
    *every = 1;
    return true;
  }
  const int e = at.size() > 1 ? at[1] - at[0] : std::max(1, layers - at[0]);
  const int d = at[0] - (e - 1);
  if (d < 0) return false;
  for (int i = 0; i < layers; ++i) {
    if ((pattern[i] != 0) != (i >= d && (i - d) % e == e - 1)) return false;
  }
  *dense = d;
  *every = e;
  return true;
}

// The layers a pattern makes MoE, for a message: "0, 3, 6" (the first few).
std::string MoeLayers(const std::vector<int>& pattern) {
  std::string out;
  int n = 0;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == 0) continue;
    if (++n > 8) return out + ", ...";
    out += (out.empty() ? "" : ", ") + std::to_string(i);
  }
  return out.empty() ? "none" : out;
}

// --moe-layer-freq: an int N or a list of 0/1 per layer (1 = MoE). Megatron-LM makes layer i
// (0-based) MoE when i % N == 0 for an int N, ceil(L / N) of L layers
// (megatron/core/models/gpt/gpt_layer_specs.py, the moe_layer_pattern it builds from
// config.moe_layer_freq).
Status ReadLayerFreq(Context& c, int layers) {
  const FlagReader& r = c.r;
  if (!r.Has("--moe-layer-freq")) return Status::Ok();
  const std::string v = r.Value("--moe-layer-freq");
  std::vector<int> pattern;
  int64_t n = 0;
  if (v.find('[') == std::string::npos) {
    PARASIM_ASSIGN_OR_RETURN(n, r.Int("--moe-layer-freq", 1, 1000));
    for (int i = 0; i < layers; ++i) pattern.push_back(i % n == 0 ? 1 : 0);
  } else {
    StatusOr<std::vector<int>> list = ParseLayerList(v);
    if (!list.ok()) return r.Error("--moe-layer-freq", list.status().message());
    pattern = *std::move(list);
  }
  if (static_cast<int>(pattern.size()) != layers) {
    return r.Error("--moe-layer-freq",
                   fmt::format("gives {} layers, --num-layers {}", pattern.size(), layers));
  }
  const int moe =
      static_cast<int>(std::count_if(pattern.begin(), pattern.end(), [](int x) { return x != 0; }));
  int dense = 0, every = 1;
  if (ExactPlacement(pattern, &dense, &every)) {
    c.Set("model.moe.dense_layers", std::to_string(dense), "--moe-layer-freq");
    c.Set("model.moe.every", std::to_string(every), "--moe-layer-freq");
    return Status::Ok();
  }
  if (n > 1 && layers % n == 0) {
    // The same count and spacing, each MoE layer moved to the end of its period of n.
    c.Set("model.moe.dense_layers", "0", "--moe-layer-freq");
    c.Set("model.moe.every", std::to_string(n), "--moe-layer-freq");
    c.NotModelled("--moe-layer-freq",
                  fmt::format("the MoE layers' places: Megatron-LM makes layers 0, {}, {}, ... "
                              "MoE, parasim the last of each {} ({}, {}, ...): the same {} MoE "
                              "layers",
                              n, 2 * n, n, n - 1, 2 * n - 1, moe));
    return Status::Ok();
  }
  return r.Error("--moe-layer-freq",
                 fmt::format("makes {} of {} layers MoE (layers {}), which parasim cannot place: "
                             "it places D leading dense layers, then every k-th layer MoE "
                             "(model.moe.dense_layers, model.moe.every; an int --moe-layer-freq "
                             "N where N divides --num-layers); give such a list, e.g. "
                             "([0]*D+([0]*(k-1)+[1])*M)",
                             moe, layers, MoeLayers(pattern)));
}

// Which nodes a token's copies cross to, and how often. Megatron-LM's alltoall dispatcher sends
// one copy per (token, expert) pair (MoEAlltoAllTokenDispatcher: tokens x topk rows), whatever
// the routing limits; the flex dispatcher's DeepEP/HybridEP kernels send a token once to each
// node it reaches and fan it out there on NVLink. Group-limited routing whose groups are the EP
// group's nodes limits how many: parasim's node_limit (layer_pricing's NodeLimitedShare: the
// copies that cross, min(limit, the nodes a token reaches)) is therefore the flex dispatcher's,
// the groups' top-k with group-limited routing, else every node the EP group spans.
Status ReadRouting(Context& c, bool per_node) {
  const FlagReader& r = c.r;
  if (r.Has("--moe-router-num-groups") != r.Has("--moe-router-group-topk")) {
    c.Use("--moe-router-num-groups");
    c.Use("--moe-router-group-topk");
    return Status::Ok();
  }
  PARASIM_ASSIGN_OR_RETURN(int64_t ep, r.Int("--expert-model-parallel-size", 1, 65536, 1));
  PARASIM_ASSIGN_OR_RETURN(int64_t tp, r.Int("--tensor-model-parallel-size", 1, 65536, 1));
  PARASIM_ASSIGN_OR_RETURN(int64_t etp, r.Int("--expert-tensor-parallel-size", 1, 65536, tp));
  // Megatron-Core orders expert ranks tp-ep-dp (parallel_state.py, the expert decoder rank
  // generator with the experts' TP width innermost): an EP group's ranks are etp apart and span
  // ep x etp consecutive ranks, so the nodes it covers are that span over the node's GPUs.
  const int gpn = std::max(1, c.gpus_per_node);
  const int64_t span = ep * etp;
  const int64_t ep_nodes = std::max<int64_t>(1, (span + gpn - 1) / gpn);
  if (!r.Has("--moe-router-num-groups")) {
    if (per_node && ep_nodes > 1) {
      c.Derived("model.moe.node_limit", std::to_string(ep_nodes),
                "--moe-token-dispatcher-type flex: DeepEP/HybridEP send a token once to each "
                "node it reaches");
    }
    return Status::Ok();
  }
  PARASIM_ASSIGN_OR_RETURN(int64_t groups, r.Int("--moe-router-num-groups", 1, 65536));
  PARASIM_ASSIGN_OR_RETURN(int64_t topk, r.Int("--moe-router-group-topk", 1, groups));
  if (groups == ep_nodes && ep_nodes > 1 && per_node) {
    c.Use("--moe-router-num-groups");
    c.Set("model.moe.node_limit", std::to_string(topk), "--moe-router-group-topk");
    return Status::Ok();
  }
  c.Use("--moe-router-group-topk");
  c.NotModelled("--moe-router-num-groups",
                per_node ? fmt::format("group-limited routing over {} groups where EP {} spans {} "
                                       "node(s): parasim limits routing by nodes only",
                                       groups, ep, ep_nodes)
                         : std::string("group-limited routing under the alltoall or allgather "
                                       "dispatcher, which sends a copy per (token, expert) "
                                       "whatever the groups: it moves no bytes parasim prices "
                                       "(the routing's balance is not modelled)"));
  return Status::Ok();
}

Status ReadMoe(Context& c, int layers) {
  const FlagReader& r = c.r;
  if (!r.Has("--num-experts")) return Status::Ok();
  PARASIM_ASSIGN_OR_RETURN(int64_t experts, r.Int("--num-experts", 1, 65536));
  PARASIM_ASSIGN_OR_RETURN(int64_t topk, r.Int("--moe-router-topk", 1, experts, 2));
  c.Set("model.moe.experts", std::to_string(experts), "--num-experts");
  c.Derived("model.moe.top_k", std::to_string(topk),
            r.Has("--moe-router-topk") ? r.Text("--moe-router-topk") : "Megatron-LM's default",
            "--moe-router-topk");
  const std::string ffn = c.w.Get("model.ffn_hidden");
  int64_t expert_ffn = std::stoll(ffn);
  if (r.Has("--moe-ffn-hidden-size")) {
    PARASIM_ASSIGN_OR_RETURN(expert_ffn, r.Int("--moe-ffn-hidden-size", 1, kMaxWidth));
  }
  c.Derived("model.moe.expert_ffn_hidden", std::to_string(expert_ffn),
            r.Has("--moe-ffn-hidden-size") ? r.Text("--moe-ffn-hidden-size")
                                           : "Megatron-LM's default: --ffn-hidden-size",
            "--moe-ffn-hidden-size");
  if (r.Has("--moe-shared-expert-intermediate-size")) {
    PARASIM_ASSIGN_OR_RETURN(int64_t shared,
                             r.Int("--moe-shared-expert-intermediate-size", 1, kMaxWidth));
    const int64_t n = std::max<int64_t>(1, (shared + expert_ffn / 2) / expert_ffn);
    c.Set("model.moe.shared_experts", std::to_string(n), "--moe-shared-expert-intermediate-size");
    if (n * expert_ffn != shared) {
      c.NotModelled("--moe-shared-expert-intermediate-size",
                    fmt::format("a shared width of {} is not a whole number of {}-wide experts: "
                                "{} taken",
                                shared, expert_ffn, n));
    }
  }
  if (r.Has("--moe-expert-capacity-factor")) {
    PARASIM_ASSIGN_OR_RETURN(double cf, r.Number("--moe-expert-capacity-factor", 0, 1000));
    c.Set("model.moe.capacity_factor", fmt::format("{}", cf), "--moe-expert-capacity-factor");
  }
  if (HybridFlag(r) == nullptr) {
    PARASIM_RETURN_IF_ERROR(ReadLayerFreq(c, layers));
  } else if (r.Has("--moe-layer-freq")) {
    c.NotModelled("--moe-layer-freq", "the hybrid pattern's E layers place the experts");
  }
  PARASIM_ASSIGN_OR_RETURN(
      std::string disp,
      r.Choice("--moe-token-dispatcher-type", {"alltoall", "allgather", "flex"}, "allgather"));
  PARASIM_RETURN_IF_ERROR(ReadRouting(c, disp == "flex"));
  if (disp == "alltoall") {
    c.Use("--moe-token-dispatcher-type");
  } else if (!r.Has("--moe-token-dispatcher-type")) {
    // Absent, Megatron-LM's default dispatcher still runs: say so.
    c.not_modelled.push_back({"--moe-token-dispatcher-type", "allgather (Megatron-LM's default)",
                              "tokens all-gathered to every EP rank: parasim prices an "
                              "all-to-all",
                              ""});
  } else {
    c.NotModelled("--moe-token-dispatcher-type",
                  disp == "flex" ? "DeepEP/HybridEP dispatch kernels: parasim prices an "
                                   "all-to-all that sends a token once to each node it reaches "
                                   "(model.moe.node_limit)"
                                 : "tokens all-gathered to every EP rank (Megatron-LM's default "
                                   "dispatcher): parasim prices an all-to-all");
  }
  // Transformer Engine issues the experts' GEMMs one per expert: GroupedLinear under
  // --moe-grouped-gemm, SequentialMLP's loop without it (training.expert_gemm in SCENARIO.md).
  const bool grouped = r.Has("--moe-grouped-gemm");
  c.Derived("training.expert_gemm", "per_expert",
            grouped ? "--moe-grouped-gemm: Transformer Engine's GroupedLinear, a GEMM per expert"
                    : "no --moe-grouped-gemm: a GEMM per expert (SequentialMLP)",
            grouped ? "--moe-grouped-gemm" : "--num-experts");
  return Status::Ok();
}

Status ReadMlaMtp(Context& c) {
  const FlagReader& r = c.r;
  if (r.Has("--multi-latent-attention")) {
    c.Use("--multi-latent-attention");
    // MLATransformerConfig's defaults (megatron/core/transformer/transformer_config.py).
    struct Dim {
      const char* flag;
      const char* key;
      int64_t fallback;
    };
    for (const Dim& d :
         {Dim{"--q-lora-rank", "q_lora_rank", 512}, Dim{"--kv-lora-rank", "kv_lora_rank", 512},
          Dim{"--qk-head-dim", "qk_nope_head_dim", 128},
          Dim{"--qk-pos-emb-head-dim", "qk_rope_head_dim", 64},
          Dim{"--v-head-dim", "v_head_dim", 128}}) {
      PARASIM_ASSIGN_OR_RETURN(int64_t v, r.Int(d.flag, 0, 1048576, d.fallback));
      c.Derived(std::string("model.mla.") + d.key, std::to_string(v),
                r.Has(d.flag) ? r.Text(d.flag)
                              : fmt::format("--multi-latent-attention: {}'s default", d.flag),
                r.Has(d.flag) ? d.flag : "--multi-latent-attention");
    }
  }
  if (r.Has("--mtp-num-layers") && HybridFlag(r) == nullptr) {
    PARASIM_ASSIGN_OR_RETURN(int64_t d, r.Int("--mtp-num-layers", 0, 16));
    c.Set("model.mtp_depth", std::to_string(d), "--mtp-num-layers");
  }
  return Status::Ok();
}

// Megatron-LM's programs that build something other than a decoder stack, by file name or by
// the example folder they sit in (NVIDIA/Megatron-LM d98e8a6: the top level, examples/ and
// tests/test_utils/recipes' TRAINING_SCRIPT_PATH). pretrain_gpt.py, pretrain_mamba.py,
// pretrain_hybrid.py and programs of other names (a team's wrapper of pretrain_gpt.py) import.
struct Program {
  std::string_view match;  // a file name, or a folder ("/mimo/") the program sits in
  std::string_view what;   // what the program does
};
constexpr Program kOtherPrograms[] = {
    {"pretrain_bert.py", "trains BERT, a bidirectional encoder with masked-LM and sentence heads"},
    {"pretrain_t5.py", "trains T5, an encoder-decoder"},
    {"pretrain_vlm.py",
     "trains a vision-language model (an image encoder before the language model)"},
    {"pretrain_vision_classify.py", "trains a vision transformer"},
    {"pretrain_vision_dino.py", "trains a vision transformer"},
    {"pretrain_vision_inpaint.py", "trains a vision transformer"},
    {"pretrain_ict.py", "trains an inverse-cloze-task biencoder (two BERT towers)"},
    {"pretrain_retro.py",
     "trains RETRO, a decoder with a retrieval encoder and chunked cross-attention"},
    {"pretrain_hybrid_flex.py", "trains an elastic (Flextron) hybrid"},
    {"train_rl.py", "runs reinforcement learning (GRPO: rollouts generated, then a training step)"},
    {"/mimo/",
     "trains a multimodal model (MIMO: image encoders and projections before the language "
     "model)"},
    {"/multimodal/",
     "trains a multimodal model (LLaVA: an image encoder before the language model)"},
    {"inference", "runs inference, not a training step (parasim serve plans serving)"},
};

}  // namespace

Status CheckProgram(const MegatronArgs& args) {
  const std::string& path = args.program.text;
  if (path.empty()) return Status::Ok();
  const std::string name = path.substr(path.find_last_of('/') + 1);
  for (const Program& p : kOtherPrograms) {
    const bool folder = p.match.front() == '/';
    if ((folder ? ("/" + path).find(p.match) : name.find(p.match)) == std::string::npos) {
      continue;
    }
    MegatronArg at{path, {}, args.program.line, args.program.col};
    return args.ErrorAt(at, fmt::format("{} {}: parasim builds decoder-only stacks, from "
                                        "pretrain_gpt.py's, pretrain_mamba.py's or "
                                        "pretrain_hybrid.py's arguments",
                                        path, p.what));
  }
  return Status::Ok();
}

Status ReadModel(Context& c, int tp) {
  PARASIM_RETURN_IF_ERROR(ReadShape(c));
  if (c.r.Has("--spec") && std::find(c.used.begin(), c.used.end(), "--spec") == c.used.end()) {
    c.NotModelled("--spec",
                  "a custom layer spec: parasim builds its own layers (transformer "
                  "layers, or a hybrid pattern's)");
  }
  PARASIM_RETURN_IF_ERROR(ReadLayerKinds(c));
  PARASIM_RETURN_IF_ERROR(ReadVocab(c, tp));
  PARASIM_RETURN_IF_ERROR(ReadMoe(c, std::stoi(c.w.Get("model.layers"))));
  return ReadMlaMtp(c);
}

}  // namespace parasim::megatron_import
