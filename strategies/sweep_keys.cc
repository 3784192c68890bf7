#include "strategies/sweep_keys.h"

#include <algorithm>

#include "sim/yaml_reader.h"
#include "strategies/plan.h"
#include "strategies/schedule.h"

namespace parasim {
namespace {

// Values read as the scenario's readers read them (sim/yaml_reader.h), so that a key's
// accepted values, limits and errors are the same in its block, in a sweep and in --set.
template <int64_t kLo, int64_t kHi>
StatusOr<int64_t> Integer(std::string_view value) {
  return ParseInteger(value, kLo, kHi);
}

// Parallel degrees within one model replica: 65536 is far past any node or model.
constexpr int64_t kMaxDegree = 65536;

StatusOr<int64_t> Boolean(std::string_view value) {
  PARASIM_ASSIGN_OR_RETURN(bool b, ParseBool(value));
  return b ? 1 : 0;
}

// A named key's value (schedule, recompute, grad_reduce, zero3_reshard, cp_comm, precision,
// fp8_recipe)
// through its own parser, which may take aliases (the schedules'); an unknown name lists the
// names and the nearest one.
template <class E, StatusOr<E> (*kParse)(std::string_view),
          std::vector<std::string_view> (*kNames)()>
StatusOr<int64_t> Named(std::string_view value) {
  StatusOr<E> e = kParse(value);
  if (e.ok()) return static_cast<int64_t>(*e);
  Status listed = CheckAccepted(value, kNames());
  if (listed.ok()) return e.status();
  return listed;
}

std::vector<std::string_view> ScheduleNameList() {
  std::vector<std::string_view> out;
  for (ScheduleId id : AllSchedules()) out.push_back(ScheduleName(id));
  return out;
}

std::vector<int64_t> None(const Scenario&) { return {}; }

std::vector<int64_t> TpAuto(const Scenario& s) {
  std::vector<int64_t> out;
  // Up to the NVLink domain (a node, or an NVL72 rack).
  const int64_t domain = s.cluster.domain();
  for (int64_t t = 1; t <= domain; t *= 2) out.push_back(t);
  if (out.empty() || out.back() != domain) out.push_back(domain);
  return out;
}

std::vector<int64_t> PpAuto(const Scenario& s) {
  std::vector<int64_t> out;
  const int64_t gpus = s.cluster.gpus();
  for (int64_t p = 1; p <= std::min<int64_t>(gpus, s.model.layers); ++p) {
    if (gpus % p == 0) out.push_back(p);
  }
  return out;
}

// Context parallelism up to 16: the widest published CP (Llama 3 405B at 128K tokens).
std::vector<int64_t> CpAuto(const Scenario& s) {
  std::vector<int64_t> out;
  for (int64_t c = 1; c <= 16; c *= 2) {
    if (s.cluster.gpus() % c == 0 && s.training.seq_len % c == 0) out.push_back(c);
  }
  return out;
}

std::vector<int64_t> EpAuto(const Scenario& s) {
  std::vector<int64_t> out;
  const int experts = std::max(1, s.model.moe.experts);
  for (int64_t e = 1; e <= experts; ++e) {
    if (experts % e == 0) out.push_back(e);
  }
  return out;
}

// The experts' TP width for an MoE model: as tp (0), or 1-8 (MoE parallel folding runs experts
// narrower than attention's TP, Megatron-Core's expert_tensor_parallel_size; 8, one NVLink node,
// is the widest TP of the catalog's recipes). A dense model has no experts: as tp only.
std::vector<int64_t> EtpAuto(const Scenario& s) {
  if (!s.model.is_moe()) return {0};
  return {0, 1, 2, 4, 8};
}

std::vector<int64_t> ScheduleAuto(const Scenario&) {
  std::vector<int64_t> out;
  for (ScheduleId id : AllSchedules()) out.push_back(id);
  return out;
}

// `block`: "parallelism" for the layout's keys, "training" for the training's.
const std::vector<SweepKey> kKeys = {
    {"tp", Integer<1, kMaxDegree>, [](int64_t v, Layout* l, Training*) { l->tp = int(v); }, TpAuto,
     "parallelism"},
    {"pp", Integer<1, kMaxDegree>, [](int64_t v, Layout* l, Training*) { l->pp = int(v); }, PpAuto,
     "parallelism"},
    {"dp", Integer<1, kMaxGpus>, [](int64_t v, Layout* l, Training*) { l->dp = v; }, None,
     "parallelism"},
    {"cp", Integer<1, kMaxDegree>, [](int64_t v, Layout* l, Training*) { l->cp = int(v); }, CpAuto,
     "parallelism"},
    {"ep", Integer<1, kMaxDegree>, [](int64_t v, Layout* l, Training*) { l->ep = int(v); }, EpAuto,
     "parallelism"},
    {"etp", Integer<1, kMaxDegree>, [](int64_t v, Layout* l, Training*) { l->etp = int(v); },
     EtpAuto, "parallelism"},
    // Micro-batches beyond 16 sequences leave no GEMM faster on any GPU in the catalog.
    {"micro_batch", Integer<1, kMaxCount>,
     [](int64_t v, Layout*, Training* t) { t->micro_batch = v; },
     [](const Scenario&) {
       return std::vector<int64_t>{1, 2, 4, 8, 16};
     },
     "training"},
    // Megatron-LM's interleaving is used with 2-8 chunks per stage (SC21 Fig. 12 sweeps to 8).
    // Up to 1024 chunks a stage are accepted (far past any run; every chunk needs a layer).
    {"virtual_stages", Integer<1, 1024>,
     [](int64_t v, Layout* l, Training*) { l->virtual_stages = int(v); },
     [](const Scenario&) { return std::vector<int64_t>{1, 2, 3, 4, 6, 8}; }, "parallelism"},
    {"schedule", Named<ScheduleId, FindSchedule, ScheduleNameList>,
     [](int64_t v, Layout* l, Training*) { l->schedule = static_cast<ScheduleId>(v); },
     ScheduleAuto, "parallelism"},
    {"zero", Integer<0, 3>, [](int64_t v, Layout* l, Training*) { l->zero = int(v); },
     [](const Scenario&) {
       return std::vector<int64_t>{0, 1, 2, 3};
     },
     "parallelism"},
    {"recompute", Named<RecomputeKind, ParseRecompute, RecomputeNames>,
     [](int64_t v, Layout*, Training* t) { t->recompute = static_cast<RecomputeKind>(v); },
     [](const Scenario&) {
       return std::vector<int64_t>{static_cast<int64_t>(RecomputeKind::kNone),
                                   static_cast<int64_t>(RecomputeKind::kSelective),
                                   static_cast<int64_t>(RecomputeKind::kFull)};
     },
     "training"},
    {"sp", Boolean, [](int64_t v, Layout* l, Training*) { l->sp = v != 0; },
     [](const Scenario&) {
       return std::vector<int64_t>{0, 1};
     },
     "parallelism"},
    // Both reductions: the sweep folds the one the ZeRO stage does by default onto `auto`.
    {"grad_reduce", Named<Layout::GradReduce, ParseGradReduce, GradReduceNames>,
     [](int64_t v, Layout* l, Training*) { l->grad_reduce = static_cast<Layout::GradReduce>(v); },
     [](const Scenario&) {
       return std::vector<int64_t>{static_cast<int64_t>(Layout::GradReduce::kMicroBatch),
                                   static_cast<int64_t>(Layout::GradReduce::kStep)};
     },
     "parallelism"},
    // When ZeRO 3 frees a layer's gathered parameters: every policy; the sweep folds any
    // without ZeRO 3 onto forward.
    {"zero3_reshard", Named<Layout::Zero3Reshard, ParseZero3Reshard, Zero3ReshardNames>,
     [](int64_t v, Layout* l, Training*) {
       l->zero3_reshard = static_cast<Layout::Zero3Reshard>(v);
     },
     [](const Scenario&) {
       return std::vector<int64_t>{static_cast<int64_t>(Layout::Zero3Reshard::kForward),
                                   static_cast<int64_t>(Layout::Zero3Reshard::kBackward),
                                   static_cast<int64_t>(Layout::Zero3Reshard::kStep)};
     },
     "parallelism"},
    // Both exchanges; the sweep folds any without context parallelism onto the ring.
    {"cp_comm", Named<Layout::CpComm, ParseCpComm, CpCommNames>,
     [](int64_t v, Layout* l, Training*) { l->cp_comm = static_cast<Layout::CpComm>(v); },
     [](const Scenario&) {
       return std::vector<int64_t>{static_cast<int64_t>(Layout::CpComm::kRing),
                                   static_cast<int64_t>(Layout::CpComm::kAllGather)};
     },
     "parallelism"},
    {"global_batch", Integer<1, kMaxCount>,
     [](int64_t v, Layout*, Training* t) { t->global_batch = v; }, None, "training"},
    // Layers per chunk the recompute mode covers (Megatron-LM's --recompute-num-layers):
    // auto tries powers of two below the model's depth, and every layer (-1).
    {"recompute_layers", Integer<0, 1 << 20>,
     [](int64_t v, Layout*, Training* t) { t->recompute_layers = static_cast<int>(v); },
     [](const Scenario& s) {
       std::vector<int64_t> out;
       for (int64_t n = 1; n < s.model.layers; n *= 2) out.push_back(n);
       out.push_back(-1);
       return out;
     },
     "training"},
    // The number format of the layers' GEMMs: auto tries bf16 and, where the GPU has FP8 tensor
    // cores, fp8 (the scenario's fp8_recipe, tensorwise by default). Gradients keep the
    // scenario's grad_dtype.
    {"precision", Named<Dtype, ParseDtype, DtypeNames>,
     [](int64_t v, Layout*, Training* t) { t->precision = static_cast<Dtype>(v); },
     [](const Scenario& s) {
       std::vector<int64_t> out = {static_cast<int64_t>(Dtype::kBf16)};
       if (s.cluster.gpu.Peak(Dtype::kFp8).flops_per_second() > 0) {
         out.push_back(static_cast<int64_t>(Dtype::kFp8));
       }
       return out;
     },
     "training"},
    // FP8's scaling (with precision fp8; the sweep folds it away for other precisions): auto
    // tries per-tensor and DeepSeek-V3's blocks, and MXFP8 where the GPU's tensor cores take it.
    {"fp8_recipe", Named<Fp8Recipe, ParseFp8Recipe, Fp8RecipeNames>,
     [](int64_t v, Layout*, Training* t) { t->fp8_recipe = static_cast<Fp8Recipe>(v); },
     [](const Scenario& s) {
       std::vector<int64_t> out = {static_cast<int64_t>(Fp8Recipe::kTensorwise),
                                   static_cast<int64_t>(Fp8Recipe::kBlockwise)};
       if (s.cluster.gpu.mxfp8) out.push_back(static_cast<int64_t>(Fp8Recipe::kMxfp8));
       return out;
     },
     "training"},
};

}  // namespace

const std::vector<SweepKey>& SweepKeys() { return kKeys; }

SweepPoint SweepPointOf(const Layout& l, const Training& t) {
  return {l.tp,
          l.pp,
          l.dp,
          l.cp,
          l.ep,
          l.expert_tp(),
          t.micro_batch,
          l.virtual_stages,
          static_cast<int64_t>(l.schedule),
          l.zero,
          static_cast<int64_t>(t.recompute),
          l.sp ? 1 : 0,
          static_cast<int64_t>(l.grad_reduce),
          static_cast<int64_t>(l.cp_comm),
          t.global_batch,
          t.recompute_layers,
          static_cast<int64_t>(t.precision),
          static_cast<int64_t>(t.fp8_recipe),
          static_cast<int64_t>(l.zero3_reshard)};
}

const SweepKey* FindSweepKey(std::string_view name) {
  for (const SweepKey& k : kKeys) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

std::vector<std::string_view> SweepKeysOf(std::string_view block) {
  std::vector<std::string_view> out;
  for (const SweepKey& k : kKeys) {
    if (k.block == block) out.push_back(k.name);
  }
  return out;
}

}  // namespace parasim
