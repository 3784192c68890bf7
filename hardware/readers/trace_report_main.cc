// Reads a profiler trace and prints what parasim measures from it: the GPU, the steps, each
// kernel kind's count and time, communication by family, idle time and overlap; with --kernels
// the per-kernel listing, with --tsv FILE the listing as tab-separated values. A preview of
// `compare --trace --kernels` and the tool behind the timings in hardware/readers/README.md.
//
//   trace_report TRACE.json[.gz] [--step N|all] [--kernels] [--tsv OUT] [--classes FILE]
#include <fmt/core.h>

#include <cstdio>
#include <string>
#include <string_view>

#include "hardware/readers/json_trace.h"
#include "hardware/readers/kernel_classes.h"
#include "hardware/readers/trace_gpu.h"
#include "hardware/readers/trace_summary.h"
#include "hardware/spec.h"
#include "sim/io.h"

namespace parasim {
namespace {

struct Args {
  std::string trace, step, tsv, classes;
  bool kernels = false;
};

StatusOr<Args> ParseArgs(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto value = [&](std::string* out) -> Status {
      if (i + 1 >= argc) return InvalidArgument(fmt::format("{} needs a value", arg));
      *out = argv[++i];
      return Status::Ok();
    };
    if (arg == "--step") {
      PARASIM_RETURN_IF_ERROR(value(&a.step));
    } else if (arg == "--tsv") {
      PARASIM_RETURN_IF_ERROR(value(&a.tsv));
    } else if (arg == "--classes") {
      PARASIM_RETURN_IF_ERROR(value(&a.classes));
    } else if (arg == "--kernels") {
      a.kernels = true;
    } else if (a.trace.empty() && !arg.starts_with("--")) {
      a.trace = std::string(arg);
    } else {
      return InvalidArgument(fmt::format("unknown argument '{}'", arg));
    }
  }
  if (a.trace.empty()) {
    return InvalidArgument(
        "usage: trace_report TRACE.json[.gz] [--step N|all] [--kernels] [--tsv OUT] "
        "[--classes FILE]");
  }
  return a;
}

void PrintSums(const KindSums& m) {
  fmt::print("{:<14} {:>10} {:>12}\n", "kind", "count", "time ms");
  for (int k = 0; k < kNumKernelClasses; ++k) {
    fmt::print("{:<14} {:>10.1f} {:>12.3f}\n", KernelClassName(static_cast<KernelClass>(k)),
               m.count[k], m.time_ns[k] * 1e-6);
  }
  fmt::print("{:<14} {:>10} {:>12.3f}\n", "idle", "", m.idle_ns * 1e-6);
  fmt::print("{:<14} {:>10} {:>12.3f}\n", "span", "", m.span_ns * 1e-6);
  for (const auto& [family, ns] : m.comm_time_ns) {
    fmt::print("  communication: {:<26} {:>8.1f} {:>12.3f} ms\n", family, m.comm_count.at(family),
               ns * 1e-6);
  }
  fmt::print(
      "overlap: communication {:.3f} ms (union), compute {:.3f} ms (union), communication beside "
      "compute {:.3f} ms, exposed {:.3f} ms ({:.1f}% hidden)\n",
      m.overlap.comm_ns * 1e-6, m.overlap.compute_ns * 1e-6, m.overlap.overlapped_ns * 1e-6,
      m.overlap.exposed_ns * 1e-6, 100 * m.overlap.hidden_fraction());
}

Status Run(const Args& a) {
  PARASIM_ASSIGN_OR_RETURN(ProfilerTrace t, ReadJsonTrace(a.trace));
  PARASIM_ASSIGN_OR_RETURN(KernelClassTable table, LoadKernelClasses(a.classes));
  PARASIM_ASSIGN_OR_RETURN(StepChoice choice, StepChoice::Parse(a.step));
  PARASIM_ASSIGN_OR_RETURN(TraceSummary s, SummarizeTrace(t, table, choice));
  PARASIM_ASSIGN_OR_RETURN(HardwareCatalog catalog, LoadHardwareCatalog());
  const TraceGpu gpu = IdentifyTraceGpu(t, catalog);
  fmt::print("{}: {} events read ({:.1f} MB), {} GPU events, {} kernel names\n", t.file,
             t.events_read, t.bytes_read / 1e6, t.events.size(), t.names.size());
  fmt::print("GPU: {}; device {}", gpu.Describe(), s.device);
  if (t.distributed) {
    fmt::print("; rank {} of {}", t.distributed->rank, t.distributed->world_size);
  }
  fmt::print("\nsteps: {}\n", s.steps_said);
  for (const std::string& n : s.notes) fmt::print("note: {}\n", n);
  PrintSums(s.measured);
  if (s.per_step.size() > 1) {
    for (const auto& [number, sums] : s.per_step) {
      fmt::print("\nProfilerStep#{}:\n", number);
      PrintSums(sums);
    }
  }
  const int steps = std::max<int>(1, static_cast<int>(s.steps_chosen.size()));
  if (a.kernels) fmt::print("\n{}", FormatKernelListing(s.kernels, steps));
  if (!a.tsv.empty()) PARASIM_RETURN_IF_ERROR(WriteFileAtomic(a.tsv, KernelListingTsv(s.kernels)));
  return Status::Ok();
}

}  // namespace
}  // namespace parasim

int main(int argc, char** argv) {
  auto args = parasim::ParseArgs(argc, argv);
  parasim::Status st = args.ok() ? parasim::Run(*args) : args.status();
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.message().c_str());
    return st.exit_code();
  }
  return 0;
}
