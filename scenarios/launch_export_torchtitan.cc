// The torchtitan job config of a scenario's layout (scenarios/launch_export.h): the keys
// `parasim import torchtitan` reads back (scenarios/torchtitan_import.h).
#include <fmt/core.h>

#include <cmath>

#include "scenarios/launch_export.h"
#include "scenarios/torchtitan_names.h"
#include "sim/parse_units.h"
#include "strategies/schedule.h"

namespace parasim {
namespace {

void Miss(LaunchConfig* l, const std::string& key, const std::string& value,
          const std::string& why) {
  l->torchtitan_missing.push_back({key, value, why});
}

// torchtitan's experts: ETP = TP or 1, EP x ETP out of dp_shard x cp x tp (ParallelDims); the
// experts take TP's width where ep is 1.
void ExpertKeys(const Layout& p, LaunchConfig* l) {
  std::vector<std::string>& t = l->torchtitan;
  const int etp = p.etp > 0 ? p.etp : p.tp;
  const int64_t shard = p.zero == 3 ? p.dp : 1;
  const bool etp_ok = etp == 1 || etp == p.tp;
  const bool ep_out = p.ep > 1 && etp_ok && (shard * p.cp * p.tp) % (p.ep * etp) == 0;
  if (ep_out) {
    t.push_back(fmt::format("expert_parallel_degree = {}", p.ep));
    t.push_back(fmt::format("expert_tensor_parallel_degree = {}", etp));
  } else if (p.ep > 1) {
    Miss(l, "parallelism.ep", std::to_string(p.ep),
         !etp_ok ? fmt::format("torchtitan runs the experts' TP at TP ({}) or 1, not {}", p.tp, etp)
                 : fmt::format("torchtitan carves EP x ETP = {} x {} out of data_parallel_shard x "
                               "cp x tp = {} x {} x {} ranks",
                               p.ep, etp, shard, p.cp, p.tp));
  }
  if (!ep_out && p.etp > 0 && (p.ep > 1 || p.etp != p.tp)) {
    Miss(l, "parallelism.etp", std::to_string(p.etp),
         p.ep > 1 ? "carried with expert_parallel_degree, which is not"
                  : "torchtitan's experts take TP's width without EP");
  }
}

// FSDP2's resharding as torchtitan runs it (PipelineNotes in torchtitan_import.cc): without PP
// a layer freed after its forward (the default) or after its backward ("never"); under PP held
// to the step's end (the default) unless freed after each forward ("always").
void FsdpReshardKeys(const Layout& p, LaunchConfig* l) {
  if (p.zero != 3) return;
  using R = Layout::Zero3Reshard;
  const std::string name(Zero3ReshardName(p.zero3_reshard));
  if (p.pp == 1 && p.zero3_reshard == R::kBackward) {
    l->torchtitan.push_back("fsdp_reshard_after_forward = \"never\"");
  } else if (p.pp == 1 && p.zero3_reshard == R::kStep) {
    Miss(l, "parallelism.zero3_reshard", name,
         "without PP torchtitan's FSDP2 frees each layer after its backward at the latest");
  } else if (p.pp > 1 && p.zero3_reshard == R::kForward) {
    l->torchtitan.push_back("fsdp_reshard_after_forward = \"always\"");
  } else if (p.pp > 1 && p.zero3_reshard == R::kBackward) {
    Miss(l, "parallelism.zero3_reshard", name,
         "under PP torch.distributed.pipelining holds FSDP2's layers to the step's end");
  }
}

void ParallelismKeys(const Scenario& s, LaunchConfig* l) {
  const Layout& p = s.layout;
  std::vector<std::string>& t = l->torchtitan;
  t.push_back("[parallelism]");
  t.push_back(fmt::format("data_parallel_shard_degree = {}", p.zero == 3 ? p.dp : 1));
  t.push_back(fmt::format("data_parallel_replicate_degree = {}", p.zero == 3 ? 1 : p.dp));
  if (p.zero == 1 || p.zero == 2) {
    Miss(l, "parallelism.zero", std::to_string(p.zero),
         "torchtitan shards everything (FSDP2, ZeRO 3) or nothing (DDP)");
  } else if (p.zero == 0 && p.cp > 1) {
    Miss(l, "parallelism.zero", "0",
         "torchtitan's FSDP2 shards over the context-parallel ranks whenever cp > 1 "
         "(ParallelDims.fsdp_enabled): read back as 3");
  }
  t.push_back(fmt::format("tensor_parallel_degree = {}", p.tp));
  t.push_back(fmt::format("pipeline_parallel_degree = {}", p.pp));
  t.push_back(fmt::format("context_parallel_degree = {}", p.cp));
  ExpertKeys(p, l);
  if (p.overlap_tp == Layout::TpOverlap::kAll) t.push_back("enable_async_tensor_parallel = true");
  if (p.tp > 1 && p.overlap_tp == Layout::TpOverlap::kBackward) {
    Miss(l, "parallelism.overlap.tp", "backward",
         "torchtitan's async TP overlaps both passes or neither (enable_async_tensor_parallel)");
  }
  const std::string_view sched = TorchtitanScheduleOf(ScheduleName(p.schedule));
  if (sched.empty()) {
    Miss(l, "parallelism.schedule", std::string(ScheduleName(p.schedule)),
         "not among torchtitan's pipeline schedules");
  } else if (p.pp > 1) {
    t.push_back(fmt::format("pipeline_parallel_schedule = \"{}\"", sched));
    if (p.pp > 1)
      t.push_back(fmt::format("pipeline_parallel_microbatch_size = {}", s.training.micro_batch));
  }
  // torchtitan splits every pipeline's layers with the embedding and the output counted as
  // first/last_stage_less_layers (1 each by default; torchtitan/distributed/pipeline_parallel.py):
  // parasim's account_for, written for every schedule (0 and 0 for parasim's plain even split).
  const int first = p.split_embedding ? 1 : 0, last = p.split_loss ? 1 : 0;
  if (p.pp > 1 && p.stage_layers.empty()) {  // stage_layers: listed below
    t.push_back(fmt::format("pipeline_parallel_first_stage_less_layers = {}", first));
    t.push_back(fmt::format("pipeline_parallel_last_stage_less_layers = {}", last));
  }
  if (p.schedule == kScheduleInterleaved && p.pp > 1) {
    // torchtitan makes ceil((layers + first_less + last_less) / per) stages of `per` layers;
    // without `per`, two stages a rank. With `per` a divisor of those units, every stage holds
    // `per`, as parasim's even split does.
    const int64_t stages = int64_t{p.pp} * p.virtual_stages;
    const int64_t units = s.model.layers + first + last;
    if (p.virtual_stages >= 2 && p.stage_layers.empty() && units % stages == 0) {
      t.push_back(fmt::format("pipeline_parallel_layers_per_stage = {}", units / stages));
    } else if (p.virtual_stages != 2) {
      Miss(l, "parallelism.virtual_stages", std::to_string(p.virtual_stages),
           fmt::format("torchtitan's stages of pipeline_parallel_layers_per_stage layers cannot "
                       "split {} layers so over {} stages",
                       s.model.layers, stages));
    }
  }
  if (p.schedule == kScheduleInterleaved && p.virtual_stages > 1 && p.microbatch_group > 0 &&
      p.microbatch_group != p.pp) {
    Miss(l, "parallelism.microbatch_group", std::to_string(p.microbatch_group),
         "torchtitan's interleaved schedule (PyTorch's Interleaved1F1B) runs groups of pp");
  }
}

void TrainingKeys(const Scenario& s, LaunchConfig* l) {
  const Training& tr = s.training;
  std::vector<std::string>& t = l->torchtitan;
  t.push_back("[training]");
  const int64_t local = s.layout.pp > 1 ? tr.global_batch / s.layout.dp : tr.micro_batch;
  t.push_back(fmt::format("local_batch_size = {}", local));
  t.push_back(fmt::format("global_batch_size = {}", tr.global_batch));
  t.push_back(fmt::format("seq_len = {}", tr.seq_len));
  if (tr.transformer_engine) {
    Miss(l, "training.transformer_engine", "true",
         "torchtitan's layers are PyTorch modules (no Transformer Engine workspace)");
  }
  // Gradient accumulation (more than one micro-batch a rank without a pipeline): PyTorch's
  // autograd adds each micro-batch's gradients in a pass of its own.
  if (s.layout.pp == 1 && tr.global_batch > tr.micro_batch * s.layout.dp &&
      tr.grad_accumulation == GradAccumulation::kFused) {
    Miss(l, "training.grad_accumulation", "fused",
         "PyTorch's autograd accumulates each micro-batch's gradients separately");
  }
  const bool full = tr.precision == Dtype::kFp32 || tr.precision == Dtype::kTf32;
  t.push_back(fmt::format("mixed_precision_param = \"{}\"", full ? "float32" : "bfloat16"));
  t.push_back(fmt::format("mixed_precision_reduce = \"{}\"",
                          tr.grad_dtype == Dtype::kBf16 ? "bfloat16" : "float32"));
  const double steps = tr.tokens / static_cast<double>(tr.global_batch * tr.seq_len);
  if (tr.tokens > 0 && steps == std::floor(steps)) {
    t.push_back(fmt::format("steps = {}", static_cast<int64_t>(steps)));
  } else if (tr.tokens > 0) {
    Miss(l, "training.tokens", fmt::format("{}", tr.tokens),
         fmt::format("torchtitan counts whole steps: {:.3f} steps of {} sequences", steps,
                     tr.global_batch));
  }
  t.push_back("[activation_checkpoint]");
  const int64_t chunk_layers =
      s.model.layers / std::max<int64_t>(1, int64_t{s.layout.pp} * ChunksOf(s.layout));
  switch (tr.recompute) {
    case RecomputeKind::kNone:
      t.push_back("mode = \"none\"");
      break;
    case RecomputeKind::kSelectiveOp:
      t.push_back("mode = \"selective\"");
      t.push_back("selective_ac_option = \"op\"");
      break;
    case RecomputeKind::kFull:
      // torchtitan checkpoints every N-th layer of each rank's chunks; recompute_layers counts a
      // model chunk's.
      // recompute_layers 0 recomputes none; -1 (or a chunk's every layer) all of them.
      if (tr.recompute_layers == 0) {
        t.push_back("mode = \"none\"");
      } else if (tr.recompute_layers < 0 || tr.recompute_layers >= chunk_layers) {
        t.push_back("mode = \"full\"");
      } else if (chunk_layers % tr.recompute_layers == 0) {
        t.push_back("mode = \"selective\"");
        t.push_back(
            fmt::format("selective_ac_option = \"{}\"", chunk_layers / tr.recompute_layers));
      } else {
        t.push_back("mode = \"full\"");
        Miss(l, "training.recompute_layers", std::to_string(tr.recompute_layers),
             fmt::format("torchtitan checkpoints every N-th layer of a rank's chunks: {} of a "
                         "chunk's {} is no such count (written as every layer)",
                         tr.recompute_layers, chunk_layers));
      }
      break;
    default:
      t.push_back("mode = \"none\"");
      Miss(l, "training.recompute", std::string(RecomputeName(tr.recompute)),
           "torchtitan checkpoints whole layers or its op-level policy");
  }
}

// The training keys `parasim import torchtitan` cannot read back (it writes flash attention,
// fp32 moments, Adam, an unfused loss, no determinism, per-expert-free GEMMs, torchtitan's own
// workspaces): each one set otherwise is listed.
void TrainingMisses(const Scenario& s, LaunchConfig* l) {
  const Training& tr = s.training;
  if (tr.attention != AttentionKind::kFlash) {
    Miss(l, "training.attention", "standard", "torchtitan runs PyTorch SDPA's fused kernels");
  }
  if (tr.moments != Dtype::kFp32) {
    Miss(l, "training.moments", std::string(DtypeName(tr.moments)),
         "torchtitan keeps Adam's moments in the parameters' fp32");
  }
  if (tr.master_weights != MasterWeights::kFp32) {
    Miss(l, "training.master_weights", std::string(MasterWeightsName(tr.master_weights)),
         "torchtitan's FSDP2 keeps fp32 parameters as the master copy");
  }
  if (tr.optimizer != OptimizerKind::kAdam) {
    Miss(l, "training.optimizer", "sgd", "the import reads torchtitan's [optimizer] as Adam(W)");
  }
  if (tr.fused_cross_entropy) {
    Miss(l, "training.cross_entropy", "fused", "torchtitan's loss is PyTorch's cross_entropy");
  }
  if (tr.deterministic) {
    Miss(l, "training.deterministic", "true", "the import reads no determinism setting");
  }
  // torchtitan's attention drops out nothing; the import leaves the key to the model's own
  // convention, so a stated 0 on a model that drops out of itself is listed too.
  if (tr.attention_dropout > 0 || (tr.attention_dropout == 0 && ModelDropsOut(s.model))) {
    Miss(l, "training.attention_dropout", fmt::format("{}", tr.attention_dropout),
         tr.attention_dropout > 0 ? "torchtitan's attention drops out nothing"
                                  : "the import leaves it to the model's own convention");
  }
  if (tr.per_expert_gemm) {
    Miss(l, "training.expert_gemm", "per_expert", "torchtitan groups the experts' GEMMs");
  }
  if (tr.precision == Dtype::kFp16) {
    Miss(l, "training.precision", "fp16", "torchtitan's mixed precision is bfloat16 or float32");
  }
  // Mixed precision is FSDP2's: under TP or PP without it torchtitan trains in float32
  // (distributed/utils.py, maybe_enable_amp).
  const Layout& p = s.layout;
  const bool fsdp = (p.zero == 3 && p.dp > 1) || p.cp > 1;
  if (!fsdp && (p.tp > 1 || p.pp > 1) && tr.precision == Dtype::kBf16) {
    Miss(l, "training.precision", "bf16",
         "torchtitan turns mixed precision off under TP or PP without FSDP: float32");
  }
  if (tr.precision == Dtype::kTf32) {
    Miss(l, "training.precision", "tf32",
         "torchtitan's config has no TF32 setting: written as float32, read back as fp32");
  }
  if (tr.grad_dtype != Dtype::kBf16 && tr.grad_dtype != Dtype::kFp32) {
    Miss(l, "training.grad_dtype", std::string(DtypeName(tr.grad_dtype)),
         "torchtitan reduces in bfloat16 or float32");
  }
  if (tr.precision == Dtype::kFp8 && tr.fp8_recipe != Fp8Recipe::kTensorwise) {
    Miss(l, "training.fp8_recipe", std::string(Fp8RecipeName(tr.fp8_recipe)),
         "the import reads torchtitan's float8 converter as tensorwise scaling");
  }
  if (tr.precision == Dtype::kFp8 && tr.fp8_param_gather) {
    Miss(l, "training.fp8_param_gather", "true",
         "the import reads no float8 all-gather setting (Transformer Engine's FP8 weights)");
  }
  if (tr.blas_workspace.bytes() > 0) {
    Miss(l, "training.blas_workspace", FormatBytes(tr.blas_workspace),
         "an environment variable (CUBLAS_WORKSPACE_CONFIG), not a config key");
  }
  if (tr.finetune != FinetuneKind::kNone) {
    Miss(l, "training.finetune", "{method: lora}", "torchtitan's config has no LoRA keys");
  }
  // The import writes `separate` exactly where torchtitan accumulates (no pipeline, more than
  // one micro-batch a rank); the other cases are listed in TrainingKeys or here.
  const bool accumulates = s.layout.pp == 1 && tr.global_batch > tr.micro_batch * s.layout.dp;
  if (!accumulates && tr.grad_accumulation == GradAccumulation::kSeparate) {
    Miss(l, "training.grad_accumulation", "separate",
         "no gradient accumulation in torchtitan's launch: nothing to accumulate separately");
  }
}

// The parallelism keys the torchtitan config has no key for, each one set otherwise.
void ParallelismMisses(const Scenario& s, LaunchConfig* l) {
  const Layout& p = s.layout;
  if (p.sp != (p.tp > 1)) {
    Miss(l, "parallelism.sp", p.sp ? "true" : "false",
         "torchtitan shards the norms' sequence (SequenceParallel) exactly when TP > 1");
  }
  if (p.cp > 1 && p.cp_comm != Layout::CpComm::kRing) {
    Miss(l, "parallelism.cp_comm", std::string(CpCommName(p.cp_comm)),
         "the import reads torchtitan's context parallelism as ring attention");
  }
  if (p.bucket.bytes() > 0) {
    Miss(l, "parallelism.bucket", FormatBytes(p.bucket), "FSDP2 and DDP bucket by their own rules");
  }
  if (!p.stage_layers.empty()) {
    std::string v;
    for (int n : p.stage_layers) v += (v.empty() ? "[" : ", ") + std::to_string(n);
    Miss(l, "parallelism.stage_layers", v + "]",
         "torchtitan splits the layers by pipeline_parallel_layers_per_stage");
  }

  if (p.zero == 3 && p.dp * p.cp == 1) {
    Miss(l, "parallelism.zero", "3", "FSDP2 over one rank shards nothing (read back as DDP)");
  }
  if (p.zero == 3 && !p.zero3_copies) {
    Miss(l, "parallelism.zero3_copies", "false", "FSDP2 copies what it gathers and reduces");
  }
  FsdpReshardKeys(p, l);
  if (!p.overlap_dp) {
    Miss(l, "parallelism.overlap.dp", "false", "FSDP2 and DDP overlap their collectives");
  }
  if (p.overlap_ep) {
    Miss(l, "parallelism.overlap.ep", "true", "torchtitan has no EP overlap key");
  }
  // Under PP torchtitan's FSDP2 reduces once a step (torch.distributed.pipelining).
  const bool fsdp_pp = p.zero == 3 && p.pp > 1;
  if (fsdp_pp && p.grad_reduce != Layout::GradReduce::kStep) {
    Miss(l, "parallelism.grad_reduce", std::string(GradReduceName(p.grad_reduce)),
         "under PP torchtitan's FSDP2 reduces once a step (torch.distributed.pipelining)");
  } else if (!fsdp_pp && p.grad_reduce != Layout::GradReduce::kAuto) {
    Miss(l, "parallelism.grad_reduce", std::string(GradReduceName(p.grad_reduce)),
         "torchtitan reduces as its ZeRO stage does");
  }
  if (p.param_gather != Layout::ParamGather::kAuto) {
    Miss(l, "parallelism.param_gather", std::string(ParamGatherName(p.param_gather)),
         "torchtitan has no key for it");
  }
  if (p.compression != CompressionKind::kNone) {
    Miss(l, "parallelism.compression", CompressionText(p.compression, p.compression_param),
         "torchtitan does not compress gradients");
  }
  if (p.order != DefaultRankOrder()) {
    Miss(l, "parallelism.order", OrderText(p.order), "torchtitan orders its device mesh itself");
  }
}

// Whether `m` is torchtitan's flavor of catalog model `id` as far as the import reads it back: the
// catalog's model itself, or one extending it with nothing changed but the multi-token-prediction
// depth (torchtitan's DeepSeek-V3 trains no MTP module; ModelFlavorMisses lists a depth).
bool IsFlavorOf(const ModelSpec& m, std::string_view id) {
  if (m.id == id) return true;
  if (m.id != std::string(id) + "+overrides") return false;
  static const StatusOr<ModelCatalog> catalog = LoadModelCatalog();
  const ModelSpec* base = catalog.ok() ? catalog->Find(id) : nullptr;
  if (base == nullptr) return false;
  ModelSpec same = m;
  same.id = base->id;
  same.published_params = base->published_params;
  same.published_active_params = base->published_active_params;
  same.mtp_depth = base->mtp_depth;
  return same == *base;
}

void ModelKeys(const Scenario& s, LaunchConfig* l) {
  std::vector<std::string>& t = l->torchtitan;
  t.push_back("[model]");
  for (const TorchtitanFlavor& f : kTorchtitanFlavors) {
    if (!IsFlavorOf(s.model, f.id)) continue;
    t.push_back(fmt::format("name = \"{}\"", f.name));
    t.push_back(fmt::format("flavor = \"{}\"", f.flavor));
    if (s.model.mtp_depth > 0) {
      Miss(l, "model.mtp_depth", std::to_string(s.model.mtp_depth),
           "torchtitan's flavor trains no multi-token-prediction module (read back as 0)");
    }
    return;
  }
  Miss(l, "model", s.model.id, "torchtitan names its models by flavor; this one has none");
}

}  // namespace

void ExportTorchtitan(const Scenario& s, LaunchConfig* l) {
  std::vector<std::string>& t = l->torchtitan;
  ModelKeys(s, l);
  if (s.training.precision == Dtype::kFp8) t.push_back("converters = [\"float8\"]");
  TrainingKeys(s, l);
  TrainingMisses(s, l);
  ParallelismKeys(s, l);
  ParallelismMisses(s, l);
}

std::string TorchtitanToml(const LaunchConfig& l) {
  std::string out;
  for (const std::string& line : l.torchtitan) {
    out += (line.front() == '[' && !out.empty() ? "\n" : "") + line + "\n";
  }
  return out;
}

}  // namespace parasim
