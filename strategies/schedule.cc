#include "strategies/schedule.h"

#include <fmt/core.h>

#include <algorithm>

namespace parasim {

// The built-in schedules, one file each; their order here is their ScheduleId.
std::unique_ptr<PipelineSchedule> MakeGpipeSchedule();
std::unique_ptr<PipelineSchedule> Make1F1BSchedule();
std::unique_ptr<PipelineSchedule> MakeInterleavedSchedule();
std::unique_ptr<PipelineSchedule> MakeZbH1Schedule();
std::unique_ptr<PipelineSchedule> MakeZbH2Schedule();
std::unique_ptr<PipelineSchedule> MakeZbVSchedule();
std::unique_ptr<PipelineSchedule> MakeDualPipeVSchedule();
std::unique_ptr<PipelineSchedule> MakeDualPipeSchedule();

namespace {

std::vector<std::unique_ptr<PipelineSchedule>>& Registry() {
  static auto* schedules = [] {
    auto* v = new std::vector<std::unique_ptr<PipelineSchedule>>();
    v->push_back(MakeGpipeSchedule());        // kScheduleGpipe
    v->push_back(Make1F1BSchedule());         // kSchedule1F1B
    v->push_back(MakeInterleavedSchedule());  // kScheduleInterleaved
    v->push_back(MakeZbH1Schedule());         // zb-h1
    v->push_back(MakeZbH2Schedule());         // zb-h2
    v->push_back(MakeZbVSchedule());          // zb-v
    v->push_back(MakeDualPipeVSchedule());    // dualpipe-v
    v->push_back(MakeDualPipeSchedule());     // dualpipe
    return v;
  }();
  return *schedules;
}

}  // namespace

double PipelineSchedule::IdealBubble(const PipelineShape& shape) const {
  return static_cast<double>(shape.stages - 1) /
         (static_cast<double>(shape.chunks) * static_cast<double>(shape.micro_batches));
}

std::vector<std::vector<Unit>> PipelineSchedule::Orders(const PipelineShape& shape) const {
  std::vector<std::vector<Unit>> out(shape.stages);
  for (int s = 0; s < shape.stages; ++s) out[s] = Order(shape, s);
  return out;
}

std::vector<double> PipelineSchedule::InFlights(const PipelineShape& shape) const {
  std::vector<double> out(shape.stages);
  for (int s = 0; s < shape.stages; ++s) out[s] = InFlight(shape, s);
  return out;
}

std::string PipelineSchedule::IdealBubbleFormula(const PipelineShape& shape) const {
  return shape.chunks > 1 ? "(p-1)/(v m)" : "(p-1)/m";
}

std::string PipelineSchedule::Constraint(const PipelineShape&) const { return ""; }

const PipelineSchedule& ScheduleOf(ScheduleId id) {
  const auto& r = Registry();
  return *r[std::min<size_t>(id, r.size() - 1)];
}

std::string_view ScheduleName(ScheduleId id) { return ScheduleOf(id).name(); }

StatusOr<ScheduleId> FindSchedule(std::string_view name) {
  const auto& r = Registry();
  for (size_t i = 0; i < r.size(); ++i) {
    const auto aliases = r[i]->aliases();
    if (r[i]->name() == name || std::find(aliases.begin(), aliases.end(), name) != aliases.end()) {
      return static_cast<ScheduleId>(i);
    }
  }
  return InvalidArgument(
      fmt::format("unknown schedule '{}'; expected {}", std::string(name), ScheduleNames()));
}

std::string ScheduleNames() {
  std::string out;
  for (const auto& s : Registry()) out += (out.empty() ? "" : " | ") + std::string(s->name());
  return out;
}

std::vector<ScheduleId> AllSchedules() {
  std::vector<ScheduleId> out;
  for (size_t i = 0; i < Registry().size(); ++i) out.push_back(static_cast<ScheduleId>(i));
  return out;
}

ScheduleId RegisterSchedule(std::unique_ptr<PipelineSchedule> schedule) {
  Registry().push_back(std::move(schedule));
  return static_cast<ScheduleId>(Registry().size() - 1);
}

int ChunksOf(const Layout& layout) {
  const PipelineSchedule& s = ScheduleOf(layout.schedule);
  if (s.v_shape() || s.bidirectional()) return 2;
  return s.interleaves() ? std::max(1, layout.virtual_stages) : 1;
}

int RouteLength(const PipelineSchedule& schedule, int stages, int chunks) {
  return schedule.bidirectional() ? stages : stages * chunks;
}

int64_t ChunkMicroBatches(const PipelineSchedule& schedule, int64_t micro_batches) {
  return schedule.bidirectional() ? micro_batches / 2 : micro_batches;
}

int VirtualStageOf(const PipelineSchedule& schedule, int stages, int stage, int chunk) {
  const bool mirrored = schedule.v_shape() || schedule.bidirectional();
  if (mirrored && chunk == 1) return 2 * stages - 1 - stage;
  return chunk * stages + stage;
}

ChunkPlace PlaceOf(const PipelineSchedule& schedule, int stages, int virtual_stage) {
  const bool mirrored = schedule.v_shape() || schedule.bidirectional();
  if (mirrored && virtual_stage >= stages) return {2 * stages - 1 - virtual_stage, 1};
  return {virtual_stage % stages, virtual_stage / stages};
}

double PeakInFlight(const std::vector<Unit>& order, int chunks, double w_hold) {
  double held = 0, peak = 0;
  for (const Unit& u : order) {
    if (u.phase == Phase::kF) held += 1;
    if (u.phase == Phase::kB) held -= 1 - w_hold;
    if (u.phase == Phase::kW) held -= w_hold;
    peak = std::max(peak, held);
  }
  return peak / std::max(1, chunks);
}

double PeakActivationBytes(const std::vector<Unit>& order, const std::vector<double>& chunk_bytes,
                           double w_hold) {
  double held = 0, peak = 0;
  for (const Unit& u : order) {
    const double a = chunk_bytes[u.chunk];
    if (u.phase == Phase::kF) held += a;
    if (u.phase == Phase::kB) held -= a * (1 - w_hold);
    if (u.phase == Phase::kW) held -= a * w_hold;
    peak = std::max(peak, held);
  }
  return peak;
}

}  // namespace parasim
