#include "scenarios/megatron_import.h"

#include <fmt/core.h>

#include <algorithm>
#include <numeric>

#include "hardware/spec.h"
#include "scenarios/megatron_exprs.h"
#include "scenarios/megatron_import_parts.h"
#include "sim/yaml_reader.h"
#include "strategies/layout.h"

namespace parasim {
namespace megatron_import {
namespace {

std::string ListText(const std::vector<int>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "]";
}

// --pipeline-model-parallel-layout: pp x vp segments, segment i on rank i mod pp; `*vp_out` gets
// vp.
Status ReadLayout(Context& c, int pp, int layers, int64_t* vp_out) {
  const FlagReader& r = c.r;
  const std::string flag = "--pipeline-model-parallel-layout";
  StatusOr<std::vector<LayoutSegment>> segs = ParsePipelineLayout(r.Value(flag));
  if (!segs.ok()) return r.Error(flag, segs.status().message());
  const int n = static_cast<int>(segs->size());
  if (n % pp != 0) {
    return r.Error(flag, fmt::format("{} segments do not split over --pipeline-model-parallel-size "
                                     "{}: expected pp x virtual stages segments",
                                     n, pp));
  }
  std::vector<int> stage(pp, 0);
  int total = 0, mtp = 0;
  for (int i = 0; i < n; ++i) {
    stage[i % pp] += (*segs)[i].layers;
    total += (*segs)[i].layers;
    mtp += (*segs)[i].mtp;
  }
  if (total != layers) {
    return r.Error(flag,
                   fmt::format("places {} decoder layers (t), --num-layers {}", total, layers));
  }
  const int64_t depth = r.Has("--mtp-num-layers") ? std::stoll(r.Value("--mtp-num-layers")) : 0;
  if (mtp != depth) {
    return r.Error(flag, fmt::format("places {} MTP layers (m), --mtp-num-layers {}", mtp, depth));
  }
  for (int p = 0; p < pp; ++p) {
    if (stage[p] == 0) {
      return r.Error(flag, fmt::format("pipeline stage {} holds no decoder layer", p));
    }
  }
  c.Set("parallelism.stage_layers", ListText(stage), flag);
  const int vp = n / pp;
  *vp_out = vp;
  if (vp > 1) {
    c.Set("parallelism.virtual_stages", std::to_string(vp), flag);
    c.Set("parallelism.schedule", "interleaved-1f1b", flag);
    c.NotModelled(flag,
                  "the layers of each virtual stage: parasim splits each stage's layers "
                  "evenly over its model chunks");
  }
  return Status::Ok();
}

// --decoder-first/last-pipeline-num-layers: the others split evenly over the middle stages.
Status ReadFirstLast(Context& c, int pp, int layers) {
  const FlagReader& r = c.r;
  const bool has_first = r.Has("--decoder-first-pipeline-num-layers");
  const bool has_last = r.Has("--decoder-last-pipeline-num-layers");
  const std::string flag =
      has_first ? "--decoder-first-pipeline-num-layers" : "--decoder-last-pipeline-num-layers";
  PARASIM_ASSIGN_OR_RETURN(int64_t first, r.Int("--decoder-first-pipeline-num-layers", 1, layers));
  PARASIM_ASSIGN_OR_RETURN(int64_t last, r.Int("--decoder-last-pipeline-num-layers", 1, layers));
  const int middle = pp - (has_first ? 1 : 0) - (has_last ? 1 : 0);
  const int64_t rest = layers - (has_first ? first : 0) - (has_last ? last : 0);
  if (middle <= 0 || rest <= 0 || rest % middle != 0) {
    return r.Error(flag, fmt::format("the other {} layers do not split evenly over the other {} "
                                     "of --pipeline-model-parallel-size {} stages",
                                     rest, middle, pp));
  }
  std::vector<int> stage(pp, static_cast<int>(rest / middle));
  if (has_first) stage.front() = static_cast<int>(first);
  if (has_last) stage.back() = static_cast<int>(last);
  c.Use("--decoder-first-pipeline-num-layers");
  c.Use("--decoder-last-pipeline-num-layers");
  c.Set("parallelism.stage_layers", ListText(stage), flag);
  return Status::Ok();
}

// A hybrid pattern's pipeline (select_pipeline_segment, megatron/core/models/hybrid/
// hybrid_layer_allocation.py): '|' cuts it into pp x virtual stages segments, segment i on rank i
// mod pp, and no other split flag may stand beside it; without '|' the layers split evenly and
// there are no virtual stages. `*handled`: the segments placed the layers.
Status ReadHybridPipeline(Context& c, int pp, int layers, bool* handled) {
  const FlagReader& r = c.r;
  const std::string flag = HybridFlag(r);
  const HybridPattern pattern = SplitHybridPattern(r.Value(flag));
  const bool segmented = pattern.segments.size() > 1;
  // Refused beside any hybrid pattern: another layout, virtual stages by count, the ends
  // counted as layers (arguments.py at d98e8a6); beside '|' segments also uneven first and last
  // stages.
  for (const char* other :
       {"--pipeline-model-parallel-layout", "--num-layers-per-virtual-pipeline-stage",
        "--num-virtual-stages-per-pipeline-rank", "--account-for-embedding-in-pipeline-split",
        "--account-for-loss-in-pipeline-split", "--decoder-first-pipeline-num-layers",
        "--decoder-last-pipeline-num-layers"}) {
    const bool ends = std::string_view(other).find("decoder-") != std::string_view::npos;
    if (r.Has(other) && (segmented || !ends)) {
      return r.Error(other, fmt::format("Megatron-LM refuses it beside a hybrid pattern: {}",
                                        segmented ? "the pattern's '|' segments place the layers"
                                                  : "'|' segments in the pattern place them"));
    }
  }
  *handled = segmented;
  if (!segmented) {
    const bool first_last =
        r.Has("--decoder-first-pipeline-num-layers") || r.Has("--decoder-last-pipeline-num-layers");
    if (pp > 1 && !first_last && layers % pp != 0) {
      return r.Error(flag, fmt::format("{} layers do not split evenly over "
                                       "--pipeline-model-parallel-size {}: give '|' segments",
                                       layers, pp));
    }
    return Status::Ok();
  }
  std::vector<int> seg;
  for (const std::string& s : pattern.segments) seg.push_back(static_cast<int>(s.size()));
  const int n = static_cast<int>(seg.size());
  if (n % pp != 0) {
    return r.Error(flag, fmt::format("{} '|' segments do not split over "
                                     "--pipeline-model-parallel-size {}: expected pp x virtual "
                                     "stages segments",
                                     n, pp));
  }
  const int vp = n / pp;
  if (vp > 1 && pp == 1) {
    return r.Error(flag, fmt::format("{} '|' segments on one pipeline stage: virtual stages "
                                     "need --pipeline-model-parallel-size above 1",
                                     n));
  }
  std::vector<int> stage(pp, 0);
  for (int i = 0; i < n; ++i) stage[i % pp] += seg[i];
  for (int p = 0; p < pp; ++p) {
    if (stage[p] == 0) return r.Error(flag, fmt::format("pipeline stage {} holds no layer", p));
  }
  // The segments parasim's own split of each stage's layers over its chunks would give.
  Layout split;
  split.pp = pp;
  split.stage_layers = stage;
  const std::vector<std::vector<int>> own = ChunkLayers(split, layers, vp);
  bool even = true;
  for (int i = 0; i < n; ++i) even = even && seg[i] == own[i % pp][i / pp];
  c.Derived("parallelism.stage_layers", ListText(stage), flag + ": its '|' segments", flag);
  if (vp > 1) {
    c.Derived("parallelism.virtual_stages", std::to_string(vp), flag + ": its '|' segments", flag);
    c.Derived("parallelism.schedule", "interleaved-1f1b", flag + ": its '|' segments", flag);
    if (!even) {
      c.NotModelled(flag,
                    "the layers of each virtual stage: parasim splits each stage's layers "
                    "evenly over its model chunks");
    }
  }
  return ReadInterleaving(c, pp, vp);
}

Status ReadPipeline(Context& c, int pp, int layers) {
  const FlagReader& r = c.r;
  if (HybridFlag(r) != nullptr) {
    c.Derived("parallelism.schedule", "1f1b",
              pp > 1 ? "Megatron-LM's 1F1B pipeline schedule" : "no pipeline (1F1B of one stage)");
    bool handled = false;
    PARASIM_RETURN_IF_ERROR(ReadHybridPipeline(c, pp, layers, &handled));
    if (handled) return Status::Ok();
  }
  PARASIM_RETURN_IF_ERROR(CheckVirtualFlags(r));
  const bool layout = r.Has("--pipeline-model-parallel-layout");
  const bool first_last =
      r.Has("--decoder-first-pipeline-num-layers") || r.Has("--decoder-last-pipeline-num-layers");
  if (layout && first_last) {
    return r.Error("--pipeline-model-parallel-layout",
                   "contradicts --decoder-first/last-pipeline-num-layers: give one split");
  }
  c.Derived("parallelism.schedule", "1f1b",
            pp > 1 ? "Megatron-LM's 1F1B pipeline schedule" : "no pipeline (1F1B of one stage)");
  if (layout) {
    int64_t vp = 1;
    PARASIM_RETURN_IF_ERROR(ReadLayout(c, pp, layers, &vp));
    return ReadInterleaving(c, pp, vp);
  }
  if (first_last) PARASIM_RETURN_IF_ERROR(ReadFirstLast(c, pp, layers));
  std::vector<std::string> account;
  if (r.Has("--account-for-embedding-in-pipeline-split")) account.push_back("embedding");
  if (r.Has("--account-for-loss-in-pipeline-split")) account.push_back("loss");
  if (!account.empty()) {
    if (first_last) {
      return r.Error("--decoder-first-pipeline-num-layers",
                     "contradicts --account-for-*-in-pipeline-split: give one split");
    }
    const std::string flag = account[0] == "embedding" ? "--account-for-embedding-in-pipeline-split"
                                                       : "--account-for-loss-in-pipeline-split";
    c.Use("--account-for-loss-in-pipeline-split");
    c.Set("parallelism.account_for",
          account.size() == 2 ? "[embedding, loss]" : "[" + account[0] + "]", flag);
  }
  const int units = layers + static_cast<int>(account.size());
  // Megatron-LM's rule where no flag places the layers (arguments.py: "Number of layers should
  // be divisible by the pipeline-model-parallel size").
  if (!first_last && !r.Has("--num-layers-per-virtual-pipeline-stage") &&
      !r.Has("--num-virtual-stages-per-pipeline-rank") && units % pp != 0) {
    return r.Error(
        r.Has("--pipeline-model-parallel-size") ? "--pipeline-model-parallel-size" : "--num-layers",
        fmt::format("{} layers{} do not split evenly over {} stages; Megatron-LM "
                    "places an uneven split only by --pipeline-model-parallel-layout "
                    "or --decoder-first/last-pipeline-num-layers",
                    units, account.empty() ? "" : " (with the embedding or loss)", pp));
  }
  int64_t vp = 1;
  std::string vflag;
  if (r.Has("--num-layers-per-virtual-pipeline-stage")) {
    PARASIM_ASSIGN_OR_RETURN(int64_t per,
                             r.Int("--num-layers-per-virtual-pipeline-stage", 1, units));
    vflag = "--num-layers-per-virtual-pipeline-stage";
    if (units % (per * pp) != 0) {
      return r.Error(vflag, fmt::format("{} layers do not split into chunks of {} over {} stages",
                                        units, per, pp));
    }
    vp = units / (per * pp);
  }
  if (r.Has("--num-virtual-stages-per-pipeline-rank")) {
    PARASIM_ASSIGN_OR_RETURN(vp, r.Int("--num-virtual-stages-per-pipeline-rank", 1, 1024));
    vflag = "--num-virtual-stages-per-pipeline-rank";
  }
  if (!vflag.empty()) {
    c.Use("--num-layers-per-virtual-pipeline-stage");
    c.Set("parallelism.virtual_stages", std::to_string(vp), vflag);
    if (vp > 1) c.Set("parallelism.schedule", "interleaved-1f1b", vflag);
  }
  return ReadInterleaving(c, pp, vp);
}

Status ReadOverlap(Context& c, int cp) {
  const FlagReader& r = c.r;
  const bool grad = r.Has("--overlap-grad-reduce"), param = r.Has("--overlap-param-gather");
  c.Derived(
      "parallelism.overlap.dp", grad ? "true" : "false",
      grad ? (param ? "--overlap-grad-reduce, --overlap-param-gather" : "--overlap-grad-reduce")
           : "no --overlap-grad-reduce: gradients reduced after the backward",
      grad ? "--overlap-grad-reduce" : "");
  if (param && !grad) {
    return r.Error("--overlap-param-gather",
                   "without --overlap-grad-reduce: Megatron-LM refuses the parameter "
                   "all-gather's overlap alone (give both, or neither)");
  }
  if (grad && !param && r.Has("--use-distributed-optimizer")) {
    c.NotModelled("--overlap-grad-reduce",
                  "no --overlap-param-gather: parasim overlaps the distributed optimizer's "
                  "parameter all-gather with the gradient reduction's setting");
  }
  c.Use("--overlap-param-gather");
  if (r.Has("--no-align-param-gather")) {
    c.Set("parallelism.param_gather", "on_demand", "--no-align-param-gather");
  }
  c.Switch("parallelism.overlap.tp", "--tp-comm-overlap", "true", "backward",
           "Megatron-LM's default: the backward's TP collectives beside the weight gradient");
  if (r.Has("--overlap-moe-expert-parallel-comm")) {
    PARASIM_RETURN_IF_ERROR(CheckEpOverlap(c));
    c.Set("parallelism.overlap.ep", "true", "--overlap-moe-expert-parallel-comm");
  }
  if (r.Has("--cp-comm-type")) {
    PARASIM_ASSIGN_OR_RETURN(std::string t,
                             r.Choice("--cp-comm-type", {"p2p", "all_gather", "a2a", "a2a+p2p"}));
    if (t == "p2p" || t == "all_gather") {
      if (cp > 1)
        c.Set("parallelism.cp_comm", t == "p2p" ? "ring" : "all_gather", "--cp-comm-type");
      c.Use("--cp-comm-type");
    } else {
      c.NotModelled("--cp-comm-type",
                    "all-to-all context parallelism (Ulysses, or its "
                    "hierarchy with p2p): parasim passes K and V around a ring");
    }
  }
  if (r.Has("--use-tp-pp-dp-mapping")) {
    c.Set("parallelism.order", "[tp, cp, ep, pp, dp]", "--use-tp-pp-dp-mapping");
  }
  return Status::Ok();
}

// The bucket in elements, as Megatron-LM counts it, at the gradients' bytes.
Status ReadBucket(Context& c) {
  if (!c.r.Has("--ddp-bucket-size")) return Status::Ok();
  PARASIM_ASSIGN_OR_RETURN(int64_t n, c.r.Int("--ddp-bucket-size", 1, int64_t{1} << 40));
  PARASIM_ASSIGN_OR_RETURN(Dtype g, ParseDtype(c.w.Get("training.grad_dtype")));
  const int64_t bytes = n * static_cast<int64_t>(DtypeBytes(g));
  c.Set("parallelism.bucket", std::to_string(bytes) + "B", "--ddp-bucket-size");
  return Status::Ok();
}

}  // namespace

Status ReadParallel(Context& c, int64_t gpus, int layers, int64_t* dp) {
  const FlagReader& r = c.r;
  PARASIM_ASSIGN_OR_RETURN(int64_t tp, r.Int("--tensor-model-parallel-size", 1, 65536, 1));
  PARASIM_ASSIGN_OR_RETURN(int64_t pp, r.Int("--pipeline-model-parallel-size", 1, 65536, 1));
  PARASIM_ASSIGN_OR_RETURN(int64_t cp, r.Int("--context-parallel-size", 1, 65536, 1));
  PARASIM_ASSIGN_OR_RETURN(int64_t ep, r.Int("--expert-model-parallel-size", 1, 65536, 1));
  if (gpus % (tp * pp * cp) != 0) {
    const std::string flag = r.Has("--tensor-model-parallel-size")
                                 ? "--tensor-model-parallel-size"
                                 : "--pipeline-model-parallel-size";
    return r.Error(flag,
                   fmt::format("tp x pp x cp = {} x {} x {} = {} does not divide the cluster's "
                               "{} GPUs (nodes x GPUs per node): give --nodes and "
                               "--gpus-per-node to the import",
                               tp, pp, cp, tp * pp * cp, gpus));
  }
  *dp = gpus / (tp * pp * cp);
  c.Set("parallelism.tp", std::to_string(tp), "--tensor-model-parallel-size");
  c.Set("parallelism.pp", std::to_string(pp), "--pipeline-model-parallel-size");
  c.Derived("parallelism.dp", std::to_string(*dp),
            fmt::format("the GPUs / (tp x pp x cp) = {} / {}", gpus, tp * pp * cp));
  if (cp > 1 || r.Has("--context-parallel-size")) {
    c.Set("parallelism.cp", std::to_string(cp), "--context-parallel-size");
  }
  if (ep > 1 || r.Has("--expert-model-parallel-size")) {
    c.Set("parallelism.ep", std::to_string(ep), "--expert-model-parallel-size");
  }
  // The experts' TP width exists only with experts; Megatron-LM ignores it otherwise.
  if (r.Has("--expert-tensor-parallel-size") && r.Has("--num-experts")) {
    PARASIM_ASSIGN_OR_RETURN(int64_t etp, r.Int("--expert-tensor-parallel-size", 1, 65536));
    c.Set("parallelism.etp", std::to_string(etp), "--expert-tensor-parallel-size");
  }
  c.Switch("parallelism.sp", "--sequence-parallel", "true", "false", "no --sequence-parallel");
  PARASIM_RETURN_IF_ERROR(ReadPipeline(c, static_cast<int>(pp), layers));
  PARASIM_RETURN_IF_ERROR(ReadSharding(c, pp, ep));
  PARASIM_RETURN_IF_ERROR(CheckTpOverlap(r, tp));
  PARASIM_RETURN_IF_ERROR(ReadOverlap(c, static_cast<int>(cp)));
  return ReadBucket(c);
}

}  // namespace megatron_import

namespace {

using megatron_import::Context;

// The cluster through the shared writer (WriteImportCluster).
Status WriteCluster(Context& c, const MegatronArgs& args, int64_t* gpus) {
  return WriteImportCluster(c.o, {args.nodes, args.gpus_per_node, args.env}, args.file, c.cat, &c.w,
                            gpus, &c.gpus_per_node);
}

Status WriteBatch(Context& c, int64_t dp) {
  const FlagReader& r = c.r;
  if (!r.Has("--seq-length")) {
    return InvalidArgument(fmt::format(
        "{}: error: no --seq-length: the import needs the tokens per sequence", r.args().file));
  }
  PARASIM_ASSIGN_OR_RETURN(int64_t seq, r.Int("--seq-length", 1, int64_t{1} << 32));
  PARASIM_RETURN_IF_ERROR(megatron_import::CheckSequence(r, seq));
  constexpr int64_t kMaxBatch = int64_t{1} << 40;  // sequences a step
  PARASIM_ASSIGN_OR_RETURN(int64_t mb, r.Int("--micro-batch-size", 1, kMaxBatch, 1));
  if (dp < 1 || mb > kMaxBatch / dp) {  // mb x dp must not wrap below
    const std::string what = fmt::format(
        "--micro-batch-size {} x data-parallel {} is over {} sequences a step: "
        "expected a product from 1 to {}",
        mb, dp, kMaxBatch, kMaxBatch);
    if (r.Has("--micro-batch-size")) return r.Error("--micro-batch-size", what);
    return InvalidArgument(fmt::format("{}: error: {}", r.args().file, what));
  }
  PARASIM_ASSIGN_OR_RETURN(int64_t gb, r.Int("--global-batch-size", 1, kMaxBatch, mb * dp));
  if (gb % (mb * dp) != 0) {
    return r.Error("--global-batch-size",
                   fmt::format("{} is not a multiple of --micro-batch-size {} x data-parallel {}",
                               gb, mb, dp));
  }
  c.Set("training.seq_len", std::to_string(seq), "--seq-length");
  c.Derived("training.global_batch", std::to_string(gb),
            r.Has("--global-batch-size") ? r.Text("--global-batch-size")
                                         : "Megatron-LM's default: micro-batch x DP",
            "--global-batch-size");
  c.Derived("training.micro_batch", std::to_string(mb),
            r.Has("--micro-batch-size") ? r.Text("--micro-batch-size") : "not given: 1",
            "--micro-batch-size");
  // The run's length: tokens for time to train.
  if (r.Has("--train-samples")) {
    PARASIM_ASSIGN_OR_RETURN(int64_t s, r.Int("--train-samples", 1, int64_t{1} << 50));
    c.Use("--train-iters");
    c.Set("training.tokens", fmt::format("{}", static_cast<double>(s) * static_cast<double>(seq)),
          "--train-samples");
  } else if (r.Has("--train-iters")) {
    PARASIM_ASSIGN_OR_RETURN(int64_t it, r.Int("--train-iters", 1, int64_t{1} << 50));
    c.Set("training.tokens",
          fmt::format("{}",
                      static_cast<double>(it) * static_cast<double>(gb) * static_cast<double>(seq)),
          "--train-iters");
  }
  return Status::Ok();
}

// The closing comment blocks: flags not modelled, flags with no effect, the environment.
void WriteTrailer(Context& c, ImportedScenario* out) {
  std::vector<std::string> nm;
  for (const UnappliedFlag& f : out->not_modelled) {
    nm.push_back(fmt::format("{}{}: {}", f.flag, f.value.empty() ? "" : " " + f.value, f.why));
  }
  c.w.Trailer("Flags not modelled (flag value: why):", nm);
  std::vector<std::string> inert;
  std::string line;
  for (const std::string& f : out->no_effect) {
    if (line.size() + f.size() > 90) {
      inert.push_back(line);
      line.clear();
    }
    line += (line.empty() ? "" : " ") + f;
  }
  if (!line.empty()) inert.push_back(line);
  c.w.Trailer("Flags with no effect on step time or memory:", inert);
  // The variables the scenario states are not listed: the NVLink domain, and the cuBLAS
  // workspace where its value sized one.
  const bool blas = c.w.Has("training.blas_workspace");
  std::vector<std::string> env;
  for (const auto& [k, v] : c.r.args().env) {
    if (k == "NVLINK_DOMAIN_SIZE" || (blas && k == megatron_import::kBlasWorkspaceEnv)) continue;
    env.push_back(k + "=" + v);
  }
  c.w.Trailer("Environment, not modelled (NCCL, Transformer Engine and CUDA settings):", env);
}

// Sorts every flag given into mapped, not modelled and no effect.
void Classify(const Context& c, ImportedScenario* out) {
  out->not_modelled = c.not_modelled;
  for (const MegatronArg* a : c.r.Given()) {
    ++out->flags;
    const MegatronFlag* row = FindMegatronFlag(a->flag);
    const bool used = std::find(c.used.begin(), c.used.end(), a->flag) != c.used.end();
    const bool listed = std::any_of(c.not_modelled.begin(), c.not_modelled.end(),
                                    [&](const UnappliedFlag& f) { return f.flag == a->flag; });
    std::string value;
    for (const std::string& v : a->values) value += (value.empty() ? "" : " ") + v;
    if (row->use == FlagUse::kNoEffect) {
      out->no_effect.push_back(a->flag);
    } else if (row->use == FlagUse::kNotModelled) {
      out->not_modelled.push_back({a->flag, value, std::string(row->why), c.r.args().Where(*a)});
    } else if (listed) {
      continue;
    } else if (used) {
      ++out->mapped;
    } else {
      out->not_modelled.push_back(
          {a->flag, value,
           "has no effect in this configuration (the flags it goes with are absent)",
           c.r.args().Where(*a)});
    }
  }
}

// Loads the scenario written; an error at a line of it is told at the flag that set the line.
Status LoadWritten(const std::string& yaml, const std::vector<std::string>& line_at,
                   const std::vector<std::string>& line_key, const std::string& file,
                   const Catalogs& cat, Scenario* s) {
  const std::string name = "<imported>";
  StatusOr<YAML::Node> root = ParseYaml(yaml, name);
  StatusOr<Scenario> loaded =
      root.ok() ? ScenarioFromNode(*root, YamlContext{name, {}}, cat) : root.status();
  if (loaded.ok()) {
    *s = *std::move(loaded);
    return Status::Ok();
  }
  std::string msg = loaded.status().message();
  int line = 0, col = 0;
  std::string at = file;
  if (std::sscanf(msg.c_str(), "<imported>:%d:%d:", &line, &col) == 2) {
    msg = msg.substr(msg.find(": ", msg.find(':', name.size() + 1)) + 2);
    if (line >= 1 && line <= static_cast<int>(line_at.size()) && !line_at[line - 1].empty()) {
      at = line_at[line - 1];
    }
    if (line >= 1 && line <= static_cast<int>(line_key.size()) && !line_key[line - 1].empty()) {
      msg += fmt::format(" (the imported scenario's {})", line_key[line - 1]);
    }
  }
  return Status(loaded.status().code(), fmt::format("{}: {}", at, msg));
}

}  // namespace

Status WriteImportCluster(const ImportOptions& o, const LauncherShape& launcher,
                          const std::string& file, const Catalogs& cat, ScenarioWriter* w,
                          int64_t* gpus, int* gpus_per_node) {
  const GpuSpec* g = cat.hardware.FindGpu(o.gpu);
  if (!g) {
    const std::string near = DidYouMean(o.gpu, cat.hardware.GpuIds());
    // Told where the GPU was given: the option, or the file that named it; the file where
    // none was.
    const std::string at = !o.gpu_at.empty() ? o.gpu_at
                           : o.gpu.empty()   ? file
                                             : fmt::format("--gpu {}:1:7", o.gpu);
    return InvalidArgument(
        fmt::format("{}: error: the import needs the cluster's GPU: {} (a catalog id such as "
                    "h100-sxm5-80gb{}; `parasim catalog` lists them)",
                    at, o.gpu.empty() ? "give --gpu ID" : "unknown GPU '" + o.gpu + "'",
                    near.empty() ? "" : fmt::format("; did you mean '{}'?", near)));
  }
  w->Set("cluster.gpu", o.gpu, "--gpu");
  const int gpn = o.gpus_per_node > 0          ? o.gpus_per_node
                  : launcher.gpus_per_node > 0 ? launcher.gpus_per_node
                  : g->server.gpus > 0         ? g->server.gpus
                                               : 8;
  const int nodes = o.nodes > 0 ? o.nodes : (launcher.nodes > 0 ? launcher.nodes : 1);
  *gpus_per_node = gpn;
  w->Set(
      "cluster.nodes", std::to_string(nodes),
      o.nodes > 0 ? "--nodes" : (launcher.nodes > 0 ? "the launcher's --nnodes" : "not given: 1"));
  w->Set("cluster.gpus_per_node", std::to_string(gpn),
         o.gpus_per_node > 0      ? "--gpus-per-node"
         : launcher.gpus_per_node ? "the launcher's --nproc-per-node"
                                  : fmt::format("the {} server's (catalog)", o.gpu));
  int domain = o.nvlink_domain;
  std::string domain_from = "--nvlink-domain";
  for (const auto& [k, v] : launcher.env) {
    if (domain == 0 && k == "NVLINK_DOMAIN_SIZE") {
      domain = std::atoi(v.c_str());
      domain_from = "NVLINK_DOMAIN_SIZE=" + v;
    }
  }
  if (domain > 0) w->Set("cluster.nvlink_domain", std::to_string(domain), domain_from);
  const std::string server = fmt::format("the {} server's (catalog)", o.gpu);
  if (!g->server.intra.empty() && (gpn > 1 || domain > 1)) {
    w->Set("cluster.intra_node", g->server.intra, server);
  }
  if (!g->server.inter.empty() && nodes > 1) w->Set("cluster.inter_node", g->server.inter, server);
  *gpus = static_cast<int64_t>(nodes) * gpn;
  return Status::Ok();
}

Status FinishImport(const ScenarioWriter& w, const std::string& header, const std::string& file,
                    const Catalogs& catalogs, ImportedScenario* out) {
  std::vector<std::string> line_at, line_key;
  out->yaml = w.Render(header, &line_at, &line_key);
  out->keys = w.Keys();
  return LoadWritten(out->yaml, line_at, line_key, file, catalogs, &out->scenario);
}

StatusOr<ImportedScenario> ImportMegatron(const MegatronArgs& args, const ImportOptions& options,
                                          const Catalogs& catalogs) {
  PARASIM_RETURN_IF_ERROR(megatron_import::CheckProgram(args));
  PARASIM_ASSIGN_OR_RETURN(FlagReader reader, FlagReader::Open(args));
  Context c{reader, options, catalogs};
  int64_t gpus = 0, dp = 1;
  PARASIM_RETURN_IF_ERROR(WriteCluster(c, args, &gpus));
  PARASIM_ASSIGN_OR_RETURN(int64_t tp, reader.Int("--tensor-model-parallel-size", 1, 65536, 1));
  PARASIM_RETURN_IF_ERROR(megatron_import::ReadModel(c, static_cast<int>(tp)));
  PARASIM_RETURN_IF_ERROR(megatron_import::ReadTraining(c));
  PARASIM_RETURN_IF_ERROR(
      megatron_import::ReadParallel(c, gpus, std::stoi(c.w.Get("model.layers")), &dp));
  PARASIM_RETURN_IF_ERROR(WriteBatch(c, dp));
  ImportedScenario out;
  Classify(c, &out);
  c.w.Set("name", YamlQuote(options.name.empty() ? "imported from " + args.file : options.name),
          options.name.empty() ? "the file imported" : "the name given to the import");
  WriteTrailer(c, &out);
  const std::string header = fmt::format(
      "# Imported by `parasim import megatron` from {}: {} flags, {} mapped onto the keys "
      "below,\n# {} not modelled and {} with no effect on time or memory (listed at the end).",
      args.file, out.flags, out.mapped, out.not_modelled.size(), out.no_effect.size());
  PARASIM_RETURN_IF_ERROR(FinishImport(c.w, header, args.file, catalogs, &out));
  return out;
}

}  // namespace parasim
