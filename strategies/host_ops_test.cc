#include "strategies/host_ops.h"

#include <doctest/doctest.h>

#include "models/layer_graph.h"
#include "strategies/serving_testing.h"

namespace parasim {
namespace {

Op Gemm(double params) {
  Op op;
  op.name = "fc1";
  op.kind = OpKind::kGemm;
  op.m = 4096;
  op.n = 2048;
  op.k = 512;
  op.params = params;
  return op;
}

Op Attention() {
  Op op;
  op.name = "attention";
  op.kind = OpKind::kAttention;
  return op;
}

}  // namespace

TEST_CASE("a GEMM issues one kernel forward and two backward, one of them the weight gradient") {
  Training t;
  const HostOps h = CountHostOps(Gemm(1e6), t);
  CHECK(h.fwd == 1);
  CHECK(h.bwd == 2);
  CHECK(h.wgrad == 1);
  t.finetune = FinetuneKind::kLora;  // frozen weights: no weight gradient
  CHECK(CountHostOps(Gemm(1e6), t).bwd == 1);
}

TEST_CASE("the CI's slow settings show as kernels: unfused attention, accumulation, fills") {
  Training t;
  const HostOps flash = CountHostOps(Attention(), t);
  t.attention = AttentionKind::kStandard;
  const HostOps standard = CountHostOps(Attention(), t);
  // Megatron-Core's DotProductAttention: QK^T, softmax, dropout, AV, the context's copy.
  CHECK(standard.fwd == 5);
  CHECK(standard.fwd > flash.fwd);
  CHECK(standard.bwd > flash.bwd);
  // --no-gradient-accumulation-fusion: the DDP hook's add per weight.
  t.grad_accumulation = GradAccumulation::kSeparate;
  const HostOps sep = CountHostOps(Gemm(1e6), t);
  CHECK(sep.bwd == 3);
  CHECK(sep.wgrad == 2);
  CHECK(CountHostOps(Gemm(0), t).bwd == 1);  // no weights, nothing to add
  // --deterministic-mode: a NaN fill before each kernel that writes a new tensor, none before
  // the in-place add.
  t.deterministic = true;
  const HostOps det = CountHostOps(Gemm(1e6), t);
  CHECK(det.fwd == 2);
  CHECK(det.bwd == 5);
  CHECK(det.wgrad == 3);
}

TEST_CASE("routed experts issued one at a time, and a module's other kernels") {
  Training t;
  t.per_expert_gemm = true;
  Op e = Gemm(1e6);
  e.expert = true;
  e.batch = 16;
  HostOps h = CountHostOps(e, t);
  CHECK(h.fwd == 16);
  CHECK(h.bwd == 32);
  e.fp8 = true;  // a quantization an expert each pass
  h = CountHostOps(e, t);
  CHECK(h.fwd == 32);
  CHECK(h.bwd == 48);
  Op router = Gemm(1e6);
  router.name = "router";
  CHECK(CountHostOps(router, Training{}).fwd == 9);  // the gate's GEMM and eight more
}

TEST_CASE("deterministic fills write each GEMM's output, and its input gradient backward") {
  Training t;
  const AllocatedBytes a = OutputBytes(Gemm(1e6), t);
  CHECK(a.fwd == doctest::Approx(4096.0 * 2048 * 2));
  CHECK(a.bwd == doctest::Approx(4096.0 * 512 * 2));
  t.grad_accumulation = GradAccumulation::kSeparate;  // the weight gradient is a new tensor
  CHECK(OutputBytes(Gemm(1e6), t).bwd == doctest::Approx(4096.0 * 512 * 2 + 1e6 * 2));
}

TEST_CASE("a Mamba-2 layer issues the kernels its source launches: 15 forward, 57 backward") {
  // Counted from Megatron-LM's mixer (_ssm_training) and state-spaces/mamba's fused function,
  // besides in_proj and out_proj (one GEMM forward, two backward each): the pre-norm (1, 2),
  // the conv1d with A's and dt_bias's casts (6, 11), the scan (5, 40: its Triton kernels, the
  // autotuned kernels' zeroing pre-hooks, the partial sums), the gated norm (2, 3) and the
  // residual (1, 1).
  const ModelGraph g =
      BuildModelGraph(testing::CatalogModel("nemotron-3-nano-30b-a3b"), GraphShape{});
  const Block& mamba = g.Layer(LayerKind::kMamba);
  REQUIRE(mamba.size() > 0);
  double fwd = 0, bwd = 0;
  int gemms = 0;
  for (size_t i = 0; i < mamba.size(); ++i) {
    const HostOps h = CountHostOps(mamba.op(i), Training{});
    fwd += h.fwd;
    bwd += h.bwd;
    gemms += mamba.op(i).kind == OpKind::kGemm ? 1 : 0;
  }
  CHECK(gemms == 2);
  CHECK(fwd == 15 + 2);
  CHECK(bwd == 57 + 2 * 2);
}

}  // namespace parasim
