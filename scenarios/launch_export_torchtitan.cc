// The torchtitan job config of a scenario's layout (scenarios/launch_export.h): the keys
// `parasim import torchtitan` reads back (scenarios/torchtitan_import.h).
#include <fmt/core.h>

#include <cmath>

#include "scenarios/launch_export.h"
#include "scenarios/torchtitan_names.h"
#include "strategies/schedule.h"

namespace parasim {
namespace {

void Miss(LaunchConfig* l, const std::string& key, const std::string& value,
          const std::string& why) {
  l->torchtitan_missing.push_back({key, value, why});
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
  }
  t.push_back(fmt::format("tensor_parallel_degree = {}", p.tp));
  t.push_back(fmt::format("pipeline_parallel_degree = {}", p.pp));
  t.push_back(fmt::format("context_parallel_degree = {}", p.cp));
  if (p.ep > 1) t.push_back(fmt::format("expert_parallel_degree = {}", p.ep));
  if (p.etp > 0) t.push_back(fmt::format("expert_tensor_parallel_degree = {}", p.etp));
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
  if (p.schedule == kScheduleInterleaved && s.model.layers % (p.pp * p.virtual_stages) == 0) {
    t.push_back(fmt::format("pipeline_parallel_layers_per_stage = {}",
                            s.model.layers / (p.pp * p.virtual_stages)));
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
  t.push_back(fmt::format("mixed_precision_param = \"{}\"",
                          tr.precision == Dtype::kFp32 ? "float32" : "bfloat16"));
  t.push_back(fmt::format("mixed_precision_reduce = \"{}\"",
                          tr.grad_dtype == Dtype::kBf16 ? "bfloat16" : "float32"));
  const double steps = tr.tokens / static_cast<double>(tr.global_batch * tr.seq_len);
  if (tr.tokens > 0 && steps == std::floor(steps)) {
    t.push_back(fmt::format("steps = {}", static_cast<int64_t>(steps)));
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
      if (tr.recompute_layers > 0 && chunk_layers % tr.recompute_layers == 0 &&
          tr.recompute_layers < chunk_layers) {
        t.push_back("mode = \"selective\"");
        t.push_back(
            fmt::format("selective_ac_option = \"{}\"", chunk_layers / tr.recompute_layers));
      } else {
        t.push_back("mode = \"full\"");
      }
      break;
    default:
      t.push_back("mode = \"none\"");
      Miss(l, "training.recompute", std::string(RecomputeName(tr.recompute)),
           "torchtitan checkpoints whole layers or its op-level policy");
  }
}

}  // namespace

void ExportTorchtitan(const Scenario& s, LaunchConfig* l) {
  std::vector<std::string>& t = l->torchtitan;
  t.push_back("[model]");
  bool named = false;
  for (const TorchtitanFlavor& f : kTorchtitanFlavors) {
    if (s.model.id != f.id) continue;
    t.push_back(fmt::format("name = \"{}\"", f.name));
    t.push_back(fmt::format("flavor = \"{}\"", f.flavor));
    named = true;
  }
  if (!named) {
    Miss(l, "model", s.model.id, "torchtitan names its models by flavor; this one has none");
  }
  if (s.training.precision == Dtype::kFp8) t.push_back("converters = [\"float8\"]");
  TrainingKeys(s, l);
  ParallelismKeys(s, l);
}

std::string TorchtitanToml(const LaunchConfig& l) {
  std::string out;
  for (const std::string& line : l.torchtitan) {
    out += (line.front() == '[' && !out.empty() ? "\n" : "") + line + "\n";
  }
  return out;
}

}  // namespace parasim
