#include "strategies/memory.h"

#include <algorithm>

#include "models/layer_graph.h"
#include "strategies/schedule.h"

namespace parasim {
StateBytes StateBytesPerParam(const Training& t) {
  StateBytes b;
  const bool mixed = t.precision != Dtype::kFp32 && t.precision != Dtype::kTf32;
  // fp8 training keeps bf16 weights (Transformer Engine casts per GEMM).
  b.weights = t.precision == Dtype::kFp8 ? 2.0 : DtypeBytes(t.precision);
  b.grads = DtypeBytes(t.grad_dtype);
  const double master = mixed ? 4.0 : 0.0;
  // Adam's m and v (or SGD's momentum), fp32 unless `moments: bf16`.
  const double moment = t.moments == Dtype::kBf16 ? 2.0 : 4.0;
  b.optimizer = master + (t.optimizer == OptimizerKind::kAdam ? 2 * moment : moment);
  return b;
}

GraphShape RankShape(const Training& t, const Layout& l) {
  GraphShape shape;
  shape.micro_batch = t.micro_batch;
  shape.seq_len = t.seq_len;
  shape.tp = l.tp;
  shape.sp = l.sp;
  shape.cp = l.cp;
  shape.ep = l.ep;
  shape.act_bytes = (t.precision == Dtype::kFp32 || t.precision == Dtype::kTf32) ? 4 : 2;
  shape.attention = t.attention;
  if (t.precision == Dtype::kFp8) shape.fp8 = t.fp8_recipe;
  return shape;
}

MemoryReport EstimateMemory(const ModelSpec& m, const Training& t, const Layout& l,
                            const ClusterSpec& cluster) {
  MemoryReport rep;
  rep.capacity_bytes = cluster.gpu.memory.bytes();
  const auto graph = SharedModelGraph(m, RankShape(t, l));
  const ModelGraph& g = *graph;
  const StateBytes rule = StateBytesPerParam(t);
  rep.bytes_per_param = rule.weights + rule.grads + rule.optimizer;
  const double shard_dense = static_cast<double>(l.dp) * l.cp;  // ZeRO shards over DP (x CP)
  const double shard_expert = std::max(1.0, shard_dense / l.ep);
  const int64_t micro_batches = std::max<int64_t>(1, t.global_batch / (l.dp * t.micro_batch));
  const std::vector<int> per_stage = StageLayers(l, m.layers);
  const bool lora = t.finetune != FinetuneKind::kNone;
  const PipelineSchedule& schedule = ScheduleOf(l.schedule);
  PipelineShape shape{l.pp, ChunksOf(l), micro_batches};
  if (schedule.splits_backward()) {
    // A split backward's W holds what its GEMMs saved (schedule_zb.cc).
    const double layer_act = ActivationBytes(g.dense, t.recompute);
    shape.w_hold = layer_act > 0 ? std::min(1.0, WeightGradBytes(g.dense) / layer_act) : 0.0;
  }
  const std::vector<double> in_flights = schedule.InFlights(shape);
  // The LM head follows the last virtual stage: the last stage's, or stage 0's in a V.
  const int head_stage = schedule.v_shape() ? 0 : l.pp - 1;
  // A V's layers per virtual stage, and the first of each (model order).
  std::vector<std::vector<Unit>> v_orders;
  std::vector<int> v_layers, v_first;
  if (schedule.v_shape()) {
    const std::vector<std::vector<int>> per_chunk = ChunkLayers(l, m.layers, 2, true);
    for (int g = 0, first = 0; g < 2 * l.pp; ++g) {
      const ChunkPlace at = PlaceOf(schedule, l.pp, g);
      v_layers.push_back(per_chunk[at.stage][at.chunk]);
      v_first.push_back(first);
      first += v_layers.back();
    }
  }
  const Block& g_moe = m.is_moe() ? g.moe : g.dense;
  // Multi-token prediction, beside the LM head: each module's own ops and layer (its head's
  // weights are the LM head's).
  const double depth = m.mtp_depth;
  const Block& mtp_layer = g.mtp_layer();
  const double mtp_act =
      depth * (ActivationBytes(g.mtp, t.recompute) + ActivationBytes(mtp_layer, t.recompute) +
               ActivationBytes(g.head, RecomputeKind::kNone));
  const double mtp_expert = depth * BlockParams(mtp_layer, true);
  const double mtp_dense =
      depth * (BlockParams(g.mtp) + BlockParams(mtp_layer) - BlockParams(mtp_layer, true));
  int first_layer = 0;
  for (int s = 0; s < l.pp; ++s) {
    StageMemory st;
    st.layers = per_stage[s];
    double dense = 0, expert = 0, lora_params = 0, act_per_mb = 0, act_full_layer = 0;
    // The stage's layers: a run in model order, or in a V one run per chunk.
    std::vector<int> ids;
    if (schedule.v_shape()) {
      for (int c = 0; c < 2; ++c) {
        const int vs = VirtualStageOf(schedule, l.pp, s, c);
        for (int i = v_first[vs]; i < v_first[vs] + v_layers[vs]; ++i) ids.push_back(i);
      }
    } else {
      for (int i = first_layer; i < first_layer + st.layers; ++i) ids.push_back(i);
    }
    for (int i : ids) {
      const Block& blk = m.IsMoeLayer(i) ? g.moe : g.dense;
      expert += BlockParams(blk, true);
      dense += BlockParams(blk) - BlockParams(blk, true);
      if (lora) lora_params += LoraParams(blk, t.lora_rank);
      act_per_mb += ActivationBytes(blk, t.recompute);
      act_full_layer = std::max(act_full_layer, ActivationBytes(blk, RecomputeKind::kNone) -
                                                    ActivationBytes(blk, t.recompute));
    }
    first_layer += st.layers;
    if (s == 0) dense += BlockParams(g.embedding);
    if (s == head_stage) {
      dense += BlockParams(g.head);
      // A tied LM head on another stage than the embedding keeps its own copy of the table.
      if (m.tied_embeddings && head_stage != 0) {
        dense += static_cast<double>(m.vocab) * m.hidden / l.tp;
      }
      act_per_mb += ActivationBytes(g.head, RecomputeKind::kNone) + mtp_act;
      dense += mtp_dense;
      expert += mtp_expert;
    }
    st.params = dense + expert;
    if (lora) {
      // Frozen base: bf16, or 4-bit NormalFloat with double quantisation for QLoRA
      // (Dettmers et al. 2023: 4 + 0.127 bits per parameter).
      const double base = t.finetune == FinetuneKind::kQlora ? 4.127 / 8 : rule.weights;
      st.params_bytes = st.params * base + lora_params * rule.weights;
      st.grads_bytes = lora_params * rule.grads;
      st.optimizer_bytes = lora_params * rule.optimizer;
      st.params += lora_params;
    } else {
      auto shard = [&](double p, double shard_n, int min_stage) {
        return l.zero >= min_stage ? p / shard_n : p;
      };
      st.params_bytes =
          rule.weights * (shard(dense, shard_dense, 3) + shard(expert, shard_expert, 3));
      st.grads_bytes = rule.grads * (shard(dense, shard_dense, 2) + shard(expert, shard_expert, 2));
      st.optimizer_bytes =
          rule.optimizer * (shard(dense, shard_dense, 1) + shard(expert, shard_expert, 1));
    }
    // Micro-batches in flight at the peak, as the schedule runs them (strategies/schedule.h).
    const double in_flight = in_flights[s];
    st.in_flight = in_flight;
    st.activations_bytes = act_per_mb * in_flight;
    if (schedule.v_shape() && act_per_mb > 0) {
      // A V's two chunks differ (stage 0 holds the embedding's and the LM head's): walk the
      // stage's order with each chunk's bytes.
      if (v_orders.empty()) v_orders = schedule.Orders(shape);
      std::vector<double> chunk_bytes(2, 0.0);
      for (int c = 0; c < 2; ++c) {
        const int vs = VirtualStageOf(schedule, l.pp, s, c);
        for (int i = v_first[vs]; i < v_first[vs] + v_layers[vs]; ++i) {
          chunk_bytes[c] += ActivationBytes(m.IsMoeLayer(i) ? g_moe : g.dense, t.recompute);
        }
        if (vs == 2 * l.pp - 1) {
          chunk_bytes[c] += ActivationBytes(g.head, RecomputeKind::kNone) + mtp_act;
        }
      }
      st.activations_bytes = PeakActivationBytes(v_orders[s], chunk_bytes, shape.w_hold);
      st.in_flight = st.activations_bytes / act_per_mb;
    }
    // Recompute rebuilds what it dropped of one layer at a time during backward.
    if (t.recompute != RecomputeKind::kNone) st.activations_bytes += act_full_layer;
    // DDP keeps gradient buckets for communication; ZeRO-3 gathers one layer's parameters.
    // Two buckets in flight, as DDP keeps them (the layout's, or DDP's 25 MiB).
    const double bucket = l.bucket.bytes() > 0 ? l.bucket.bytes() : kDdpBucket.bytes();
    double comm = l.dp > 1 ? 2 * bucket : 0;
    if (l.zero == 3 && st.layers > 0) comm += 2 * rule.weights * (dense + expert) / st.layers;
    st.other_bytes = comm + kFrameworkReserveBytes;
    if (st.total() > rep.capacity_bytes) rep.fits = false;
    rep.stages.push_back(st);
  }
  return rep;
}

}  // namespace parasim
