#include "tools/trace_compare.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hardware/cost_model.h"
#include "hardware/readers/bounded_input.h"
#include "models/layer_graph.h"
#include "sim/enum_names.h"
#include "sim/io.h"
#include "sim/yaml_reader.h"
#include "strategies/memory.h"

namespace parasim {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool HasAny(const std::string& s, std::initializer_list<std::string_view> parts) {
  for (std::string_view p : parts) {
    if (s.find(p) != std::string::npos) return true;
  }
  return false;
}

// Reads a file through zlib, which passes uncompressed files through unchanged: a regular file
// alone, and no more than 256 MiB inflated, nor 200 times its compressed size (a gzip bomb: 4 MB
// that inflate to 4 GiB took 96 s and 4.2 GB before it was refused), hardware/readers/
// bounded_input.h. The trace is then parsed whole, so its inflated size bounds the memory.
StatusOr<std::string> ReadMaybeGzipped(const std::string& path) {
  PARASIM_RETURN_IF_ERROR(CheckRegularFile(path));  // a directory, FIFO or /dev/zero: refused
  InputLimits limits;
  limits.max_bytes = int64_t{256} << 20;
  limits.ratio_after_bytes = int64_t{16} << 20;
  StatusOr<std::string> text = ReadBoundedFile(path, limits);
  if (!text.ok()) {  // "path: what": located
    std::string what = text.status().message();
    if (what.rfind(path + ": ", 0) == 0) what.erase(0, path.size() + 2);
    return InvalidArgument(fmt::format("{}:1:1: error: {}", path, what));
  }
  return text;
}

// Total length of the union of intervals.
double Covered(std::vector<std::pair<double, double>> v) {
  std::sort(v.begin(), v.end());
  double covered = 0, end = -1e300;
  for (auto [a, b] : v) {
    if (a > end) {
      covered += b - a;
      end = b;
    } else if (b > end) {
      covered += b - end;
      end = b;
    }
  }
  return covered;
}

void Finish(const std::vector<std::pair<double, double>>& spans, KindTimes* k) {
  if (spans.empty()) return;
  double first = spans[0].first, last = spans[0].second;
  for (auto [a, b] : spans) {
    first = std::min(first, a);
    last = std::max(last, b);
  }
  k->span_s = last - first;
  k->idle_s = std::max(0.0, k->span_s - Covered(spans));
}

}  // namespace

namespace {
constexpr EnumNames<KernelKind, kNumKernelKinds> kKernelKinds(
    "kernel kind", {{{KernelKind::kGemm, "GEMM"},
                     {KernelKind::kAttention, "attention"},
                     {KernelKind::kElementwise, "element-wise"},
                     {KernelKind::kCommunication, "communication"}}});
}  // namespace

std::string_view KernelKindName(KernelKind k) { return kKernelKinds.Name(k); }

KernelKind ClassifyKernel(std::string_view name) {
  const std::string s = Lower(name);
  if (HasAny(s, {"nccl", "rccl"})) return KernelKind::kCommunication;
  // cuDNN's fused attention runs its backward with two helper kernels beside the main one,
  // named without "sdpa" or "flash": the dot of dO and O before it, the cast of the fp32 dQ
  // after it (cudnn::fusion::compute_dot_do_o_*, convert_dq_to_16bits; seen on an H100 with
  // cuDNN 9, tests/traces/h100-mcore-1.7b-mb4.json.gz).
  if (HasAny(s,
             {"flash", "fmha", "attn", "attention", "sdpa", "softmax", "dot_do_o", "convert_dq"})) {
    return KernelKind::kAttention;
  }
  // cuBLAS (gemm, nvjet on Hopper), CUTLASS and the xmma/wgmma kernels cuBLASLt dispatches.
  if (HasAny(s, {"gemm", "cutlass", "cublas", "nvjet", "xmma", "wgmma", "matmul"})) {
    return KernelKind::kGemm;
  }
  return KernelKind::kElementwise;
}

std::string NcclCollective(std::string_view name) {
  const std::string s = Lower(name);
  struct Kind {
    std::string_view key, name;
  };
  for (Kind k : {Kind{"allreduce", "AllReduce"}, Kind{"reducescatter", "ReduceScatter"},
                 Kind{"allgather", "AllGather"}, Kind{"alltoall", "AllToAll"},
                 Kind{"sendrecv", "SendRecv"}, Kind{"send", "Send"}, Kind{"recv", "Recv"},
                 Kind{"broadcast", "Broadcast"}, Kind{"reduce", "Reduce"}}) {
    if (s.find(k.key) != std::string::npos) return std::string(k.name);
  }
  return "other";
}

StatusOr<KindTimes> ReadKinetoTrace(const std::string& path) {
  PARASIM_ASSIGN_OR_RETURN(std::string text, ReadMaybeGzipped(path));
  PARASIM_ASSIGN_OR_RETURN(YAML::Node root,
                           ParseYaml(text, path, "a Chrome trace: a JSON object with traceEvents"));
  YamlContext ctx{path, {}};
  const YAML::Node events = root.IsMap() ? root["traceEvents"] : YAML::Node();
  if (!events || !events.IsSequence()) {
    return ctx.ErrorAt(root, "traceEvents",
                       "expected a PyTorch profiler (Kineto) Chrome trace: a JSON object whose "
                       "traceEvents list holds the step's events");
  }
  KindTimes k;
  std::vector<std::pair<double, double>> spans;
  for (const YAML::Node& e : events) {
    if (!e.IsMap() || e["ph"].as<std::string>("") != "X") continue;
    const std::string cat = Lower(e["cat"].as<std::string>(""));
    if (cat != "kernel" && cat != "gpu_memcpy" && cat != "gpu_memset") continue;
    double ts = 0, dur = 0;
    try {
      ts = e["ts"].as<double>() * 1e-6;
      dur = e["dur"].as<double>() * 1e-6;
    } catch (const YAML::Exception&) {
      return ctx.ErrorAt(e, "traceEvents",
                         "a GPU event needs numeric ts and dur (microseconds), as Kineto writes");
    }
    if (dur < 0) continue;
    const std::string name = e["name"].as<std::string>("");
    const KernelKind kind = cat == "kernel" ? ClassifyKernel(name) : KernelKind::kElementwise;
    k.seconds[static_cast<int>(kind)] += dur;
    if (kind == KernelKind::kCommunication) k.comm_detail[NcclCollective(name)] += dur;
    spans.emplace_back(ts, ts + dur);
    ++k.kernels;
  }
  if (k.kernels == 0) {
    return ctx.ErrorAt(events, "traceEvents",
                       "no GPU kernels (events with \"cat\": \"kernel\"); profile with "
                       "ProfilerActivity.CUDA");
  }
  Finish(spans, &k);
  return k;
}

KindTimes PredictedKinds(const Scenario& s, const LoweredStep& low, const sim::Timeline& tl,
                         int stage) {
  // Op names to kinds, from the graph the step was lowered from.
  std::unordered_map<std::string, OpKind> kinds;
  auto graph = SharedModelGraph(s.model, RankShape(s.training, s.layout));
  for (const Block* b : {&graph->embedding, &graph->dense, &graph->moe, &graph->head}) {
    for (size_t i = 0; i < b->size(); ++i) kinds[b->op(i).name] = b->op(i).kind;
  }
  const sim::Program& p = low.program;
  const uint32_t rank = low.stage_rank[stage];
  KindTimes k;
  std::vector<std::pair<double, double>> spans;
  for (sim::TaskId t = 0; t < p.num_tasks(); ++t) {
    if (p.stream_rank(p.stream(t)) != rank) continue;
    const double a = tl.start[t].seconds(), d = tl.end[t].seconds() - a;
    if (d <= 0) continue;
    spans.emplace_back(a, a + d);
    ++k.kernels;
    const auto cat = static_cast<TaskCat>(p.category(t));
    if (cat >= TaskCat::kTp && cat <= TaskCat::kDp) {
      k.seconds[static_cast<int>(KernelKind::kCommunication)] += d;
      k.comm_detail[std::string(TaskCatName(cat))] += d;
      continue;
    }
    KernelKind kind = KernelKind::kElementwise;
    const std::string& label = p.label_text(p.label(t));
    if (label.size() > 2 && label[1] == ' ') {
      auto it = kinds.find(label.substr(2));
      if (it != kinds.end() && it->second == OpKind::kGemm) kind = KernelKind::kGemm;
      if (it != kinds.end() && it->second == OpKind::kAttention) kind = KernelKind::kAttention;
    }
    k.seconds[static_cast<int>(kind)] += d;
  }
  Finish(spans, &k);
  return k;
}

CalibrationProfile ProfileFromTrace(const Scenario& s, const KindTimes& measured,
                                    const KindTimes& predicted, const std::string& trace) {
  CalibrationProfile prof;
  prof.gpu = s.cluster.gpu.id;
  prof.source =
      fmt::format("parasim compare --trace {} (measured / replayed time per kind)", trace);
  // A kind's replayed over measured time: what its rates are scaled by.
  auto ratio = [&](KernelKind k) -> std::optional<double> {
    const double m = measured.seconds[static_cast<int>(k)];
    const double p = predicted.seconds[static_cast<int>(k)];
    if (m <= 0 || p <= 0) return std::nullopt;
    return p / m;
  };
  auto scaled = [&](KernelKind k, double model) -> std::optional<double> {
    const std::optional<double> r = ratio(k);
    if (!r || model <= 0) return std::nullopt;
    return std::clamp(model * *r, 0.01, 1.0);
  };
  const GpuSpec& g = s.cluster.gpu;
  prof.gemm_efficiency = scaled(KernelKind::kGemm, g.gemm_efficiency);
  prof.memory_efficiency = scaled(KernelKind::kElementwise, g.memory_efficiency);
  // The element-wise kernels the SMs bound scale with the same ratio, their rates unbounded.
  if (const std::optional<double> r = ratio(KernelKind::kElementwise);
      r && g.elementwise_rates.any()) {
    prof.elementwise_rates = g.elementwise_rates.Scaled(*r);
  }
  const CostModel cost(s.cluster, s.training.precision);
  const bool fused = s.training.attention == AttentionKind::kFlash;
  auto fwd = scaled(KernelKind::kAttention, cost.AttentionEfficiency(false, fused));
  auto bwd = scaled(KernelKind::kAttention, cost.AttentionEfficiency(true, fused));
  if (fwd && bwd) {
    AttentionEfficiency a{*fwd, *bwd};
    if (fused) {
      prof.attention_flash = a;
    } else {
      prof.attention_standard = a;
    }
  }
  return prof;
}

}  // namespace parasim
