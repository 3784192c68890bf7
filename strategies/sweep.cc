#include "strategies/sweep.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "sim/flat_map.h"
#include "sim/io.h"
#include "strategies/goodput.h"
#include "strategies/layout_format.h"
#include "strategies/memory.h"
#include "strategies/processes.h"
#include "strategies/schedule.h"
#include "strategies/sweep_keys.h"

namespace parasim {
namespace {

// One axis of the grid: a key of the sweep-key table and its typed values.
struct Axis {
  const SweepKey* key;
  std::vector<int64_t> values;
};

// The grid a sweep block spans, its axes in file order; dp follows the GPU count unless listed.
struct Grid {
  std::vector<Axis> axes;
  bool dp_auto = false;
  int64_t points = 0;
};

// Points of the grid that behave exactly like another point are folded onto it (SP without
// TP is no SP; one model chunk is plain 1F1B; one stage has no schedule; ZeRO without data
// parallelism shards nothing; an FP8 recipe without FP8 scales nothing); the duplicates then
// collapse by key.
void Normalise(Layout* l, Training* t) {
  if (t->precision != Dtype::kFp8) t->fp8_recipe = Fp8Recipe::kTensorwise;
  if (l->tp == 1) l->sp = false;
  const bool interleaves = ScheduleOf(l->schedule).interleaves();
  if (!interleaves) l->virtual_stages = 1;
  if (interleaves && l->virtual_stages == 1) l->schedule = kSchedule1F1B;
  if (l->pp == 1) {
    l->schedule = kSchedule1F1B;
    l->virtual_stages = 1;
  }
  if (l->dp * l->cp == 1) l->zero = 0;
  // A reduction the ZeRO stage does by default is `auto`'s; without data parallelism there is
  // none.
  using GR = Layout::GradReduce;
  if (l->grad_reduce != GR::kAuto &&
      (l->dp * l->cp == 1 || (l->grad_reduce == GR::kMicroBatch) == (l->zero >= 2))) {
    l->grad_reduce = GR::kAuto;
  }
  if (l->cp == 1) l->cp_comm = Layout::CpComm::kRing;  // no exchange to make
  // account_for is Megatron-LM's split of a one-way pipeline: a schedule that places both ends
  // on one stage (V, DualPipe) or no pipeline at all keeps its own split.
  const PipelineSchedule& s = ScheduleOf(l->schedule);
  if (l->pp == 1 || s.mirrored() || s.bidirectional()) l->split_embedding = l->split_loss = false;
}

std::string Csv(const SweepEntry& e) {
  std::string reason = e.reason;
  std::replace(reason.begin(), reason.end(), '"', '\'');
  return fmt::format(
      "{},{},{:.17g},{:.17g},{:.17g},{:.17g},{:.17g},{:.17g},{:.17g},{:.17g},{:.17g},"
      "{:.17g},{:.17g},\"{}\"\n",
      e.key, e.fits ? 1 : 0, e.step_time_s, e.tokens_per_s, e.mfu, e.bubble, e.exposed.tp,
      e.exposed.cp, e.exposed.ep, e.exposed.pp, e.exposed.dp, e.peak_memory_bytes, e.compute_s,
      reason);
}

// The note of a layout the sweep did not replay because its bounds cannot enter the ranking.
constexpr const char* kPrunedNote = "pruned (cannot enter the top or the front):";

constexpr const char* kCsvHeader =
    "layout,fits,step_time_s,tokens_per_s,mfu,bubble_fraction,exposed_tp_s,exposed_cp_s,"
    "exposed_ep_s,exposed_pp_s,exposed_dp_s,peak_memory_bytes,compute_s,note\n";

// Parses one CSV line written by Csv(); false for a torn or foreign line.
bool ParseCsv(const std::string& line, SweepEntry* e) {
  std::vector<std::string> f;
  size_t pos = 0;
  for (int i = 0; i < 13; ++i) {
    size_t c = line.find(',', pos);
    if (c == std::string::npos) return false;
    f.push_back(line.substr(pos, c - pos));
    pos = c + 1;
  }
  std::string rest = line.substr(pos);
  if (rest.size() < 2 || rest.front() != '"' || rest.back() != '"') return false;
  try {
    e->key = f[0];
    e->fits = f[1] == "1";
    double* nums[] = {&e->step_time_s, &e->tokens_per_s,      &e->mfu,        &e->bubble,
                      &e->exposed.tp,  &e->exposed.cp,        &e->exposed.ep, &e->exposed.pp,
                      &e->exposed.dp,  &e->peak_memory_bytes, &e->compute_s};
    for (int i = 0; i < 11; ++i) *nums[i] = std::stod(f[2 + i]);
  } catch (const std::exception&) {
    return false;
  }
  e->reason = rest.substr(1, rest.size() - 2);
  return true;
}

// The throughput an objective ranks by: time to train ranks by the throughput kept through
// failures and checkpoints, cost by that throughput per unit of the cluster's cost (tokens
// per dollar, or per GPU-hour), the others by tokens per second.
double RankedThroughput(const SweepEntry& e, Objective o) {
  if (o == Objective::kCost) return KeptTokensPerS(e) / e.cost_per_s;
  return o == Objective::kTimeToTrain ? KeptTokensPerS(e) : e.tokens_per_s;
}

// The best throughput a layout can reach: its tokens per step over its bound (goodput, at
// most 1, only lowers it).
double BestTokensPerS(const SweepEntry& e) {
  const double tokens = static_cast<double>(e.training.global_batch) * e.training.seq_len;
  return e.bound_s > 0 ? tokens / e.bound_s : std::numeric_limits<double>::infinity();
}

// What an objective ranks by, higher first (memory: the peak, negated), and the most a layout
// can reach by its bounds.
double RankedValue(const SweepEntry& e, Objective o) {
  return o == Objective::kMemory ? -e.peak_memory_bytes : RankedThroughput(e, o);
}
double RankedBound(const SweepEntry& e, Objective o) {
  if (o == Objective::kMemory) return -e.min_peak_bytes;
  const double best = BestTokensPerS(e);
  return o == Objective::kCost ? best / e.cost_per_s : best;
}

// A layout on the Pareto front's axes: throughput (higher is better) against peak memory, or
// in a co-design sweep the throughput kept through failures against the cost per token (lower
// is better); and the best a layout can reach on both by its bounds.
struct FrontPoint {
  double tokens;
  double other;
};
FrontPoint FrontOf(const SweepEntry& e, bool codesign) {
  return codesign ? FrontPoint{KeptTokensPerS(e), CostPerToken(e)}
                  : FrontPoint{e.tokens_per_s, e.peak_memory_bytes};
}
FrontPoint FrontBound(const SweepEntry& e, bool codesign) {
  const double best = BestTokensPerS(e);
  return {best, codesign ? e.cost_per_s / best : e.min_peak_bytes};
}

bool Better(const SweepEntry& a, const SweepEntry& b, Objective o) {
  if (o == Objective::kMemory && a.peak_memory_bytes != b.peak_memory_bytes) {
    return a.peak_memory_bytes < b.peak_memory_bytes;
  }
  const double ga = RankedThroughput(a, o), gb = RankedThroughput(b, o);
  if (ga != gb) return ga > gb;
  if (a.tokens_per_s != b.tokens_per_s) return a.tokens_per_s > b.tokens_per_s;
  return a.key < b.key;
}

// Enumerate, part 1: the axes with typed values, and the grid's size against --max-layouts.
// `before`: the points of the grids of the clusters enumerated before this one (co-design).
StatusOr<Grid> BuildGrid(const Scenario& base, const SweepSpec& spec, const SweepOptions& opt,
                         int64_t before) {
  Grid g;
  g.dp_auto = base.dp_auto;
  for (const auto& [name, axis] : spec.axes) {
    const SweepKey* key = FindSweepKey(name);
    if (key == nullptr) return InvalidArgument(fmt::format("'{}' cannot be swept", name));
    if (key->name == "dp") {
      g.dp_auto = axis.is_auto;
      if (axis.is_auto) continue;
    }
    Axis a{key, {}};
    if (axis.is_auto) {
      a.values = key->auto_values(base);
    } else {
      for (const auto& text : axis.values) {
        PARASIM_ASSIGN_OR_RETURN(int64_t v, key->parse(text));
        a.values.push_back(v);
      }
    }
    if (!a.values.empty()) g.axes.push_back(std::move(a));
  }
  // The keys Normalise folds vary fastest, so that the points folded onto one another mostly
  // come one after another, where EnumerateRange drops them without a lookup. The order of the
  // points is nobody else's: the entries are sorted by key.
  auto folds = [](const Axis& a) {
    static constexpr std::string_view kFolded[] = {
        "virtual_stages", "schedule", "sp", "cp_comm", "fp8_recipe", "grad_reduce", "zero"};
    return std::find(std::begin(kFolded), std::end(kFolded), a.key->name) - std::begin(kFolded);
  };
  std::stable_sort(g.axes.begin(), g.axes.end(),
                   [&](const Axis& a, const Axis& b) { return folds(a) < folds(b); });
  double points = 1;
  for (const Axis& a : g.axes) points *= static_cast<double>(a.values.size());
  if (points + static_cast<double>(before) > static_cast<double>(opt.max_layouts)) {
    return InvalidArgument(fmt::format(
        "{}: error: sweep: the sweep block spans {:.3g} layouts, more than --max-layouts {}; "
        "narrow an axis (lists instead of auto) or raise --max-layouts",
        spec.where.empty() ? base.file + ":1:1" : spec.where, points + static_cast<double>(before),
        opt.max_layouts));
  }
  g.points = static_cast<int64_t>(points);
  return g;
}

// Enumerate, part 2: every grid point with dp and the global batch derived, folded onto its
// canonical form, checked, and kept once.
// Points [begin, end) of the grid, in order.
void EnumerateRange(const Scenario& base, const SweepSpec& spec, const Grid& g, size_t hardware,
                    double cost_per_s, int64_t begin, int64_t end,
                    std::vector<SweepEntry>* entries) {
  // The mixed-radix digits of `begin`, the first axis fastest.
  std::vector<size_t> idx(g.axes.size(), 0);
  int64_t rest = begin;
  for (size_t a = 0; a < g.axes.size(); ++a) {
    const auto radix = static_cast<int64_t>(g.axes[a].values.size());
    idx[a] = static_cast<size_t>(rest % radix);
    rest /= radix;
  }
  // Each grid point is built in place in `probe` (CheckLayout reads a scenario), and only a
  // valid one is copied into an entry: most points fail divisibility.
  Scenario probe = base;
  sim::FlatMap<SweepPoint, char, SweepPointHash> seen;  // the points seen (values unused)
  SweepPoint last{};                                    // the point before, once there is one
  bool have_last = false;
  Layout& l = probe.layout;
  Training& t = probe.training;
  for (int64_t n = begin; n < end; ++n) {
    l = base.layout;
    t = base.training;
    for (size_t a = 0; a < g.axes.size(); ++a) {
      g.axes[a].key->apply(g.axes[a].values[idx[a]], &l, &t);
    }
    // Advance the mixed-radix counter.
    for (size_t a = 0; a < g.axes.size(); ++a) {
      if (++idx[a] < g.axes[a].values.size()) break;
      idx[a] = 0;
    }
    if (g.dp_auto) {
      const int64_t denom = static_cast<int64_t>(l.tp) * l.pp * l.cp;
      if (base.cluster.gpus() % denom != 0) continue;
      l.dp = base.cluster.gpus() / denom;
    }
    if (spec.global_batch_max > 0) {
      const int64_t unit = l.dp * t.micro_batch;
      t.global_batch = spec.global_batch_max / unit * unit;
      if (t.global_batch == 0) continue;
    }
    Normalise(&l, &t);
    if (l.gpus() != base.cluster.gpus()) continue;
    // Points folded onto a canonical form already seen (nine in ten of a wide grid's valid
    // points) are dropped before they are checked; the caller drops those seen by another range.
    const SweepPoint point = SweepPointOf(l, t);
    if (have_last && point == last) continue;
    last = point;
    have_last = true;
    if (!seen.Emplace(point, 0).second) continue;
    if (CheckLayout(probe)) continue;
    std::string key = FormatLayout(l, t, LayoutStyle::kKey);
    if (!spec.hardware.empty()) key = spec.hardware[hardware].label + " | " + key;
    SweepEntry e;
    e.layout = l;
    e.training = t;
    e.key = std::move(key);
    e.hardware = hardware;
    e.cost_per_s = cost_per_s;
    entries->push_back(std::move(e));
  }
}

// Enumerate, part 2 on `jobs` threads, each over a contiguous range of points; the entries come
// out in grid order whatever the number of threads.
void Enumerate(const Scenario& base, const SweepSpec& spec, const Grid& g, size_t hardware,
               double cost_per_s, int jobs, std::vector<SweepEntry>* entries) {
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(jobs, g.points / 4096 + 1));
  std::vector<std::vector<SweepEntry>> out(static_cast<size_t>(parts));
  std::vector<std::thread> threads;
  for (int64_t k = 0; k < parts; ++k) {
    const int64_t begin = g.points * k / parts, end = g.points * (k + 1) / parts;
    auto run = [&, k, begin, end] {
      EnumerateRange(base, spec, g, hardware, cost_per_s, begin, end, &out[k]);
    };
    if (k + 1 == parts) {
      run();
    } else {
      threads.emplace_back(run);
    }
  }
  for (std::thread& t : threads) t.join();
  size_t total = entries->size();
  for (const auto& part : out) total += part.size();
  entries->reserve(total);
  for (auto& part : out) {
    entries->insert(entries->end(), std::make_move_iterator(part.begin()),
                    std::make_move_iterator(part.end()));
  }
}

// The memory planner's verdict on one layout, and for one that fits the lower bounds of its
// replay: the peak memory (its states, held from the start, and when `bound` the activations
// its schedule's order must hold) and, when `bound` (pruning), the step (StepLowerBounds).
Status Screen(const Scenario& base, bool bound, SweepEntry* e) {
  MemoryReport mem = EstimateMemory(base.model, e->training, e->layout, base.cluster);
  double worst = 0;
  std::vector<double> held;
  for (const auto& st : mem.stages) {
    worst = std::max(worst, st.total());
    held.push_back(st.held_bytes());
    e->min_peak_bytes = std::max(e->min_peak_bytes, st.held_bytes());
  }
  e->peak_memory_bytes = worst;
  if (!mem.fits) {
    e->reason = fmt::format("needs {:.1f} GiB of {:.1f} GiB", Bytes(worst).gib(),
                            Bytes(mem.capacity_bytes).gib());
    return Status::Ok();
  }
  if (bound) {
    PARASIM_ASSIGN_OR_RETURN(
        StepBounds b, StepLowerBounds(base.model, e->training, e->layout, base.cluster, held));
    e->bound_s = b.step_s;
    e->min_peak_bytes = b.peak_bytes;
  }
  return Status::Ok();
}

// A replay's result `r` for the enumerated and screened `e`: what enumeration and screening
// found (key, layout, training, bounds, cluster) stays with it.
SweepEntry Replayed(SweepEntry r, SweepEntry e) {
  r.key = std::move(e.key);
  r.layout = e.layout;
  r.training = e.training;
  r.bound_s = e.bound_s;
  r.min_peak_bytes = e.min_peak_bytes;
  r.hardware = e.hardware;
  r.cost_per_s = e.cost_per_s;
  r.replayed = true;
  return r;
}

// One layout's replay, tried in stages, each raising the bound on its step: the first tier
// (screening), the schedule walked unit by unit (StepScheduleBound, cheaper than lowering), the
// lowered program's (sim::MakespanLowerBound: the replay without contention, and each link's
// bytes at its capacity), then the replay itself. A trial stops at the first bound that the
// pruning state it was given refuses.
struct Trial {
  std::array<double, 3> bounds{};  // bound_s after each stage tried
  int stages = 0;                  // bounds filled
  Status error;                    // from the stage after the last bound filled
  // Replayed (or taken from an earlier run); empty when the trial stopped at a bound.
  std::optional<SweepEntry> result;
};

// Tries the stages of `e`'s replay. With `pruning`, a stage whose bound `refuse` refuses ends
// the trial; `earlier` is its result from an earlier run (--resume), or null. An error ends it
// too, and is returned for the caller to keep in the trial (Decide reports it if reached).
Status Try(const Scenario& base, const SweepEntry& e, bool pruning,
           const std::function<bool(const SweepEntry&)>& refuse, const SweepEntry* earlier,
           Trial* t) {
  // Records the bound of a stage; true when the trial ends there.
  auto refused = [&](const SweepEntry& at) {
    if (!pruning) return false;
    t->bounds[static_cast<size_t>(t->stages++)] = at.bound_s;
    return refuse(at);
  };
  if (refused(e)) return Status::Ok();
  SweepEntry r = e;
  if (earlier != nullptr) {
    t->result = Replayed(*earlier, std::move(r));
    FillGoodput(base, &*t->result);
    return Status::Ok();
  }
  StepOptions so;
  so.critical_path = false;
  if (pruning) {
    PARASIM_ASSIGN_OR_RETURN(double s,
                             StepScheduleBound(base.model, r.training, r.layout, base.cluster));
    r.bound_s = std::max(r.bound_s, s);
    if (refused(r)) return Status::Ok();
  }
  PARASIM_ASSIGN_OR_RETURN(LoweredStep low,
                           LowerStep(base.model, r.training, r.layout, base.cluster, so));
  if (pruning) {
    PARASIM_ASSIGN_OR_RETURN(Duration bound, sim::MakespanLowerBound(low.program, low.costs));
    r.bound_s = std::max(r.bound_s, bound.seconds());
    if (refused(r)) return Status::Ok();
  }
  PARASIM_ASSIGN_OR_RETURN(StepReport rep, ReplayStep(std::move(low), base.model, r.training,
                                                      r.layout, base.cluster, so));
  SweepEntry filled = EntryOf(r.layout, r.training, rep);  // before r moves into Replayed
  SweepEntry& out = t->result.emplace(Replayed(std::move(filled), std::move(r)));
  if (!out.fits) {
    out.reason = fmt::format("replay peaks at {:.1f} GiB of {:.1f} GiB",
                             Bytes(out.peak_memory_bytes).gib(), Bytes(rep.capacity_bytes).gib());
  }
  FillGoodput(base, &out);
  return Status::Ok();
}

// Decides `e` from its trial as `cannot_enter` (the state of its own batch) says: pruned at the
// first stage whose bound that state refuses, else replayed. The trial may have been run
// against an older state, which prunes less: it then went at least as far as this decision needs.
Status Decide(const std::function<bool(const SweepEntry&)>& cannot_enter, Trial* t, SweepEntry* e) {
  for (int k = 0; k < t->stages; ++k) {
    e->bound_s = t->bounds[static_cast<size_t>(k)];
    if (cannot_enter && cannot_enter(*e)) {
      e->pruned = true;
      e->reason = fmt::format("{} its step is at least {:.6g} s", kPrunedNote, e->bound_s);
      return Status::Ok();
    }
  }
  if (!t->error.ok()) return t->error;
  if (!t->result) return Internal("sweep: a layout's trial stopped before its batch's state did");
  *e = std::move(*t->result);
  return Status::Ok();
}

// Earlier results (--resume): every whole line of the CSV's text, by layout key. Pruned layouts
// are decided again (the decision depends on what else was replayed).
std::unordered_map<std::string, SweepEntry> ParseResume(const std::string& text) {
  std::unordered_map<std::string, SweepEntry> done;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // a last line without its newline was torn by a kill
    SweepEntry e;
    if (ParseCsv(line, &e) && e.reason.rfind(kPrunedNote, 0) != 0) done[e.key] = e;
  }
  return done;
}

// What one process found in a phase, as bytes for Processes::AllGather: its status, then per
// layout its index and the fields that screening or replay fill in (the key, layout and
// training are the same on every process: Enumerate is deterministic).
class Packer {
 public:
  void U64(uint64_t v) { Raw(&v, sizeof v); }
  void F64(double v) { Raw(&v, sizeof v); }
  void Str(const std::string& v) {
    U64(v.size());
    bytes_ += v;
  }
  std::string& bytes() { return bytes_; }

 private:
  void Raw(const void* p, size_t n) { bytes_.append(static_cast<const char*>(p), n); }
  std::string bytes_;
};

class Unpacker {
 public:
  explicit Unpacker(const std::string& b) : b_(b) {}
  bool done() const { return at_ >= b_.size(); }
  bool ok() const { return ok_; }
  uint64_t U64() { return Raw<uint64_t>(); }
  double F64() { return Raw<double>(); }
  std::string Str() {
    const uint64_t n = U64();
    if (!ok_ || n > b_.size() - at_) {
      ok_ = false;
      return "";
    }
    std::string v = b_.substr(at_, n);
    at_ += n;
    return v;
  }

 private:
  template <typename T>
  T Raw() {
    T v{};
    if (b_.size() - at_ < sizeof v) {
      ok_ = false;
      at_ = b_.size();
      return v;
    }
    std::memcpy(&v, b_.data() + at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  const std::string& b_;
  size_t at_ = 0;
  bool ok_ = true;
};

void PackStatus(const Status& st, Packer* p) {
  p->U64(static_cast<uint64_t>(st.code()));
  p->Str(st.message());
}

Status UnpackStatus(Unpacker* u) {
  const auto code = static_cast<StatusCode>(u->U64());
  std::string message = u->Str();
  if (!u->ok()) return Internal("sweep: a process's results arrived torn");
  return code == StatusCode::kOk ? Status::Ok() : Status(code, std::move(message));
}

// The numeric fields that screening or replay fill in, in the order they travel.
template <typename E>
auto Numbers(E& e) {
  return std::array{&e.step_time_s,
                    &e.tokens_per_s,
                    &e.mfu,
                    &e.bubble,
                    &e.exposed.tp,
                    &e.exposed.cp,
                    &e.exposed.ep,
                    &e.exposed.pp,
                    &e.exposed.dp,
                    &e.peak_memory_bytes,
                    &e.compute_s,
                    &e.bound_s,
                    &e.min_peak_bytes,
                    &e.goodput};
}

void PackEntry(size_t i, const SweepEntry& e, Packer* p) {
  p->U64(i);
  p->U64((e.fits ? 1 : 0) | (e.replayed ? 2 : 0) | (e.pruned ? 4 : 0));
  for (const double* v : Numbers(e)) p->F64(*v);
  p->Str(e.reason);
}

// Reads one entry packed by PackEntry into its place; its index, or an error.
StatusOr<size_t> UnpackEntry(Unpacker* u, std::vector<SweepEntry>* entries) {
  const uint64_t i = u->U64();
  const uint64_t flags = u->U64();
  SweepEntry got;
  for (double* v : Numbers(got)) *v = u->F64();
  got.reason = u->Str();
  if (!u->ok() || i >= entries->size()) {
    return Internal("sweep: a process's results arrived torn");
  }
  SweepEntry& e = (*entries)[i];
  e.fits = (flags & 1) != 0;
  e.replayed = (flags & 2) != 0;
  e.pruned = (flags & 4) != 0;
  const auto from = Numbers(std::as_const(got));
  const auto to = Numbers(e);
  for (size_t k = 0; k < to.size(); ++k) *to[k] = *from[k];
  e.reason = std::move(got.reason);
  return static_cast<size_t>(i);
}

bool Primary(const SweepOptions& opt) {
  return opt.processes == nullptr || opt.processes->rank() == 0;
}

// Runs fn(i) for every i in `items` on opt.jobs threads. With several processes, each runs the
// items at its rank modulo their number, then all exchange the entries they evaluated:
// `arrived(i)` runs for each entry that another process evaluated, once it is in place. Every
// process returns the first error by rank (so all of them stop together).
Status Spread(const std::vector<size_t>& items, const SweepOptions& opt,
              std::vector<SweepEntry>* entries, const std::function<Status(size_t)>& fn,
              const std::function<void(size_t)>& arrived) {
  const Processes* procs = opt.processes;
  if (procs == nullptr || procs->size() == 1) return ParallelFor(items, opt.jobs, fn);
  std::vector<size_t> mine;
  for (size_t k = static_cast<size_t>(procs->rank()); k < items.size();
       k += static_cast<size_t>(procs->size())) {
    mine.push_back(items[k]);
  }
  const Status st = ParallelFor(mine, opt.jobs, fn);
  Packer p;
  PackStatus(st, &p);
  if (st.ok()) {
    for (size_t i : mine) PackEntry(i, (*entries)[i], &p);
  }
  PARASIM_ASSIGN_OR_RETURN(std::vector<std::string> all, procs->AllGather(p.bytes()));
  std::vector<Unpacker> from;  // each past its status
  from.reserve(all.size());
  for (const std::string& b : all) {
    PARASIM_RETURN_IF_ERROR(UnpackStatus(&from.emplace_back(b)));
  }
  for (int r = 0; r < procs->size(); ++r) {
    if (r == procs->rank()) continue;
    while (!from[r].done()) {
      PARASIM_ASSIGN_OR_RETURN(size_t i, UnpackEntry(&from[r], entries));
      arrived(i);
    }
  }
  return Status::Ok();
}

// Rank 0's text of the results file to resume from, and whether it could open the file for
// writing, handed to every process.
StatusOr<std::string> ShareFromPrimary(const SweepOptions& opt, const Status& st,
                                       const std::string& text) {
  if (opt.processes == nullptr || opt.processes->size() == 1) {
    if (!st.ok()) return st;
    return text;
  }
  Packer p;
  PackStatus(st, &p);
  p.Str(text);
  PARASIM_ASSIGN_OR_RETURN(std::vector<std::string> all, opt.processes->AllGather(p.bytes()));
  Unpacker u(all[0]);
  PARASIM_RETURN_IF_ERROR(UnpackStatus(&u));
  std::string shared = u.Str();
  if (!u.ok()) return Internal("sweep: rank 0's results file arrived torn");
  return shared;
}

// The replayed layouts that fit, as far as pruning needs them: whether a layout whose replay
// is bounded by (step >= bound, peak >= min_peak) could still enter the first `top` by the
// objective, or the Pareto front of throughput against memory.
class PruneState {
 public:
  PruneState(const SweepSpec& spec)
      : objective_(spec.objective),
        top_(std::max(1, spec.top)),
        codesign_(!spec.hardware.empty()) {}

  // `batch`: the replay batch `e` was decided in (or, ahead of the decisions, tried in).
  void Add(const SweepEntry& e, size_t batch = 0) {
    if (!e.fits) return;
    feasible_.push_back({RankedValue(e, objective_), FrontOf(e, codesign_), e.hardware, batch});
  }
  // From the layouts of batches before `before` only. A co-design sweep also keeps every
  // cluster's best layout: one is pruned only when a replayed layout on its own cluster
  // already beats its bound.
  bool CannotEnter(const SweepEntry& e, size_t before = std::numeric_limits<size_t>::max()) const {
    const double best = RankedBound(e, objective_);
    const FrontPoint front = FrontBound(e, codesign_);
    int ahead = 0;
    bool dominated = false, beaten_on_own = false;
    for (const Point& y : feasible_) {
      if (y.batch >= before) continue;
      ahead += y.value > best ? 1 : 0;
      dominated = dominated || (y.front.tokens > front.tokens && y.front.other <= front.other);
      beaten_on_own = beaten_on_own || (y.hardware == e.hardware && y.value > best);
    }
    if (codesign_ && !beaten_on_own) return false;
    return ahead >= top_ && dominated;
  }

 private:
  struct Point {
    double value;
    FrontPoint front;
    size_t hardware;
    size_t batch;
  };
  Objective objective_;
  int top_;
  bool codesign_;
  std::vector<Point> feasible_;
};

// Evaluate every layout on `opt.jobs` threads (and over opt.processes), appending each result
// to the CSV as it arrives: the memory planner and the bounds for all, then the replays, most
// promising bound first, in fixed batches (so the outcome does not depend on the thread or
// process count). A layout whose bounds cannot enter the first `top` or the Pareto front among
// those already replayed is pruned (unless opt.exhaustive). Returns how many were taken from an
// earlier run.
StatusOr<int64_t> Evaluate(const std::vector<Scenario>& hardware, const SweepSpec& spec,
                           const SweepOptions& opt, std::vector<SweepEntry>* entries,
                           std::chrono::steady_clock::time_point* screened_at) {
  // Rank 0 alone reads and writes the results file; the text it resumes from goes to all.
  const bool primary = Primary(opt);
  std::ofstream csv;
  std::mutex mu;  // guards csv
  std::string earlier;
  Status opened;
  if (primary && !opt.out_csv.empty()) {
    if (opt.resume) {
      std::ifstream in(opt.out_csv);
      earlier.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    csv.open(opt.out_csv, opt.resume ? std::ios::app : std::ios::trunc);
    if (!csv) {
      opened =
          InvalidArgument(fmt::format("{}:1:1: error: cannot write the results file", opt.out_csv));
    }
  }
  PARASIM_ASSIGN_OR_RETURN(earlier, ShareFromPrimary(opt, opened, earlier));
  const std::unordered_map<std::string, SweepEntry> done = ParseResume(earlier);
  if (csv.is_open() && (!opt.resume || done.empty())) {
    csv << kCsvHeader;
    csv.flush();
  }
  auto write = [&](const SweepEntry& e) {
    if (!csv.is_open()) return;
    const std::string line = Csv(e);
    std::lock_guard<std::mutex> lock(mu);
    csv << line;
    csv.flush();
  };
  std::atomic<int64_t> finished{0};
  auto progress = [&]() {
    const int64_t d = ++finished;
    if (opt.progress) opt.progress(d, static_cast<int64_t>(entries->size()));
  };
  std::vector<size_t> all(entries->size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  // Layouts taken from an earlier run keep their results, but are screened and ordered again
  // with the others, so that every pruning decision is the one the uninterrupted run made.
  int64_t resumed = 0;
  std::vector<char> cached(entries->size(), 0);
  for (size_t i : all) {
    cached[i] = done.count((*entries)[i].key) > 0 ? 1 : 0;
    resumed += cached[i];
  }
  // Screening leaves a reason on a layout it rejects (or one rejected before), none on a
  // candidate for replay. `screened` records one screened here or by another process.
  auto screened = [&](size_t i) {
    if ((*entries)[i].reason.empty()) return;
    if (!cached[i]) write((*entries)[i]);
    progress();
  };
  PARASIM_RETURN_IF_ERROR(Spread(
      all, opt, entries,
      [&](size_t i) -> Status {
        SweepEntry& e = (*entries)[i];
        const SweepEntry* c = cached[i] ? &done.at(e.key) : nullptr;
        if (c != nullptr && !c->fits && c->reason.rfind("replay", 0) != 0) {
          e.reason = c->reason;  // rejected by the memory planner before
          e.peak_memory_bytes = c->peak_memory_bytes;
        } else {
          PARASIM_RETURN_IF_ERROR(Screen(hardware[e.hardware], !opt.exhaustive, &e));
        }
        screened(i);
        return Status::Ok();
      },
      screened));
  *screened_at = std::chrono::steady_clock::now();
  // The replays, most promising first.
  PruneState state(spec);
  std::vector<size_t> order;
  for (size_t i : all) {
    if ((*entries)[i].reason.empty()) order.push_back(i);
  }
  auto promise = [&](size_t i) { return RankedBound((*entries)[i], spec.objective); };
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const double pa = promise(a), pb = promise(b);
    if (pa != pb) return pa > pb;
    return (*entries)[a].key < (*entries)[b].key;
  });
  // Records a layout replayed (or pruned) here or by another process; one taken from the
  // earlier run is already in the file.
  auto replayed = [&](size_t i) {
    if ((*entries)[i].pruned || !cached[i]) write((*entries)[i]);
    progress();
  };
  const bool pruning = !opt.exhaustive;
  // The layouts are decided in batches, in order: batch b's are pruned or replayed as the state
  // after batches 0..b-1 says, so the outcome does not depend on the thread or process count.
  std::function<bool(const SweepEntry&)> cannot_enter;
  if (pruning) cannot_enter = [&](const SweepEntry& e) { return state.CannotEnter(e); };
  auto before = [&](size_t i) { return cached[i] ? &done.at((*entries)[i].key) : nullptr; };
  const size_t batch = static_cast<size_t>(std::max(1, opt.batch));  // whatever opt.jobs
  if (opt.processes != nullptr && opt.processes->size() > 1) {
    // Over processes: each process tries its share of a batch against the batch's own state,
    // then all exchange what they decided.
    for (size_t at = 0; at < order.size(); at += batch) {
      const std::vector<size_t> items(
          order.begin() + static_cast<ptrdiff_t>(at),
          order.begin() + static_cast<ptrdiff_t>(std::min(order.size(), at + batch)));
      PARASIM_RETURN_IF_ERROR(Spread(
          items, opt, entries,
          [&](size_t i) -> Status {
            SweepEntry& e = (*entries)[i];
            Trial t;
            t.error = Try(hardware[e.hardware], e, pruning, cannot_enter, before(i), &t);
            PARASIM_RETURN_IF_ERROR(Decide(cannot_enter, &t, &e));
            replayed(i);
            return Status::Ok();
          },
          replayed));
      for (size_t i : items) state.Add((*entries)[i]);  // a pruned one does not fit: skipped
    }
    return resumed;
  }
  // One process: the workers run ahead of the batch being decided, by up to `ahead` layouts,
  // each trial against what the trials of earlier batches found so far, decided or not
  // (`tried_state`). A layout found there either enters its batch's decided state, or was
  // pruned there by layouts that beat its bounds, and so beat whatever it beats: whatever the
  // trial's state refuses, its own batch's state refuses too. A trial goes at least as far as
  // its decision needs, and a layout replayed ahead that its batch's state prunes is counted as
  // pruned, its replay dropped (TP8 PP64 DP2 CP16 ZeRO-2 at 1,024 and 2,048 sequences on the
  // 16K question, run ahead while the 4,096 that prunes them was still replaying, before the
  // trials saw undecided results). What running ahead buys: no
  // worker waits for a batch's slowest replay while later layouts could be tried.
  // 64 batches: on the 16K-GPU question (scenarios/bench, 2 threads) running 4, 16, 64 or 256
  // batches ahead took 10.8, 10.1, 10.0 and 9.6 s against 15.4 s batch by batch, with the same
  // CPU time (few trials run ahead are wasted, since most layouts are pruned by their first
  // bound). Most of a window is pruned at once, so a window of 16 was used up while one long
  // replay held its batch's decision, and the other thread waited: with 64 the question's
  // replay phase took 3.4-4.0 s against 3.8-4.0 s (2026-11-25, interleaved; the same 57
  // replays). A window holds a trial per layout until decided, a few hundred bytes each.
  const size_t ahead = 64 * batch;
  // The layouts whose memory bound is the least of all candidates can be dominated on the
  // Pareto front by one another only (no other layout leaves as much memory free), so at least
  // one of them is replayed, and the one with the largest global batch (the most micro-batches
  // to amortise its pipeline bubble, and the most tasks) is the likeliest: it is tried first,
  // beside the others, rather than last by its step bound. On the 16K question that is its
  // longest replay (TP8 PP64 DP2 CP16 ZeRO-2 with full recompute at 4,096 sequences, 2.5
  // million tasks), which ran alone at the end while the other thread waited. Its decision is
  // still its batch's (Decide), like every other's.
  size_t early = order.size();  // its place in `order`, if one
  if (pruning && spec.hardware.empty() && !order.empty()) {
    double least = std::numeric_limits<double>::infinity();
    for (size_t i : order) least = std::min(least, (*entries)[i].min_peak_bytes);
    for (size_t k = 0; k < order.size(); ++k) {
      const SweepEntry& e = (*entries)[order[k]];
      if (e.min_peak_bytes == least &&
          (early == order.size() ||
           e.training.global_batch > (*entries)[order[early]].training.global_batch)) {
        early = k;
      }
    }
  }
  std::vector<Trial> trials(order.size());
  std::vector<char> tried(order.size(), 0);
  std::vector<char> taken(order.size(), 0);  // under m: a worker has begun its trial
  std::mutex m;  // guards state, trials' hand-over, decided, next and failed
  std::condition_variable cv;
  size_t decided = 0, next = 0;
  Status failed;
  PruneState tried_state(spec);  // under m: every trial's result so far, by its batch
  // Under m: decides every batch whose trials are all in, in order.
  auto decide = [&]() -> Status {
    while (decided < order.size()) {
      const size_t end = std::min(order.size(), decided + batch);
      for (size_t k = decided; k < end; ++k) {
        if (!tried[k]) return Status::Ok();
      }
      for (size_t k = decided; k < end; ++k) {
        PARASIM_RETURN_IF_ERROR(Decide(cannot_enter, &trials[k], &(*entries)[order[k]]));
        trials[k] = Trial{};
        replayed(order[k]);
      }
      for (size_t k = decided; k < end; ++k) state.Add((*entries)[order[k]]);
      decided = end;
      cv.notify_all();
    }
    return Status::Ok();
  };
  auto work = [&]() {
    for (;;) {
      size_t k = 0;
      {
        std::unique_lock<std::mutex> lock(m);
        if (early < order.size() && !taken[early]) {
          k = early;
        } else {
          cv.wait(lock, [&] {
            while (next < order.size() && taken[next]) ++next;
            return !failed.ok() || next >= order.size() || next < decided + ahead;
          });
          if (!failed.ok() || next >= order.size()) return;
          k = next++;
        }
        taken[k] = 1;
      }
      const size_t i = order[k];
      Trial& t = trials[k];
      std::function<bool(const SweepEntry&)> refuse_now;
      if (pruning) {
        refuse_now = [&, own = k / batch](const SweepEntry& e) {
          std::lock_guard<std::mutex> lock(m);
          return tried_state.CannotEnter(e, own);
        };
      }
      t.error =
          Try(hardware[(*entries)[i].hardware], (*entries)[i], pruning, refuse_now, before(i), &t);
      std::lock_guard<std::mutex> lock(m);
      if (t.result) tried_state.Add(*t.result, k / batch);
      tried[k] = 1;
      if (!failed.ok()) return;
      if (Status st = decide(); !st.ok()) {
        failed = st;
        cv.notify_all();
        return;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int j = 1; j < std::max(1, opt.jobs); ++j) pool.emplace_back(work);
  work();
  for (std::thread& th : pool) th.join();
  if (!failed.ok()) return failed;
  return resumed;
}

// Rank: the layouts that fit, best first by the objective, and the Pareto front of
// throughput against memory (no other layout is both faster and leaves more memory free).
void Rank(const SweepSpec& spec, const std::vector<SweepEntry>& entries, SweepOutcome* out) {
  for (const SweepEntry& e : entries) {
    if (e.fits) out->ranked.push_back(e);
  }
  out->feasible = static_cast<int64_t>(out->ranked.size());
  for (const SweepEntry& e : entries) {
    if (!e.fits && !e.pruned &&
        (out->leanest.key.empty() || e.peak_memory_bytes < out->leanest.peak_memory_bytes)) {
      out->leanest = e;
    }
  }
  std::sort(out->ranked.begin(), out->ranked.end(),
            [&](const SweepEntry& a, const SweepEntry& b) { return Better(a, b, spec.objective); });
  std::vector<size_t> order(out->ranked.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  const bool codesign = !spec.hardware.empty();
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const FrontPoint x = FrontOf(out->ranked[a], codesign);
    const FrontPoint y = FrontOf(out->ranked[b], codesign);
    if (x.tokens != y.tokens) return x.tokens > y.tokens;
    if (x.other != y.other) return x.other < y.other;
    return a < b;  // exact ties: the first in the ranking (by key) stands for them
  });
  double best_other = std::numeric_limits<double>::infinity();
  for (size_t i : order) {
    const double other = FrontOf(out->ranked[i], codesign).other;
    if (other < best_other) {
      out->pareto.push_back(i);
      best_other = other;
    }
  }
}

// Write: the final CSV, every layout, the ranked ones first, rewritten atomically.
Status WriteCsv(const std::string& path, const SweepOutcome& out,
                const std::vector<SweepEntry>& entries) {
  std::string text = kCsvHeader;
  for (const auto& e : out.ranked) text += Csv(e);
  for (const auto& e : entries) {
    if (!e.fits) text += Csv(e);
  }
  return WriteFileAtomic(path, text);
}

// The scenarios a sweep replays on: the base, or for a co-design sweep one per cluster and
// model it compares.
std::vector<Scenario> SweepHardwareScenarios(const Scenario& base) {
  if (!base.sweep || base.sweep->hardware.empty()) return {base};
  std::vector<Scenario> out;
  for (const SweepHardware& h : base.sweep->hardware) {
    Scenario s = base;
    s.cluster = h.cluster;
    s.model = h.model;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

Status ParallelFor(const std::vector<size_t>& items, int jobs,
                   const std::function<Status(size_t)>& fn) {
  std::atomic<size_t> next{0};
  std::mutex mu;
  Status first_error;
  auto work = [&]() {
    for (size_t k = next++; k < items.size(); k = next++) {
      if (Status st = fn(items[k]); !st.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (first_error.ok()) first_error = st;
      }
    }
  };
  std::vector<std::thread> pool;
  const size_t threads = std::min<size_t>(std::max(1, jobs), items.size());
  for (size_t j = 1; j < threads; ++j) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();
  return first_error;
}

void FillGoodput(const Scenario& base, SweepEntry* e) {
  if (e->fits && base.sweep && base.reliability.enabled &&
      (base.sweep->objective == Objective::kTimeToTrain ||
       base.sweep->objective == Objective::kCost)) {
    Scenario s = base;
    s.layout = e->layout;
    s.training = e->training;
    e->goodput = GoodputFactor(s, e->step_time_s);
  }
}

bool SweepPriced(const Scenario& base) {
  if (!base.sweep || base.sweep->hardware.empty()) return base.cluster.gpu_hour_cost > 0;
  return std::all_of(base.sweep->hardware.begin(), base.sweep->hardware.end(),
                     [](const SweepHardware& h) { return h.cluster.gpu_hour_cost > 0; });
}

double CostPerToken(const SweepEntry& e) {
  const double kept = KeptTokensPerS(e);
  return kept > 0 ? e.cost_per_s / kept : std::numeric_limits<double>::infinity();
}

double ObjectiveCost(const Scenario& base, const SweepEntry& e) {
  if (base.sweep && base.sweep->objective == Objective::kCost) return CostPerToken(e);
  const double kept = KeptTokensPerS(e);
  return kept > 0 ? 1 / kept : std::numeric_limits<double>::infinity();
}

const ClusterSpec& ClusterOf(const Scenario& base, const SweepEntry& e) {
  const bool codesign = base.sweep && e.hardware < base.sweep->hardware.size();
  return codesign ? base.sweep->hardware[e.hardware].cluster : base.cluster;
}

Scenario WithLayout(const Scenario& base, const SweepEntry& e) {
  Scenario s = base;
  if (base.sweep && e.hardware < base.sweep->hardware.size()) {
    s.cluster = base.sweep->hardware[e.hardware].cluster;
    s.model = base.sweep->hardware[e.hardware].model;
  }
  s.layout = e.layout;
  s.training = e.training;
  s.dp_auto = false;
  s.sweep.reset();
  return s;
}

StatusOr<SweepOutcome> RunSweep(const Scenario& base, const SweepOptions& opt) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  SweepOutcome out;
  out.base_global_batch = base.training.global_batch;
  const SweepSpec spec = base.sweep ? *base.sweep : SweepSpec{};
  const std::vector<Scenario> hardware = SweepHardwareScenarios(base);
  const bool priced = SweepPriced(base);
  std::vector<SweepEntry> entries;
  for (size_t h = 0; h < hardware.size(); ++h) {
    const Scenario& v = hardware[h];
    // --max-layouts bounds the grids of all the clusters together.
    PARASIM_ASSIGN_OR_RETURN(Grid grid, BuildGrid(v, spec, opt, out.grid_points));
    out.grid_points += grid.points;
    const double cost_per_s =
        static_cast<double>(v.cluster.gpus()) * (priced ? v.cluster.gpu_hour_cost : 1.0) / 3600;
    Enumerate(v, spec, grid, h, cost_per_s, std::max(1, opt.jobs), &entries);
  }
  // The same layout can arise twice (e.g. a listed value equal to the derived one).
  std::sort(entries.begin(), entries.end(),
            [](const SweepEntry& a, const SweepEntry& b) { return a.key < b.key; });
  entries.erase(
      std::unique(entries.begin(), entries.end(),
                  [](const SweepEntry& a, const SweepEntry& b) { return a.key == b.key; }),
      entries.end());
  out.valid_layouts = static_cast<int64_t>(entries.size());
  const auto enumerated = Clock::now();
  auto screened = enumerated;
  PARASIM_ASSIGN_OR_RETURN(out.resumed, Evaluate(hardware, spec, opt, &entries, &screened));
  const auto replayed = Clock::now();
  for (const SweepEntry& e : entries) {
    (e.replayed ? out.replayed : e.pruned ? out.pruned : out.memory_rejected) += 1;
  }
  Rank(spec, entries, &out);
  if (!Primary(opt)) return out;  // rank 0 reports and writes
  // Full reports of the leaders, replayed again (deterministic, so a resumed sweep prints the
  // same).
  const size_t top =
      std::min<size_t>(out.ranked.size(), static_cast<size_t>(std::max(1, spec.top)));
  std::vector<size_t> leaders(top);
  for (size_t i = 0; i < top; ++i) leaders[i] = i;
  std::vector<StatusOr<StepReport>> reports(top, Internal("sweep: a leader was not replayed"));
  PARASIM_RETURN_IF_ERROR(ParallelFor(leaders, opt.jobs, [&](size_t i) -> Status {
    const Scenario& v = hardware[out.ranked[i].hardware];
    reports[i] = SimulateStep(v.model, out.ranked[i].training, out.ranked[i].layout, v.cluster,
                              StepOptions{});
    return Status::Ok();
  }));
  for (StatusOr<StepReport>& r : reports) {  // the first error in rank order
    if (!r.ok()) return r.status();
    out.top_reports.push_back(std::move(*r));
  }
  if (!opt.out_csv.empty()) PARASIM_RETURN_IF_ERROR(WriteCsv(opt.out_csv, out, entries));
  const auto end = Clock::now();
  auto seconds = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  out.enumerate_s = seconds(t0, enumerated);
  out.screen_s = seconds(enumerated, screened);
  out.replay_s = seconds(screened, replayed);
  out.report_s = seconds(replayed, end);
  out.elapsed_s = seconds(t0, end);
  if (out.elapsed_s > 0) {
    out.valid_layouts_per_second = static_cast<double>(out.valid_layouts) / out.elapsed_s;
    out.replays_per_second = static_cast<double>(out.replayed) / out.elapsed_s;
  }
  return out;
}

std::string Bottleneck(const StepReport& r) {
  if (r.step_time_s <= 0) return "";
  const auto parts = StepParts(r);
  // The largest of everything but compute.
  const StepPartTime* top =
      std::max_element(parts.begin() + 1, parts.end(),
                       [](const StepPartTime& a, const StepPartTime& b) { return a.s < b.s; });
  if (top->s < 0.05 * r.step_time_s) {
    return fmt::format("compute-bound (MFU {:.0f}%)", 100 * r.mfu);
  }
  return fmt::format("{} ({:.0f}% of the step)", StepPartName(top->part),
                     100 * top->s / r.step_time_s);
}

SweepEntry EntryOf(const Layout& layout, const Training& training, const StepReport& r) {
  SweepEntry e;
  e.layout = layout;
  e.training = training;
  e.replayed = true;
  e.fits = r.fits;
  e.step_time_s = r.step_time_s;
  e.tokens_per_s = r.tokens_per_s;
  e.mfu = r.mfu;
  e.bubble = r.bubble_fraction;
  e.exposed = r.exposed;
  if (!r.peak_memory_bytes.empty()) {
    e.peak_memory_bytes = *std::max_element(r.peak_memory_bytes.begin(), r.peak_memory_bytes.end());
  }
  e.compute_s = BusiestCompute(r);
  return e;
}

std::string WhyBehind(const SweepEntry& e, const SweepEntry& best) {
  const auto mine = StepParts(e.compute_s, e.bubble, e.exposed);
  const auto theirs = StepParts(best.compute_s, best.bubble, best.exposed);
  std::array<StepPartTime, kNumStepParts> d;
  for (int i = 0; i < kNumStepParts; ++i) d[i] = {mine[i].part, mine[i].s - theirs[i].s};
  std::sort(d.begin(), d.end(),
            [](const StepPartTime& a, const StepPartTime& b) { return a.s > b.s; });
  const double slower = best.tokens_per_s > 0 ? 1 - e.tokens_per_s / best.tokens_per_s : 0;
  std::string why;
  for (const StepPartTime& x : d) {
    if (x.s <= 0.005 * best.step_time_s || why.size() > 60) continue;
    // More compute at the same work means recompute or smaller, less efficient GEMMs.
    const std::string_view what = x.part == StepPart::kCompute
                                      ? "compute (recompute or smaller GEMMs)"
                                      : StepPartName(x.part);
    why += fmt::format("{}+{:.2f} s {}", why.empty() ? "" : ", ", x.s, what);
  }
  if (why.empty()) why = "per-sequence costs (larger global batch per step)";
  return fmt::format("{:.1f}% less throughput: {}", 100 * slower, why);
}

}  // namespace parasim
