#include "strategies/lowering.h"

#include <algorithm>
#include <array>
#include <bit>
#include <limits>

#include "strategies/memory.h"

namespace parasim {

TaskCat CommCat(GroupKind g) {
  switch (g) {
    case GroupKind::kTp:
    case GroupKind::kEtp:  // the experts' TP collectives count as TP communication
      return TaskCat::kTp;
    case GroupKind::kCp:
      return TaskCat::kCp;
    case GroupKind::kEp:
      return TaskCat::kEp;
    case GroupKind::kDp:
      return TaskCat::kDp;
    case GroupKind::kPp:
      return TaskCat::kPp;
  }
  return TaskCat::kTp;
}

Collective ToCollective(CommKind k) {
  switch (k) {
    case CommKind::kAllReduce:
      return Collective::kAllReduce;
    case CommKind::kReduceScatter:
      return Collective::kReduceScatter;
    case CommKind::kAllGather:
      return Collective::kAllGather;
    case CommKind::kAllToAll:
      return Collective::kAllToAll;
    case CommKind::kNone:
      break;
  }
  return Collective::kAllReduce;
}

LoweringContext::LoweringContext(const ModelSpec& m, const Training& t, const Layout& l,
                                 const ClusterSpec& c, const StepOptions& o, LoweredStep* o_step)
    : model(m),
      training(t),
      layout(l),
      cluster(c),
      options(o),
      out(*o_step),
      program(o_step->program),
      cost(c, t.precision),
      placement(l, c),
      schedule(ScheduleOf(l.schedule)) {
  micro_batches = std::max<int64_t>(1, t.global_batch / (l.dp * t.micro_batch));
  chunks = ChunksOf(l);
  route = RouteLength(schedule, l.pp, chunks);
  chunk_micro_batches = ChunkMicroBatches(schedule, micro_batches);
  out.stages = l.pp;
  out.micro_batches = micro_batches;
  // The group shapes depend on the grid, the rank order and the NVLink domain and pod sizes
  // only; finding one walks the group's members (thousands of ranks for a wide data-parallel
  // group), and a sweep asks again for every layout of the same grid. Memoised per thread.
  std::array<int64_t, 9> shape_key{l.tp,          l.cp,       l.dp,       l.pp, l.ep,
                                   l.expert_tp(), c.domain(), c.pod_gpus, 0};
  for (RankDim d : l.order) shape_key[8] = shape_key[8] * 8 + static_cast<int64_t>(d) + 1;
  thread_local sim::FlatMap<std::array<int64_t, 9>, std::array<GroupPlacement, kNumGroups>,
                            sim::WholeNumbersHash>
      shapes;
  if (shapes.size() > 4096) shapes.clear();
  auto [known, inserted] = shapes.Emplace(shape_key, {});
  if (inserted) {
    for (int k = 0; k < kNumGroups; ++k) {
      (*known)[k] =
          k == kGroupEdp ? placement.ExpertDataGroup() : placement.Group(static_cast<GroupKind>(k));
    }
  }
  std::copy(known->begin(), known->end(), groups);
  grad_bytes = StateBytesPerParam(t).grads;
  weight_bytes = StateBytesPerParam(t).weights;
  if (l.bucket.bytes() > 0) {
    bucket_bytes = l.bucket.bytes();
  } else if (l.zero == 3) {
    bucket_bytes = std::numeric_limits<double>::infinity();
  } else if (l.zero >= 1) {
    // max(40M, 1M x data-parallel ranks) parameters (Megatron-Core's default).
    bucket_bytes = std::max(40e6, 1e6 * static_cast<double>(l.dp * l.cp)) * grad_bytes;
  } else {
    bucket_bytes = kDdpBucket.bytes();
  }
  dp_comm = groups[static_cast<int>(GroupKind::kDp)].size > 1 || groups[kGroupEdp].size > 1;
}

uint32_t LoweringContext::Key(Duration d, Duration contended) {
  if (contended < d) contended = d;
  // Every micro-batch asks for the same few durations: a direct-mapped cache in front of the
  // table answers most of them without hashing into it.
  const uint64_t mix = (static_cast<uint64_t>(d.picoseconds()) * 0x9E3779B97F4A7C15ull) ^
                       static_cast<uint64_t>(contended.picoseconds());
  RecentKey& recent = recent_keys_[(mix >> 32) % kRecentKeys];
  if (recent.key != sim::kNone && recent.d == d.picoseconds() &&
      recent.contended == contended.picoseconds()) {
    return recent.key;
  }
  auto [it, inserted] = compute_keys_.Emplace({d.picoseconds(), contended.picoseconds()}, 0);
  if (inserted) {
    *it = out.costs.AddCompute(d, d > Duration::Zero() ? contended.seconds() / d.seconds() : 1.0);
  }
  recent = {d.picoseconds(), contended.picoseconds(), *it};
  return *it;
}

uint32_t LoweringContext::FlowKey(Duration latency, Bytes bytes) {
  auto [it, inserted] =
      flow_keys_.Emplace({latency.picoseconds(), std::bit_cast<int64_t>(bytes.bytes())}, 0);
  if (inserted) *it = out.costs.AddFlow({latency, bytes});
  return *it;
}

void LoweringContext::InternCategoryLabels() {
  for (int i = 0; i < kNumTaskCats; ++i) {
    cat_label_[i] = program.Intern(TaskCatName(static_cast<TaskCat>(i)));
  }
}

}  // namespace parasim
