#include "strategies/schedule.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>

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

bool PairsForwardBackward(const Layout& layout) {
  return layout.overlap_ep || ScheduleOf(layout.schedule).pairs_forward_backward();
}

std::vector<std::vector<Unit>> LayoutOrders(const Layout& layout, const PipelineShape& shape) {
  const PipelineSchedule& schedule = ScheduleOf(layout.schedule);
  std::vector<std::vector<Unit>> orders = schedule.Orders(shape);
  if (!layout.overlap_ep || schedule.pairs_forward_backward()) return orders;
  if (shape.stages == 1 && shape.chunks == 1 && !schedule.splits_backward()) {
    // One stage: the forward of each micro-batch beside the backward of the one before
    // (Megatron-Core's combined 1F1B), two micro-batches in flight.
    std::vector<Unit> o;
    const int64_t m = shape.micro_batches;
    o.push_back({Phase::kF, 0, 0});
    for (int64_t j = 1; j < m; ++j) {
      o.push_back({Phase::kF, 0, j, true});
      o.push_back({Phase::kB, 0, j - 1});
    }
    o.push_back({Phase::kB, 0, m - 1});
    orders[0] = std::move(o);
    return orders;
  }
  // Several stages: the steady state's forward and the backward after it, of another
  // micro-batch or chunk (the forward does not wait for that backward, nor it for the forward).
  for (std::vector<Unit>& o : orders) {
    for (size_t i = 0; i + 1 < o.size(); ++i) {
      const Unit& n = o[i + 1];
      if (o[i].phase == Phase::kF && n.phase == Phase::kB &&
          (n.mb != o[i].mb || n.chunk != o[i].chunk)) {
        o[i].pair = true;
      }
    }
  }
  return orders;
}

std::shared_ptr<const std::vector<std::vector<Unit>>> SharedLayoutOrders(
    const Layout& layout, const PipelineShape& shape) {
  using Key = std::tuple<int, bool, int, int, int64_t>;
  using Orders = std::vector<std::vector<Unit>>;
  // At most this many units are kept (16 bytes each): the cache starts over past it.
  constexpr size_t kMaxUnits = size_t{4} << 20;
  static std::mutex mu;
  static std::map<Key, std::shared_ptr<const Orders>> cache;
  static size_t units = 0;
  const Key key{static_cast<int>(layout.schedule), layout.overlap_ep, shape.stages, shape.chunks,
                shape.micro_batches};
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  auto orders = std::make_shared<const Orders>(LayoutOrders(layout, shape));
  size_t n = 0;
  for (const auto& o : *orders) n += o.size();
  std::lock_guard<std::mutex> lock(mu);
  if (units + n > kMaxUnits) {
    cache.clear();
    units = 0;
  }
  if (cache.emplace(key, orders).second) units += n;
  return orders;
}

std::shared_ptr<const std::vector<double>> SharedInFlights(const Layout& layout,
                                                           const PipelineShape& shape) {
  using Key = std::tuple<int, int, int, int64_t, double>;
  // At most this many shapes are kept: the cache starts over past it.
  constexpr size_t kMaxShapes = 4096;
  static std::mutex mu;
  static std::map<Key, std::shared_ptr<const std::vector<double>>> cache;
  const Key key{static_cast<int>(layout.schedule), shape.stages, shape.chunks, shape.micro_batches,
                shape.w_hold};
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  auto in_flights =
      std::make_shared<const std::vector<double>>(ScheduleOf(layout.schedule).InFlights(shape));
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() >= kMaxShapes) cache.clear();
  cache.emplace(key, in_flights);
  return in_flights;
}

int ChunksOf(const Layout& layout) {
  const PipelineSchedule& s = ScheduleOf(layout.schedule);
  if (s.mirrored()) return 2;
  return s.interleaves() ? std::max(1, layout.virtual_stages) : 1;
}

int RouteLength(const PipelineSchedule& schedule, int stages, int chunks) {
  return schedule.bidirectional() ? stages : stages * chunks;
}

int64_t ChunkMicroBatches(const PipelineSchedule& schedule, int64_t micro_batches) {
  return schedule.bidirectional() ? micro_batches / 2 : micro_batches;
}

int VirtualStageOf(const PipelineSchedule& schedule, int stages, int stage, int chunk) {
  if (schedule.mirrored() && chunk == 1) return 2 * stages - 1 - stage;
  return chunk * stages + stage;
}

ChunkPlace PlaceOf(const PipelineSchedule& schedule, int stages, int virtual_stage) {
  if (schedule.mirrored() && virtual_stage >= stages) return {2 * stages - 1 - virtual_stage, 1};
  return {virtual_stage % stages, virtual_stage / stages};
}

double PeakInFlight(const std::vector<Unit>& order, int chunks, double w_hold) {
  int most = 0;
  for (const Unit& u : order) most = std::max(most, u.chunk + 1);
  return PeakActivationBytes(order, std::vector<double>(most, 1.0), w_hold) / std::max(1, chunks);
}

double PeakActivationBytes(const std::vector<Unit>& order, const std::vector<double>& chunk_bytes,
                           double w_hold) {
  std::vector<double> w(chunk_bytes.size());
  for (size_t c = 0; c < w.size(); ++c) w[c] = chunk_bytes[c] * w_hold;
  return PeakActivationBytes(order, chunk_bytes, w);
}

double PeakActivationBytes(const std::vector<Unit>& order, const std::vector<double>& chunk_bytes,
                           const std::vector<double>& chunk_w_bytes) {
  double held = 0, peak = 0;
  for (const Unit& u : order) {
    const double a = chunk_bytes[u.chunk], w = chunk_w_bytes[u.chunk];
    if (u.phase == Phase::kF) held += a;
    if (u.phase == Phase::kB) held -= a - w;
    if (u.phase == Phase::kW) held -= w;
    peak = std::max(peak, held);
  }
  return peak;
}

}  // namespace parasim
