#include "tools/trace_inputs.h"

#include <fmt/core.h>

#include <filesystem>
#include <utility>

#include "hardware/readers/json_trace.h"
#include "hardware/readers/rank_traces.h"
#include "strategies/placement.h"

namespace parasim {
namespace {

StatusOr<ComparedTrace> ReadOne(const std::string& path, const KernelClassTable& table,
                                const StepChoice& choice, const HardwareCatalog& catalog) {
  PARASIM_ASSIGN_OR_RETURN(ProfilerTrace t, ReadJsonTrace(path));
  ComparedTrace c;
  c.file = path;
  if (t.distributed && t.distributed->rank >= 0) {
    c.rank = t.distributed->rank;
    c.world_size = t.distributed->world_size;
  }
  c.gpu = IdentifyTraceGpu(t, catalog);
  PARASIM_ASSIGN_OR_RETURN(c.summary, SummarizeTrace(t, table, choice));
  return c;
}

// A rank trace's GPU by its deviceProperties name, as IdentifyTraceGpu tells it.
TraceGpu GpuOf(const RankTrace& r, const HardwareCatalog& catalog) {
  TraceGpu g;
  g.file = r.file;
  g.device = r.summary.device;
  g.name = r.gpu_name;
  if (const GpuSpec* spec = catalog.FindGpuByDevice(r.gpu_name)) {
    g.catalog_id = spec->id;
    g.sms = spec->sms;
    g.memory_bytes = static_cast<int64_t>(spec->memory.bytes());
  }
  return g;
}

// The GPU check of one trace: refused, or (forced, unknown) said.
Status CheckGpu(const ComparedTrace& t, const Scenario& s, bool force,
                std::vector<std::string>* warnings) {
  const std::string& want = s.cluster.gpu.id;
  if (t.gpu.catalog_id.empty()) {
    warnings->push_back(
        fmt::format("{}: the trace's GPU, {}, is not in the catalog (hardware/catalog/gpus.yaml "
                    "device_names): not checked against the scenario's {}",
                    t.file, t.gpu.Describe(), want));
    return Status::Ok();
  }
  if (Status st = CheckTraceGpu(t.gpu, want); !st.ok()) {
    if (!force) return st;
    warnings->push_back(fmt::format("{}: the trace ran on {}, the scenario on {} (--force)", t.file,
                                    t.gpu.Describe(), want));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<TraceInputs> ReadTraceInputs(const std::string& path, const KernelClassTable& table,
                                      const StepChoice& choice, const HardwareCatalog& catalog) {
  TraceInputs in;
  in.path = path;
  std::error_code ec;
  in.folder = std::filesystem::is_directory(path, ec);
  if (!in.folder) {
    PARASIM_ASSIGN_OR_RETURN(ComparedTrace c, ReadOne(path, table, choice, catalog));
    in.traces.push_back(std::move(c));
    return in;
  }
  PARASIM_ASSIGN_OR_RETURN(std::vector<RankTrace> ranks, ReadRankTraces(path, table, choice));
  for (RankTrace& r : ranks) {
    ComparedTrace c;
    c.gpu = GpuOf(r, catalog);
    c.file = std::move(r.file);
    c.rank = r.rank;
    c.world_size = r.world_size;
    c.summary = std::move(r.summary);
    in.traces.push_back(std::move(c));
  }
  return in;
}

Status PlaceTraces(const Scenario& s, int stage, bool force, TraceInputs* in) {
  const int64_t gpus = s.cluster.gpus();
  const Placement placement(s.layout, s.cluster);
  if (in->folder && stage >= 0) {
    return InvalidArgument(fmt::format(
        "--stage={}:1:9: error: --stage is for one trace; the traces of a folder go to their "
        "ranks' stages through the layout",
        stage));
  }
  if (stage >= s.layout.pp) {
    return InvalidArgument(fmt::format("--stage={}:1:9: error: expected a pipeline stage 0 to {}",
                                       stage, s.layout.pp - 1));
  }
  for (ComparedTrace& t : in->traces) {
    PARASIM_RETURN_IF_ERROR(CheckGpu(t, s, force, &in->warnings));
    if (t.world_size > 0 && t.world_size != gpus) {
      in->warnings.push_back(fmt::format(
          "{}: the traced job ran on {} ranks (distributedInfo.world_size), the scenario on {} "
          "GPUs",
          t.file, t.world_size, gpus));
    }
    if (t.rank >= gpus) {
      const std::string what = fmt::format(
          "rank {} is not in the scenario, whose layout has {} ranks: compare against the "
          "scenario of the traced job",
          t.rank, gpus);
      if (in->folder && !force)
        return InvalidArgument(fmt::format("{}:1:1: error: {}", t.file, what));
      in->warnings.push_back(fmt::format("{}: {}; stage 0 taken", t.file, what));
    }
    if (stage >= 0) {
      t.stage = stage;
    } else if (t.rank >= 0 && t.rank < gpus) {
      t.stage = placement.Coords(t.rank).pp;
    } else {
      t.stage = 0;
    }
  }
  return Status::Ok();
}

}  // namespace parasim
