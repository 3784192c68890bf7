#include "strategies/sweep_grid.h"

#include <fmt/core.h>

#include <algorithm>
#include <iterator>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "sim/flat_map.h"
#include "strategies/layout_format.h"
#include "strategies/schedule.h"

namespace parasim {

void NormaliseLayout(Layout* l, Training* t) {
  if (t->precision != Dtype::kFp8) t->fp8_recipe = Fp8Recipe::kTensorwise;
  if (l->tp == 1) l->sp = false;
  if (!ScheduleOf(l->schedule).interleaves()) l->virtual_stages = 1;
  FoldSingleChunkInterleaving(l);
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
  if (l->cp == 1) l->cp_comm = Layout::CpComm::kRing;                   // no exchange to make
  if (l->zero != 3) l->zero3_reshard = Layout::Zero3Reshard::kForward;  // nothing gathered
  // account_for is Megatron-LM's split of a one-way pipeline: a schedule that places both ends
  // on one stage (V, DualPipe) or no pipeline at all keeps its own split.
  const PipelineSchedule& s = ScheduleOf(l->schedule);
  if (l->pp == 1 || s.mirrored() || s.bidirectional()) l->split_embedding = l->split_loss = false;
}

StatusOr<SweepGrid> BuildGrid(const Scenario& base, const SweepSpec& spec, int64_t max_layouts,
                              int64_t before) {
  SweepGrid g;
  g.dp_auto = base.dp_auto;
  for (const auto& [name, axis] : spec.axes) {
    const SweepKey* key = FindSweepKey(name);
    if (key == nullptr) return InvalidArgument(fmt::format("'{}' cannot be swept", name));
    if (key->name == "dp") {
      g.dp_auto = axis.is_auto;
      if (axis.is_auto) continue;
    }
    GridAxis a{key, {}};
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
  // The keys NormaliseLayout folds vary fastest, so that the points folded onto one another mostly
  // come one after another, where EnumerateRange drops them without a lookup. The order of the
  // points is nobody else's: the entries are sorted by key.
  auto folds = [](const GridAxis& a) {
    static constexpr std::string_view kFolded[] = {"virtual_stages", "schedule",   "sp",
                                                   "cp_comm",        "fp8_recipe", "grad_reduce",
                                                   "zero3_reshard",  "zero"};
    return std::find(std::begin(kFolded), std::end(kFolded), a.key->name) - std::begin(kFolded);
  };
  std::stable_sort(g.axes.begin(), g.axes.end(),
                   [&](const GridAxis& a, const GridAxis& b) { return folds(a) < folds(b); });
  double points = 1;
  for (const GridAxis& a : g.axes) points *= static_cast<double>(a.values.size());
  if (points + static_cast<double>(before) > static_cast<double>(max_layouts)) {
    return InvalidArgument(fmt::format(
        "{}: error: sweep: the sweep block spans {:.3g} layouts, more than --max-layouts {}; "
        "narrow an axis (lists instead of auto) or raise --max-layouts",
        spec.where.empty() ? base.file + ":1:1" : spec.where, points + static_cast<double>(before),
        max_layouts));
  }
  g.points = static_cast<int64_t>(points);
  return g;
}

namespace {

// Sets `l` and `t` to grid point `idx` (a digit per axis) with dp and the global batch
// derived, folded onto its canonical form; false when the point has no layout (the GPU count
// or the global batch does not divide).
bool PointAt(const Scenario& base, const SweepSpec& spec, const SweepGrid& g,
             const std::vector<size_t>& idx, Layout* l, Training* t) {
  *l = base.layout;
  *t = base.training;
  for (size_t a = 0; a < g.axes.size(); ++a) g.axes[a].key->apply(g.axes[a].values[idx[a]], l, t);
  if (g.dp_auto) {
    const int64_t denom = static_cast<int64_t>(l->tp) * l->pp * l->cp;
    if (base.cluster.gpus() % denom != 0) return false;
    l->dp = base.cluster.gpus() / denom;
  }
  if (spec.global_batch_max > 0) {
    const int64_t unit = l->dp * t->micro_batch;
    t->global_batch = spec.global_batch_max / unit * unit;
    if (t->global_batch == 0) return false;
  }
  // A mixture-of-experts model under TP needs SP (CheckLayout; Megatron-Core): where the sweep
  // does not list sp, a TP point takes it rather than vanish from the grid.
  if (base.model.is_moe() && l->tp > 1 && !l->sp &&
      std::none_of(g.axes.begin(), g.axes.end(),
                   [](const auto& a) { return a.key->name == "sp"; })) {
    l->sp = true;
  }
  NormaliseLayout(l, t);
  return l->gpus() == base.cluster.gpus();
}

// Every grid point of [begin, end), in order, checked and kept once (within the range).
void EnumerateRange(const Scenario& base, const SweepSpec& spec, const SweepGrid& g,
                    size_t hardware, double cost_per_s, int64_t begin, int64_t end,
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
    const bool valid = PointAt(base, spec, g, idx, &l, &t);
    // Advance the mixed-radix counter.
    for (size_t a = 0; a < g.axes.size(); ++a) {
      if (++idx[a] < g.axes[a].values.size()) break;
      idx[a] = 0;
    }
    // Most points of a wide grid split the global batch unevenly: dropped by arithmetic alone,
    // before they are folded, looked up or kept (CheckLayout would refuse them).
    if (!valid || !BatchDivides(l, t)) continue;
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

}  // namespace

void EnumerateGrid(const Scenario& base, const SweepSpec& spec, const SweepGrid& g, size_t hardware,
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

void KeepOnce(std::vector<SweepEntry>* entries) {
  std::sort(entries->begin(), entries->end(),
            [](const SweepEntry& a, const SweepEntry& b) { return a.key < b.key; });
  entries->erase(
      std::unique(entries->begin(), entries->end(),
                  [](const SweepEntry& a, const SweepEntry& b) { return a.key == b.key; }),
      entries->end());
}

}  // namespace parasim
