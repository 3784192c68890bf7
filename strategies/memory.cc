#include "strategies/memory.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

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
  shape.cp_all_gather = l.gathers_kv();
  shape.ep = l.ep;
  shape.etp = l.expert_tp();
  shape.act_bytes = (t.precision == Dtype::kFp32 || t.precision == Dtype::kTf32) ? 4 : 2;
  shape.attention = t.attention;
  shape.fused_cross_entropy = t.fused_cross_entropy;
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
  const double shard_dense = static_cast<double>(l.dp) * l.cp;       // ZeRO shards over DP (x CP)
  const double shard_expert = std::max(1.0, l.expert_data_width());  // edp
  const int64_t micro_batches = std::max<int64_t>(1, t.global_batch / (l.dp * t.micro_batch));
  const bool lora = t.finetune != FinetuneKind::kNone;
  const PipelineSchedule& schedule = ScheduleOf(l.schedule);
  PipelineShape shape{l.pp, ChunksOf(l), micro_batches};
  // Layers past a chunk's recompute_layers keep every activation.
  const std::vector<char> recomputed = RecomputedLayers(l, t, m.layers);
  if (schedule.splits_backward()) {
    // A split backward's W holds what its GEMMs saved (schedule_zb.cc), as a share of a dense
    // layer's activations, averaged over the recomputed layers and the others.
    const double n = static_cast<double>(m.layers);
    const double kept = static_cast<double>(std::count(recomputed.begin(), recomputed.end(), 0));
    const double act = kept == 0   ? ActivationBytes(g.dense, t.recompute)
                       : kept == n ? ActivationBytes(g.dense, RecomputeKind::kNone)
                                   : ((n - kept) * ActivationBytes(g.dense, t.recompute) +
                                      kept * ActivationBytes(g.dense, RecomputeKind::kNone)) /
                                         n;
    shape.w_hold = act > 0 ? std::min(1.0, WeightGradBytes(g.dense) / act) : 0.0;
  }
  std::vector<double> in_flights = *SharedInFlights(l, shape);
  if (l.overlap_ep && l.pp == 1 && !schedule.pairs_forward_backward()) {
    // One stage with overlap.ep runs the next forward before the backward: two in flight.
    in_flights[0] = PeakInFlight((*SharedLayoutOrders(l, shape))[0], shape.chunks, shape.w_hold);
  }
  // Each virtual stage's layers in model order, and whether it holds the embedding or the LM
  // head (a stage's chunks of an interleaved or V schedule hold runs apart from each other).
  const bool two_chunks = schedule.mirrored();
  const int chunks = ChunksOf(l);
  const std::vector<ChunkSpan> spans = ChunkSpans(l, m.layers);
  // LayoutOrders differ from the schedule's only in F&B pairs, not in what each unit holds.
  StagePeaks peaks(l, shape);
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
  // What one dense or MoE layer adds to a stage, the same for every layer of its kind.
  struct LayerBytes {
    double expert, dense, lora, kept, dropped;
  };
  auto layer_bytes = [&](const Block& blk) {
    const double kept = ActivationBytes(blk, t.recompute);
    return LayerBytes{BlockParams(blk, true), BlockParams(blk) - BlockParams(blk, true),
                      lora ? LoraParams(blk, t.lora_rank) : 0.0, kept,
                      ActivationBytes(blk, RecomputeKind::kNone) - kept};
  };
  const LayerBytes dense_layer = layer_bytes(g.dense);
  const LayerBytes moe_layer = m.is_moe() ? layer_bytes(g.moe) : dense_layer;
  for (int s = 0; s < l.pp; ++s) {
    StageMemory st;
    double dense = 0, expert = 0, lora_params = 0, act_per_mb = 0, act_full_layer = 0;
    // The stage's chunks: their layers, and whether they hold the embedding or the head.
    std::vector<ChunkSpan> mine;
    for (int c = 0; c < chunks; ++c) mine.push_back(spans[VirtualStageOf(schedule, l.pp, s, c)]);
    // Each chunk's parameters and activations per micro-batch.
    std::vector<double> chunk_bytes;
    st.layers = 0;
    for (const ChunkSpan& vs : mine) {
      double bytes = 0;
      for (int i = vs.first; i < vs.first + vs.layers; ++i) {
        const LayerBytes& lb = m.IsMoeLayer(i) ? moe_layer : dense_layer;
        expert += lb.expert;
        dense += lb.dense;
        if (lora) lora_params += lb.lora;
        if (recomputed[static_cast<size_t>(i)]) {
          bytes += lb.kept;
          act_full_layer = std::max(act_full_layer, lb.dropped);
        } else {
          bytes += lb.kept + lb.dropped;
        }
      }
      st.layers += vs.layers;
      if (vs.embedding) dense += BlockParams(g.embedding);
      if (vs.head) {
        dense += BlockParams(g.head) + mtp_dense;
        expert += mtp_expert;
        // A tied LM head away from its route's embedding (stage 0, or stage p-1 for
        // DualPipe's upward copy) keeps its own copy of the table.
        const bool apart = schedule.bidirectional() ? l.pp > 1 : s != 0;
        if (m.tied_embeddings && apart) {
          dense += static_cast<double>(m.vocab) * m.hidden / l.tp;
        }
        bytes += ActivationBytes(g.head, RecomputeKind::kNone) + mtp_act;
      }
      chunk_bytes.push_back(bytes);
      act_per_mb += bytes;
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
      // This rank's part of dense and expert parameters' bytes, sharded or whole.
      auto part = [&](double per_param, bool sharded) {
        return sharded ? per_param * (dense / shard_dense + expert / shard_expert)
                       : per_param * (dense + expert);
      };
      st.params_bytes = part(rule.weights, l.zero >= 3);
      // The accumulated gradients stay whole until a reduction after the last micro-batch,
      // ZeRO 2/3 included (grad_reduce: step); sharded when every micro-batch reduces them.
      st.grads_bytes = part(rule.grads, l.shards_gradients());
      st.optimizer_bytes = part(rule.optimizer, l.zero >= 1);
    }
    // Micro-batches in flight at the peak, as the schedule runs them (strategies/schedule.h).
    const double in_flight = in_flights[s];
    st.in_flight = in_flight;
    st.activations_bytes = act_per_mb * in_flight;
    if (two_chunks && act_per_mb > 0) {
      // The two chunks differ (the ends of a route hold the embedding and the LM head): walk
      // the stage's order with each chunk's bytes.
      std::vector<double> w(chunk_bytes.size());
      for (size_t c = 0; c < w.size(); ++c) w[c] = chunk_bytes[c] * shape.w_hold;
      st.activations_bytes = peaks.Of(s, chunk_bytes, w);
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
