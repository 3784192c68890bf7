#include "hardware/readers/trace_summary.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <unordered_map>

#include "hardware/readers/bounded_input.h"

namespace parasim {

StatusOr<StepChoice> StepChoice::Parse(std::string_view text) {
  StepChoice c;
  if (text.empty()) return c;
  if (text == "all") {
    c.mode = Mode::kAll;
    return c;
  }
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), c.step);
  if (ec != std::errc() || end != text.data() + text.size() || c.step < 0) {
    return InvalidArgument(fmt::format(
        "--step={}:1:8: error: expected the N of a ProfilerStep#N, or all (to average every step)",
        text));
  }
  c.mode = Mode::kOne;
  return c;
}

namespace {

bool IsCompute(KernelClass k) {
  return k == KernelClass::kGemm || k == KernelClass::kAttention ||
         k == KernelClass::kNormalization || k == KernelClass::kElementwise;
}

// The sums of the events at `idx`.
KindSums Sum(const ProfilerTrace& t, const std::vector<KernelMatch>& match,
             const std::vector<uint32_t>& idx) {
  KindSums s;
  std::vector<Interval> all, comm, compute;
  all.reserve(idx.size());
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (uint32_t i : idx) {
    const GpuEvent& e = t.events[i];
    const KernelMatch& m = match[e.name];
    const int k = static_cast<int>(m.kind);
    s.count[k] += 1;
    s.time_ns[k] += e.dur_ns;
    const Interval iv{e.start_ns, e.end_ns()};
    all.push_back(iv);
    if (m.kind == KernelClass::kCommunication) {
      s.comm_time_ns[std::string(m.family)] += e.dur_ns;
      s.comm_count[std::string(m.family)] += 1;
      comm.push_back(iv);
    } else if (IsCompute(m.kind)) {
      compute.push_back(iv);
    }
    first = std::min(first, iv.start_ns);
    last = std::max(last, iv.end_ns);
  }
  if (idx.empty()) return s;
  s.span_ns = last - first;
  s.busy_ns = CoveredLength(MergeIntervals(std::move(all)));
  s.idle_ns = s.span_ns - s.busy_ns;
  s.overlap = MeasureOverlap(std::move(comm), std::move(compute));
  return s;
}

// The mean of several steps' sums (nanoseconds rounded to the nearest).
KindSums Average(const std::vector<const KindSums*>& v) {
  KindSums out;
  const double n = static_cast<double>(v.size());
  auto mean = [n](double total) { return static_cast<int64_t>(std::llround(total / n)); };
  std::array<double, kNumKernelClasses> time{};
  std::map<std::string, double> comm_time;
  double span = 0, busy = 0, ov_comm = 0, ov_compute = 0, ov_over = 0;
  for (const KindSums* s : v) {
    for (int k = 0; k < kNumKernelClasses; ++k) {
      out.count[k] += s->count[k] / n;
      time[k] += static_cast<double>(s->time_ns[k]);
    }
    for (const auto& [f, ns] : s->comm_time_ns) comm_time[f] += static_cast<double>(ns);
    for (const auto& [f, c] : s->comm_count) out.comm_count[f] += c / n;
    span += static_cast<double>(s->span_ns);
    busy += static_cast<double>(s->busy_ns);
    ov_comm += static_cast<double>(s->overlap.comm_ns);
    ov_compute += static_cast<double>(s->overlap.compute_ns);
    ov_over += static_cast<double>(s->overlap.overlapped_ns);
  }
  for (int k = 0; k < kNumKernelClasses; ++k) out.time_ns[k] = mean(time[k]);
  for (const auto& [f, ns] : comm_time) out.comm_time_ns[f] = mean(ns);
  out.span_ns = mean(span);
  out.busy_ns = mean(busy);
  out.idle_ns = out.span_ns - out.busy_ns;
  out.overlap.comm_ns = mean(ov_comm);
  out.overlap.compute_ns = mean(ov_compute);
  out.overlap.overlapped_ns = mean(ov_over);
  out.overlap.exposed_ns = out.overlap.comm_ns - out.overlap.overlapped_ns;
  return out;
}

std::string StepRange(const std::vector<ProfilerStep>& steps) {
  if (steps.size() == 1) return fmt::format("ProfilerStep#{}", steps[0].number);
  return fmt::format("ProfilerStep#{}..#{}", steps.front().number, steps.back().number);
}

// Which steps (indices into trace.steps) the choice takes, and the words that say so.
StatusOr<std::vector<int>> ChooseSteps(const ProfilerTrace& t, const StepChoice& c,
                                       std::string* said) {
  const int n = static_cast<int>(t.steps.size());
  std::vector<int> out;
  if (c.mode == StepChoice::Mode::kOne) {
    for (int i = 0; i < n; ++i) {
      if (t.steps[i].number == c.step) out.push_back(i);
    }
    if (out.empty()) {
      return InvalidArgument(InputError(
          t.file, 1, 1,
          fmt::format("--step {}: the trace holds {}", c.step,
                      n == 0 ? std::string("no ProfilerStep#N ranges") : StepRange(t.steps))));
    }
    *said = fmt::format("ProfilerStep#{} of {} (--step {})", c.step, StepRange(t.steps), c.step);
    return out;
  }
  const int from = (c.mode == StepChoice::Mode::kDefault && n >= 3) ? 1 : 0;
  for (int i = from; i < n; ++i) out.push_back(i);
  if (n == 1) {
    *said = fmt::format("ProfilerStep#{}, the trace's only step", t.steps[0].number);
  } else if (from == 1) {
    *said = fmt::format(
        "the average of ProfilerStep#{}..#{} ({} of {} steps; #{} left out as warm-up; --step N "
        "takes one, --step all averages all)",
        t.steps[1].number, t.steps.back().number, n - 1, n, t.steps[0].number);
  } else {
    *said = fmt::format("the average of {} ({} steps; --step N takes one)", StepRange(t.steps), n);
  }
  return out;
}

std::vector<KernelListing> List(const ProfilerTrace& t, const std::vector<KernelMatch>& match,
                                const std::vector<std::vector<uint32_t>>& chosen) {
  std::unordered_map<uint32_t, KernelListing> by_name;
  for (const auto& idx : chosen) {
    for (uint32_t i : idx) {
      const GpuEvent& e = t.events[i];
      KernelListing& row = by_name[e.name];
      row.count += 1;
      row.time_ns += e.dur_ns;
    }
  }
  std::vector<KernelListing> rows;
  for (auto& [name, row] : by_name) {
    row.name = t.names[name];
    row.kind = match[name].kind;
    row.family = std::string(match[name].family);
    rows.push_back(std::move(row));
  }
  std::sort(rows.begin(), rows.end(), [](const KernelListing& a, const KernelListing& b) {
    return a.time_ns != b.time_ns ? a.time_ns > b.time_ns : a.name < b.name;
  });
  return rows;
}

}  // namespace

StatusOr<TraceSummary> SummarizeTrace(const ProfilerTrace& t, const KernelClassTable& table,
                                      const StepChoice& choice) {
  TraceSummary s;
  s.file = t.file;
  s.device = t.MainDevice();
  const std::vector<KernelMatch> match = table.ClassifyNames(t);
  const bool stepped = !t.steps.empty();
  // Events of the main device, by step (index 0 holds those outside every step).
  std::vector<std::vector<uint32_t>> by_step(t.steps.size() + 1);
  int64_t other_device = 0;
  for (uint32_t i = 0; i < t.events.size(); ++i) {
    if (t.events[i].device != s.device) {
      ++other_device;
      continue;
    }
    by_step[t.events[i].step + 1].push_back(i);
  }
  if (other_device > 0) {
    s.notes.push_back(fmt::format("{} GPU events of other devices than device {} left out",
                                  other_device, s.device));
  }
  if (t.gpu_begin_events > 0) {
    s.notes.push_back(fmt::format(
        "{} GPU events written as begin/end pairs (\"ph\": \"B\" then \"E\") left out: only "
        "complete events (\"ph\": \"X\") are read, as the PyTorch profiler writes them",
        t.gpu_begin_events));
  }
  std::vector<std::vector<uint32_t>> chosen;
  if (!stepped) {
    s.steps_said = "the whole trace (it marks no ProfilerStep#N)";
    chosen.push_back(std::move(by_step[0]));
    s.measured = Sum(t, match, chosen[0]);
  } else {
    if (!by_step[0].empty()) {
      s.notes.push_back(fmt::format("{} GPU events launched outside every ProfilerStep left out",
                                    by_step[0].size()));
    }
    for (size_t i = 0; i < t.steps.size(); ++i) {
      s.per_step.emplace_back(t.steps[i].number, Sum(t, match, by_step[i + 1]));
    }
    PARASIM_ASSIGN_OR_RETURN(std::vector<int> pick, ChooseSteps(t, choice, &s.steps_said));
    if (choice.mode != StepChoice::Mode::kOne) {
      // A step range with no GPU kernel (the profiler stopped, or the range closed on the host
      // before any work) would average in as a step of zero time.
      std::vector<int64_t> empty;
      std::erase_if(pick, [&](int i) {
        if (!by_step[i + 1].empty()) return false;
        empty.push_back(t.steps[i].number);
        return true;
      });
      if (!empty.empty()) {
        s.steps_said +=
            fmt::format("; left out, holding no GPU kernel: #{}", fmt::join(empty, ", #"));
      }
    }
    std::vector<const KindSums*> sums;
    for (int i : pick) {
      s.steps_chosen.push_back(t.steps[i].number);
      sums.push_back(&s.per_step[i].second);
      chosen.push_back(by_step[i + 1]);
    }
    s.measured = Average(sums);
  }
  int64_t kernels = 0;
  for (const auto& idx : chosen) kernels += static_cast<int64_t>(idx.size());
  if (kernels == 0) {
    return InvalidArgument(InputError(t.file, 1, 1, "no GPU kernels in " + s.steps_said));
  }
  s.kernels = List(t, match, chosen);
  return s;
}

std::string FormatKernelListing(const std::vector<KernelListing>& rows, int steps) {
  std::string out = fmt::format("{:<14} {:<26} {:>8} {:>12} {:>12}  {}\n", "kind", "family",
                                "count", "total ms", "ms/step", "kernel");
  const double per = steps > 0 ? static_cast<double>(steps) : 1;
  for (const KernelListing& r : rows) {
    out += fmt::format("{:<14} {:<26} {:>8} {:>12.3f} {:>12.3f}  {}\n", KernelClassName(r.kind),
                       r.family, r.count, r.time_ns * 1e-6, r.time_ns * 1e-6 / per, r.name);
  }
  return out;
}

std::string KernelListingTsv(const std::vector<KernelListing>& rows) {
  std::string out = "name\tkind\tfamily\tcount\ttotal_us\n";
  for (const KernelListing& r : rows) {
    std::string name = r.name;
    std::replace(name.begin(), name.end(), '\t', ' ');
    out += fmt::format("{}\t{}\t{}\t{}\t{:.3f}\n", name, KernelClassName(r.kind), r.family, r.count,
                       r.time_ns * 1e-3);
  }
  return out;
}

}  // namespace parasim
