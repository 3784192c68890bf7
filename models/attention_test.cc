// The attention of a layer: flash attention's computed share under local attention, and
// DeepSeek-V3's multi-head latent attention.
#include "models/attention.h"

#include <doctest/doctest.h>

#include "models/layer_graph.h"

namespace parasim {
namespace {

ModelSpec Gpt3() { return *LoadModelCatalog()->Find("gpt3-175b"); }

TEST_CASE(
    "local attention: flash computes the tiles of each layer's window, averaged over layers") {
  auto cat = LoadModelCatalog();
  // GPT-OSS: a 128-key sliding window on every other layer. At 4,096 tokens a windowed layer
  // computes 2 key tiles of 128 per query tile, 2 x 128 / 4096 of the matrix; a full layer half.
  const ModelSpec oss = *cat->Find("gpt-oss-120b");
  CHECK(FlashComputedShare(oss, 4096) == doctest::Approx((0.5 + 256.0 / 4096) / 2));
  // Llama 4 Maverick: 8,192-token chunks on three layers of four; at 8K a chunk is the whole
  // sequence, at 128K each layer's chunks hold (8192 + 128) / (2 x 131072) of it.
  const ModelSpec l4 = *cat->Find("llama4-maverick");
  CHECK(FlashComputedShare(l4, 8192) == 0.5);
  CHECK(FlashComputedShare(l4, 131072) ==
        doctest::Approx((12 * 0.5 + 36 * (8192.0 + 128) / (2 * 131072)) / 48));
  // Without a window, or where the window holds the sequence: causal, half.
  CHECK(FlashComputedShare(Gpt3(), 2048) == 0.5);
  CHECK(FlashComputedShare(oss, 128) == 0.5);
  // The layer graph's attention core carries it under flash attention; standard attention
  // materialises every score.
  GraphShape flash{.micro_batch = 1, .seq_len = 4096, .ep = 8};
  const ModelGraph g = BuildModelGraph(oss, flash);
  GraphShape standard = flash;
  standard.attention = AttentionKind::kStandard;
  const ModelGraph g_std = BuildModelGraph(oss, standard);
  for (size_t i = 0; i < g.moe.size(); ++i) {
    if (g.moe.op(i).kind != OpKind::kAttention) continue;
    CHECK(g.moe.op(i).causal_fraction == FlashComputedShare(oss, 4096));
    CHECK(g_std.moe.op(i).causal_fraction == 1.0);
  }
}

TEST_CASE("MLA (DeepSeek-V3): the layer graph's parameters and core FLOPs follow the spec") {
  auto cat = LoadModelCatalog();
  const ModelSpec m = *cat->Find("deepseek-v3");
  ModelGraph g = BuildModelGraph(m, GraphShape{.micro_batch = 1, .seq_len = 4096});
  // Dense layer: MLA 187.1M (q 7168x1536 + 1536 + 1536x128x192; kv 7168x576 + 512 +
  // 512x128x256; out 128x128x7168) + SwiGLU 3 x 7168 x 18432 + two norms.
  const double mla = 7168.0 * 1536 + 1536 + 1536.0 * 128 * 192 + 7168.0 * 576 + 512 +
                     512.0 * 128 * 256 + 128.0 * 128 * 7168;
  CHECK(mla == doctest::Approx(187107328));
  CHECK(BlockParams(g.dense) == doctest::Approx(mla + 3.0 * 7168 * 18432 + 2 * 7168));
  CHECK(CountParams(m).per_dense_layer == doctest::Approx(BlockParams(g.dense)));
  // The core: Q and K of 128 + 64 per head, V of 128: 2 T s (192 + 128) per head.
  double core = 0;
  for (size_t i = 0; i < g.dense.size(); ++i) {
    if (g.dense.op(i).kind == OpKind::kAttention) core += g.dense.op(i).fwd_flops.flops();
  }
  CHECK(core == doctest::Approx(2.0 * 4096 * 4096 * (192 + 128) * 128));
  // Split by heads over TP: the up- and output projections shrink 8x, the down ones stay.
  ModelGraph g8 = BuildModelGraph(m, GraphShape{.micro_batch = 1, .seq_len = 4096, .tp = 8});
  const double down = 7168.0 * 1536 + 1536 + 7168.0 * 576 + 512;
  CHECK(BlockParams(g8.dense) ==
        doctest::Approx(down + (mla - down) / 8 + 3.0 * 7168 * 18432 / 8 + 2 * 7168));
}

TEST_CASE("the attention core: its FLOPs, and context parallelism's K and V ring or gather") {
  const ModelSpec m = Gpt3();
  for (bool gather : {false, true}) {
    CAPTURE(gather);
    GraphShape s{.seq_len = 4096, .cp = 2};
    s.cp_all_gather = gather;
    const blocks::Dims d = blocks::MakeDims(m, s);
    const Op core = blocks::AttentionCore(m, s, d, 96, 128, 128, 96 * 128, 96 * 128);
    // QK^T and AV over every key: 2 T s (qk + v) per head, T this rank's 2048 tokens.
    CHECK(core.fwd_flops.flops() == 2.0 * 2048 * 4096 * 256 * 96);
    CHECK(core.causal_fraction == FlashComputedShare(m, 4096));
    const double kv_bytes = 2048.0 * 2 * 96 * 128 * 2 * 2;  // K and V of both CP ranks
    CHECK(core.fwd_comm.kind == CommKind::kAllGather);
    CHECK(core.fwd_comm.bytes == kv_bytes);
    CHECK(core.bwd_comm.kind == (gather ? CommKind::kAllReduce : CommKind::kReduceScatter));
    CHECK(core.fwd_comm.overlappable == !gather);  // a ring runs beside the blocks' attention
    // A ring's backward passes K and V round again beside their gradients (Transformer
    // Engine's AttnFuncWithCPAndKVP2P.backward): twice the forward's bytes (a review found it
    // priced as once). Gathered, the whole sequence's K and V and their gradients are working
    // memory (they were left out: 4 GiB a layer for Llama 2 7B at 128K on CP8).
    CHECK(core.bwd_comm.bytes == (gather ? kv_bytes : 2 * kv_bytes));
    CHECK(core.transient == (gather ? 2 * kv_bytes : 4 * kv_bytes / 2));
  }
}

TEST_CASE("the materialised softmax keeps a dropout mask where the attention drops out") {
  ModelSpec m = Gpt3();
  auto saved = [&m](int attention_dropout) {
    GraphShape s{.seq_len = 2048};
    s.attention = AttentionKind::kStandard;
    s.attention_dropout = attention_dropout;
    const Op core =
        blocks::AttentionCore(m, s, blocks::MakeDims(m, s), 96, 128, 128, 96 * 128, 96 * 128);
    double bytes = 0;
    for (const SavedTensor& t : core.saved) bytes += t.bytes;
    return bytes;
  };
  const double scores = 96.0 * 2048 * 2048;  // a s^2 b elements
  // GPT-3 (GELU) drops out unless told not to: the mask (1 byte) and its output (2 bytes).
  CHECK(saved(-1) == doctest::Approx(saved(0) + 3 * scores));
  CHECK(saved(1) == saved(-1));
  // A SwiGLU model keeps none unless told it drops out (Megatron-LM's --attention-dropout 0.1).
  m.mlp = MlpKind::kSwiglu;
  CHECK(saved(-1) == saved(0));
  CHECK(saved(1) == doctest::Approx(saved(0) + 3 * scores));
}

}  // namespace
}  // namespace parasim
