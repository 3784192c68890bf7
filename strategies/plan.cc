#include "strategies/plan.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <cmath>
#include <numeric>
#include <string_view>
#include <vector>

#include "sim/parse_units.h"
#include "strategies/schedule.h"
#include "strategies/sweep_keys.h"

namespace parasim {

const std::vector<std::string_view>& SweepableKeys() {
  static const std::vector<std::string_view> kNames = [] {
    std::vector<std::string_view> out;
    for (const SweepKey& k : SweepKeys()) out.push_back(k.name);
    return out;
  }();
  return kNames;
}

Status ApplySweepValue(Scenario* s, std::string_view key, std::string_view value) {
  const SweepKey* k = FindSweepKey(key);
  if (k == nullptr) return InvalidArgument(fmt::format("'{}' cannot be swept", std::string(key)));
  PARASIM_ASSIGN_OR_RETURN(int64_t v, k->parse(value));
  k->apply(v, &s->layout, &s->training);
  if (key == "dp") s->dp_auto = false;
  return Status::Ok();
}

std::optional<LayoutProblem> PrecisionProblem(const Training& t, const GpuSpec& g) {
  if (g.Peak(t.precision).flops_per_second() <= 0) {
    std::vector<std::string_view> has;
    for (std::string_view d : DtypeNames()) {
      if (g.Peak(*ParseDtype(d)).flops_per_second() > 0) has.push_back(d);
    }
    return LayoutProblem{"precision",
                         fmt::format("{} needs {} tensor cores and {} has none (no {} peak in the "
                                     "catalog); expected one of {}",
                                     DtypeName(t.precision), DtypeName(t.precision), g.id,
                                     DtypeName(t.precision), fmt::join(has, ", "))};
  }
  if (t.precision == Dtype::kFp8 && t.fp8_recipe == Fp8Recipe::kMxfp8 && !g.mxfp8) {
    return LayoutProblem{"fp8_recipe",
                         fmt::format("mxfp8 needs tensor cores that apply MXFP8's block scales "
                                     "(Blackwell: b200, gb200, b300, gb300) and {} has none; "
                                     "expected tensorwise or blockwise on it",
                                     g.id)};
  }
  return std::nullopt;
}

namespace {

// A problem with the layout key at fault.
std::optional<LayoutProblem> At(std::string key, std::string message) {
  return LayoutProblem{std::move(key), std::move(message)};
}

// The layout spans the cluster's GPUs.
std::optional<LayoutProblem> GpuCountProblem(const Layout& l, const ClusterSpec& c) {
  const int64_t gpus = c.gpus();
  if (l.gpus() == gpus) return std::nullopt;
  return At("dp", fmt::format("tp*pp*dp*cp = {}*{}*{}*{} = {} GPUs, but the cluster has "
                              "nodes*gpus_per_node = {}*{} = {}",
                              l.tp, l.pp, l.dp, l.cp, l.gpus(), c.nodes, c.gpus_per_node, gpus));
}

// TP divides the attention heads, and the KV heads and TP divide one another.
std::optional<LayoutProblem> HeadsProblem(const Layout& l, const ModelSpec& m) {
  if (m.heads % l.tp != 0) {
    return At("tp",
              fmt::format("tp {} does not divide the model's {} attention heads", l.tp, m.heads));
  }
  if (m.kv() % l.tp != 0 && l.tp % m.kv() != 0) {
    return At("tp", fmt::format("tp {} and the model's {} KV heads: one must divide the other",
                                l.tp, m.kv()));
  }
  // MambaMixer shards heads and groups over TP; CP splits each rank's heads, and its groups or
  // their copies (megatron/core/ssm/mamba_mixer.py, mamba_context_parallel.py).
  if (m.has_mamba()) {
    const int heads = m.mamba_heads(), groups = m.mamba.groups;
    if (heads % l.tp != 0 || groups % l.tp != 0) {
      return At("tp", fmt::format("tp {} does not divide the Mamba layers' {} {}", l.tp,
                                  heads % l.tp != 0 ? heads : groups,
                                  heads % l.tp != 0 ? "heads" : "groups"));
    }
    const int rank_heads = heads / l.tp, rank_groups = groups / l.tp;
    if (rank_heads % l.cp != 0) {
      return At("cp", fmt::format("cp {} does not divide the {} Mamba heads a TP rank holds", l.cp,
                                  rank_heads));
    }
    if (rank_groups < l.cp ? l.cp % rank_groups != 0 : rank_groups % l.cp != 0) {
      return At("cp", fmt::format("cp {} and the {} Mamba groups a TP rank holds: one must divide "
                                  "the other",
                                  l.cp, rank_groups));
    }
  }
  return std::nullopt;
}

// overlap.ep needs experts to overlap; virtual stages need a schedule that interleaves.
std::optional<LayoutProblem> ScheduleKeysProblem(const Layout& l, const ModelSpec& m,
                                                 const PipelineSchedule& schedule) {
  if (l.overlap_ep && (l.ep <= 1 || !m.is_moe())) {
    return At("overlap",
              "overlap.ep overlaps expert-parallel all-to-alls: it needs an MoE "
              "model and ep > 1");
  }
  // Megatron-Core pairs a forward with another micro-batch's backward under a pipeline only
  // with virtual stages (transformer_config.py: "If enabling EP A2A overlap,
  // virtual_pipeline_model_parallel_size must be specified when pipeline_model_parallel_size >
  // 1"); under plain 1F1B a stage's pair would hold the next stage's forward behind its
  // backward, every micro-batch.
  if (l.overlap_ep && l.pp > 1 && !schedule.pairs_forward_backward() &&
      !(schedule.interleaves() && l.virtual_stages > 1)) {
    return At("overlap",
              fmt::format("overlap.ep with pp > 1 needs interleaved-1f1b with virtual_stages > 1 "
                          "(Megatron-Core's rule) or a schedule of F&B pairs (dualpipe, "
                          "dualpipe-v); schedule {} has neither",
                          schedule.name()));
  }
  if (l.virtual_stages > 1 && schedule.mirrored()) {
    return At("virtual_stages", fmt::format("schedule {} runs two model chunks per stage; leave "
                                            "virtual_stages out (it is {})",
                                            schedule.name(), l.virtual_stages));
  }
  if (l.virtual_stages > 1 && !schedule.interleaves()) {
    return At("virtual_stages",
              fmt::format("virtual_stages {} needs schedule interleaved-1f1b", l.virtual_stages));
  }
  return std::nullopt;
}

// How the layers split into model chunks: the pipeline's shape and its stated split.
struct ChunkSplit {
  const PipelineSchedule& schedule;
  int v;          // model chunks per stage (ChunksOf)
  int chunks;     // model chunks the layers are split into
  bool accounts;  // account_for counts the embedding or the loss as a layer
};

// Megatron-LM's --account-for-embedding-in-pipeline-split and --account-for-loss-in-
// pipeline-split: the layers and those ends split evenly into the model chunks.
std::optional<LayoutProblem> AccountForProblem(const Layout& l, const ModelSpec& m,
                                               const ChunkSplit& split) {
  const std::string ends = l.split_embedding && l.split_loss ? "the embedding and the loss"
                           : l.split_embedding               ? "the embedding"
                                                             : "the loss";
  const int units = m.layers + (l.split_embedding ? 1 : 0) + (l.split_loss ? 1 : 0);
  if (!l.stage_layers.empty()) {
    return At("account_for", "stage_layers states the split itself: leave account_for out");
  }
  if (split.schedule.mirrored() || split.schedule.bidirectional()) {
    return At("account_for",
              fmt::format("schedule {} places the model's ends on one stage; account_for "
                          "applies to 1F1B, GPipe, zero-bubble and interleaved pipelines",
                          split.schedule.name()));
  }
  if (units % split.chunks != 0) {
    return At("account_for",
              fmt::format("{} layers with {} counted as a layer each, {}, do not split evenly "
                          "into pp*virtual_stages = {}*{} = {} model chunks",
                          m.layers, ends, units, l.pp, split.v, split.chunks));
  }
  return std::nullopt;
}

// stage_layers: one entry a stage, summing to the layers, even under equal-chunk schedules,
// and a layer for every interleaved chunk but the ends'.
std::optional<LayoutProblem> StageLayersProblem(const Layout& l, const ModelSpec& m,
                                                const ChunkSplit& split) {
  const PipelineSchedule& schedule = split.schedule;
  if (static_cast<int>(l.stage_layers.size()) != l.pp) {
    return At("stage_layers",
              fmt::format("stage_layers has {} entries but pp is {}", l.stage_layers.size(), l.pp));
  }
  int sum = std::accumulate(l.stage_layers.begin(), l.stage_layers.end(), 0);
  if (sum != m.layers) {
    return At("stage_layers",
              fmt::format("stage_layers sum to {} but the model has {} layers", sum, m.layers));
  }
  if (schedule.equal_chunks()) {
    for (int s = 0; s < l.pp; ++s) {
      if (l.stage_layers[s] % 2 != 0) {
        return At("stage_layers",
                  fmt::format("schedule {} splits each stage into two equal model chunks, but "
                              "stage {} has {} layers; give every stage an even count",
                              schedule.name(), s, l.stage_layers[s]));
      }
    }
  }
  if (split.v > 1 && !schedule.bidirectional()) {
    // Uneven chunks are fine (ChunkLayers); only the embedding's and the LM head's chunks
    // may be left without layers.
    const int v = split.v;
    const std::vector<std::vector<int>> per_chunk = ChunkLayers(l, m.layers, v, schedule.v_shape());
    for (int s = 0; s < l.pp; ++s) {
      for (int c = 0; c < v; ++c) {
        const int g = VirtualStageOf(schedule, l.pp, s, c);
        const bool ends = g == 0 || g == split.chunks - 1;
        if (per_chunk[s][c] == 0 && !ends) {
          return At("stage_layers",
                    fmt::format("stage {} has {} layers for {} virtual stages: every model chunk "
                                "but the first (embedding) and the last (LM head) needs a layer",
                                s, l.stage_layers[s], v));
        }
      }
    }
  }
  return std::nullopt;
}

// Without a stated split the layers fill the chunks, evenly where the schedule needs it.
std::optional<LayoutProblem> EvenSplitProblem(const Layout& l, const ModelSpec& m,
                                              const ChunkSplit& split) {
  const PipelineSchedule& schedule = split.schedule;
  const int chunks = split.chunks;
  // Where the layers do not fill the chunks evenly but would with both ends counted.
  const std::string account_hint =
      (m.layers + 2) % chunks == 0
          ? fmt::format("; account_for: [embedding, loss] makes {} units, which do", m.layers + 2)
          : "";
  if (m.layers < chunks) {
    return At("pp", fmt::format("{} layers cannot fill {} model chunks (pp {} x {} per stage){}",
                                m.layers, chunks, l.pp, chunks / l.pp, account_hint));
  }
  if (schedule.equal_chunks() && m.layers % chunks != 0) {
    return At("schedule",
              fmt::format("schedule {} needs an even number of layers per stage: {} layers do "
                          "not split into 2*pp = {} equal model chunks (or set stage_layers)",
                          schedule.name(), m.layers, chunks));
  }
  if (schedule.interleaves() && split.v > 1 && m.layers % chunks != 0) {
    return At("virtual_stages",
              fmt::format("{} layers do not split evenly into pp*virtual_stages = "
                          "{}*{} = {} chunks (set stage_layers{})",
                          m.layers, l.pp, split.v, chunks, account_hint));
  }
  return std::nullopt;
}

// The layers' split into model chunks: by account_for, by stage_layers, or evenly.
std::optional<LayoutProblem> SplitProblem(const Layout& l, const ModelSpec& m,
                                          const PipelineSchedule& schedule) {
  const int v = ChunksOf(l);
  // Model chunks the layers are split into: DualPipe's two copies each split into pp stages.
  const ChunkSplit split{schedule, v, schedule.bidirectional() ? l.pp : l.pp * v,
                         l.split_embedding || l.split_loss};
  if (split.accounts) {
    if (auto problem = AccountForProblem(l, m, split)) return problem;
  }
  if (!l.stage_layers.empty()) return StageLayersProblem(l, m, split);
  // The chunks split evenly (above): only the embedding's and the loss's may be empty.
  if (split.accounts) return std::nullopt;
  return EvenSplitProblem(l, m, split);
}

// The global batch divides into micro-batches the schedule can run.
std::optional<LayoutProblem> BatchProblem(const Layout& l, const Training& t) {
  const int64_t per_step = l.dp * t.micro_batch;
  if (t.global_batch % per_step != 0) {
    return At("dp", fmt::format("global_batch {} is not a multiple of dp*micro_batch = {}*{} = {}",
                                t.global_batch, l.dp, t.micro_batch, per_step));
  }
  const int64_t micro_batches = t.global_batch / per_step;
  if (micro_batches > kMaxMicroBatches) {
    return At("dp",
              fmt::format("global_batch {} is {} micro-batches of dp*micro_batch = {}*{} "
                          "per step, more than the {} a step replays; raise dp or "
                          "micro_batch, or lower global_batch",
                          t.global_batch, micro_batches, l.dp, t.micro_batch, kMaxMicroBatches));
  }
  const int64_t units = static_cast<int64_t>(l.pp) * micro_batches * ChunksOf(l);
  if (units > kMaxPipelineUnits) {
    return At("pp", fmt::format("pp x micro-batches x model chunks = {} x {} x {} = {} pipeline "
                                "units, more than the {} a step replays (about 1.6 KB each); "
                                "fewer micro-batches (a larger micro_batch or dp, a smaller "
                                "global_batch), stages or virtual stages",
                                l.pp, micro_batches, ChunksOf(l), units, kMaxPipelineUnits));
  }
  const std::string why = ScheduleOf(l.schedule)
                              .Constraint({.stages = l.pp,
                                           .chunks = ChunksOf(l),
                                           .micro_batches = micro_batches,
                                           .group = l.microbatch_group});
  if (!why.empty()) return At("schedule", why);
  if (t.seq_len % l.cp != 0) {
    return At("cp", fmt::format("cp {} does not divide seq_len {}", l.cp, t.seq_len));
  }
  return std::nullopt;
}

// Expert parallelism and the experts' TP: an MoE model, experts that divide, ranks that regroup.
std::optional<LayoutProblem> ExpertProblem(const Layout& l, const ModelSpec& m) {
  if (l.ep > 1) {
    if (!m.is_moe()) return At("ep", fmt::format("ep {} needs a mixture-of-experts model", l.ep));
    if (m.moe.experts % l.ep != 0) {
      return At("ep", fmt::format("ep {} does not divide the {} experts", l.ep, m.moe.experts));
    }
  }
  if (l.etp > 0 && l.etp != l.tp && !m.is_moe()) {
    return At("etp", fmt::format("etp {} shards experts: it needs a mixture-of-experts model "
                                 "(or etp = tp = {})",
                                 l.etp, l.tp));
  }
  if (!m.is_moe()) return std::nullopt;
  // Each TP rank holds the whole sequence without SP, and the token dispatcher would route every
  // token tp times over. Megatron-Core requires SP for MoE under TP (megatron/training/
  // arguments.py: "When using MoE and tensor parallelism, sequence parallelism must be used").
  if (l.tp > 1 && !l.sp) {
    return At("sp", fmt::format("a mixture-of-experts model under tp {} needs sp: true (each TP "
                                "rank routes its sequence-parallel shard of the tokens; "
                                "Megatron-Core refuses MoE with TP and no SP)",
                                l.tp));
  }
  const int etp = l.expert_tp();
  if (etp == l.tp) {
    if ((l.dp * l.cp) % l.ep != 0) {
      return At("ep", fmt::format("ep {} must divide dp*cp = {}*{} = {} with the experts' TP "
                                  "width etp = tp = {} (an etp below tp folds the experts: "
                                  "then ep*etp must divide tp*cp*dp)",
                                  l.ep, l.dp, l.cp, l.dp * l.cp, l.tp));
    }
    return std::nullopt;
  }
  // MoE parallel folding: the stage's tp*cp*dp ranks regroup as etp x ep x edp.
  const int64_t ranks = static_cast<int64_t>(l.tp) * l.cp * l.dp;
  if (ranks % (static_cast<int64_t>(etp) * l.ep) != 0) {
    return At("etp", fmt::format("etp*ep = {}*{} = {} must divide tp*cp*dp = {}*{}*{} = {}", etp,
                                 l.ep, etp * l.ep, l.tp, l.cp, l.dp, ranks));
  }
  return std::nullopt;
}

}  // namespace

bool BatchDivides(const Layout& l, const Training& t) {
  const int64_t per_step = l.dp * t.micro_batch;
  return per_step > 0 && t.global_batch % per_step == 0 &&
         t.global_batch / per_step <= kMaxMicroBatches;
}

std::optional<LayoutProblem> CheckLayout(const Scenario& s) {
  const Layout& l = s.layout;
  const ModelSpec& m = s.model;
  if (auto problem = GpuCountProblem(l, s.cluster)) return problem;
  if (auto problem = PrecisionProblem(s.training, s.cluster.gpu)) return problem;
  if (auto problem = HeadsProblem(l, m)) return problem;
  const PipelineSchedule& schedule = ScheduleOf(l.schedule);
  if (auto problem = ScheduleKeysProblem(l, m, schedule)) return problem;
  if (auto problem = SplitProblem(l, m, schedule)) return problem;
  if (auto problem = BatchProblem(l, s.training)) return problem;
  return ExpertProblem(l, m);
}

}  // namespace parasim
