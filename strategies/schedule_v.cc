// Schedules in a V: each stage holds two model chunks, chunk 0 running down the stages and
// chunk 1 back up (stage s holds virtual stages s and 2p-1-s), with the backward split into B
// (input gradient) and W (weight gradient) as in zero-bubble pipelines.
//
// ZB-V (Qi et al., "Pipeline Parallelism with Controllable Memory", NeurIPS 2024; the ZB-V
// schedule of the zero-bubble pipeline code) keeps 1F1B's peak activation memory, p
// micro-batches of a stage's activations, on every stage, and with F = B = W the step is its
// work plus the fill of p-1 chunk forwards. Its order comes from the list scheduling ZB-H1
// uses (schedule_list.h), in a V, with at most 2p chunks' activations and p pending W's per
// stage. In that model the step lasts 6m + p - 1 chunk units
// for p = 2..16 and m = p..4p, against 1F1B's 6m + 6(p-1): with fewer than 2p chunks in
// flight the greedy order deadlocks, so 2p is the limit. The order is fixed before the replay,
// which runs it at the units' real times: when B (with recompute) is far longer than F the
// V's fill grows (GPT-3 175B, PP8, full recompute: a 23% bubble, against DualPipe-V's 1.2%).
// Ordering by the real times instead can deadlock at 1F1B's memory (a stage fills its slots
// with chunk-0 forwards whose chunk-1 forwards cannot start), so it is not done.
//
// DualPipe-V is DualPipe (DeepSeek-V3 technical report, arXiv 2412.19437, sec. 3.2.1) folded
// into a V so that each stage holds one copy of its parameters (the "cut-in-half" DualPipeV of
// github.com/deepseek-ai/DualPipe). Its order is the published eight-step program per stage s
// (steps 1-8 below); in the steady state (step 4) a forward of one chunk and a backward of the
// other run as a pair, which lets one's communication overlap the other's compute. It needs
// m >= 2p micro-batches, and holds 2p+1 chunks' activations at its peak.
#include <fmt/core.h>

#include <algorithm>
#include <deque>

#include "strategies/schedule.h"
#include "strategies/schedule_list.h"

namespace parasim {
namespace {

// What the V schedules share: two chunks in a V, a split backward, memory from the order, and
// the ideal bubble of p-1 chunk forwards of fill over 6m chunk units of work.
class VSchedule : public PipelineSchedule {
 public:
  bool v_shape() const override { return true; }
  bool splits_backward() const override { return true; }
  double InFlight(const PipelineShape& shape, int s) const override {
    return PeakInFlight(Order(shape, s), 2, shape.w_hold);
  }
  // One set of orders for all stages (ZB-V derives them all at once).
  std::vector<double> InFlights(const PipelineShape& shape) const override {
    std::vector<double> out;
    for (const std::vector<Unit>& order : Orders(shape)) {
      out.push_back(PeakInFlight(order, 2, shape.w_hold));
    }
    return out;
  }
  std::string IdealBubbleFormula(const PipelineShape&) const override {
    return "(p-1)F/(2m(F+B+W)) per chunk: the fill only";
  }
  bool ideal_takes_unit_times() const override { return true; }
  double IdealBubble(const PipelineShape& shape, const UnitTimes& t) const override {
    // Each stage runs two chunks' units per micro-batch; the fill is p-1 chunks' forwards.
    return static_cast<double>(shape.stages - 1) * t.f /
           (2.0 * static_cast<double>(shape.micro_batches) * (t.f + t.b + t.w));
  }
};

class ZbVSchedule : public VSchedule {
 public:
  std::string_view name() const override { return "zb-v"; }
  bool equal_chunks() const override { return true; }
  std::vector<Unit> Order(const PipelineShape& shape, int s) const override {
    return Orders(shape)[s];
  }
  std::vector<std::vector<Unit>> Orders(const PipelineShape& shape) const override {
    // 1F1B's peak, p micro-batches of a stage's activations (2p chunks), on every stage, and
    // ZB-H1's p deferred W's (fewer lengthen the step in the unit-time model).
    const int p = shape.stages;
    return ListSchedule(p, /*v_shape=*/true, shape.micro_batches,
                        std::vector<int64_t>(p, 2 * int64_t{p}), p);
  }
};

// DualPipe-V's program for stage s: the published step counts, with each chunk's micro-batches
// taken in order.
std::vector<Unit> DualPipeVOrder(int p, int64_t m, int s) {
  std::vector<Unit> o;
  int64_t next_f[2] = {0, 0}, next_b[2] = {0, 0};
  std::deque<Unit> pending_w;
  // `pair`: this forward and the backward after it run as one F&B unit.
  auto f = [&](int c, bool pair = false) { o.push_back({Phase::kF, c, next_f[c]++, pair}); };
  // A backward split (zero bubble) defers its W; a whole one runs W right after B.
  auto b = [&](int c, bool split) {
    const int64_t j = next_b[c]++;
    o.push_back({Phase::kB, c, j});
    if (split) {
      pending_w.push_back({Phase::kW, c, j});
    } else {
      o.push_back({Phase::kW, c, j});
    }
  };
  auto w = [&] {
    o.push_back(pending_w.front());
    pending_w.pop_front();
  };
  const int64_t before = p - s - 1, upto = s + 1;
  for (int64_t i = 0; i < 2 * before; ++i) f(0);  // 1: chunk 0 forwards
  for (int64_t i = 0; i < upto; ++i) {            // 2: both chunks' forwards
    f(0);
    f(1);
  }
  for (int64_t i = 0; i < before; ++i) {  // 3: B, W, F of chunk 1
    b(1, true);
    w();
    f(1);
  }
  for (int64_t i = 0; i < m - 2 * p + s + 1; ++i) {  // 4: the steady state, F&B pairs
    // The last stage runs its first pair's two halves apart: the backward is the turn of the
    // V, which waits for that forward (DualPipe's middle ranks do the same).
    f(0, i > 0 || s < p - 1);
    b(1, false);
    f(1, true);
    b(0, false);
  }
  for (int64_t i = 0; i < before; ++i) {  // 5: chunk 1's last backwards
    b(1, false);
    f(1, true);
    b(0, false);
  }
  bool split = false;  // 6: the second half's backwards split
  for (int64_t i = 0; i < upto; ++i) {
    if (i == upto / 2 && s % 2 == 1) split = true;
    b(1, split);
    if (i == upto / 2 && s % 2 == 0) split = true;
    b(0, split);
  }
  for (int64_t i = 0; i < before; ++i) {  // 7: W's fill the drain of chunk 0
    w();
    b(0, true);
  }
  while (!pending_w.empty()) w();  // 8: the remaining W's
  return o;
}

class DualPipeVSchedule : public VSchedule {
 public:
  std::string_view name() const override { return "dualpipe-v"; }
  std::vector<std::string_view> aliases() const override { return {"dualpipev"}; }
  bool pairs_forward_backward() const override { return true; }
  std::vector<Unit> Order(const PipelineShape& shape, int s) const override {
    return DualPipeVOrder(shape.stages, shape.micro_batches, s);
  }
  std::string Constraint(const PipelineShape& shape) const override {
    if (shape.micro_batches < 2 * int64_t{shape.stages}) {
      return fmt::format("dualpipe-v needs at least 2*pp = {} micro-batches, got {}",
                         2 * shape.stages, shape.micro_batches);
    }
    return "";
  }
};

// DualPipe (DeepSeek-V3 sec. 3.2.1; github.com/deepseek-ai/DualPipe dualpipe.py): two copies
// of the model, one per direction, m/2 micro-batches each. Its eight-step program on rank s is
// DualPipe-V's on p/2 stages and m/2 micro-batches for the rank's distance from the nearer end,
// h = min(s, p-1-s), with the first half of the ranks taking phase 0 as the downward copy and
// the second half as the upward one; the two middle ranks run their first pair apart, as the
// V's last stage does. Bubble (p/2-1)(F&B+B-3W), two parameter copies, p+1 micro-batches of a
// stage's activations at the peak (the repository's README table).
class DualPipeSchedule : public PipelineSchedule {
 public:
  std::string_view name() const override { return "dualpipe"; }
  bool bidirectional() const override { return true; }
  bool splits_backward() const override { return true; }
  bool pairs_forward_backward() const override { return true; }
  std::vector<Unit> Order(const PipelineShape& shape, int s) const override {
    const int p = shape.stages, half = p / 2;
    const int h = std::min(s, p - 1 - s);
    std::vector<Unit> o = DualPipeVOrder(half, shape.micro_batches / 2, h);
    if (s >= half) {
      for (Unit& u : o) u.chunk = 1 - u.chunk;  // phase 0 is the upward copy here
    }
    return o;
  }
  double InFlight(const PipelineShape& shape, int s) const override {
    return PeakInFlight(Order(shape, s), 2, shape.w_hold);
  }
  std::string IdealBubbleFormula(const PipelineShape&) const override {
    return "(p/2-1)(F+2B-W)/(m(F+B+W)), DeepSeek-V3's (p/2-1)(F&B+B-3W) with B the input gradient";
  }
  bool ideal_takes_unit_times() const override { return true; }
  double IdealBubble(const PipelineShape& shape, const UnitTimes& t) const override {
    // DeepSeek-V3 technical report, Table 2: (p/2-1)(F&B+B-3W), its B being a chunk's whole
    // backward and F&B an overlapped forward and backward (compute F+B+W here: the overlap
    // hides communication). Over a stage's work for m micro-batches, m(F+B+W).
    const double idle = t.f + 2 * t.b - t.w;
    return (static_cast<double>(shape.stages) / 2 - 1) * std::max(0.0, idle) /
           (static_cast<double>(shape.micro_batches) * (t.f + t.b + t.w));
  }
  std::string Constraint(const PipelineShape& shape) const override {
    if (shape.stages % 2 != 0) {
      return fmt::format("dualpipe needs an even pp (two directions meet in the middle), got {}",
                         shape.stages);
    }
    if (shape.micro_batches % 2 != 0 || shape.micro_batches < 2 * int64_t{shape.stages}) {
      return fmt::format(
          "dualpipe needs an even number of micro-batches, at least 2*pp = {} (half run each "
          "way), got {}",
          2 * shape.stages, shape.micro_batches);
    }
    return "";
  }
};

}  // namespace

std::unique_ptr<PipelineSchedule> MakeDualPipeSchedule() {
  return std::make_unique<DualPipeSchedule>();
}
std::unique_ptr<PipelineSchedule> MakeZbVSchedule() { return std::make_unique<ZbVSchedule>(); }
std::unique_ptr<PipelineSchedule> MakeDualPipeVSchedule() {
  return std::make_unique<DualPipeVSchedule>();
}

}  // namespace parasim
