#include "strategies/schedule.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <tuple>

#include "strategies/unit_walk.h"

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

double PipelineSchedule::IdealBubble(const PipelineShape& shape, const UnitTimes&) const {
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

void FoldSingleChunkInterleaving(Layout* l) {
  if (ScheduleOf(l->schedule).interleaves() && l->virtual_stages == 1) l->schedule = kSchedule1F1B;
}

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

PipelineShape WithGroup(const Layout& layout, PipelineShape shape) {
  if (shape.group == 0) shape.group = layout.microbatch_group;
  return shape;
}

namespace {

// Whether every stage's order runs to its end, F&B pairs together (as EmitSchedule runs them).
bool Acyclic(const PipelineSchedule& schedule, const PipelineShape& shape,
             const std::vector<std::vector<Unit>>& orders) {
  const int p = shape.stages;
  const int route = RouteLength(schedule, p, shape.chunks);
  const size_t slots = static_cast<size_t>(p) * shape.chunks * shape.micro_batches;
  UnitsDone done{route, shape.micro_batches, std::vector<char>(slots, 0),
                 std::vector<char>(slots, 0)};
  return WalkOrders(orders, schedule, done, [&](int s, size_t at, int, size_t idx) -> size_t {
    const std::vector<Unit>& o = orders[s];
    if (o[at].phase == Phase::kW) return 1;
    if (!RunsAsPair(o, at)) {
      (o[at].phase == Phase::kF ? done.f : done.b)[idx] = 1;
      return 1;
    }
    const int gb = VirtualStageOf(schedule, p, s, o[at + 1].chunk);
    const size_t bidx = done.Slot(gb, o[at + 1].mb);
    if (!done.BackwardReady(gb, bidx)) return 0;
    done.f[idx] = 1;
    done.b[bidx] = 1;
    return 2;
  });
}

}  // namespace

std::vector<std::vector<Unit>> LayoutOrders(const Layout& layout, const PipelineShape& given) {
  const PipelineSchedule& schedule = ScheduleOf(layout.schedule);
  const PipelineShape shape = WithGroup(layout, given);
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
  // A pair whose backward waits, through the next stage's pair, for its own forward would stall
  // every stage (GPipe's one pair a stage, where its forwards turn to backwards: each stage's
  // last forward beside a backward that needs the next stage's, which needs that forward's
  // output). Such orders run without pairs.
  if (!Acyclic(schedule, shape, orders)) {
    for (std::vector<Unit>& o : orders) {
      for (Unit& u : o) u.pair = false;
    }
  }
  return orders;
}

namespace {

// Values built once per key and shared across layouts and threads. Past `limit` in weight (the
// sum of weight(value) over the values kept), the cache starts over.
template <typename Key, typename Value>
class SharedCache {
 public:
  explicit SharedCache(size_t limit) : limit_(limit) {}
  template <typename Build, typename Weight>
  std::shared_ptr<const Value> Get(const Key& key, const Build& build, const Weight& weight) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = cache_.find(key);
      if (it != cache_.end()) return it->second;
    }
    auto value = std::make_shared<const Value>(build());  // outside the lock
    const size_t w = weight(*value);
    std::lock_guard<std::mutex> lock(mu_);
    if (held_ + w > limit_) {
      cache_.clear();
      held_ = 0;
    }
    if (cache_.emplace(key, value).second) held_ += w;
    return value;
  }

 private:
  const size_t limit_;
  std::mutex mu_;
  std::map<Key, std::shared_ptr<const Value>> cache_;
  size_t held_ = 0;
};

using OrderKey = std::tuple<int, bool, int, int, int64_t, int64_t>;

OrderKey OrderKeyOf(const Layout& layout, const PipelineShape& shape) {
  return {static_cast<int>(layout.schedule),
          layout.overlap_ep,
          shape.stages,
          shape.chunks,
          shape.micro_batches,
          WithGroup(layout, shape).group};
}

}  // namespace

std::shared_ptr<const std::vector<std::vector<Unit>>> SharedLayoutOrders(
    const Layout& layout, const PipelineShape& shape) {
  // At most this many units are kept (16 bytes each).
  static SharedCache<OrderKey, std::vector<std::vector<Unit>>> cache(size_t{4} << 20);
  return cache.Get(
      OrderKeyOf(layout, shape), [&] { return LayoutOrders(layout, shape); },
      [](const std::vector<std::vector<Unit>>& orders) {
        size_t n = 0;
        for (const auto& o : orders) n += o.size();
        return n;
      });
}

std::shared_ptr<const std::vector<double>> SharedInFlights(const Layout& layout,
                                                           const PipelineShape& shape) {
  // At most this many shapes are kept.
  static SharedCache<std::tuple<int, int, int, int64_t, double, int64_t>, std::vector<double>>
      cache(4096);
  const PipelineShape grouped = WithGroup(layout, shape);
  return cache.Get(
      {static_cast<int>(layout.schedule), shape.stages, shape.chunks, shape.micro_batches,
       shape.w_hold, grouped.group},
      [&] { return ScheduleOf(layout.schedule).InFlights(grouped); },
      [](const std::vector<double>&) { return size_t{1}; });
}

PeakStates PeakStatesOf(const std::vector<Unit>& order, int chunks) {
  PeakStates out;
  out.chunks = chunks;
  for (const Unit& u : order) out.has_w = out.has_w || u.phase == Phase::kW;
  for (size_t i = 0; i < order.size(); ++i) {
    const Unit& u = order[i];
    const bool pair = RunsAsPair(order, i);
    if (u.phase == Phase::kB || pair) {
      out.first_b_chunk = (pair ? order[i + 1] : u).chunk;
      break;
    }
    if (u.phase != Phase::kF) continue;
    if (out.before_first_b.empty() || out.before_first_b.back().first != u.chunk) {
      out.before_first_b.push_back({u.chunk, 0});
    }
    ++out.before_first_b.back().second;
  }
  const size_t width = (out.has_w ? 2 : 1) * static_cast<size_t>(chunks);
  std::vector<int64_t> now(width, 0);
  out.counts = now;  // nothing held: the walk's peak starts at zero
  auto covers = [&](const int64_t* b, const int64_t* a) {  // b holds at least a's counts
    for (size_t k = 0; k < width; ++k) {
      if (a[k] > b[k]) return false;
    }
    return true;
  };
  for (const Unit& u : order) {
    const size_t c = static_cast<size_t>(u.chunk);
    if (u.phase == Phase::kF) ++now[c];
    if (u.phase == Phase::kB) {
      --now[c];
      if (out.has_w) ++now[chunks + c];
    }
    if (u.phase == Phase::kW) --now[chunks + c];
    if (u.phase == Phase::kR) continue;
    const size_t n = out.counts.size() / width;
    bool covered = false;
    for (size_t s = n; s-- > 0 && !covered;) covered = covers(&out.counts[s * width], now.data());
    if (covered) continue;
    // Drop the states the new one covers, then keep it.
    size_t kept = 0;
    for (size_t s = 0; s < n; ++s) {
      if (covers(now.data(), &out.counts[s * width])) continue;
      std::copy_n(&out.counts[s * width], width, &out.counts[kept++ * width]);
    }
    out.counts.resize(kept * width);
    out.counts.insert(out.counts.end(), now.begin(), now.end());
    if (kept + 1 > kMaxPeakStates) {
      out.walk = true;
      out.counts.clear();
      return out;
    }
  }
  return out;
}

std::shared_ptr<const std::vector<PeakStates>> SharedPeakStates(const Layout& layout,
                                                                const PipelineShape& shape) {
  // At most this many shapes are kept.
  static SharedCache<OrderKey, std::vector<PeakStates>> cache(4096);
  return cache.Get(
      OrderKeyOf(layout, shape),
      [&] {
        std::vector<PeakStates> states;
        const auto orders = SharedLayoutOrders(layout, shape);  // held while walked
        for (const std::vector<Unit>& o : *orders) {
          states.push_back(PeakStatesOf(o, shape.chunks));
        }
        return states;
      },
      [](const std::vector<PeakStates>&) { return size_t{1}; });
}

double StagePeaks::Of(int stage, const std::vector<double>& chunk_bytes,
                      const std::vector<double>& chunk_w_bytes) {
  if (!states_) states_ = SharedPeakStates(layout_, shape_);
  const size_t s = static_cast<size_t>(stage);
  if (std::optional<double> peak = PeakActivationBytes((*states_)[s], chunk_bytes, chunk_w_bytes)) {
    return *peak;
  }
  if (!orders_) orders_ = SharedLayoutOrders(layout_, shape_);
  return PeakActivationBytes((*orders_)[s], chunk_bytes, chunk_w_bytes);
}

std::optional<double> PeakActivationBytes(const PeakStates& states,
                                          const std::vector<double>& chunk_bytes,
                                          const std::vector<double>& chunk_w_bytes) {
  // 2^52: below it a sum of whole numbers is exact, with room for the check's own rounding.
  constexpr double kExact = 4503599627370496.0;
  const size_t chunks = static_cast<size_t>(states.chunks);
  if (states.walk || chunk_bytes.size() < chunks || chunk_w_bytes.size() < chunks) {
    return std::nullopt;
  }
  for (size_t c = 0; c < chunks; ++c) {
    const double a = chunk_bytes[c], w = chunk_w_bytes[c];
    if (!(a >= 0 && a < kExact && a == std::floor(a))) return std::nullopt;
    if (!(w >= 0 && w < kExact && w == std::floor(w))) return std::nullopt;
    // Without W units, what a B keeps for W is never freed: the counts do not follow it.
    if (!states.has_w && w != 0) return std::nullopt;
  }
  double peak = 0;
  const size_t width = (states.has_w ? 2 : 1) * chunks;
  for (size_t s = 0; s < states.counts.size(); s += width) {
    double total = 0;
    for (size_t c = 0; c < chunks; ++c) {
      total += static_cast<double>(states.counts[s + c]) * chunk_bytes[c];
      if (states.has_w) {
        total += static_cast<double>(states.counts[s + chunks + c]) * chunk_w_bytes[c];
      }
    }
    if (!(total < kExact)) return std::nullopt;
    peak = std::max(peak, total);
  }
  return peak;
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

std::vector<ChunkSpan> ChunkSpans(const Layout& layout, int layers) {
  const PipelineSchedule& schedule = ScheduleOf(layout.schedule);
  const int p = layout.pp, chunks = ChunksOf(layout);
  const int route = RouteLength(schedule, p, chunks);
  const std::vector<std::vector<int>> per_chunk =
      ChunkLayers(layout, layers, chunks, schedule.v_shape());
  const std::vector<int> per_stage = StageLayers(layout, layers);
  std::vector<ChunkSpan> one_route;
  int first = 0;
  for (int k = 0; k < route; ++k) {
    const ChunkPlace at = PlaceOf(schedule, p, k);
    const int n = schedule.bidirectional() ? per_stage[k] : per_chunk[at.stage][at.chunk];
    one_route.push_back({first, n, k == 0, k == route - 1});
    first += n;
  }
  std::vector<ChunkSpan> out;
  for (int g = 0; g < p * chunks; ++g) out.push_back(one_route[g % route]);
  return out;
}

std::vector<char> RecomputedLayers(const Layout& layout, const Training& training, int layers) {
  std::vector<char> out(static_cast<size_t>(std::max(0, layers)), 0);
  if (training.recompute == RecomputeKind::kNone) return out;
  const int n = training.recompute_layers;
  if (n < 0) {
    std::fill(out.begin(), out.end(), 1);
    return out;
  }
  for (const ChunkSpan& c : ChunkSpans(layout, layers)) {
    for (int i = c.first; i < std::min(layers, c.first + std::min(n, c.layers)); ++i) out[i] = 1;
  }
  return out;
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
