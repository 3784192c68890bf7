#include "strategies/sweep.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <unordered_map>
#include <utility>

#include "strategies/goodput.h"
#include "strategies/sweep_codesign.h"
#include "strategies/sweep_grid.h"
#include "strategies/sweep_replay.h"
#include "strategies/sweep_results.h"
#include "strategies/sweep_screen.h"

namespace parasim {
namespace {

using Clock = std::chrono::steady_clock;

// Enumerate: every valid layout of every cluster's grid (the base's alone but in a co-design
// sweep), each once, sorted by key; counts the grid's points and the layouts.
StatusOr<std::vector<SweepEntry>> EnumerateLayouts(const Scenario& base,
                                                   const std::vector<Scenario>& hardware,
                                                   const SweepSpec& spec, const SweepOptions& opt,
                                                   SweepOutcome* out) {
  const bool priced = SweepPriced(base);
  std::vector<SweepEntry> entries;
  for (size_t h = 0; h < hardware.size(); ++h) {
    const Scenario& v = hardware[h];
    // --max-layouts bounds the grids of all the clusters together.
    PARASIM_ASSIGN_OR_RETURN(SweepGrid grid, BuildGrid(v, spec, opt.max_layouts, out->grid_points));
    out->grid_points += grid.points;
    EnumerateGrid(v, spec, grid, h, ClusterCostPerS(v.cluster, priced), std::max(1, opt.jobs),
                  &entries);
  }
  // The same layout can arise twice (e.g. a listed value equal to the derived one).
  KeepOnce(&entries);
  out->valid_layouts = static_cast<int64_t>(entries.size());
  return entries;
}

// Evaluates every layout on opt.jobs threads (and over opt.processes): the memory planner and
// the bounds for all (ScreenLayouts), then the replays, most promising bound first, in fixed
// batches (ReplayLayouts; strategies/sweep_replay.h), so the outcome does not depend on the thread
// or process count. Each result is appended to the results file as it is decided. Layouts taken
// from an earlier run (--resume) keep their results, but are screened and ordered again with the
// others, so that every pruning decision is the one the uninterrupted run made.
class Evaluation {
 public:
  Evaluation(const SweepOptions& opt, std::vector<SweepEntry>* entries)
      : opt_(opt), workers_{opt.jobs, opt.processes}, entries_(*entries) {}

  // Rank 0 alone reads and writes the results file; the text it resumes from goes to all.
  Status Open() {
    std::string earlier;
    Status opened;
    if (workers_.primary() && !opt_.out_csv.empty()) {
      opened = results_.Open(opt_.out_csv, opt_.resume, &earlier, opt_.fingerprint);
    }
    PARASIM_ASSIGN_OR_RETURN(earlier, ShareFromPrimary(workers_, opened, earlier));
    Resumed resumed = ParseResume(earlier, opt_.fingerprint);
    done_ = std::move(resumed.done);
    refused_ = resumed.refused;
    results_.Begin(opt_.resume, !done_.empty());
    cached_.assign(entries_.size(), 0);
    for (size_t i = 0; i < entries_.size(); ++i) {
      cached_[i] = done_.count(entries_[i].key) > 0 ? 1 : 0;
      resumed_ += cached_[i];
    }
    return Status::Ok();
  }

  // Screening leaves a reason on a layout it rejects (or one rejected before), none on a
  // candidate for replay.
  Status ScreenLayouts(const std::vector<Scenario>& hardware) {
    std::vector<size_t> all(entries_.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    // Records a layout screened here or by another process.
    auto screened = [&](size_t i) {
      if (entries_[i].reason.empty()) return;
      if (!cached_[i]) results_.Write(entries_[i]);
      Progress();
    };
    return SpreadWork(
        workers_, all, &entries_,
        [&](size_t i) -> Status {
          SweepEntry& e = entries_[i];
          const SweepEntry* c = Earlier(i);
          if (c != nullptr && !c->fits && c->reason.rfind("replay", 0) != 0) {
            e.reason = c->reason;  // rejected by the memory planner before
            e.peak_memory_bytes = c->peak_memory_bytes;
          } else {
            PARASIM_RETURN_IF_ERROR(ScreenLayout(hardware[e.hardware], !opt_.exhaustive, &e));
          }
          screened(i);
          return Status::Ok();
        },
        screened);
  }

  // The replays, most promising first.
  Status ReplayLayouts(const std::vector<Scenario>& hardware, const SweepSpec& spec) {
    const ReplayPhase phase{hardware, spec, workers_, !opt_.exhaustive,
                            static_cast<size_t>(std::max(1, opt_.batch)),  // whatever opt.jobs
                            [&](size_t i) { return Earlier(i); },
                            // Records a layout replayed (or pruned) here or by another process; one
                            // taken from the earlier run is already in the file.
                            [&](size_t i) {
                              if (entries_[i].pruned || !cached_[i]) results_.Write(entries_[i]);
                              Progress();
                            }};
    return ReplayAll(phase, ReplayOrder(entries_, spec.objective), &entries_);
  }

  int64_t resumed() const { return resumed_; }
  int64_t refused() const { return refused_; }

 private:
  // An entry's result from the earlier run, or null.
  const SweepEntry* Earlier(size_t i) const {
    return cached_[i] ? &done_.at(entries_[i].key) : nullptr;
  }
  void Progress() {
    const int64_t d = ++finished_;
    if (opt_.progress) opt_.progress(d, static_cast<int64_t>(entries_.size()));
  }

  const SweepOptions& opt_;
  const SweepWorkers workers_;
  std::vector<SweepEntry>& entries_;
  ResultsFile results_;
  std::unordered_map<std::string, SweepEntry> done_;  // the earlier run's, by key
  std::vector<char> cached_;                          // per entry: in done_
  int64_t resumed_ = 0;
  int64_t refused_ = 0;  // lines of the earlier run's file whose check failed
  std::atomic<int64_t> finished_{0};
};

// Full reports of the leaders, replayed again (deterministic, so a resumed sweep prints the
// same); the first error in rank order. Where the scenario models goodput, each leader's as
// `run` models it, so that a result is the run object of its layout.
Status ReportLeaders(const Scenario& base, const std::vector<Scenario>& hardware,
                     const SweepSpec& spec, int jobs, SweepOutcome* out) {
  const size_t top =
      std::min<size_t>(out->ranked.size(), static_cast<size_t>(std::max(1, spec.top)));
  std::vector<size_t> leaders(top);
  for (size_t i = 0; i < top; ++i) leaders[i] = i;
  std::vector<StatusOr<StepReport>> reports(top, Internal("sweep: a leader was not replayed"));
  std::vector<std::optional<GoodputReport>> goodput(top);
  PARASIM_RETURN_IF_ERROR(ParallelFor(leaders, jobs, [&](size_t i) -> Status {
    const SweepEntry& e = out->ranked[i];
    const Scenario& v = hardware[e.hardware];
    LoweredStep low;
    reports[i] = SimulateStep(v.model, e.training, e.layout, v.cluster, StepOptions{}, &low);
    const Scenario s = WithLayout(base, e);
    if (!reports[i].ok() || !GoodputModelled(s)) return Status::Ok();
    StatusOr<GoodputReport> g = ModelGoodput(s, reports[i]->step_time_s, low);
    if (!g.ok()) {
      reports[i] = g.status();
      return Status::Ok();
    }
    WithGoodput(s, *g, &*reports[i]);
    goodput[i] = std::move(*g);
    return Status::Ok();
  }));
  for (StatusOr<StepReport>& r : reports) {
    if (!r.ok()) return r.status();
    out->top_reports.push_back(std::move(*r));
  }
  out->top_goodput = std::move(goodput);
  return Status::Ok();
}

// The phases' wall clock, from the times each ended, and the rates.
void RecordTimes(Clock::time_point t0, Clock::time_point enumerated, Clock::time_point screened,
                 Clock::time_point replayed, Clock::time_point end, SweepOutcome* out) {
  auto seconds = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  out->enumerate_s = seconds(t0, enumerated);
  out->screen_s = seconds(enumerated, screened);
  out->replay_s = seconds(screened, replayed);
  out->report_s = seconds(replayed, end);
  out->elapsed_s = seconds(t0, end);
  if (out->elapsed_s > 0) {
    out->valid_layouts_per_second = static_cast<double>(out->valid_layouts) / out->elapsed_s;
    out->replays_per_second = static_cast<double>(out->replayed) / out->elapsed_s;
  }
}

}  // namespace

StatusOr<SweepOutcome> RunSweep(const Scenario& base, const SweepOptions& opt) {
  const auto t0 = Clock::now();
  SweepOutcome out;
  out.base_global_batch = base.training.global_batch;
  const SweepSpec spec = base.sweep ? *base.sweep : SweepSpec{};
  const std::vector<Scenario> hardware = SweepHardwareScenarios(base);
  PARASIM_ASSIGN_OR_RETURN(std::vector<SweepEntry> entries,
                           EnumerateLayouts(base, hardware, spec, opt, &out));
  const auto enumerated = Clock::now();
  Evaluation evaluation(opt, &entries);
  PARASIM_RETURN_IF_ERROR(evaluation.Open());
  PARASIM_RETURN_IF_ERROR(evaluation.ScreenLayouts(hardware));
  const auto screened = Clock::now();
  PARASIM_RETURN_IF_ERROR(evaluation.ReplayLayouts(hardware, spec));
  out.resumed = evaluation.resumed();
  out.resume_refused = evaluation.refused();
  const auto replayed = Clock::now();
  for (const SweepEntry& e : entries) {
    (e.replayed ? out.replayed : e.pruned ? out.pruned : out.memory_rejected) += 1;
    if (e.replayed && !e.fits) out.replayed_over_memory.push_back(e);
  }
  SweepRanking ranking = RankEntries(spec, entries);
  out.ranked = std::move(ranking.ranked);
  out.leanest = std::move(ranking.leanest);
  out.pareto = std::move(ranking.pareto);
  out.feasible = static_cast<int64_t>(out.ranked.size());
  if (!SweepWorkers{opt.jobs, opt.processes}.primary()) return out;  // rank 0 reports and writes
  PARASIM_RETURN_IF_ERROR(ReportLeaders(base, hardware, spec, opt.jobs, &out));
  if (!opt.out_csv.empty()) {
    PARASIM_RETURN_IF_ERROR(WriteCsv(opt.out_csv, out.ranked, entries, opt.fingerprint));
  }
  RecordTimes(t0, enumerated, screened, replayed, Clock::now(), &out);
  return out;
}

}  // namespace parasim
