// nccl-tests (and rccl-tests) logs as they are written and pasted: every version's header and
// row layout, read by the column header each run prints (2017's "bytes N type op time algbw busbw
// res", 2019's "size count type redop time ... error", 2022's "... redop root ... #wrong", the
// copy-bandwidth and per-iteration columns, `-C` cputime, `-T` timestamps), `-G` CUDA-graph runs,
// in-place and out-of-place results both kept. Launcher prefixes and markdown indentation are
// stripped (hardware/readers/nccl_log_lines.h). A file may hold several programs one after the
// other: each run is its own section, split at its header, with its own op, ranks and nodes.
//
// The op of a section: the program its header names ("# Collective test starting:
// all_reduce_perf_mpi", nccl-tests 2.15 and later), checked against the op given (--op); when
// they disagree the error names both. A log that does not name its program takes the given op
// (one per section, comma-separated, when it holds several), else its file name's X_perf; the
// rows must fit the op (an all_gather run prints redop "none", an all_reduce run a reduction).
// Multi-node facts come from the device lines ("#  Rank  8 Group  0 Pid 4008 on node001 device
// 0 [0x07] NVIDIA H100 80GB HBM3"): ranks, nodes, GPUs per node, and the GPU's name.
//
// Refused, as "file:line: what": a negative or absurd time, size or bandwidth; a row whose
// fields do not fit its column header; the same size twice in one run, and a rank listed twice
// (processes that ran apart: nccl-tests built without MPI=1 and started by mpirun); an op that
// disagrees with the header; a log with no result rows. Lines too long to be a log line (junk,
// 2 MB of binary) are skipped and counted in `notes`.
//
//   PARASIM_ASSIGN_OR_RETURN(NcclTestsLog log, ReadNcclTestsLog("ar.log", {.op = "all_reduce"}));
//   for (const NcclTestsSection& s : log.sections)
//     for (const NcclTestsRow& r : s.rows) Use(s.op, s.ranks, s.per_node, r.bytes,
//                                              r.out_of_place.time_us);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hardware/readers/bounded_input.h"
#include "sim/status.h"

namespace parasim {

// One half of a result row: out-of-place or in-place.
struct NcclTestsResult {
  bool present = false;  // false: the run printed no such half (trace replay: in-place only)
  double time_us = 0;    // time, or cputime with -C
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  std::string wrong;  // "#wrong" ("0", "N/A") or the old "error" ("0e+00"), as written
};

struct NcclTestsRow {
  int64_t bytes = 0;  // the "size" column
  int64_t count = 0;  // elements
  std::string type;   // float, bfloat16, ...
  std::string redop;  // sum, none, ... ("" when the layout has no redop column)
  int64_t root = -1;
  NcclTestsResult out_of_place, in_place;
  int64_t line = 0;
};

struct NcclTestsDevice {
  int64_t rank = -1;
  std::string host;
  int64_t device = -1;
  std::string bus;   // "0x37", "0000:04:00"; empty where the line gives none
  std::string name;  // "NVIDIA H100 80GB HBM3"
};

struct NcclTestsSection {
  std::string program;   // as its header names it ("all_reduce_perf_mpi"), or ""
  std::string op;        // all_reduce, all_gather, reduce_scatter, alltoall, sendrecv, broadcast,
                         // reduce, gather, scatter, alltoallv, hypercube
  std::string op_from;   // where the op came from, in words
  int64_t ranks = 0;     // device lines (0 when the log has none)
  int64_t nodes = 0;     // distinct hosts
  int64_t per_node = 0;  // ranks on the busiest host
  std::string gpu;       // the device name of rank 0's line
  std::vector<NcclTestsDevice> devices;
  int64_t threads = 0, gpus_per_thread = 0;  // nThread, nGpus
  int64_t graph_launches = 0;                // "graph: N" (-G N); 0: no CUDA graphs
  bool cputime = false;                      // -C: the time columns are CPU time
  std::vector<std::string> columns;          // the column header, as written
  std::vector<NcclTestsRow> rows;
  int64_t first_line = 0, last_line = 0;
  std::optional<double> avg_busbw_gbps;  // "# Avg bus bandwidth"
  int64_t out_of_bounds = 0;             // "# Out of bounds values : N FAILED"
  int64_t out_of_bounds_line = 0;        // that footer's line; 0: the run printed none
};

struct NcclTestsLog {
  std::string file;
  std::vector<NcclTestsSection> sections;
  std::vector<std::string> notes;  // what was passed over, line by line
};

struct NcclLogOptions {
  // The op the user gives (--op): "all_reduce" or "all_reduce_perf"; several, comma-separated,
  // one per section, for logs whose headers do not name their programs.
  std::string op;
  InputLimits limits{int64_t{256} << 20, 200, int64_t{16} << 20};
  size_t max_line_bytes = 16384;
};

StatusOr<NcclTestsLog> ReadNcclTestsLog(const std::string& path,
                                        const NcclLogOptions& options = {});
// The same, from text held in memory (`file` names it in errors).
StatusOr<NcclTestsLog> ParseNcclTestsLog(std::string_view text, const std::string& file,
                                         const NcclLogOptions& options = {});

// Whether `text` is an nccl-tests (or rccl-tests) log rather than a measurements file: a run's
// header line ("# nThread", "# nccl-tests version", "# Collective test starting") or, for a table
// pasted alone, the column header of a result table.
bool LooksLikeNcclTestsLog(std::string_view text);

// "all_reduce_perf_mpi", "all_reduce_perf", "allreduce", "all_reduce" -> "all_reduce", and a
// file name with <op>_perf anywhere in it ("node1_all_reduce_perf.log"); "" when the name is no
// nccl-tests program.
std::string NcclTestsOp(std::string_view name);

}  // namespace parasim
