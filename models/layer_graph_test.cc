// The layer graph whole: tensor parallelism over a layer, the head's loss, and the shared
// graphs.
#include "models/layer_graph.h"

#include <doctest/doctest.h>

#include <map>
#include <string>

namespace parasim {
namespace {

ModelSpec Gpt3() { return *LoadModelCatalog()->Find("gpt3-175b"); }

TEST_CASE("tensor parallelism divides layer FLOPs and parameters; graph is a DAG in order") {
  ModelSpec m = Gpt3();
  ModelGraph g1 = BuildModelGraph(m, GraphShape{.tp = 1});
  ModelGraph g8 = BuildModelGraph(m, GraphShape{.tp = 8});
  CHECK(ForwardFlops(g8.dense) * 8 == doctest::Approx(ForwardFlops(g1.dense)));
  // Norm parameters are replicated over TP, so the ratio is just under 8.
  CHECK(BlockParams(g1.dense) / BlockParams(g8.dense) == doctest::Approx(8).epsilon(0.001));
  CHECK(g1.dense.op(0).name == "attn_norm");
  CHECK(g1.dense.op(g1.dense.size() - 1).name == "mlp_residual");
}

TEST_CASE(
    "TP communication per layer: 4 all-reduces of b s h, i.e. 8bsh(t-1)/t elements on the ring") {
  ModelSpec m = Gpt3();
  const int t = 8;
  ModelGraph g = BuildModelGraph(m, GraphShape{.micro_batch = 1, .seq_len = 2048, .tp = t});
  double ring_bytes = 0;
  int collectives = 0;
  for (size_t i = 0; i < g.dense.size(); ++i) {
    for (const CommSpec* c : {&g.dense.op(i).fwd_comm, &g.dense.op(i).bwd_comm}) {
      if (c->kind == CommKind::kAllReduce) {
        ring_bytes += 2.0 * (t - 1) / t * c->bytes;
        ++collectives;
      }
    }
  }
  CHECK(collectives == 4);
  const double bsh = 2048.0 * m.hidden;
  CHECK(ring_bytes / 2 == doctest::Approx(8 * bsh * (t - 1) / t));  // in 2-byte elements
}

TEST_CASE("cross-entropy: Megatron-LM's passes over the vocab-parallel logits") {
  // The unfused vocab_parallel_cross_entropy on the caller's fp32 cast of the logits, as a list
  // of kernels with the bytes each reads and writes per logit.
  struct Pass {
    const char* what;
    double read, written;
  };
  auto per_logit = [](std::initializer_list<Pass> passes) {
    double sum = 0;
    for (const Pass& p : passes) sum += p.read + p.written;
    return sum;
  };
  auto cat = LoadModelCatalog();
  const ModelSpec m = *cat->Find("gpt3-175b");
  for (double a : {2.0, 4.0}) {
    CAPTURE(a);
    const bool cast = a < 4;  // .float() returns fp32 logits themselves
    const double fwd = per_logit({{"cast to fp32", cast ? a : 0.0, cast ? 4.0 : 0.0},
                                  {"max", 4, 0},
                                  {"subtract max", 4, 4},
                                  {"exp", 4, 4},
                                  {"sum", 4, 0},
                                  {"divide by sum", 4, 4}});
    const double bwd = per_logit(
        {{"scale by loss gradient", 4, 4}, {"cast back", cast ? 4.0 : 0.0, cast ? a : 0.0}});
    const GraphShape shape{.micro_batch = 2, .seq_len = 2048, .tp = 8, .act_bytes = a};
    const ModelGraph g = BuildModelGraph(m, shape);
    const double logits = 2.0 * 2048 * m.vocab / 8;  // this TP rank's share of the vocabulary
    const Op* loss = nullptr;
    for (size_t i = 0; i < g.head.size(); ++i) {
      if (g.head.op(i).name == "cross_entropy") loss = &g.head.op(i);
    }
    REQUIRE(loss != nullptr);
    CHECK(loss->fwd_bytes.bytes() == doctest::Approx(fwd * logits));
    CHECK(loss->bwd_bytes.bytes() == doctest::Approx(bwd * logits));
    // The fp32 softmax is what the backward keeps.
    REQUIRE(loss->saved.size() == 1);
    CHECK(loss->saved[0].bytes == doctest::Approx(4 * logits));
  }
}

TEST_CASE(
    "memory-bound ops say what per-element work the SMs do: norms, activations, dropout, loss") {
  // docs/MODEL.md, "Element-wise kernels on Hopper": the kernels whose pace the SMs set on an
  // H200 (and on an H100 at its HBM's limit) carry their elements and kind; the rest stream.
  auto cat = LoadModelCatalog();
  const ModelSpec m = *cat->Find("gpt3-1.3b");  // GeLU, LayerNorm, dropout
  const GraphShape shape{.micro_batch = 2, .seq_len = 2048, .tp = 1, .act_bytes = 2};
  const ModelGraph g = BuildModelGraph(m, shape);
  const double tokens = 2.0 * 2048;
  std::map<std::string, const Op*> ops;
  for (const Block* b : {&g.dense, &g.head}) {
    for (size_t i = 0; i < b->size(); ++i) ops[b->op(i).name] = &b->op(i);
  }
  REQUIRE(ops.count("attn_norm"));
  CHECK(ops["attn_norm"]->fwd_math == ElementMath::kNorm);
  CHECK(ops["attn_norm"]->bwd_math == ElementMath::kStream);
  CHECK(ops["attn_norm"]->elements == tokens * m.hidden);
  REQUIRE(ops.count("gelu"));
  CHECK(ops["gelu"]->fwd_math == ElementMath::kActivation);
  CHECK(ops["gelu"]->bwd_math == ElementMath::kActivation);
  CHECK(ops["gelu"]->elements == tokens * m.ffn());
  REQUIRE(ops.count("mlp_residual"));
  CHECK(ops["mlp_residual"]->fwd_math == ElementMath::kDropout);
  CHECK(ops["mlp_residual"]->bwd_math == ElementMath::kStream);
  // Megatron-LM's unfused loss on 16-bit logits: of 38 bytes a logit forward, the cast (6) and
  // the in-place subtraction and division (8 each) are PyTorch's unvectorized kernels; of 14
  // backward, the in-place scaling (8).
  REQUIRE(ops.count("cross_entropy"));
  const Op& loss = *ops["cross_entropy"];
  const double logits = tokens * m.vocab;
  CHECK(loss.fwd_math == ElementMath::kLossPasses);
  CHECK(loss.elements == logits);
  CHECK(loss.fwd_sm_passes == 3);
  CHECK(loss.fwd_sm_bytes == doctest::Approx(22 * logits));
  CHECK(loss.bwd_sm_passes == 1);
  CHECK(loss.bwd_sm_bytes == doctest::Approx(8 * logits));
  CHECK(loss.fwd_bytes.bytes() == doctest::Approx(38 * logits));
  // A model without dropout adds its residual as a plain stream.
  const ModelGraph llama = BuildModelGraph(*cat->Find("llama3-8b"), shape);
  for (size_t i = 0; i < llama.dense.size(); ++i) {
    const Op& op = llama.dense.op(i);
    if (op.name == "mlp_residual") CHECK(op.fwd_math == ElementMath::kStream);
    if (op.name == "swiglu") CHECK(op.fwd_math == ElementMath::kActivation);
  }
}

TEST_CASE("fused cross-entropy: one read of the logits forward, a read and a write backward") {
  // training.cross_entropy: fused. Time as Transformer Engine's parallel_cross_entropy: the
  // online softmax reads each logit once in its own type; the backward rewrites them as the
  // gradient. Memory as Megatron-Core's native fusion, the unfused passes compiled: the fp32
  // softmax kept, and beside it while the loss runs the 16-bit logits and the compiled exp's
  // fp32 buffer.
  auto cat = LoadModelCatalog();
  const ModelSpec m = *cat->Find("llama3-70b");
  for (double a : {2.0, 4.0}) {
    CAPTURE(a);
    GraphShape shape{.micro_batch = 1, .seq_len = 8192, .tp = 4, .act_bytes = a};
    shape.fused_cross_entropy = true;
    const ModelGraph fused = BuildModelGraph(m, shape);
    shape.fused_cross_entropy = false;
    const ModelGraph unfused = BuildModelGraph(m, shape);
    const double logits = 8192.0 * m.vocab / 4;
    auto loss_of = [](const ModelGraph& g) -> const Op* {
      for (size_t i = 0; i < g.head.size(); ++i) {
        if (g.head.op(i).name == "cross_entropy") return &g.head.op(i);
      }
      return nullptr;
    };
    const Op* f = loss_of(fused);
    const Op* u = loss_of(unfused);
    REQUIRE(f != nullptr);
    REQUIRE(u != nullptr);
    CHECK(f->fwd_bytes.bytes() == doctest::Approx(a * logits));
    CHECK(f->bwd_bytes.bytes() == doctest::Approx(2 * a * logits));
    REQUIRE(f->saved.size() == 1);
    CHECK(f->saved[0].bytes == doctest::Approx(4 * logits));
    CHECK(f->transient == doctest::Approx((a < 4 ? a + 4 : a) * logits));
    CHECK(TransientBytes(fused.head) == f->transient);
    // Against the unfused passes on fp32: 38 and 14 bytes a 16-bit logit, 32 and 8 an fp32 one;
    // both keep the fp32 softmax, and the unfused one works beside it on the 16-bit logits alone
    // (none when they are fp32 already).
    CHECK(u->fwd_bytes.bytes() / f->fwd_bytes.bytes() == doctest::Approx(a < 4 ? 19 : 8));
    CHECK(u->saved[0].bytes == f->saved[0].bytes);
    CHECK(u->transient == doctest::Approx((a < 4 ? a : 0) * logits));
    // Nothing else in the graph changes.
    CHECK(fused.dense.size() == unfused.dense.size());
    CHECK(fused.head.size() == unfused.head.size());
  }
}

TEST_CASE("the model graph is built once per (model, shape) and shared") {
  const ModelSpec m = *LoadModelCatalog()->Find("gpt3-175b");
  GraphShape s;
  s.tp = 8;
  const auto a = SharedModelGraph(m, s);
  CHECK(SharedModelGraph(m, s) == a);  // the same graph object
  GraphShape wider = s;
  wider.micro_batch = 2;
  const auto b = SharedModelGraph(m, wider);
  CHECK(b != a);
  CHECK(ForwardFlops(b->dense) == doctest::Approx(2 * ForwardFlops(a->dense)));
  ModelSpec other = m;
  other.layers = 2;  // another model with the same id is another graph
  CHECK(SharedModelGraph(other, s) != a);
  CHECK(ForwardFlops(a->dense) == ForwardFlops(BuildModelGraph(m, s).dense));
}

TEST_CASE("the MTP module's projection is column-parallel over TP, its output gathered") {
  // Megatron-Core's eh_proj: a ColumnParallelLinear of 2h -> h (gather_output=False), its
  // output all-gathered over TP before the module's layer. DeepSeek-V3 at TP8: each rank holds
  // and computes an eighth of the 2 x 7168 x 7168 weights (it had been replicated).
  auto cat = LoadModelCatalog();
  const ModelSpec m = *cat->Find("deepseek-v3");
  const ModelGraph one = BuildModelGraph(m, GraphShape{.seq_len = 4096, .tp = 1});
  const ModelGraph eight = BuildModelGraph(m, GraphShape{.seq_len = 4096, .tp = 8, .sp = true});
  auto proj = [](const ModelGraph& g) -> const Op& {
    for (size_t i = 0; i < g.mtp.size(); ++i) {
      if (g.mtp.op(i).name == "mtp_proj") return g.mtp.op(i);
    }
    FAIL("no mtp_proj");
    return g.mtp.op(0);
  };
  CHECK(proj(one).params == doctest::Approx(2.0 * 7168 * 7168));
  CHECK(proj(eight).params == doctest::Approx(2.0 * 7168 * 7168 / 8));
  CHECK(proj(eight).fwd_flops.flops() == doctest::Approx(proj(one).fwd_flops.flops() / 8));
  CHECK(proj(eight).fwd_comm.kind == CommKind::kAllGather);
  CHECK(proj(one).fwd_comm.kind == CommKind::kNone);
  // Under SP the gathered output is split along the sequence again, the split's backward an
  // all-gather of the whole T x h gradient (scatter_to_sequence_parallel_region).
  auto split = [](const ModelGraph& g) {
    for (size_t i = 0; i < g.mtp.size(); ++i) {
      if (g.mtp.op(i).name == "mtp_sp_split") return static_cast<int>(i);
    }
    return -1;
  };
  REQUIRE(split(eight) == static_cast<int>(eight.mtp.size()) - 1);  // after the projection
  const Op& s8 = eight.mtp.op(static_cast<size_t>(split(eight)));
  CHECK(s8.bwd_comm.kind == CommKind::kAllGather);
  CHECK(s8.bwd_comm.group == GroupKind::kTp);
  CHECK(s8.bwd_comm.bytes == doctest::Approx(4096.0 * 7168 * 2));  // a bf16 micro-batch of 1
  CHECK(split(one) == -1);
  const ModelGraph no_sp = BuildModelGraph(m, GraphShape{.seq_len = 4096, .tp = 8});
  CHECK(split(no_sp) == -1);
}

}  // namespace
}  // namespace parasim
