// parasim memory: memory per GPU, per pipeline stage, and whether it fits.
#include "strategies/memory.h"

#include <fmt/core.h>

#include "sim/parse_units.h"
#include "strategies/layout_format.h"
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
};

StatusOr<Result> Run(const Options& o, const VerbContext&) {
  Result res;
  PARASIM_ASSIGN_OR_RETURN(res.s, LoadFixedScenario(o.scenario, o.sets));
  const Scenario& s = res.s;
  res.r = EstimateMemory(s.model, s.training, s.layout, s.cluster);
  return res;
}

Json ToJson(const Result& res) {
  const MemoryReport& r = res.r;
  Json stages = Json::Array();
  for (const auto& st : r.stages) {
    Json o = Json::Object();
    o.Set("layers", st.layers).Set("params", st.params);
    o.Set("params_bytes", st.params_bytes).Set("grads_bytes", st.grads_bytes);
    o.Set("optimizer_bytes", st.optimizer_bytes).Set("activations_bytes", st.activations_bytes);
    o.Set("transient_bytes", st.transient_bytes).Set("other_bytes", st.other_bytes);
    o.Set("reserve_bytes", st.reserve_bytes).Set("total_bytes", st.total());
    o.Set("allocated_bytes", st.allocated());
    o.Set("micro_batches_in_flight", st.in_flight);
    stages.Push(o);
  }
  Json j = Json::Object();
  j.Set("stages", stages).Set("capacity_bytes", r.capacity_bytes).Set("fits", r.fits);
  j.Set("model_state_bytes_per_param", r.bytes_per_param).Set("layout", LayoutJson(res.s));
  return j;
}

std::string ToText(const Result& res) {
  const Scenario& s = res.s;
  const MemoryReport& r = res.r;
  std::string out =
      fmt::format("{}: memory per GPU ({} x {}, {})\n", ScenarioName(s), s.cluster.gpus(),
                  s.cluster.gpu.id, FormatBytes(s.cluster.gpu.memory));
  out += fmt::format("layout: {}\n", FormatLayout(s.layout, s.training, LayoutStyle::kSentence));
  out += fmt::format(
      "model states: {:.0f} bytes per parameter before sharding (weights, gradients, "
      "optimizer with fp32 master)\n\n",
      r.bytes_per_param);
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
      "(the loss's copies of the logits, recompute's rebuild); other: buffers, library "
      "workspaces and {} reserved outside PyTorch's allocator (CUDA context, NCCL); allocated: "
      "all but that reserve, as torch.cuda.max_memory_allocated counts.\n",
      FormatBytes(Bytes(kFrameworkReserveBytes)));
  out += fmt::format("{} against {} per GPU (GiB = 2^30 bytes).\n",
                     r.fits ? "Fits" : "Does NOT fit", FormatBytes(Bytes(r.capacity_bytes)));
  if (!r.fits) {
    out +=
        "Options: shard states (--set parallelism.zero=3), recompute activations "
        "(--set training.recompute=full), or more TP/PP.\n";
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
