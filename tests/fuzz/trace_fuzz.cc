// libFuzzer target: any bytes as a PyTorch profiler (Kineto) trace file, plain or gzipped, are
// read or refused with an error naming the file, never a crash; a trace that reads is summed
// per kernel kind without a crash, and its times are finite and not negative. (Clang's UBSan
// reports, without stopping, rapidjson 1.1.0's own offset-on-null in internal/stack.h on its
// first parse: the Debian header's, fixed upstream after that release; nothing of ours.)
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "hardware/readers/json_trace.h"
#include "hardware/readers/kernel_classes.h"
#include "hardware/readers/trace_summary.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const parasim::KernelClassTable table = *parasim::LoadKernelClasses();
  // The reader takes a path: the bytes go to a file of this process's own.
  static const std::string path = "trace-fuzz-" + std::to_string(getpid()) + ".json";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  parasim::JsonTraceOptions o;
  o.limits.max_bytes = int64_t{4} << 20;  // a small limit, for fuzzing speed
  auto t = parasim::ReadJsonTrace(path, o);
  if (!t.ok()) {
    if (t.status().message().find(path) == std::string::npos) std::abort();
    return 0;
  }
  for (const parasim::GpuEvent& e : t->events) {
    if (e.dur_ns < 0 || e.name >= t->names.size()) std::abort();
  }
  auto s = parasim::SummarizeTrace(*t, table);
  if (!s.ok() && s.status().message().empty()) std::abort();
  return 0;
}
