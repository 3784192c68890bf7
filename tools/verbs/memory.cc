// parasim memory: memory per GPU, per pipeline stage, and whether it fits.
#include "strategies/memory.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "sim/parse_units.h"
#include "strategies/layout_format.h"
#include "strategies/step.h"
#include "tools/text.h"
#include "tools/verbs/inputs.h"
#include "tools/verbs/step_json.h"
#include "tools/verbs/verb.h"

namespace parasim {
namespace {

struct Options {
  Document scenario;
  std::vector<std::string> sets;
};

struct Result {
  Scenario s;
  MemoryReport r;
  int replayed_stages = 0;  // stages whose activations the replay's peak sets (AdoptReplay)
};

// The stages' activations are what the replay's peak leaves beside the states and buffers
// (AdoptReplayPeaks): the replay decides what `run` and `sweep` say fits. A step the replay
// refuses (`run` exits 2 on it) is refused here too, not shown as the planner's figures alone.
StatusOr<Result> Run(const Options& o, const VerbContext&) {
  Result res;
  PARASIM_ASSIGN_OR_RETURN(res.s, LoadFixedScenario(o.scenario, o.sets));
  const Scenario& s = res.s;
  res.r = EstimateMemory(s.model, s.training, s.layout, s.cluster);
  PARASIM_ASSIGN_OR_RETURN(StepReport rep,
                           SimulateStep(s.model, s.training, s.layout, s.cluster, StepOptions{}));
  res.replayed_stages = AdoptReplayPeaks(rep.peak_memory_bytes, &res.r);
  return res;
}

Json ToJson(const Result& res) {
  const MemoryReport& r = res.r;
  Json stages = Json::Array();
  // Bytes and parameters are whole numbers (the planner's sums of per-layer means are not:
  // 40256537599.99999 where run says 40256537600).
  auto whole = [](double v) { return std::round(v); };
  for (const auto& st : r.stages) {
    Json o = Json::Object();
    o.Set("layers", st.layers).Set("params", whole(st.params));
    o.Set("params_bytes", whole(st.params_bytes)).Set("grads_bytes", whole(st.grads_bytes));
    o.Set("optimizer_bytes", whole(st.optimizer_bytes))
        .Set("activations_bytes", whole(st.activations_bytes));
    o.Set("transient_bytes", whole(st.transient_bytes)).Set("other_bytes", whole(st.other_bytes));
    o.Set("reserve_bytes", whole(st.reserve_bytes)).Set("total_bytes", whole(st.total()));
    o.Set("allocated_bytes", whole(st.allocated()));
    o.Set("micro_batches_in_flight", st.in_flight);
    stages.Push(o);
  }
  Json j = Json::Object();
  j.Set("stages", stages).Set("capacity_bytes", r.capacity_bytes).Set("fits", r.fits);
  j.Set("model_state_bytes_per_param", r.bytes_per_param).Set("layout", LayoutJson(res.s));
  return j;
}

// What the weights column holds of FP8 training's weights, where Transformer Engine keeps
// them in FP8 (strategies/memory.h, Fp8WeightCopyBytesOf); empty otherwise.
std::string Fp8WeightsNote(const Scenario& s) {
  const double fp8 = Fp8WeightCopyBytesOf(s.training, s.cluster.gpu);
  if (fp8 <= 0 || (!s.training.fp8_param_gather && s.layout.zero >= 3)) return "";
  return s.training.fp8_param_gather
             ? fmt::format(
                   "weights: the FP8 GEMMs' weights are FP8 tensors, {:.3g} bytes a parameter "
                   "(training.fp8_param_gather; with the column-wise copy the backward reads "
                   "where one is kept).\n",
                   fp8)
             : fmt::format(
                   "weights: with Transformer Engine's FP8 copy of each FP8 GEMM's weight, "
                   "{:.3g} bytes a parameter, kept from a step's first micro-batch on.\n",
                   fp8);
}

std::string ToText(const Result& res) {
  const Scenario& s = res.s;
  const MemoryReport& r = res.r;
  std::string out =
      fmt::format("{}: memory per GPU ({} x {}, {})\n", ScenarioName(s), s.cluster.gpus(),
                  s.cluster.gpu.id, FormatBytes(s.cluster.gpu.memory));
  out += fmt::format("layout: {}\n", FormatLayout(s.layout, s.training, LayoutStyle::kSentence));
  const bool master = s.training.precision != Dtype::kFp32 && s.training.precision != Dtype::kTf32;
  const FinetuneKind ft = s.training.finetune;
  // A LoRA model's frozen base is held apart from the adapters' states (the rule's bytes).
  const int bits = 8 * static_cast<int>(StateBytesPerParam(s.training).weights);
  const std::string base =
      ft == FinetuneKind::kNone ? ""
      : ft == FinetuneKind::kQlora
          ? fmt::format(
                "the frozen base at 4.127 bits a parameter (NF4; embedding and LM head "
                "at {}), sharded under ZeRO 3; the adapters' states: ",
                bits)
          : fmt::format(
                "the frozen base at {} bits a parameter, sharded under ZeRO 3; the "
                "adapters' states: ",
                bits);
  out += fmt::format(
      "model states: {}{:.0f} bytes per parameter before sharding (weights, gradients, "
      "optimizer{})\n\n",
      base, r.bytes_per_param,
      !master ? ", no master copy beside fp32 weights"
              : fmt::format(" with a{} master copy",
                            s.training.master_weights == MasterWeights::kFp32 ? "n fp32"
                            : s.training.master_weights == MasterWeights::kRemainder
                                ? " 16-bit remainder"
                                : "n fp16"));
  out += fmt::format("{:>5} {:>6} {:>11} {:>11} {:>11} {:>11} {:>12} {:>11} {:>11} {:>11}  {}\n",
                     "stage", "layers", "params", "weights", "grads", "optimizer", "activations",
                     "other", "total", "allocated", "fits");
  for (size_t i = 0; i < r.stages.size(); ++i) {
    const StageMemory& st = r.stages[i];
    out += fmt::format(
        "{:>5} {:>6} {:>10.2f}B {:>11} {:>11} {:>11} {:>12} {:>11} {:>11} {:>11}  {}\n", i,
        st.layers, st.params / 1e9, FormatBytes(Bytes(st.params_bytes)),
        FormatBytes(Bytes(st.grads_bytes)), FormatBytes(Bytes(st.optimizer_bytes)),
        FormatBytes(Bytes(st.activations_bytes + st.transient_bytes)),
        FormatBytes(Bytes(st.other_bytes + st.reserve_bytes)), FormatBytes(Bytes(st.total())),
        FormatBytes(Bytes(st.allocated())), st.total() <= r.capacity_bytes ? "yes" : "NO");
  }
  out += fmt::format(
      "\nactivations: those of the micro-batches in flight and the working memory beside them "
      "(the loss's copies of the logits, recompute's rebuild, context parallelism's K and V); "
      "other: buffers, library "
      "workspaces and {} reserved outside PyTorch's allocator (CUDA context, NCCL); allocated: "
      "all but that reserve, as torch.cuda.max_memory_allocated counts.\n",
      FormatBytes(Bytes(kFrameworkReserveBytes)));
  out += Fp8WeightsNote(s);
  if (res.replayed_stages > 0) {
    out += fmt::format(
        "The activations of {} of {} stages are the replay's (run's) peak less the rest: the "
        "planner's estimate differs under this schedule (docs/MODEL.md, \"Peak memory\").\n",
        res.replayed_stages, r.stages.size());
  }
  out += fmt::format("{} against {} per GPU (GiB = 2^30 bytes).\n",
                     r.fits ? "Fits" : "Does NOT fit", FormatBytes(Bytes(r.capacity_bytes)));
  if (!r.fits) {
    // What is not already in effect.
    std::vector<std::string> options;
    // ZeRO shards over the data-parallel (x CP) ranks: with one there is nothing to shard.
    if (s.layout.zero < 3 && s.layout.dp * s.layout.cp > 1) {
      options.push_back("shard states (--set parallelism.zero=3)");
    }
    if (s.training.recompute != RecomputeKind::kFull) {
      options.push_back("recompute activations (--set training.recompute=full)");
    }
    options.push_back("more TP/PP");
    out += fmt::format("Options: {}.\n", fmt::join(options, ", "));
  }
  return out;
}

}  // namespace

Verb MemoryVerb() {
  using O = Options;
  return MakeVerb<O, Result>({
      .name = "memory",
      .help = "memory per GPU, per pipeline stage, and whether it fits",
      .flags = {Arg(&O::scenario, "file", "scenario YAML file").Python("scenario").Required(),
                SetFlag(&O::sets), JsonFlag<O>()},
      .run = Run,
      .json = ToJson,
      .text = ToText,
  });
}

}  // namespace parasim
