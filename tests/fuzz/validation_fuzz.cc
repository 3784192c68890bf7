// libFuzzer target: any text as a validation file is validated or refused with a located error.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "scenarios/validate.h"
#include "sim/io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path =
      "/tmp/parasim-validation-fuzz-" + std::to_string(getpid()) + ".yaml";
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (!parasim::WriteFileAtomic(path, text).ok()) return 0;
  parasim::SweepOptions o;
  o.max_layouts = 64;  // fuzzed sweeps stay small
  auto r = parasim::Validate(path, {}, o);
  if (!r.ok() && r.status().message().find(path) == std::string::npos &&
      r.status().message().find("fuzz") == std::string::npos) {
    // Every refusal names the file it read.
    if (r.status().message().find(":") == std::string::npos) std::abort();
  }
  return 0;
}
