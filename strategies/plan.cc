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

std::optional<LayoutProblem> CheckLayout(const Scenario& s) {
  const Layout& l = s.layout;
  const ModelSpec& m = s.model;
  const Training& t = s.training;
  auto at = [](std::string key, std::string msg) {
    return std::optional<LayoutProblem>(LayoutProblem{std::move(key), std::move(msg)});
  };
  const int64_t gpus = s.cluster.gpus();
  if (l.gpus() != gpus) {
    return at("dp", fmt::format("tp*pp*dp*cp = {}*{}*{}*{} = {} GPUs, but the cluster has "
                                "nodes*gpus_per_node = {}*{} = {}",
                                l.tp, l.pp, l.dp, l.cp, l.gpus(), s.cluster.nodes,
                                s.cluster.gpus_per_node, gpus));
  }
  if (auto problem = PrecisionProblem(t, s.cluster.gpu)) return problem;
  if (m.heads % l.tp != 0) {
    return at("tp",
              fmt::format("tp {} does not divide the model's {} attention heads", l.tp, m.heads));
  }
  if (m.kv() % l.tp != 0 && l.tp % m.kv() != 0) {
    return at("tp", fmt::format("tp {} and the model's {} KV heads: one must divide the other",
                                l.tp, m.kv()));
  }
  const PipelineSchedule& schedule = ScheduleOf(l.schedule);
  if (l.overlap_ep && (l.ep <= 1 || !m.is_moe())) {
    return at("overlap",
              "overlap.ep overlaps expert-parallel all-to-alls: it needs an MoE "
              "model and ep > 1");
  }
  if (l.virtual_stages > 1 && schedule.mirrored()) {
    return at("virtual_stages", fmt::format("schedule {} runs two model chunks per stage; leave "
                                            "virtual_stages out (it is {})",
                                            schedule.name(), l.virtual_stages));
  }
  if (l.virtual_stages > 1 && !schedule.interleaves()) {
    return at("virtual_stages",
              fmt::format("virtual_stages {} needs schedule interleaved-1f1b", l.virtual_stages));
  }
  const int v = ChunksOf(l);
  // Model chunks the layers are split into: DualPipe's two copies each split into pp stages.
  const int chunks = schedule.bidirectional() ? l.pp : l.pp * v;
  const bool accounts = l.split_embedding || l.split_loss;
  if (accounts) {
    // Megatron-LM's --account-for-embedding-in-pipeline-split and --account-for-loss-in-
    // pipeline-split: the layers and those ends split evenly into the model chunks.
    const std::string ends = l.split_embedding && l.split_loss ? "the embedding and the loss"
                             : l.split_embedding               ? "the embedding"
                                                               : "the loss";
    const int units = m.layers + (l.split_embedding ? 1 : 0) + (l.split_loss ? 1 : 0);
    if (!l.stage_layers.empty()) {
      return at("account_for", "stage_layers states the split itself: leave account_for out");
    }
    if (schedule.mirrored() || schedule.bidirectional()) {
      return at("account_for",
                fmt::format("schedule {} places the model's ends on one stage; account_for "
                            "applies to 1F1B, GPipe, zero-bubble and interleaved pipelines",
                            schedule.name()));
    }
    if (units % chunks != 0) {
      return at("account_for",
                fmt::format("{} layers with {} counted as a layer each, {}, do not split evenly "
                            "into pp*virtual_stages = {}*{} = {} model chunks",
                            m.layers, ends, units, l.pp, v, chunks));
    }
  }
  // Where the layers do not fill the chunks evenly but would with both ends counted.
  const std::string account_hint =
      !accounts && (m.layers + 2) % chunks == 0
          ? fmt::format("; account_for: [embedding, loss] makes {} units, which do", m.layers + 2)
          : "";
  if (!l.stage_layers.empty()) {
    if (static_cast<int>(l.stage_layers.size()) != l.pp) {
      return at("stage_layers", fmt::format("stage_layers has {} entries but pp is {}",
                                            l.stage_layers.size(), l.pp));
    }
    int sum = std::accumulate(l.stage_layers.begin(), l.stage_layers.end(), 0);
    if (sum != m.layers) {
      return at("stage_layers",
                fmt::format("stage_layers sum to {} but the model has {} layers", sum, m.layers));
    }
    if (schedule.equal_chunks()) {
      for (int s = 0; s < l.pp; ++s) {
        if (l.stage_layers[s] % 2 != 0) {
          return at("stage_layers",
                    fmt::format("schedule {} splits each stage into two equal model chunks, but "
                                "stage {} has {} layers; give every stage an even count",
                                schedule.name(), s, l.stage_layers[s]));
        }
      }
    }
    if (v > 1 && !schedule.bidirectional()) {
      // Uneven chunks are fine (ChunkLayers); only the embedding's and the LM head's chunks
      // may be left without layers.
      const std::vector<std::vector<int>> per_chunk =
          ChunkLayers(l, m.layers, v, schedule.v_shape());
      for (int s = 0; s < l.pp; ++s) {
        for (int c = 0; c < v; ++c) {
          const int g = VirtualStageOf(schedule, l.pp, s, c);
          const bool ends = g == 0 || g == chunks - 1;
          if (per_chunk[s][c] == 0 && !ends) {
            return at("stage_layers",
                      fmt::format("stage {} has {} layers for {} virtual stages: every model chunk "
                                  "but the first (embedding) and the last (LM head) needs a layer",
                                  s, l.stage_layers[s], v));
          }
        }
      }
    }
  } else if (accounts) {
    // The chunks split evenly (above): only the embedding's and the loss's may be empty.
  } else if (m.layers < chunks) {
    return at("pp", fmt::format("{} layers cannot fill {} model chunks (pp {} x {} per stage){}",
                                m.layers, chunks, l.pp, chunks / l.pp, account_hint));
  } else if (schedule.equal_chunks() && m.layers % chunks != 0) {
    return at("schedule",
              fmt::format("schedule {} needs an even number of layers per stage: {} layers do "
                          "not split into 2*pp = {} equal model chunks (or set stage_layers)",
                          schedule.name(), m.layers, chunks));
  } else if (schedule.interleaves() && v > 1 && m.layers % chunks != 0) {
    return at("virtual_stages",
              fmt::format("{} layers do not split evenly into pp*virtual_stages = "
                          "{}*{} = {} chunks (set stage_layers{})",
                          m.layers, l.pp, v, chunks, account_hint));
  }
  const int64_t per_step = l.dp * t.micro_batch;
  if (t.global_batch % per_step != 0) {
    return at("dp", fmt::format("global_batch {} is not a multiple of dp*micro_batch = {}*{} = {}",
                                t.global_batch, l.dp, t.micro_batch, per_step));
  }
  const int64_t micro_batches = t.global_batch / per_step;
  const std::string why = ScheduleOf(l.schedule).Constraint({l.pp, ChunksOf(l), micro_batches});
  if (!why.empty()) return at("schedule", why);
  if (t.seq_len % l.cp != 0) {
    return at("cp", fmt::format("cp {} does not divide seq_len {}", l.cp, t.seq_len));
  }
  if (l.ep > 1) {
    if (!m.is_moe()) return at("ep", fmt::format("ep {} needs a mixture-of-experts model", l.ep));
    if (m.moe.experts % l.ep != 0) {
      return at("ep", fmt::format("ep {} does not divide the {} experts", l.ep, m.moe.experts));
    }
  }
  if (l.etp > 0 && l.etp != l.tp && !m.is_moe()) {
    return at("etp", fmt::format("etp {} shards experts: it needs a mixture-of-experts model "
                                 "(or etp = tp = {})",
                                 l.etp, l.tp));
  }
  if (m.is_moe()) {
    const int etp = l.expert_tp();
    if (etp == l.tp) {
      if ((l.dp * l.cp) % l.ep != 0) {
        return at("ep", fmt::format("ep {} must divide dp*cp = {}*{} = {}", l.ep, l.dp, l.cp,
                                    l.dp * l.cp));
      }
    } else {
      // MoE parallel folding: the stage's tp*cp*dp ranks regroup as etp x ep x edp.
      const int64_t ranks = static_cast<int64_t>(l.tp) * l.cp * l.dp;
      if (ranks % (static_cast<int64_t>(etp) * l.ep) != 0) {
        return at("etp", fmt::format("etp*ep = {}*{} = {} must divide tp*cp*dp = {}*{}*{} = {}",
                                     etp, l.ep, etp * l.ep, l.tp, l.cp, l.dp, ranks));
      }
      // Each TP rank holds the whole sequence without SP: experts narrower than TP would see the
      // same tokens twice. Megatron-Core requires SP for MoE under TP (arguments.py: "When using
      // MoE and tensor parallelism, sequence parallelism must be used").
      if (l.tp > 1 && !l.sp) {
        return at("etp", fmt::format("etp {} differs from tp {}: it needs sp: true (each TP rank's "
                                     "experts take its sequence-parallel shard of the tokens)",
                                     etp, l.tp));
      }
    }
  }
  return std::nullopt;
}

}  // namespace parasim
