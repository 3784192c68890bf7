// A folder of per-rank profiler traces (one file per rank, as torch.profiler's
// tensorboard_trace_handler writes them: rank-0.json.gz, worker0.pt.trace.json, ...), read one
// file at a time and summed (hardware/readers/trace_summary.h) so that only one trace's events
// are ever in memory. The rank is the trace's distributedInfo.rank, else a number after "rank"
// in the file name (rank-3, rank_3, rank3); files of other kinds (a README, .txt) are passed
// over. Refused: an empty folder, a trace whose rank cannot be told, two traces of one rank, and
// traces that disagree on world_size.
//
//   PARASIM_ASSIGN_OR_RETURN(std::vector<RankTrace> ranks, ReadRankTraces(dir, table, choice));
//   for (const RankTrace& r : ranks) Compare(r.rank, r.summary.measured);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hardware/readers/json_trace.h"
#include "hardware/readers/kernel_classes.h"
#include "hardware/readers/trace_summary.h"
#include "sim/status.h"

namespace parasim {

struct RankTrace {
  int64_t rank = -1;
  int64_t world_size = 0;  // 0 when the trace does not state it
  std::string file;
  std::string gpu_name;  // the main device's deviceProperties name
  TraceSummary summary;
};

// The traces of `dir`, by rank.
StatusOr<std::vector<RankTrace>> ReadRankTraces(const std::string& dir,
                                                const KernelClassTable& table,
                                                const StepChoice& choice = {},
                                                const JsonTraceOptions& options = {});

// The rank in a trace's file name ("rank-3.json.gz", "trace_rank_12.pt.trace.json"), or -1.
int64_t RankFromFileName(const std::string& file);

}  // namespace parasim
