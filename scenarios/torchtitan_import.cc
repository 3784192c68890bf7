#include "scenarios/torchtitan_import.h"

#include <fmt/core.h>
#include <toml++/toml.h>

#include <algorithm>
#include <set>

#include "scenarios/scenario_writer.h"
#include "scenarios/torchtitan_config.h"
#include "scenarios/torchtitan_names.h"
#include "sim/io.h"
#include "strategies/schedule.h"

namespace parasim {
namespace {

using torchtitan_import::Config;
using torchtitan_import::Key;

Status ReadModel(Config& c, ScenarioWriter& w) {
  std::string name_at, flavor_at;
  PARASIM_ASSIGN_OR_RETURN(const std::string name, c.Str({{"model", "name"}}, "", &name_at));
  PARASIM_ASSIGN_OR_RETURN(const std::string flavor, c.Str({{"model", "flavor"}}, "", &flavor_at));
  for (const TorchtitanFlavor& f : kTorchtitanFlavors) {
    if (name == f.name && flavor == f.flavor) {
      w.Set("model.extends", std::string(f.id), name_at + ", " + flavor_at);
      // torchtitan's DeepSeek-V3 trains no multi-token-prediction module.
      if (f.id == "deepseek-v3") w.Set("model.mtp_depth", "0", name_at + ": no MTP module");
      return Status::Ok();
    }
  }
  std::string known;
  for (const TorchtitanFlavor& f : kTorchtitanFlavors)
    known += fmt::format("{}{} {}", known.empty() ? "" : ", ", f.name, f.flavor);
  const std::string msg = fmt::format(
      "[model] name = \"{}\", flavor = \"{}\" is not a model the catalog holds; known: {} (or "
      "write the scenario's model by hand)",
      name, flavor, known);
  const toml::node* at = c.Find({{"model", "flavor"}, {"model", "name"}});
  return c.Error(at, msg);
}

// Degrees, with the older spellings under [training] and [experimental].
struct Degrees {
  int64_t tp = 1, pp = 1, cp = 1, ep = 1, etp = 0, shard = -1, replicate = 1;
  std::string tp_at, pp_at, cp_at, ep_at, etp_at, shard_at, replicate_at;
};

Status ReadDegrees(Config& c, Degrees* d) {
  PARASIM_ASSIGN_OR_RETURN(d->tp, c.Int({{"parallelism", "tensor_parallel_degree"},
                                         {"training", "tensor_parallel_degree"}},
                                        1, 65536, 1, &d->tp_at));
  PARASIM_ASSIGN_OR_RETURN(d->pp, c.Int({{"parallelism", "pipeline_parallel_degree"},
                                         {"experimental", "pipeline_parallel_degree"}},
                                        1, 65536, 1, &d->pp_at));
  PARASIM_ASSIGN_OR_RETURN(d->cp, c.Int({{"parallelism", "context_parallel_degree"},
                                         {"experimental", "context_parallel_degree"}},
                                        1, 65536, 1, &d->cp_at));
  PARASIM_ASSIGN_OR_RETURN(
      d->ep, c.Int({{"parallelism", "expert_parallel_degree"}}, 1, 65536, 1, &d->ep_at));
  PARASIM_ASSIGN_OR_RETURN(
      d->etp, c.Int({{"parallelism", "expert_tensor_parallel_degree"}}, 1, 65536, 0, &d->etp_at));
  PARASIM_ASSIGN_OR_RETURN(d->shard, c.Int({{"parallelism", "data_parallel_shard_degree"},
                                            {"training", "data_parallel_shard_degree"},
                                            {"training", "data_parallel_degree"}},
                                           -1, 16777216, -1, &d->shard_at));
  PARASIM_ASSIGN_OR_RETURN(d->replicate, c.Int({{"parallelism", "data_parallel_replicate_degree"},
                                                {"training", "data_parallel_replicate_degree"}},
                                               1, 16777216, 1, &d->replicate_at));
  return Status::Ok();
}

// torchtitan's pipeline_parallel_first/last_stage_less_layers (1 each by default): how many
// layers' worth the embedding and the output count for in a pipeline's split.
struct LessLayers {
  int64_t first = 1, last = 1;
  bool given = false;  // either key written in the config
};

StatusOr<LessLayers> ReadLessLayers(Config& c, int layers) {
  LessLayers less;
  std::string first_at, last_at;
  PARASIM_ASSIGN_OR_RETURN(
      less.first, c.Int({{"parallelism", "pipeline_parallel_first_stage_less_layers"}}, 0, layers,
                        1, &first_at));
  PARASIM_ASSIGN_OR_RETURN(
      less.last,
      c.Int({{"parallelism", "pipeline_parallel_last_stage_less_layers"}}, 0, layers, 1, &last_at));
  less.given = !first_at.empty() || !last_at.empty();
  return less;
}

// A less-layer count of 1 at either end is parasim's account_for of that end.
void SetAccountFor(ScenarioWriter& w, int64_t first, int64_t last, const std::string& why) {
  if (first + last == 0) return;
  w.Set("parallelism.account_for",
        first && last ? "[embedding, loss]"
        : first       ? "[embedding]"
                      : "[loss]",
        why);
}

// A multi-stage schedule's stages a rank, and how the split counts the embedding and the output.
// torchtitan makes ceil((layers + first_less + last_less) / per) stages of `per` layers (the
// embedding and the output counted as first/last_stage_less_layers, 1 each by default), refuses a
// count that pp does not divide, and wants two or more a rank; without `per`, two a rank
// (torchtitan/distributed/pipeline_parallel.py, the virtual stages of pipeline_llm). A less-layer
// count of 1 is parasim's parallelism.account_for (the embedding or the loss counted as a layer).
Status VirtualStages(Config& c, ScenarioWriter& w, const Degrees& d, int layers,
                     std::vector<std::string>* nm) {
  std::string per_at;
  PARASIM_ASSIGN_OR_RETURN(
      int64_t per,
      c.Int({{"parallelism", "pipeline_parallel_layers_per_stage"}}, 1, layers + 2, 0, &per_at));
  PARASIM_ASSIGN_OR_RETURN(LessLayers less, ReadLessLayers(c, layers));
  int64_t first = less.first, last = less.last;
  const std::string why =
      "pipeline_parallel_first/last_stage_less_layers: the embedding and output each counted as a "
      "layer";
  if (per == 0) {
    // Two stages a rank, the embedding and the output weighed as torchtitan's less-layer counts
    // where the layers then split evenly; else the layers alone, where they do.
    const int64_t stages = 2 * d.pp;
    if (first <= 1 && last <= 1 && (layers + first + last) % stages != 0 && layers % stages == 0) {
      nm->push_back(fmt::format(
          "pipeline_parallel_first/last_stage_less_layers {} and {}: torchtitan splits the {} "
          "layers unevenly over its {} stages; priced as an even split",
          first, last, layers, stages));
      first = last = 0;
    }
    if (first > 1 || last > 1 || (layers + first + last) % stages != 0) {
      return c.Error(*c.Find({{"parallelism", "pipeline_parallel_schedule"},
                              {"experimental", "pipeline_parallel_schedule"}}),
                     fmt::format("{} layers (+{} +{} for the embedding and output) do not split "
                                 "evenly over the default two stages a rank ({} stages); give "
                                 "pipeline_parallel_layers_per_stage",
                                 layers, first, last, stages));
    }
    SetAccountFor(w, first, last, why);
    w.Set("parallelism.virtual_stages", "2", "two stages a rank (not given)");
    return Status::Ok();
  }
  const int64_t stages = (layers + first + last + per - 1) / per;
  // parasim splits a stage's layers evenly over its chunks (the embedding and the output counted
  // as a layer each where account_for says so): torchtitan's split must then give every stage
  // `per` of those units (with the default 1 and 1, 32 layers at 9 a stage are 8, 9, 8 and 7).
  if (stages % d.pp != 0 || stages / d.pp < 2 || first > 1 || last > 1 ||
      layers + first + last != per * stages) {
    return c.Error(*c.Find({{"parallelism", "pipeline_parallel_layers_per_stage"}}),
                   fmt::format("{}: {} layers (+{} +{} for the embedding and output) make {} "
                               "stages, {}; expected a count that gives a multiple of "
                               "pipeline_parallel_degree {} with 2 or more a rank, each of the "
                               "same layers (first/last_stage_less_layers 0 or 1 and a divisor of "
                               "the layers and those)",
                               per_at, layers, first, last, stages,
                               stages % d.pp != 0 ? "which pipeline_parallel_degree does not divide"
                               : stages / d.pp < 2 ? "fewer than 2 a rank"
                                                   : "over which the layers do not split evenly",
                               d.pp));
  }
  SetAccountFor(w, first, last, why);
  w.Set("parallelism.virtual_stages", std::to_string(stages / d.pp), per_at);
  return Status::Ok();
}

// A schedule of `chunks` stages a rank (1, or a V's 2): torchtitan splits the layers with the
// embedding and the output counted as first/last_stage_less_layers (1 each by default) over
// pp x chunks stages as evenly as it can, one more to each of the first stages where they do not
// divide (torchtitan/distributed/pipeline_parallel.py, generate_llm_fqn_per_model_part). An even
// split is parasim's account_for; an uneven one over one stage a rank its stage_layers.
Status FixedStages(Config& c, ScenarioWriter& w, const Degrees& d, int layers, int chunks,
                   std::vector<std::string>* nm) {
  PARASIM_ASSIGN_OR_RETURN(LessLayers less, ReadLessLayers(c, layers));
  const int64_t first = less.first, last = less.last;
  const int64_t stages = int64_t{d.pp} * chunks, units = layers + first + last;
  const std::string why = "pipeline_parallel_first/last_stage_less_layers " +
                          std::to_string(first) + " and " + std::to_string(last) +
                          (less.given ? "" : " (torchtitan's defaults)");
  // A V schedule holds both ends on one rank: parasim refuses account_for there and splits the
  // layers itself, as before these counts were read.
  if (chunks == 2) {
    if (first + last > 0 || layers % stages != 0) {
      nm->push_back(fmt::format(
          "{}: torchtitan splits the {} layers (+{} +{} for the embedding and output) over its "
          "{} stages; parasim's V schedule holds both ends on one rank and splits the layers "
          "itself",
          why, layers, first, last, stages));
    }
    return Status::Ok();
  }
  if (first <= 1 && last <= 1 && units % stages == 0) {
    SetAccountFor(w, first, last, why + ": the embedding and output each counted as a layer");
    return Status::Ok();
  }
  std::vector<int64_t> split(static_cast<size_t>(stages), units / stages);
  for (int64_t i = 0; i < units % stages; ++i) ++split[static_cast<size_t>(i)];
  split.front() -= first;
  split.back() -= last;
  if (split.front() >= 0 && split.back() >= 0) {
    std::string list;
    for (int64_t n : split) list += (list.empty() ? "[" : ", ") + std::to_string(n);
    w.Set("parallelism.stage_layers", list + "]", why + ": torchtitan's uneven split");
    return Status::Ok();
  }
  // At the key that set the split: a less-layer count, else the schedule or the pipeline degree
  // (pp > 1 here, so one of them is written).
  const toml::node* at = c.Find({{"parallelism", "pipeline_parallel_first_stage_less_layers"},
                                 {"parallelism", "pipeline_parallel_last_stage_less_layers"},
                                 {"parallelism", "pipeline_parallel_schedule"},
                                 {"experimental", "pipeline_parallel_schedule"},
                                 {"parallelism", "pipeline_parallel_degree"}});
  const std::string msg = fmt::format(
      "{} layers (+{} +{} for the embedding and output) do not split over its {} stages as "
      "parasim can hold them (its first or last stage would hold fewer than no layers)",
      layers, first, last, stages);
  return c.Error(at, msg);
}

// torchtitan's experts: ETP = TP or 1 (its default), and EP x ETP carved out of the dp_shard x
// cp x tp ranks (ParallelDims: efsdp = dp_shard * cp * tp / (etp * ep));
// expert_tensor_parallel_degree has no effect where ep is 1.
Status WriteExperts(Config& c, ScenarioWriter& w, const Degrees& d, int64_t shard) {
  if (d.ep <= 1) return Status::Ok();
  const int64_t etp = d.etp > 0 ? d.etp : 1;
  if (etp != 1 && etp != d.tp) {
    return c.Error(*c.Find({{"parallelism", "expert_tensor_parallel_degree"}}),
                   fmt::format("expert_tensor_parallel_degree {}: torchtitan runs the experts' "
                               "TP at tensor_parallel_degree ({}) or 1",
                               etp, d.tp));
  }
  if ((shard * d.cp * d.tp) % (d.ep * etp) != 0) {
    return c.Error(
        *c.Find({{"parallelism", "expert_parallel_degree"}}),
        fmt::format("expert_parallel_degree {} x expert_tensor_parallel_degree {} does not "
                    "divide data_parallel_shard_degree x context_parallel_degree x "
                    "tensor_parallel_degree = {} x {} x {}: torchtitan carves EP out of those "
                    "ranks",
                    d.ep, etp, shard, d.cp, d.tp));
  }
  w.Set("parallelism.ep", std::to_string(d.ep), d.ep_at);
  w.Set("parallelism.etp", std::to_string(etp),
        d.etp_at.empty() ? "expert_tensor_parallel_degree: torchtitan's default 1" : d.etp_at);
  return Status::Ok();
}

Status WriteParallel(Config& c, ScenarioWriter& w, const Degrees& d, int64_t gpus, int layers,
                     int64_t* dp, std::vector<std::string>* nm) {
  const int64_t model = d.tp * d.pp * d.cp * d.replicate;
  const int64_t shard = d.shard > 0 ? d.shard : (gpus % model == 0 ? gpus / model : 0);
  if (shard <= 0 || model * shard != gpus) {
    const std::string msg = fmt::format(
        "tp x pp x cp x dp_replicate x dp_shard = {} x {} x {} x {} x {} does not match the "
        "cluster's {} GPUs: give --nodes and --gpus-per-node to the import",
        d.tp, d.pp, d.cp, d.replicate, d.shard, gpus);
    const toml::node* at = c.Find({{"parallelism", "data_parallel_shard_degree"},
                                   {"parallelism", "tensor_parallel_degree"},
                                   {"parallelism", "pipeline_parallel_degree"},
                                   {"parallelism", "context_parallel_degree"},
                                   {"parallelism", "data_parallel_replicate_degree"}});
    return c.Error(at, msg);
  }
  *dp = shard * d.replicate;
  w.Set("parallelism.tp", std::to_string(d.tp), d.tp_at.empty() ? "default 1" : d.tp_at);
  w.Set("parallelism.pp", std::to_string(d.pp), d.pp_at.empty() ? "default 1" : d.pp_at);
  w.Set("parallelism.cp", std::to_string(d.cp), d.cp_at.empty() ? "default 1" : d.cp_at);
  w.Set("parallelism.dp", std::to_string(*dp),
        fmt::format("dp_shard {} x dp_replicate {}", shard, d.replicate));
  PARASIM_RETURN_IF_ERROR(WriteExperts(c, w, d, shard));
  w.Set("parallelism.sp", d.tp > 1 ? "true" : "false",
        d.tp > 1 ? "torchtitan's tensor parallelism shards the norms' sequence (SequenceParallel)"
                 : "no tensor parallelism");
  // torchtitan applies FSDP2 over the dp_shard x cp mesh where either is above 1
  // (ParallelDims.fsdp_enabled), as parasim's ZeRO-3 shards over dp x cp.
  const bool fsdp = shard > 1 || d.cp > 1;
  w.Set("parallelism.zero", fsdp ? "3" : "0",
        fsdp ? "FSDP2 over the data_parallel_shard_degree x context_parallel_degree ranks"
             : "DDP (no sharding)");
  if (fsdp && d.replicate > 1) {
    nm->push_back(
        "data_parallel_replicate_degree with sharding (HSDP): parasim shards over the "
        "whole data-parallel group");
  }
  // Async TP: [parallelism] in older torchtitan, [compile] now (torchtitan/config/configs.py,
  // CompileConfig.enable_async_tensor_parallel).
  std::string async_at;
  PARASIM_ASSIGN_OR_RETURN(const bool overlap,
                           c.Bool({{"parallelism", "enable_async_tensor_parallel"},
                                   {"compile", "enable_async_tensor_parallel"}},
                                  false, &async_at));
  w.Set("parallelism.overlap.tp", overlap ? "true" : "false",
        overlap ? async_at : "DTensor's TP collectives block (no async TP)");
  std::string sched_at;
  PARASIM_ASSIGN_OR_RETURN(const std::string sched,
                           c.Str({{"parallelism", "pipeline_parallel_schedule"},
                                  {"experimental", "pipeline_parallel_schedule"}},
                                 "1F1B", &sched_at));
  // torchtitan pipelines only at pipeline_parallel_degree > 1 (ParallelDims.pp_enabled): a
  // schedule beside 1 is read by nothing (DeepSeek-V3 671B's shipped config was refused).
  const std::string mapped(d.pp > 1 ? ParasimScheduleOf(sched) : "1f1b");
  w.Set("parallelism.schedule", mapped.empty() ? "1f1b" : mapped,
        d.pp == 1          ? "no pipeline (pipeline_parallel_degree 1)"
        : sched_at.empty() ? "torchtitan's default schedule (1F1B)"
                           : sched_at);
  if (mapped.empty()) nm->push_back(fmt::format("pipeline schedule {}: priced as 1F1B", sched));
  if (mapped == "interleaved-1f1b") {
    PARASIM_RETURN_IF_ERROR(VirtualStages(c, w, d, layers, nm));
  } else if (d.pp > 1) {
    PARASIM_RETURN_IF_ERROR(
        FixedStages(c, w, d, layers, mapped == "zb-v" || mapped == "dualpipe-v" ? 2 : 1, nm));
  }
  return Status::Ok();
}

// [activation_checkpoint]: none, full, op-level selective, or every N-th layer of each rank's
// chunks (parasim's recompute_layers per model chunk).
Status WriteRecompute(Config& c, ScenarioWriter& w, const Degrees& d, int layers) {
  std::string mode_at, opt_ac_at;
  PARASIM_ASSIGN_OR_RETURN(
      const std::string mode,
      c.Str(
          {{"activation_checkpoint", "mode"}}, "selective", &mode_at,
          [](const std::string& v) { return v == "none" || v == "full" || v == "selective"; },
          "\"none\", \"full\" or \"selective\""));
  // torchtitan reads any digits (int(option)), 0 for every layer.
  auto digits = [](const std::string& v) {
    return v == "op" ||
           (!v.empty() && v.size() <= 9 && v.find_first_not_of("0123456789") == std::string::npos);
  };
  PARASIM_ASSIGN_OR_RETURN(
      const std::string ac,
      c.Str({{"activation_checkpoint", "selective_ac_option"}}, "2", &opt_ac_at, digits,
            "\"op\" or a whole number N (every N-th layer checkpointed; 0: every layer)"));
  if (mode == "none" || mode == "full") {
    w.Set("training.recompute", mode, mode_at);
  } else if (ac == "op") {
    w.Set("training.recompute", "selective-op", mode_at + ", " + opt_ac_at);
  } else if (std::stoi(ac) == 0) {
    w.Set("training.recompute", "full", mode_at + ", " + opt_ac_at + ": every layer checkpointed");
  } else {
    // torchtitan counts the layers each rank builds, its stage's chunks (its virtual stages, or
    // the two of a V: ZBVZeroBubble, DualPipeV): every N-th of a chunk's layers, parasim's
    // recompute_layers per model chunk.
    const int every = std::stoi(ac);
    Layout chunked;  // the schedule and virtual stages written, as ChunksOf reads them
    const StatusOr<ScheduleId> sched = FindSchedule(w.Get("parallelism.schedule"));
    if (sched.ok()) chunked.schedule = *sched;
    const std::string v = w.Get("parallelism.virtual_stages");
    if (!v.empty()) chunked.virtual_stages = std::stoi(v);
    const int64_t chunk_layers = std::max<int64_t>(1, layers / (d.pp * ChunksOf(chunked)));
    w.Set("training.recompute", "full", mode_at + ": every " + ac + "-th layer checkpointed");
    w.Set(
        "training.recompute_layers", std::to_string(chunk_layers / every),
        fmt::format("{} (a chunk's {} layers / {})",
                    opt_ac_at.empty() ? "selective_ac_option 2" : opt_ac_at, chunk_layers, every));
  }
  return Status::Ok();
}

// What torchtitan runs that parasim prices otherwise: a pipeline schedule per accumulation step
// (train.py: forward_backward_step calls pp_schedule.step each time). And FSDP2's resharding:
// fsdp_reshard_after_forward "never", or its "default" under PP, keeps a layer's parameters
// gathered after its forward (torchtitan/distributed/fsdp.py,
// get_fsdp_reshard_after_forward_policy); under PP torch.distributed.pipelining runs every
// backward with reshard_after_backward and requires_gradient_sync off and frees and reduces the
// layers once, after the last micro-batch (torch/distributed/pipelining/stage.py,
// backward_maybe_with_nosync and perform_reduce_grad): gathered at the stage's first forward,
// held to the step's end, gradients whole until one reduction a step.
Status PipelineNotes(Config& c, ScenarioWriter& w, const Degrees& d, int64_t accumulation,
                     std::vector<std::string>* nm) {
  if (d.pp > 1 && accumulation > 1) {
    nm->push_back(
        fmt::format("gradient accumulation over {} pipeline schedules: priced as one "
                    "schedule of their micro-batches (one fill and drain, not {}; under FSDP2 "
                    "one gather and reduction a layer, not {})",
                    accumulation, accumulation, accumulation));
  }
  std::string at;
  PARASIM_ASSIGN_OR_RETURN(const std::string reshard,
                           c.Str({{"parallelism", "fsdp_reshard_after_forward"}}, "default", &at));
  if (reshard != "default" && reshard != "always" && reshard != "never") {
    return c.Error(*c.Find({{"parallelism", "fsdp_reshard_after_forward"}}),
                   fmt::format("fsdp_reshard_after_forward = \"{}\" is not a policy torchtitan "
                               "knows; expected \"default\", \"always\" or \"never\"",
                               reshard));
  }
  if (w.Get("parallelism.zero") != "3") return Status::Ok();
  const std::string why = at.empty() ? "torchtitan's default (\"default\")" : at;
  if (d.pp > 1) {
    w.Set("parallelism.grad_reduce", "step",
          "under PP, FSDP2 reduces once a step (torch.distributed.pipelining)");
    if (reshard == "always") {
      nm->push_back(
          "fsdp_reshard_after_forward always under PP: each layer gathered before the warm-up's "
          "forwards and every backward, and held after a backward; priced as gathered before "
          "every forward and backward");
    } else {
      w.Set("parallelism.zero3_reshard", "step", why);
    }
  } else if (reshard == "never") {
    w.Set("parallelism.zero3_reshard", "backward", why);
  }
  return Status::Ok();
}

Status WriteTraining(Config& c, ScenarioWriter& w, const Degrees& d, int64_t dp, int layers,
                     std::vector<std::string>* nm) {
  std::string seq_at, local_at, global_at, micro_at;
  PARASIM_ASSIGN_OR_RETURN(int64_t seq,
                           c.Int({{"training", "seq_len"}}, 1, int64_t{1} << 24, 2048, &seq_at));
  w.Set("training.seq_len", std::to_string(seq),
        seq_at.empty() ? "torchtitan's default (2048; config/job_config.py)" : seq_at);
  PARASIM_ASSIGN_OR_RETURN(int64_t local,
                           c.Int({{"training", "local_batch_size"}, {"training", "batch_size"}}, 1,
                                 int64_t{1} << 40, 8, &local_at));
  PARASIM_ASSIGN_OR_RETURN(int64_t global, c.Int({{"training", "global_batch_size"}}, -1,
                                                 int64_t{1} << 40, -1, &global_at));
  if (global <= 0) global = local * dp;
  int64_t micro = local;
  if (d.pp > 1) {
    PARASIM_ASSIGN_OR_RETURN(micro, c.Int({{"parallelism", "pipeline_parallel_microbatch_size"}}, 1,
                                          local, 1, &micro_at));
  }
  w.Set("training.global_batch", std::to_string(global),
        global_at.empty() ? fmt::format("local batch x dp: {}", local_at) : global_at);
  w.Set("training.micro_batch", std::to_string(micro),
        d.pp > 1           ? (micro_at.empty() ? "pipeline micro-batches of 1 (default)" : micro_at)
        : local_at.empty() ? "torchtitan's default local batch (8)"
                           : local_at);
  if (global > local * dp) {
    w.Set("training.grad_accumulation", "separate",
          "gradient accumulation: PyTorch autograd adds each micro-batch's gradients");
  }
  // torchtitan/config/configs.py: the dtypes are "bfloat16" or "float32" (Literal types).
  std::string param_at, reduce_at;
  auto dtype = [](const std::string& v) { return v == "bfloat16" || v == "float32"; };
  PARASIM_ASSIGN_OR_RETURN(const std::string param,
                           c.Str({{"training", "mixed_precision_param"}}, "bfloat16", &param_at,
                                 dtype, "\"bfloat16\" or \"float32\""));
  PARASIM_ASSIGN_OR_RETURN(const std::string reduce,
                           c.Str({{"training", "mixed_precision_reduce"}}, "float32", &reduce_at,
                                 dtype, "\"bfloat16\" or \"float32\""));
  std::string fp8_at;
  PARASIM_ASSIGN_OR_RETURN(bool float8,
                           c.Bool({{"float8", "enable_float8_linear"}}, false, &fp8_at));
  const toml::node* conv = c.Find({{"model", "converters"}}, &fp8_at);
  if (conv && conv->as_array()) {
    for (const auto& e : *conv->as_array())
      float8 |= e.value<std::string>().value_or("") == "float8";
  }
  // Mixed precision is FSDP2's; under TP or PP without it torchtitan turns it off
  // (distributed/utils.py, maybe_enable_amp) and trains in float32.
  const bool amp_off = w.Get("parallelism.zero") != "3" && (d.tp > 1 || d.pp > 1);
  w.Set("training.precision", float8 ? "fp8" : (param == "float32" || amp_off ? "fp32" : "bf16"),
        float8             ? fp8_at
        : amp_off          ? "TP or PP without FSDP: torchtitan turns mixed precision off (float32)"
        : param_at.empty() ? "torchtitan's default (bfloat16)"
                           : param_at);
  PARASIM_RETURN_IF_ERROR(
      PipelineNotes(c, w, d, global > local * dp ? global / (local * dp) : 1, nm));
  w.Set("training.grad_dtype", reduce == "bfloat16" ? "bf16" : "fp32",
        reduce_at.empty() ? "torchtitan's default reduce dtype (float32)" : reduce_at);
  w.Set("training.attention", "flash", "PyTorch SDPA's flash kernels");
  w.Set("training.transformer_engine", "false", "torchtitan's layers: PyTorch modules");
  std::string opt_at;
  PARASIM_ASSIGN_OR_RETURN(const std::string opt, c.Str({{"optimizer", "name"}}, "AdamW", &opt_at));
  w.Set("training.optimizer", "adam", opt_at.empty() ? "torchtitan's default (AdamW)" : opt_at);
  if (opt != "AdamW" && opt != "Adam") nm->push_back("optimizer " + opt + ": priced as Adam");
  PARASIM_RETURN_IF_ERROR(WriteRecompute(c, w, d, layers));
  std::string steps_at;
  PARASIM_ASSIGN_OR_RETURN(int64_t steps,
                           c.Int({{"training", "steps"}}, 0, int64_t{1} << 40, 0, &steps_at));
  if (steps > 0) {
    w.Set("training.tokens",
          fmt::format("{}", static_cast<double>(steps) * static_cast<double>(global) *
                                static_cast<double>(seq)),
          steps_at);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<ImportedScenario> ImportTorchtitan(const std::string& file, const std::string& text,
                                            const ImportOptions& options,
                                            const Catalogs& catalogs) {
  toml::table table;
  try {
    table = toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    return InvalidArgument(fmt::format("{}:{}:{}: error: TOML: {}", file, e.source().begin.line,
                                       e.source().begin.column, e.description()));
  }
  Config c(file, std::move(table));
  ScenarioWriter w;
  int64_t gpus = 0;
  int gpn = 0;
  PARASIM_RETURN_IF_ERROR(WriteImportCluster(options, {}, file, catalogs, &w, &gpus, &gpn));
  PARASIM_RETURN_IF_ERROR(ReadModel(c, w));
  const ModelSpec* m = catalogs.models.Find(w.Get("model.extends"));
  const int layers = m ? m->layers : 1;
  Degrees d;
  PARASIM_RETURN_IF_ERROR(ReadDegrees(c, &d));
  std::vector<std::string> nm;
  int64_t dp = 1;
  PARASIM_RETURN_IF_ERROR(WriteParallel(c, w, d, gpus, layers, &dp, &nm));
  PARASIM_RETURN_IF_ERROR(WriteTraining(c, w, d, dp, layers, &nm));
  w.Set("name", YamlQuote(options.name.empty() ? "imported from " + file : options.name),
        "the file imported");
  ImportedScenario out;
  for (const std::string& n : nm) out.not_modelled.push_back({n, "", "", file});
  out.no_effect = c.Unread();
  w.Trailer("Not modelled:", nm);
  w.Trailer("Keys not read (no effect on time or memory, or not modelled):", out.no_effect);
  const std::string header = fmt::format(
      "# Imported by `parasim import torchtitan` from {} ({} keys not read, listed at the end).",
      file, out.no_effect.size());
  PARASIM_RETURN_IF_ERROR(FinishImport(w, header, file, catalogs, &out));
  return out;
}

StatusOr<ImportedScenario> ImportTorchtitanFile(const std::string& path,
                                                const ImportOptions& options,
                                                const Catalogs& catalogs) {
  PARASIM_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ImportTorchtitan(path, text, options, catalogs);
}

}  // namespace parasim
