// Runs the parasim binary from a test (wired through Bazel `data`), capturing exit code,
// stdout and stderr. Paths are resolved under the test's runfiles ($TEST_SRCDIR/parasim).
#pragma once

#include <string>

namespace parasim::testing {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Absolute path of a workspace file in the runfiles tree.
std::string Runfile(const std::string& workspace_path);

// Runs `parasim ARGS` (ARGS is a shell-quoted string).
CliResult RunParasim(const std::string& args);

// Runs a shell command line, capturing its exit code, stdout and stderr.
CliResult RunShell(const std::string& command);

// A file's bytes ("" when it cannot be read).
std::string Slurp(const std::string& path);

// A `sweep --json` output without its wall-clock keys (elapsed_s and the rates).
std::string WithoutTimings(const std::string& json);

// A `compare --json` kind's measured or predicted seconds (`key`: "measured_s" or
// "predicted_s") of the first stage; NaN when the output has no such kind.
double KindSeconds(const std::string& json, const std::string& kind, const std::string& key);

}  // namespace parasim::testing
