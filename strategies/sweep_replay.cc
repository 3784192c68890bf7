#include "strategies/sweep_replay.h"

#include <fmt/core.h>

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <limits>
#include <mutex>
#include <thread>
#include <utility>

#include "sim/engine.h"
#include "strategies/step.h"
#include "strategies/sweep_codesign.h"
#include "strategies/sweep_screen.h"

namespace parasim {
namespace {

// A replay's result `r` (EntryOf, or an earlier run's line), which knows nothing of bounds, for
// the enumerated and screened `e`: what enumeration and screening found (key, layout,
// training, bounds, cluster) stays with it.
SweepEntry Replayed(SweepEntry r, SweepEntry e) {
  r.bound_s = e.bound_s;
  r.min_peak_bytes = e.min_peak_bytes;
  r.replayed = true;
  CopyFound(r, &e);
  return e;
}

}  // namespace

Status TryLayout(const Scenario& base, const SweepEntry& e, bool pruning,
                 const std::function<bool(const SweepEntry&)>& refuse, const SweepEntry* earlier,
                 SweepTrial* t) {
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

Status DecideLayout(const std::function<bool(const SweepEntry&)>& cannot_enter, SweepTrial* t,
                    SweepEntry* e) {
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

namespace {

// Over processes: each process tries its share of a batch against the batch's own state, then
// all exchange what they decided.
Status ReplayOverProcesses(const ReplayPhase& ph, const std::vector<size_t>& order,
                           std::vector<SweepEntry>* entries) {
  PruneState state(ph.spec);
  std::function<bool(const SweepEntry&)> cannot_enter;
  if (ph.pruning) cannot_enter = [&](const SweepEntry& e) { return state.CannotEnter(e); };
  for (size_t at = 0; at < order.size(); at += ph.batch) {
    const std::vector<size_t> items(
        order.begin() + static_cast<ptrdiff_t>(at),
        order.begin() + static_cast<ptrdiff_t>(std::min(order.size(), at + ph.batch)));
    PARASIM_RETURN_IF_ERROR(SpreadWork(
        ph.workers, items, entries,
        [&](size_t i) -> Status {
          SweepEntry& e = (*entries)[i];
          SweepTrial t;
          t.error =
              TryLayout(ph.hardware[e.hardware], e, ph.pruning, cannot_enter, ph.earlier(i), &t);
          PARASIM_RETURN_IF_ERROR(DecideLayout(cannot_enter, &t, &e));
          ph.decided(i);
          return Status::Ok();
        },
        ph.decided));
    for (size_t i : items) state.Add((*entries)[i]);  // a pruned one does not fit: skipped
  }
  return Status::Ok();
}

// The place in `order` of the layout to try first, beside the others (order.size() for none).
// The layouts whose memory bound is the least of all candidates can be dominated on the Pareto
// front by one another only (no other layout leaves as much memory free), so at least one of
// them is replayed, and the one with the largest global batch (the most micro-batches to
// amortise its pipeline bubble, and the most tasks) is the likeliest: it is tried first,
// beside the others, rather than last by its step bound. On the 16K question that is its
// longest replay (TP8 PP64 DP2 CP16 ZeRO-2 with full recompute at 4,096 sequences, 2.5
// million tasks), which ran alone at the end while the other thread waited. Its decision is
// still its batch's (DecideLayout), like every other's.
size_t EarlyPlace(const ReplayPhase& ph, const std::vector<size_t>& order,
                  const std::vector<SweepEntry>& entries) {
  size_t early = order.size();
  if (!ph.pruning || !ph.spec.hardware.empty() || order.empty()) return early;
  double least = std::numeric_limits<double>::infinity();
  for (size_t i : order) least = std::min(least, entries[i].min_peak_bytes);
  for (size_t k = 0; k < order.size(); ++k) {
    const SweepEntry& e = entries[order[k]];
    if (e.min_peak_bytes == least &&
        (early == order.size() ||
         e.training.global_batch > entries[order[early]].training.global_batch)) {
      early = k;
    }
  }
  return early;
}

// One process: the workers run ahead of the batch being decided, by up to `ahead_` layouts,
// each trial against what the trials of earlier batches found so far, decided or not
// (`tried_state_`). A layout found there either enters its batch's decided state, or was
// pruned there by layouts that beat its bounds, and so beat whatever it beats: whatever the
// trial's state refuses, its own batch's state refuses too. A trial goes at least as far as
// its decision needs, and a layout replayed ahead that its batch's state prunes is counted as
// pruned, its replay dropped (TP8 PP64 DP2 CP16 ZeRO-2 at 1,024 and 2,048 sequences on the
// 16K question, run ahead while the 4,096 that prunes them was still replaying, before the
// trials saw undecided results). What running ahead buys: no
// worker waits for a batch's slowest replay while later layouts could be tried.
class AheadReplays {
 public:
  AheadReplays(const ReplayPhase& ph, const std::vector<size_t>& order,
               std::vector<SweepEntry>* entries)
      : ph_(ph),
        order_(order),
        entries_(*entries),
        early_(EarlyPlace(ph, order, *entries)),
        trials_(order.size()),
        tried_(order.size(), 0),
        taken_(order.size(), 0),
        state_(ph.spec),
        tried_state_(ph.spec) {
    if (ph.pruning) cannot_enter_ = [this](const SweepEntry& e) { return state_.CannotEnter(e); };
  }

  Status Run() {
    std::vector<std::thread> pool;
    for (int j = 1; j < std::max(1, ph_.workers.jobs); ++j) pool.emplace_back([this] { Work(); });
    Work();
    for (std::thread& th : pool) th.join();
    return failed_;
  }

 private:
  // Takes the next layout to try (its place in order_), or none when there is none left or a
  // trial failed; waits while the window ahead of the decisions is full.
  std::optional<size_t> Take() {
    std::unique_lock<std::mutex> lock(m_);
    size_t k = 0;
    if (early_ < order_.size() && !taken_[early_]) {
      k = early_;
    } else {
      cv_.wait(lock, [&] {
        while (next_ < order_.size() && taken_[next_]) ++next_;
        return !failed_.ok() || next_ >= order_.size() || next_ < decided_ + kAhead * ph_.batch;
      });
      if (!failed_.ok() || next_ >= order_.size()) return std::nullopt;
      k = next_++;
    }
    taken_[k] = 1;
    return k;
  }

  // Tries the layout at order_[k] against the trials of the batches before its own.
  void TryAt(size_t k) {
    const size_t i = order_[k];
    SweepTrial& t = trials_[k];
    std::function<bool(const SweepEntry&)> refuse_now;
    if (ph_.pruning) {
      refuse_now = [this, own = k / ph_.batch](const SweepEntry& e) {
        std::lock_guard<std::mutex> lock(m_);
        return tried_state_.CannotEnter(e, own);
      };
    }
    t.error = TryLayout(ph_.hardware[entries_[i].hardware], entries_[i], ph_.pruning, refuse_now,
                        ph_.earlier(i), &t);
  }

  // Under m_: decides every batch whose trials are all in, in order.
  Status DecideReady() {
    while (decided_ < order_.size()) {
      const size_t end = std::min(order_.size(), decided_ + ph_.batch);
      for (size_t k = decided_; k < end; ++k) {
        if (!tried_[k]) return Status::Ok();
      }
      for (size_t k = decided_; k < end; ++k) {
        PARASIM_RETURN_IF_ERROR(DecideLayout(cannot_enter_, &trials_[k], &entries_[order_[k]]));
        trials_[k] = SweepTrial{};
        ph_.decided(order_[k]);
      }
      for (size_t k = decided_; k < end; ++k) state_.Add(entries_[order_[k]]);
      decided_ = end;
      cv_.notify_all();
    }
    return Status::Ok();
  }

  void Work() {
    while (std::optional<size_t> k = Take()) {
      TryAt(*k);
      std::lock_guard<std::mutex> lock(m_);
      if (trials_[*k].result) tried_state_.Add(*trials_[*k].result, *k / ph_.batch);
      tried_[*k] = 1;
      if (!failed_.ok()) return;
      if (Status st = DecideReady(); !st.ok()) {
        failed_ = st;
        cv_.notify_all();
        return;
      }
    }
  }

  // 64 batches: on the 16K-GPU question (scenarios/bench, 2 threads) running 4, 16, 64 or 256
  // batches ahead took 10.8, 10.1, 10.0 and 9.6 s against 15.4 s batch by batch, with the same
  // CPU time (few trials run ahead are wasted, since most layouts are pruned by their first
  // bound). Most of a window is pruned at once, so a window of 16 was used up while one long
  // replay held its batch's decision, and the other thread waited: with 64 the question's
  // replay phase took 3.4-4.0 s against 3.8-4.0 s (2026-11-25, interleaved; the same 57
  // replays). A window holds a trial per layout until decided, a few hundred bytes each.
  static constexpr size_t kAhead = 64;

  const ReplayPhase& ph_;
  const std::vector<size_t>& order_;
  std::vector<SweepEntry>& entries_;
  const size_t early_;  // EarlyPlace
  std::vector<SweepTrial> trials_;
  std::vector<char> tried_;
  std::vector<char> taken_;  // under m_: a worker has begun its trial
  std::mutex m_;             // guards the states, trials' hand-over, decided_, next_ and failed_
  std::condition_variable cv_;
  size_t decided_ = 0, next_ = 0;
  Status failed_;
  PruneState state_;        // under m_: the decided layouts, batch by batch
  PruneState tried_state_;  // under m_: every trial's result so far, by its batch
  std::function<bool(const SweepEntry&)> cannot_enter_;  // by state_; empty when not pruning
};

}  // namespace

Status ReplayAll(const ReplayPhase& phase, const std::vector<size_t>& order,
                 std::vector<SweepEntry>* entries) {
  if (phase.workers.spread()) return ReplayOverProcesses(phase, order, entries);
  return AheadReplays(phase, order, entries).Run();
}

}  // namespace parasim
