#include "strategies/step_summary.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>

#include "sim/enum_names.h"
#include "strategies/schedule.h"
#include "strategies/step_kernels.h"

namespace parasim {

namespace {

// Intervals of each communication category's tasks on each stage's representative rank, and
// per stage the intervals of its compute (forward, backward, recompute and optimizer together:
// nothing asks for one of them alone) and its compute and optimizer seconds.
struct StageTimes {
  std::vector<std::array<Intervals, kNumTaskCats>> iv;  // empty for the compute categories
  std::vector<Intervals> compute;
  std::vector<double> optimizer_s, compute_s;
};

// Fills `st` (its interval lists keep their capacity from the thread's previous step: a sweep
// summarises thousands of steps a thread), up to steps of this many tasks.
constexpr int64_t kKeptSummaryTasks = 200'000;
void Collect(const LoweredStep& low, const sim::Timeline& tl, StageTimes* out) {
  const sim::Program& prog = low.program;
  const int P = low.stages;
  StageTimes& st = *out;
  if (st.iv.size() < static_cast<size_t>(P)) st.iv.resize(P);
  if (st.compute.size() < static_cast<size_t>(P)) st.compute.resize(P);
  for (int s = 0; s < P; ++s) {
    for (Intervals& x : st.iv[s]) x.clear();
    st.compute[s].clear();
  }
  st.optimizer_s.assign(P, 0.0);
  st.compute_s.assign(P, 0.0);
  std::vector<int> stage_of(prog.num_ranks(), -1);
  for (int s = 0; s < P; ++s) stage_of[low.stage_rank[s]] = s;
  std::vector<int> stream_stage(prog.num_streams());
  for (sim::StreamId x = 0; x < prog.num_streams(); ++x) {
    stream_stage[x] = stage_of[prog.stream_rank(x)];
  }
  for (sim::TaskId t = 0; t < prog.num_tasks(); ++t) {
    const int s = stream_stage[prog.stream(t)];
    const uint8_t cat = prog.category(t);
    if (s < 0 || cat == static_cast<uint8_t>(TaskCat::kPp)) continue;
    const int64_t a = tl.start[t].picoseconds(), b = tl.end[t].picoseconds();
    const double d = (tl.end[t] - tl.start[t]).seconds();
    switch (static_cast<TaskCat>(cat)) {
      case TaskCat::kOptimizer:
        st.optimizer_s[s] += d;
        break;
      case TaskCat::kForward:
      case TaskCat::kBackward:
      case TaskCat::kRecompute:
        break;
      default:  // not compute
        st.iv[s][cat].push_back({a, b});
        continue;
    }
    st.compute_s[s] += d;
    st.compute[s].push_back({a, b});
  }
  // Pipeline transfers count on the stage that waits for them.
  for (size_t i = 0; i < low.pp_flows.size(); ++i) {
    const int s = stage_of[low.pp_receiver[i]];
    const sim::TaskId t = low.pp_flows[i];
    if (s >= 0) {
      st.iv[s][static_cast<int>(TaskCat::kPp)].push_back(
          {tl.start[t].picoseconds(), tl.end[t].picoseconds()});
    }
  }
  for (int s = 0; s < P; ++s) {
    for (Intervals& x : st.iv[s]) Merge(&x);
    Merge(&st.compute[s]);
  }
}

// Adds sorted intervals `x` to sorted `out`, keeping it sorted (`scratch`: reused storage).
void AddSorted(const Intervals& x, Intervals* out, Intervals* scratch) {
  if (x.empty()) return;  // most categories of a step have no tasks: nothing to copy
  scratch->resize(out->size() + x.size());
  std::merge(out->begin(), out->end(), x.begin(), x.end(), scratch->begin());
  std::swap(*out, *scratch);
}

// The union of some categories' intervals, each list already merged (Collect): sorted runs
// merged pairwise, then overlaps joined.
Intervals Union(const std::array<Intervals, kNumTaskCats>& iv,
                std::initializer_list<TaskCat> cats) {
  Intervals out, scratch;
  for (TaskCat c : cats) AddSorted(iv[static_cast<int>(c)], &out, &scratch);
  Merge(&out);
  return out;
}

double Seconds(int64_t ps) { return Duration::Picoseconds(ps).seconds(); }

// Exposed communication per kind (the largest over stages); returns the busiest stage, the one
// with the most pipeline work (compute-stream busy time less the optimizer).
int Exposure(const LoweredStep& low, const sim::Timeline& tl, const StageTimes& st,
             ExposedComm* out) {
  const int64_t makespan = tl.makespan.picoseconds();
  int busiest = 0;
  double busiest_work = -1;
  for (int s = 0; s < low.stages; ++s) {
    const Intervals& compute = st.compute[s];
    auto exposed = [&](TaskCat c) {
      // One category's list is merged already (Collect). Data-parallel work on the GPU
      // (compression passes, FSDP's copies) counts with the data-parallel collectives.
      if (c != TaskCat::kDp || (st.iv[s][static_cast<int>(TaskCat::kCompress)].empty() &&
                                st.iv[s][static_cast<int>(TaskCat::kDpCopy)].empty())) {
        return Seconds(Uncovered(st.iv[s][static_cast<int>(c)], compute, makespan));
      }
      return Seconds(
          Uncovered(Union(st.iv[s], {TaskCat::kDp, TaskCat::kCompress, TaskCat::kDpCopy}), compute,
                    makespan));
    };
    out->tp = std::max(out->tp, exposed(TaskCat::kTp));
    out->cp = std::max(out->cp, exposed(TaskCat::kCp));
    out->ep = std::max(out->ep, exposed(TaskCat::kEp));
    out->pp = std::max(out->pp, exposed(TaskCat::kPp));
    out->dp = std::max(out->dp, exposed(TaskCat::kDp));
    // The host's time with nothing on the GPU: its intervals less compute and every collective.
    Intervals gpu = compute, scratch;
    for (int c = 0; c < kNumTaskCats; ++c) {
      if (c != static_cast<int>(TaskCat::kHost)) AddSorted(st.iv[s][c], &gpu, &scratch);
    }
    Merge(&gpu);
    out->host = std::max(
        out->host, Seconds(Uncovered(st.iv[s][static_cast<int>(TaskCat::kHost)], gpu, makespan)));
    const double work = tl.busy[low.stage_compute[s]].seconds() - st.optimizer_s[s];
    if (work > busiest_work) {
      busiest_work = work;
      busiest = s;
    }
  }
  return busiest;
}

// Stage s's step part by part (StepPart order, picoseconds, within [0, makespan)): compute,
// then each kind of communication where nothing before it in that order runs, then the rest,
// the stage's bubble. The parts add up to the makespan.
std::array<int64_t, kNumStepParts> Partition(const StageTimes& st, int s, int64_t makespan) {
  std::array<int64_t, kNumStepParts> out = {};
  Intervals covered = st.compute[s], scratch;
  out[static_cast<int>(StepPart::kCompute)] =
      makespan - Uncovered({{0, makespan}}, covered, makespan);
  auto add = [&](StepPart part, std::initializer_list<TaskCat> cats) {
    const Intervals x = Union(st.iv[s], cats);
    out[static_cast<int>(part)] = Uncovered(x, covered, makespan);
    AddSorted(x, &covered, &scratch);
    Merge(&covered);
  };
  add(StepPart::kTp, {TaskCat::kTp});
  add(StepPart::kCp, {TaskCat::kCp});
  add(StepPart::kEp, {TaskCat::kEp});
  add(StepPart::kPp, {TaskCat::kPp});
  add(StepPart::kDp, {TaskCat::kDp, TaskCat::kCompress, TaskCat::kDpCopy});
  // The host issuing work while the GPU runs nothing (RankTopology::Issue).
  add(StepPart::kHost, {TaskCat::kHost});
  out[static_cast<int>(StepPart::kBubble)] = Uncovered({{0, makespan}}, covered, makespan);
  return out;
}

// Per stage the bubble (Partition's) over the step, their mean, and the busiest stage's parts.
void Bubbles(const StageTimes& st, int stages, int busiest, int64_t makespan, StepReport* r) {
  r->bubble_fraction_per_stage.assign(stages, 0.0);
  r->busiest_stage = busiest;
  if (makespan <= 0) return;
  double sum = 0;
  for (int s = 0; s < stages; ++s) {
    const std::array<int64_t, kNumStepParts> p = Partition(st, s, makespan);
    const double f =
        static_cast<double>(p[static_cast<int>(StepPart::kBubble)]) / static_cast<double>(makespan);
    r->bubble_fraction_per_stage[s] = f;
    sum += f;
    if (s != busiest) continue;
    for (int k = 0; k < kNumStepParts; ++k) r->parts_s[k] = Seconds(p[k]);
  }
  r->bubble_fraction = sum / stages;
}

void Throughput(const ModelSpec& model, const Training& training, const Layout& layout,
                const ClusterSpec& cluster, StepReport* r) {
  const double gpus = static_cast<double>(layout.gpus());
  const SequenceFlops sf = FlopsPerSequence(model, training, &layout);
  const double gb = static_cast<double>(training.global_batch);
  r->model_flops_per_step = sf.model * gb;
  r->hw_flops_per_step = (sf.model + sf.recompute) * gb;
  const double peak = cluster.gpu.Peak(training.precision).flops_per_second();
  if (r->step_time_s <= 0) return;
  r->tokens_per_s = gb * training.seq_len / r->step_time_s;
  r->tflops_per_gpu = FlopRate(r->model_flops_per_step / r->step_time_s / gpus).tflops();
  r->hw_tflops_per_gpu = FlopRate(r->hw_flops_per_step / r->step_time_s / gpus).tflops();
  r->mfu = peak > 0 ? FlopRate::TFLOPs(r->tflops_per_gpu).flops_per_second() / peak : 0;
  r->hfu = peak > 0 ? FlopRate::TFLOPs(r->hw_tflops_per_gpu).flops_per_second() / peak : 0;
  if (training.tokens > 0) {
    r->time_to_train_s = training.tokens / r->tokens_per_s;
    r->gpu_hours = r->time_to_train_s * gpus / 3600;
    r->cost = r->gpu_hours * cluster.gpu_hour_cost;
  }
}

std::string CriticalPathSentence(const LoweredStep& low, const sim::Timeline& tl) {
  const sim::Program& p = low.program;
  if (tl.critical_path.empty() || tl.makespan <= Duration::Zero()) return "";
  double by_cat[kNumTaskCats] = {};
  std::vector<double> by_stage(low.stages, 0.0);
  double total = 0;
  for (sim::TaskId t : tl.critical_path) {
    const double d = (tl.end[t] - tl.start[t]).seconds();
    by_cat[p.category(t)] += d;
    // Program ranks are created stage by stage, `replicas` per stage.
    by_stage[static_cast<int>(p.stream_rank(p.stream(t))) / low.replicas] += d;
    total += d;
  }
  if (total <= 0) return "";
  std::vector<std::pair<double, int>> cats;
  for (int c = 0; c < kNumTaskCats; ++c) {
    if (by_cat[c] / total >= 0.005) cats.push_back({by_cat[c], c});
  }
  std::sort(cats.rbegin(), cats.rend());
  std::string parts;
  for (size_t i = 0; i < cats.size() && i < 5; ++i) {
    if (i > 0) parts += ", ";
    parts += fmt::format("{} {}", Percent(cats[i].first / total),
                         TaskCatName(static_cast<TaskCat>(cats[i].second)));
  }
  const int top =
      static_cast<int>(std::max_element(by_stage.begin(), by_stage.end()) - by_stage.begin());
  std::string s = fmt::format("the step's critical path is {}", parts);
  if (low.stages > 1) {
    s += fmt::format("; {} of it runs on stage {}", Percent(by_stage[top] / total), top);
  }
  const double waits = tl.makespan.seconds() - total;
  if (waits / tl.makespan.seconds() >= 0.005) {
    s += fmt::format("; {} is waiting between tasks", Percent(waits / tl.makespan.seconds()));
  }
  return s;
}

}  // namespace

void Merge(Intervals* v) {
  // A stream's tasks come in time order, so a category's intervals usually are sorted already.
  if (!std::is_sorted(v->begin(), v->end())) std::sort(v->begin(), v->end());
  size_t n = 0;  // merged in place: (*v)[0, n) is the union so far
  for (size_t i = 0; i < v->size(); ++i) {
    const auto [a, b] = (*v)[i];
    if (b <= a) continue;
    if (n > 0 && a <= (*v)[n - 1].second) {
      (*v)[n - 1].second = std::max((*v)[n - 1].second, b);
    } else {
      (*v)[n++] = {a, b};
    }
  }
  v->resize(n);
}

int64_t Uncovered(const Intervals& a, const Intervals& b, int64_t window) {
  int64_t total = 0;
  size_t j = 0;
  for (auto [s, e] : a) {
    e = std::min(e, window);
    int64_t cur = s;
    while (j < b.size() && b[j].second <= cur) ++j;
    for (size_t k = j; k < b.size() && b[k].first < e && cur < e; ++k) {
      if (b[k].first > cur) total += b[k].first - cur;
      cur = std::max(cur, b[k].second);
    }
    if (cur < e) total += e - cur;
  }
  return total;
}

namespace {
constexpr EnumNames<StepPart, kNumStepParts> kStepParts(
    "step part", {{{StepPart::kCompute, "compute (busiest stage)"},
                   {StepPart::kBubble, "pipeline bubble"},
                   {StepPart::kTp, "exposed TP communication"},
                   {StepPart::kCp, "exposed CP communication"},
                   {StepPart::kEp, "expert all-to-all"},
                   {StepPart::kPp, "pipeline transfers"},
                   {StepPart::kDp, "gradient sync (DP)"},
                   {StepPart::kHost, "host issue (CPU)"}}});
constexpr EnumNames<StepPart, kNumStepParts> kStepPartKeys("step part",
                                                           {{{StepPart::kCompute, "compute"},
                                                             {StepPart::kBubble, "bubble"},
                                                             {StepPart::kTp, "tp"},
                                                             {StepPart::kCp, "cp"},
                                                             {StepPart::kEp, "ep"},
                                                             {StepPart::kPp, "pp"},
                                                             {StepPart::kDp, "dp"},
                                                             {StepPart::kHost, "host"}}});
}  // namespace

std::string_view StepPartName(StepPart p) { return kStepParts.Name(p); }
std::string_view StepPartKey(StepPart p) { return kStepPartKeys.Name(p); }

std::array<StepPartTime, kNumStepParts> StepParts(double compute_s, double bubble_s,
                                                  const ExposedComm& e) {
  return {{{StepPart::kCompute, compute_s},
           {StepPart::kBubble, bubble_s},
           {StepPart::kTp, e.tp},
           {StepPart::kCp, e.cp},
           {StepPart::kEp, e.ep},
           {StepPart::kPp, e.pp},
           {StepPart::kDp, e.dp},
           {StepPart::kHost, e.host}}};
}

double BusiestCompute(const StepReport& r) {
  return r.stage_compute_s.empty()
             ? 0
             : *std::max_element(r.stage_compute_s.begin(), r.stage_compute_s.end());
}

std::array<StepPartTime, kNumStepParts> StepParts(const StepReport& r) {
  std::array<StepPartTime, kNumStepParts> out;
  for (int k = 0; k < kNumStepParts; ++k) out[k] = {static_cast<StepPart>(k), r.parts_s[k]};
  return out;
}

std::string Percent(double fraction) { return fmt::format("{:.0f}%", 100 * fraction); }

StepReport Summarize(const LoweredStep& low, const sim::Timeline& tl, const ModelSpec& model,
                     const Training& training, const Layout& layout, const ClusterSpec& cluster,
                     const StepOptions& options) {
  StepReport r;
  r.tasks = low.program.num_tasks();
  r.events = tl.events;
  r.moves = tl.moves;
  r.jumped_tasks = tl.jumped_tasks;
  r.period_anchors = tl.period_anchors;
  r.micro_batches = low.micro_batches;
  r.step_time_s = tl.makespan.seconds();
  thread_local StageTimes st;
  Collect(low, tl, &st);
  const int busiest = Exposure(low, tl, st, &r.exposed);
  Bubbles(st, low.stages, busiest, tl.makespan.picoseconds(), &r);
  r.unit_times = {low.unit_times_s[0], low.unit_times_s[1], low.unit_times_s[2]};
  r.ideal_bubble_of_work =
      layout.pp > 1 ? ScheduleOf(layout.schedule)
                          .IdealBubble({layout.pp, ChunksOf(layout), r.micro_batches}, r.unit_times)
                    : 0.0;
  r.ideal_bubble_fraction = r.ideal_bubble_of_work / (1 + r.ideal_bubble_of_work);
  r.stage_compute_s = st.compute_s;
  // A step of millions of tasks would leave its lists' tens of MB to the thread; it pays for
  // its own allocations many times over anyway.
  if (r.tasks > kKeptSummaryTasks) st = StageTimes{};
  r.capacity_bytes = cluster.gpu.memory.bytes();
  for (int s = 0; s < low.stages; ++s) {
    const double peak = tl.peak_memory[low.stage_rank[s]];
    r.peak_memory_bytes.push_back(peak);
    const size_t si = static_cast<size_t>(s);
    r.peak_allocated_bytes.push_back(peak -
                                     (si < low.reserve_bytes.size() ? low.reserve_bytes[si] : 0.0));
    if (peak > r.capacity_bytes) r.fits = false;
  }
  Throughput(model, training, layout, cluster, &r);
  if (options.critical_path) r.critical_path = CriticalPathSentence(low, tl);
  return r;
}

}  // namespace parasim
