#include "models/block_builder.h"

#include <boost/graph/topological_sort.hpp>
#include <iterator>

namespace parasim::blocks {

Block BlockBuilder::Finish() {
  std::vector<Vertex> rev;
  boost::topological_sort(block_.graph, std::back_inserter(rev));
  block_.order.assign(rev.rbegin(), rev.rend());
  return std::move(block_);
}

Dims MakeDims(const ModelSpec& m, const GraphShape& s) {
  Dims d;
  d.t = s.tp;
  d.sp = s.sp && s.tp > 1;
  d.T = static_cast<double>(s.micro_batch) * s.seq_len / s.cp;
  d.T_out = d.sp ? d.T / s.tp : d.T;
  d.h = static_cast<double>(m.hidden);
  d.a = s.act_bytes;
  d.dropout = s.dropout >= 0 ? s.dropout == 1 : ModelDropsOut(m);
  return d;
}

Op Gemm(std::string name, int64_t m, int64_t k, int64_t n, double params, int64_t batch) {
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::kGemm;
  op.m = m;
  op.n = n;
  op.k = k;
  op.batch = batch;
  op.fwd_flops = Flops(2.0 * m * n * k * batch);
  op.bwd_flops = op.fwd_flops * 2;  // input gradient + weight gradient
  op.params = params;
  return op;
}

Op Elementwise(std::string name, double fwd_bytes, double bwd_bytes) {
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::kMemoryBound;
  op.fwd_bytes = Bytes(fwd_bytes);
  op.bwd_bytes = Bytes(bwd_bytes);
  return op;
}

void Activation(Op* op, double elements) {
  op->elements = elements;
  op->fwd_math = op->bwd_math = ElementMath::kActivation;
}

void MarkFp8(Block* b, const GraphShape& s, const Dims& d) {
  if (!s.fp8) return;
  const double scale = Fp8ElementBytes(*s.fp8) / d.a;
  for (auto v : b->order) {
    Op& op = b->graph[v];
    if (op.kind != OpKind::kGemm || op.name == "router") continue;
    op.fp8 = true;
    for (SavedTensor& t : op.saved) t.bytes *= scale;
  }
}

void MarkSelectiveOp(Block* b, const Dims& d) {
  int mm = 0;
  for (auto v : b->order) {
    Op& op = b->graph[v];
    if (op.kind == OpKind::kGemm) {
      const std::vector<double> parts =
          op.mm_cols.empty() ? std::vector<double>{static_cast<double>(op.n)} : op.mm_cols;
      double cols = 0, rerun = 0;
      for (double c : parts) {
        cols += c;
        if (++mm % 2 == 1) {
          op.op_kept_bytes += static_cast<double>(op.m) * c * op.batch * d.a;
        } else {
          rerun += c;
        }
      }
      op.op_rerun = cols > 0 ? rerun / cols : 0;
    }
  }
}

void EnterTp(Op* op, const Dims& d, Op* linear, double widths) {
  if (d.t <= 1) return;
  const double D = widths * d.T * d.h * d.a;
  if (d.sp) op->fwd_comm = {CommKind::kAllGather, GroupKind::kTp, D, false};
  Op* back = linear != nullptr ? linear : op;
  back->bwd_comm = {d.sp ? CommKind::kReduceScatter : CommKind::kAllReduce, GroupKind::kTp, D,
                    false};
  back->bwd_comm.beside_wgrad = linear != nullptr;
  back->bwd_comm.regather = linear != nullptr && d.sp;
}

void LeaveTp(Op* op, const Dims& d) {
  if (d.t <= 1) return;
  const double D = d.T * d.h * d.a;
  if (d.sp) {
    op->fwd_comm = {CommKind::kReduceScatter, GroupKind::kTp, D, false};
    op->bwd_comm = {CommKind::kAllGather, GroupKind::kTp, D, false};
  } else {
    op->fwd_comm = {CommKind::kAllReduce, GroupKind::kTp, D, false};
  }
}

Op NormOver(const std::string& name, const ModelSpec& m, const Dims& d, double tokens,
            double cols) {
  const double x = tokens * cols * d.a;
  Op op = Elementwise(name, 2 * x, 3 * x);
  op.elements = tokens * cols;
  op.fwd_math = ElementMath::kNorm;  // its backward streamed at HBM speed when measured
  op.params = (m.norm == NormKind::kLayerNorm ? 2 : 1) * cols;
  op.saved.push_back({name + ".input", x, false});
  op.deepseek_recompute = true;  // its output, a Linear's input, is rebuilt from its input
  return op;
}

Op Norm(const std::string& name, const ModelSpec& m, const Dims& d) {
  return NormOver(name, m, d, d.T_out, d.h);
}

Op DropoutAdd(const std::string& name, const Dims& d) {
  const double x = d.T_out * d.h * d.a;
  Op op = Elementwise(name, 3 * x, 3 * x);
  op.elements = d.T_out * d.h;
  // The forward draws a random number an element; the backward only applies the saved mask.
  if (d.dropout) op.fwd_math = ElementMath::kDropout;
  if (d.dropout) op.saved.push_back({name + ".mask", d.T_out * d.h, false});  // 1-byte mask
  return op;
}

}  // namespace parasim::blocks
