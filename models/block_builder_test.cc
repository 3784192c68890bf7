// The blocks' builders: ops linked in order, a GEMM's FLOPs, the TP collectives around a
// region with and without SP, and the selective-op and FP8 marks.
#include "models/block_builder.h"

#include <doctest/doctest.h>

#include <boost/graph/adjacency_list.hpp>

namespace parasim::blocks {
namespace {

ModelSpec Small() {
  ModelSpec m;
  m.layers = 2;
  m.hidden = 1024;
  m.heads = 8;
  m.vocab = 32000;
  return m;
}

TEST_CASE("a block links each op after the previous one, or after those named") {
  BlockBuilder bb("b");
  const Vertex a = bb.Add(Elementwise("a", 1, 1));
  bb.Add(Elementwise("b", 1, 1));
  const Vertex c = bb.Add(Elementwise("c", 1, 1));
  bb.Add(Elementwise("d", 1, 1), {c, a});
  const Block block = bb.Finish();
  REQUIRE(block.size() == 4);
  CHECK(block.name == "b");
  for (size_t i = 0; i < 4; ++i) CHECK(block.op(i).name == std::string(1, "abcd"[i]));
  CHECK(boost::in_degree(block.order[3], block.graph) == 2);
  CHECK(boost::in_degree(block.order[0], block.graph) == 0);
}

TEST_CASE("the rank's dimensions, and a GEMM's FLOPs forward and backward") {
  const Dims d = MakeDims(
      Small(), GraphShape{.micro_batch = 2, .seq_len = 1024, .tp = 4, .sp = true, .cp = 2});
  CHECK(d.T == 1024);     // 2 x 1024 tokens over two CP ranks
  CHECK(d.T_out == 256);  // sharded over TP outside its regions
  CHECK(d.sp);
  CHECK(d.dropout);  // derived: a GELU model's layers use dropout
  const Op g = Gemm("g", 8, 16, 32, 512.0, 3);
  CHECK(g.fwd_flops.flops() == 2.0 * 8 * 16 * 32 * 3);
  CHECK(g.bwd_flops.flops() == 2 * g.fwd_flops.flops());
  CHECK(g.params == 512.0);
}

TEST_CASE("a TP region's collectives: all-reduces without SP, all-gather and reduce-scatter with") {
  const ModelSpec m = Small();
  for (bool sp : {false, true}) {
    CAPTURE(sp);
    const Dims d = MakeDims(m, GraphShape{.tp = 8, .sp = sp});
    const double D = d.T * d.h * d.a;
    Op norm = Norm("n", m, d), linear = Gemm("l", 1, 1, 1, 1);
    EnterTp(&norm, d, &linear);
    CHECK(norm.fwd_comm.kind == (sp ? CommKind::kAllGather : CommKind::kNone));
    CHECK(linear.bwd_comm.kind == (sp ? CommKind::kReduceScatter : CommKind::kAllReduce));
    CHECK(linear.bwd_comm.bytes == D);
    CHECK(linear.bwd_comm.beside_wgrad);
    CHECK(linear.bwd_comm.regather == sp);
    Op out = Gemm("o", 1, 1, 1, 1);
    LeaveTp(&out, d);
    CHECK(out.fwd_comm.kind == (sp ? CommKind::kReduceScatter : CommKind::kAllReduce));
    CHECK(out.bwd_comm.kind == (sp ? CommKind::kAllGather : CommKind::kNone));
  }
  Op alone = Gemm("o", 1, 1, 1, 1);
  LeaveTp(&alone, MakeDims(m, GraphShape{.tp = 1}));  // no TP: no collective
  CHECK(alone.fwd_comm.kind == CommKind::kNone);
}

TEST_CASE("selective-op keeps every odd matmul's output; FP8 casts the Linears' saved inputs") {
  const ModelSpec m = Small();
  const Dims d = MakeDims(m, GraphShape{.seq_len = 128});
  BlockBuilder bb("layer");
  Op qkv = Gemm("qkv", 128, 1024, 3072, 1);
  qkv.mm_cols = {1024, 1024, 1024};  // matmuls 1, 2, 3
  qkv.saved.push_back({"qkv.input", 100, false});
  bb.Add(std::move(qkv));
  bb.Add(Gemm("router", 128, 1024, 8, 1));  // matmul 4
  bb.Add(Gemm("out", 128, 1024, 1024, 1));  // matmul 5
  Block b = bb.Finish();
  MarkSelectiveOp(&b, d);
  CHECK(b.op(0).op_kept_bytes == 2 * 128.0 * 1024 * d.a);  // the first and third
  CHECK(b.op(0).op_rerun == doctest::Approx(1.0 / 3));
  CHECK(b.op(1).op_rerun == 1.0);
  CHECK(b.op(2).op_rerun == 0.0);
  MarkFp8(&b, GraphShape{.fp8 = Fp8Recipe::kTensorwise}, d);
  CHECK(b.op(0).fp8);
  CHECK(b.op(0).saved[0].bytes == doctest::Approx(100 / d.a));  // one byte an element
  CHECK_FALSE(b.op(1).fp8);                                     // the router stays in 16-bit
}

}  // namespace
}  // namespace parasim::blocks
