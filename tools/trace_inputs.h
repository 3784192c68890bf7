// The traces `parasim compare` reads: one profiler trace, or a folder of per-rank traces
// (hardware/readers/rank_traces.h), each summed over the chosen steps, with its rank, its GPU and
// the pipeline stage it ran; and the checks against the scenario: the trace's GPU (from
// deviceProperties) must be the scenario's, every rank must exist in the scenario's layout.
//
//   PARASIM_ASSIGN_OR_RETURN(TraceInputs in, ReadTraceInputs(path, table, choice, catalog));
//   PARASIM_RETURN_IF_ERROR(PlaceTraces(scenario, /*stage=*/-1, /*force=*/false, &in));
//   for (const ComparedTrace& t : in.traces) Compare(t.stage, t.summary);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hardware/readers/kernel_classes.h"
#include "hardware/readers/trace_gpu.h"
#include "hardware/readers/trace_summary.h"
#include "hardware/spec.h"
#include "scenarios/scenario.h"
#include "sim/status.h"

namespace parasim {

struct ComparedTrace {
  std::string file;
  int64_t rank = -1;       // distributedInfo.rank, else rank-N in the file name; -1: not said
  int64_t world_size = 0;  // distributedInfo.world_size; 0: not said
  TraceGpu gpu;
  TraceSummary summary;
  int stage = 0;  // the pipeline stage it ran (PlaceTraces)
};

struct TraceInputs {
  std::string path;  // the file or folder given
  bool folder = false;
  std::vector<ComparedTrace> traces;  // by rank for a folder
  std::vector<std::string> warnings;  // what was checked and let pass (--force), or not checked
};

// `path` is a trace (.json, .json.gz) or a folder of them, one per rank.
StatusOr<TraceInputs> ReadTraceInputs(const std::string& path, const KernelClassTable& table,
                                      const StepChoice& choice, const HardwareCatalog& catalog);

// Sets each trace's stage and checks it against the scenario. One trace: `stage` when given
// (>= 0), else its rank's pipeline coordinate in the layout (rank order `parallelism.order`),
// else 0. A folder: each rank's coordinate (`stage` is refused). Refused unless `force`: a GPU
// other than the scenario's (the error names both), a rank the scenario's layout does not have.
Status PlaceTraces(const Scenario& s, int stage, bool force, TraceInputs* in);

}  // namespace parasim
