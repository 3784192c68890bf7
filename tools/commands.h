// The parasim verbs as library functions (the CLI parses flags, these do the work).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/status.h"
#include "strategies/processes.h"

namespace parasim {

struct CommonOptions {
  std::string file;
  // The scenario or validation document itself when it is not a file (the Python module's
  // dicts); `file` is then its display name in messages.
  std::optional<std::string> text;
  // Where --json output goes instead of stdout (the Python module), when set.
  std::string* json_out = nullptr;
  std::vector<std::string> sets;
  bool json = false;
  bool timing = false;
  int repeat = 1;  // run --timing: replays measured (the first, then the median and fastest)
  bool full = false;
  bool ops = false;  // replay at op granularity
  std::string trace;
  std::string svg;   // run: the pipeline timeline as SVG
  std::string from;  // report: a finished sweep's or scale's JSON
  // diff (and report --vs): scenario B, or its text (Python); --set-a / --set-b apply to one side
  std::string vs;
  std::optional<std::string> vs_text;
  std::vector<std::string> sets_a, sets_b;
  // compare: the profiler trace, the pipeline stage it was taken on
  std::string trace_in;
  int stage = 0;
  // sweep / scale
  int jobs = 0;  // 0 = all cores
  std::string out;
  bool resume = false;
  bool exhaustive = false;  // sweep: replay every layout that fits
  bool robust = false;      // sweep: replay the leaders under the cost model's swings
  int batch = 16;           // sweep: replays decided together
  // sweep: the MPI ranks it is spread over (tools/mpi_processes.h), null = this process alone
  const Processes* processes = nullptr;
  int64_t max_layouts = 10'000'000;
  std::vector<int64_t> gpus;  // scale: GPU counts
  bool weak = false;          // scale: fixed per-GPU batch
  bool markdown = false;      // validate: a Markdown table for docs/MODEL.md
  // fit / calibrate
  std::vector<std::string> inputs;  // measurement files and nccl-tests logs
  std::string gpu, intra, inter;
  std::string op;  // fit: the collective of nccl-tests logs that do not name their program
  std::vector<std::string> runs;    // fit --runs: validation-format files of measured step times
  std::vector<std::string> params;  // fit --runs --params: the parameters to fit (default all)
  std::string scenario;             // calibrate: add this scenario's GEMM shapes
  bool quick = false;
  std::string only;  // calibrate: parts to run (comma-separated), all when empty
};

Status RunCommand(const CommonOptions& opt);
Status MemoryCommand(const CommonOptions& opt);
Status CatalogCommand(const CommonOptions& opt);
Status SweepCommand(const CommonOptions& opt);
// "8,16,64" or "8,16,...,4096" (the progression of the first two, up to the last); "" = none.
StatusOr<std::vector<int64_t>> ParseGpuList(const std::string& text);
Status ScaleCommand(const CommonOptions& opt);
Status ValidateCommand(const CommonOptions& opt);
Status FitCommand(const CommonOptions& opt);
Status ReportCommand(const CommonOptions& opt);
// A PyTorch profiler trace of one step set against the replay of the same rank.
Status CompareCommand(const CommonOptions& opt);
// Two what-ifs side by side: A and B (or A under two --set variants).
Status DiffCommand(const CommonOptions& opt);
// Runs the calibration program (tools/calibrate); `self` is argv[0], to find it beside parasim.
Status CalibrateCommand(const CommonOptions& opt, const std::string& self);

}  // namespace parasim
