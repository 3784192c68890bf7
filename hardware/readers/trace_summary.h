// What `compare --trace` measures from a profiler trace: each kernel kind's count and time, per
// ProfilerStep and for the step(s) chosen, communication by family (NCCL, DeepEP dispatch, ...),
// the idle time, and the overlap of communication with compute on the streams; and the
// per-kernel listing (name, kind, family, count, time) that `compare --kernels` prints.
//
// Steps: a trace that marks no ProfilerStep#N is one step. One step: that one. Several: by
// default their average, leaving the first out as warm-up when there are three or more;
// `--step N` takes ProfilerStep#N, `--step all` averages every step. TraceSummary::steps_said
// says which, in words, for the report. Only the trace's main device is summed (a note says how
// many events of other devices were left out), and, when the trace has steps, only the kernels
// launched inside them.
//
//   PARASIM_ASSIGN_OR_RETURN(ProfilerTrace t, ReadJsonTrace(path));
//   PARASIM_ASSIGN_OR_RETURN(StepChoice c, StepChoice::Parse(step_flag));  // "", "3", "all"
//   PARASIM_ASSIGN_OR_RETURN(TraceSummary s, SummarizeTrace(t, table, c));
//   s.measured.time_ns[static_cast<int>(KernelClass::kGemm)];
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hardware/readers/kernel_classes.h"
#include "hardware/readers/profiler_trace.h"
#include "hardware/readers/stream_overlap.h"
#include "sim/status.h"

namespace parasim {

// Sums over one step (or an average over several: counts may then be fractional).
struct KindSums {
  std::array<double, kNumKernelClasses> count{};
  std::array<int64_t, kNumKernelClasses> time_ns{};
  std::map<std::string, int64_t> comm_time_ns;  // communication by family
  std::map<std::string, double> comm_count;
  int64_t span_ns = 0;  // first GPU event's start to the last one's end
  int64_t busy_ns = 0;  // covered by some GPU event
  int64_t idle_ns = 0;  // span - busy
  // Communication against compute (GEMM, attention, normalization, element-wise; not copies).
  OverlapFacts overlap;
  int64_t Time(KernelClass k) const { return time_ns[static_cast<int>(k)]; }
  double Count(KernelClass k) const { return count[static_cast<int>(k)]; }
};

struct StepChoice {
  enum class Mode : uint8_t { kDefault, kOne, kAll };
  Mode mode = Mode::kDefault;
  int64_t step = 0;  // the N of ProfilerStep#N, for kOne
  // "" (default), "N", or "all".
  static StatusOr<StepChoice> Parse(std::string_view text);
};

struct KernelListing {
  std::string name;
  KernelClass kind = KernelClass::kElementwise;
  std::string family;
  int64_t count = 0;    // over the chosen steps
  int64_t time_ns = 0;  // over the chosen steps
};

struct TraceSummary {
  std::string file;
  int64_t device = -1;                // the device summed
  std::vector<int64_t> steps_chosen;  // ProfilerStep numbers; empty: the whole trace
  std::string steps_said;             // which steps, in words
  std::vector<std::pair<int64_t, KindSums>> per_step;  // every step, by number
  KindSums measured;                   // the chosen step, or the chosen steps' average
  std::vector<KernelListing> kernels;  // over the chosen steps, most time first
  std::vector<std::string> notes;      // what was left out, and why
};

StatusOr<TraceSummary> SummarizeTrace(const ProfilerTrace& trace, const KernelClassTable& table,
                                      const StepChoice& choice = {});

// The listing as text: one line per kernel name (kind, family, count, total and per-step ms,
// name), widest first, with a header; `steps` divides the per-step column.
std::string FormatKernelListing(const std::vector<KernelListing>& rows, int steps);
// The same rows as tab-separated values with a header line (name, kind, family, count, total_us).
std::string KernelListingTsv(const std::vector<KernelListing>& rows);

}  // namespace parasim
