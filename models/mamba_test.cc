// A hybrid stack's Mamba-2 layer: its parameters as the model's count, its FLOPs against
// Megatron-LM's own estimate, TP's shards and CP's all-to-alls; the stack's layer kinds.
#include "models/mamba.h"

#include <doctest/doctest.h>

#include <string>

#include "models/layer_graph.h"

namespace parasim {
namespace {

ModelSpec Nano() { return *LoadModelCatalog()->Find("nemotron-3-nano-30b-a3b"); }

const Op* Find(const Block& b, const std::string& name) {
  for (size_t i = 0; i < b.size(); ++i) {
    if (b.op(i).name == name) return &b.op(i);
  }
  return nullptr;
}

TEST_CASE("a Mamba-2 layer's parameters are the model count's; TP shards all but the pre-norm") {
  const ModelSpec m = Nano();
  const ModelGraph g1 = BuildModelGraph(m, GraphShape{.seq_len = 8192});
  const ModelGraph g2 = BuildModelGraph(m, GraphShape{.seq_len = 8192, .tp = 2});
  const double h = static_cast<double>(m.hidden);
  // 38.7M: in_proj 2688 x (2 x 4096 + 2 x 8 x 128 + 64), the conv1d over 6144 channels (4 taps
  // and a bias), dt_bias, A_log and D (64 each), the gated norm (4096) and out_proj 4096 x 2688.
  CHECK(MambaParams(m) == doctest::Approx(38'742'208.0));
  CHECK(BlockParams(g1.mamba) == doctest::Approx(CountParams(m).per_mamba_layer));
  CHECK(BlockParams(g2.mamba) == doctest::Approx(MambaParams(m) / 2 + h));
  // The pattern's kinds: layer graph blocks for the symbols it uses.
  CHECK(g1.mamba.size() > 0);
  CHECK(g1.attention.size() > 0);
  CHECK(g1.experts.size() > 0);
  CHECK(g1.mlp.size() == 0);    // no '-' in Nemotron 3 Nano's pattern
  CHECK(g1.dense.size() == 0);  // no transformer layer (it would be its MTP modules')
  CHECK(g1.moe.size() == 0);
  CHECK(&g1.Layer(m.KindOf(0)) == &g1.mamba);
  CHECK(&g1.Layer(m.KindOf(1)) == &g1.experts);
  CHECK(&g1.Layer(m.KindOf(5)) == &g1.attention);
  CHECK(g1.mamba.op(0).name == "mamba_norm");
  CHECK(g1.mamba.op(g1.mamba.size() - 1).name == "mamba_residual");
}

TEST_CASE("a Mamba-2 layer's forward FLOPs: the projections exactly, the scan near Megatron's") {
  const ModelSpec m = Nano();
  const double T = 8192, h = static_cast<double>(m.hidden), di = 4096, N = 128, G = 8, H = 64;
  const ModelGraph g = BuildModelGraph(m, GraphShape{.seq_len = 8192});
  CHECK(Find(g.mamba, "in_proj")->fwd_flops.flops() ==
        doctest::Approx(2 * T * h * (2 * di + 2 * G * N + H)));
  CHECK(Find(g.mamba, "mamba_out_proj")->fwd_flops.flops() == doctest::Approx(2 * T * di * h));
  // The form of Megatron-LM's estimate of the scan (megatron/training/training.py at d98e8a6,
  // the hybrid FLOP count: 7 T d_inner N, where it takes d_inner as 2 x hidden) at the mixer's
  // own d_inner (heads x head_dim, 4096 here): the SSD algorithm's four matmuls (Dao & Gu 2024
  // Sec. 6), as the graph counts them, are 0.93 of it at Q = N = 128.
  const double scan = Find(g.mamba, "ssd_scan")->fwd_flops.flops();
  CHECK(scan / (7 * T * di * N) == doctest::Approx(0.93).epsilon(0.01));
  CHECK(Find(g.mamba, "ssd_scan")->bwd_flops.flops() == doctest::Approx(2 * scan));
}

TEST_CASE("context parallelism: all-to-alls around the scan, the same FLOPs over the ranks") {
  const ModelSpec m = Nano();
  const ModelGraph g1 = BuildModelGraph(m, GraphShape{.seq_len = 8192});
  const ModelGraph g2 = BuildModelGraph(m, GraphShape{.seq_len = 8192, .cp = 2});
  const Op* in = Find(g2.mamba, "in_proj");
  CHECK(in->fwd_comm.kind == CommKind::kAllToAll);
  CHECK(in->fwd_comm.group == GroupKind::kCp);
  CHECK(Find(g2.mamba, "ssd_scan")->fwd_comm.kind == CommKind::kAllToAll);
  CHECK(Find(g2.mamba, "conv1d")->bwd_comm.kind == CommKind::kAllToAll);
  CHECK(Find(g2.mamba, "mamba_gated_norm")->bwd_comm.kind == CommKind::kAllToAll);
  CHECK(Find(g1.mamba, "in_proj")->fwd_comm.kind == CommKind::kNone);
  // Each CP rank scans whole sequences of half the heads: half the FLOPs.
  CHECK(Find(g2.mamba, "ssd_scan")->fwd_flops.flops() * 2 ==
        doctest::Approx(Find(g1.mamba, "ssd_scan")->fwd_flops.flops()));
}

}  // namespace
}  // namespace parasim
