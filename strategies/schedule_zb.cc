// Zero-bubble pipelines (Qi et al., "Zero Bubble (Almost) Pipeline Parallelism", ICLR 2024): the
// backward splits into B, the input gradient that the previous stage waits for, and W, the
// weight gradient that nothing waits for, so W fills the time a stage would idle.
//
// ZB-H1 keeps 1F1B's limit of min(p-s, m) micro-batches between their F and B on stage s and at
// most p between their F and W: the paper's peak of p M_B (Table 2), each deferred W holding
// what it needs (M_W, PipelineShape::w_hold of a micro-batch's activations). Its order is built
// as the paper builds it by hand (ZbH1Order): stage s defers each W until s more B's have run.
// In the unit-time model (F = B = W, transfers free) it takes 3m + p - 1 units for every p <= 16
// and p <= m <= 4p tried (fewer micro-batches: the critical path, 2p - 1 + 2m), the paper's bubble
// (p-1)(F+B-W) against 1F1B's (p-1)(F+B+W), and no stage holds more than min(p, m) micro-batches;
// with B = 2F too (transfers free) it is never longer than a greedy list schedule that holds up
// to 2p - 1 (docs/MODEL.md, "ZB-H1 and ZB-H2"). Until 2026-11-30 ZB-H1 was that greedy order,
// whose first stages held their p micro-batches and deferred W's besides (Llama 2 7B at p 4:
// stage 0 5.06 micro-batches' activations).
//
// ZB-H2 lets stage s hold up to 2(p-s)-1 micro-batches between F and B (stage 0: 2p-1) and at
// most 2p-1 between F and W, the paper's peak activation memory, deferring up to 2p W's; its
// order comes from list scheduling every stage at once with equal unit times: an idle stage
// runs a B whose gradient has arrived, else the next F if its input has arrived and the limits
// allow, else the oldest pending W (first of all when 2p are pending). With m >= 2p no stage
// then idles between its first and last unit: the paper's (p-1)(F+B-2W) = 0 per stage, a
// parallelogram. Within one step whose optimizer waits for every stage the last stage still
// starts (p-1)F late, so the step's makespan is ZB-H1's; the paper removes that too by not
// synchronising the optimizer (post-validation), which parasim does not model. The cap on
// what a stage holds until its W (added 2026-11-30; it had held up to 2p and more, 14 at p 4 and
// m 16 in the unit-time model) lengthened none of 1,080 unit-time and B = 2F orders tried
// (p 2-16, m 1-4p).
#include <algorithm>
#include <array>
#include <deque>

#include "strategies/schedule.h"
#include "strategies/schedule_list.h"

namespace parasim {

std::vector<std::vector<Unit>> ListSchedule(int p, bool v_shape, int64_t m,
                                            const std::vector<int64_t>& limit, int64_t max_w,
                                            int64_t max_held) {
  const int chunks = v_shape ? 2 : 1;
  const int V = p * chunks;
  const int64_t kNever = INT64_MAX / 4;
  std::vector<std::vector<Unit>> order(p);
  // When micro-batch j's input (forward) or output gradient (backward) reaches virtual stage g.
  std::vector<std::vector<int64_t>> f_ready(V, std::vector<int64_t>(m, kNever));
  std::vector<std::vector<int64_t>> b_ready(V, std::vector<int64_t>(m, kNever));
  for (int64_t j = 0; j < m; ++j) f_ready[0][j] = 0;
  std::vector<std::array<int64_t, 2>> next_f(p, {0, 0}), next_b(p, {0, 0});
  std::vector<int64_t> open(p, 0);
  std::vector<std::deque<Unit>> pending_w(p);
  auto g_of = [&](int s, int c) { return c == 0 ? s : V - 1 - s; };
  // B's chunk 0 first (it ends the micro-batch), F's chunk 1 first (it reaches a B sooner).
  const std::vector<int> b_chunks = v_shape ? std::vector<int>{0, 1} : std::vector<int>{0};
  const std::vector<int> f_chunks = v_shape ? std::vector<int>{1, 0} : std::vector<int>{0};
  int64_t remaining = 3 * int64_t{V} * m;
  // Some stage runs a unit every tick at the schedules' limits; the cap only guards the loop,
  // and an order cut short is refused by the lowering.
  const int64_t cap = 4 * (remaining + V);
  for (int64_t t = 0; remaining > 0 && t < cap; ++t) {
    for (int s = 0; s < p; ++s) {
      bool took = false;
      auto run_w = [&] {
        order[s].push_back(pending_w[s].front());
        pending_w[s].pop_front();
        took = true;
      };
      if (static_cast<int64_t>(pending_w[s].size()) >= max_w) run_w();  // the W budget is spent
      for (int c : b_chunks) {  // B first: the previous stage waits for it
        if (took) break;
        const int g = g_of(s, c);
        const int64_t j = next_b[s][c];
        if (j >= m || b_ready[g][j] > t) continue;
        ++next_b[s][c];
        order[s].push_back({Phase::kB, c, j});
        pending_w[s].push_back({Phase::kW, c, j});
        if (g > 0) b_ready[g - 1][j] = t + 1;
        --open[s];
        took = true;
      }
      for (int c : f_chunks) {  // then F, within the activation limits
        const int64_t held = open[s] + static_cast<int64_t>(pending_w[s].size());
        if (took || open[s] >= limit[s] || held >= max_held) break;
        const int g = g_of(s, c);
        const int64_t j = next_f[s][c];
        if (j >= m || f_ready[g][j] > t) continue;
        ++next_f[s][c];
        order[s].push_back({Phase::kF, c, j});
        // The last virtual stage's backward follows its own forward.
        (g + 1 < V ? f_ready[g + 1][j] : b_ready[g][j]) = t + 1;
        ++open[s];
        took = true;
      }
      if (!took && !pending_w[s].empty()) run_w();  // else fill a wait with the oldest W
      if (took) --remaining;
    }
  }
  return order;
}

namespace {

// ZB-H1's order on stage s, built as the paper builds it by hand rather than list-scheduled:
// 1F1B's min(p - s, m) forwards first, then for each micro-batch k its B, the W's the stage may
// run, and its next F. Micro-batch j's W waits until after the B of j + s (the later a stage, the
// more it defers, so that its B's reach the earlier stages sooner), and runs sooner where one
// more F would hold more than p micro-batches between their F and their W.
std::vector<Unit> ZbH1Order(int p, int64_t m, int s) {
  std::vector<Unit> order;
  order.reserve(static_cast<size_t>(3 * m));
  const int64_t warm = std::min<int64_t>(p - s, m);
  int64_t f = 0, w = 0;
  for (; f < warm; ++f) order.push_back({Phase::kF, 0, f});
  for (int64_t k = 0; k < m; ++k) {
    order.push_back({Phase::kB, 0, k});
    while (w <= k && (w <= k - s || (f < m && f - w >= p))) order.push_back({Phase::kW, 0, w++});
    if (f < m) order.push_back({Phase::kF, 0, f++});
  }
  while (w < m) order.push_back({Phase::kW, 0, w++});
  return order;
}

// ZB-H1 and ZB-H2 differ in how many micro-batches a stage may hold between F and B and how
// many W's it may defer.
class ZbSchedule : public PipelineSchedule {
 public:
  explicit ZbSchedule(bool h2) : h2_(h2) {}
  std::string_view name() const override { return h2_ ? "zb-h2" : "zb-h1"; }
  bool splits_backward() const override { return true; }
  std::vector<Unit> Order(const PipelineShape& shape, int s) const override {
    // ZB-H1's stages are built one by one; ZB-H2's come from one schedule of them all.
    return h2_ ? Orders(shape)[s] : ZbH1Order(shape.stages, shape.micro_batches, s);
  }
  // ZB-H1: each stage's built order. ZB-H2: one list schedule gives every stage's order, each
  // stage holding at most 2p - 1 micro-batches between their F and their W.
  std::vector<std::vector<Unit>> Orders(const PipelineShape& shape) const override {
    const int p = shape.stages;
    std::vector<std::vector<Unit>> orders;
    if (!h2_) {
      for (int k = 0; k < p; ++k) orders.push_back(ZbH1Order(p, shape.micro_batches, k));
      return orders;
    }
    std::vector<int64_t> limit(p);
    for (int k = 0; k < p; ++k) limit[k] = InFlightOf(shape, k);
    return ListSchedule(p, /*v_shape=*/false, shape.micro_batches, limit, MaxW(shape),
                        /*max_held=*/2 * int64_t{p} - 1);
  }
  // The micro-batches between F and B, and the deferred W's holding w_hold each, at the peak
  // the stage's order reaches (the order's own walk: bounding each by its most, F-to-B count
  // plus every deferred W, overcounted a 70B stage by 4 GiB against the replay's peak).
  double InFlight(const PipelineShape& shape, int s) const override {
    return PeakInFlight(Order(shape, s), 1, shape.w_hold);
  }
  std::vector<double> InFlights(const PipelineShape& shape) const override {
    std::vector<double> out;
    for (const std::vector<Unit>& order : Orders(shape)) {
      out.push_back(PeakInFlight(order, 1, shape.w_hold));
    }
    return out;
  }
  std::string IdealBubbleFormula(const PipelineShape&) const override {
    return h2_ ? "(p-1)F/(m(F+B+W)), the pipeline fill only" : "(p-1)(F+B-W)/(m(F+B+W))";
  }
  bool ideal_takes_unit_times() const override { return true; }
  double IdealBubble(const PipelineShape& shape, const UnitTimes& t) const override {
    // ZB-H1: (p-1)(F+B-W) over m(F+B+W) (Qi et al. 2024, Table 2). ZB-H2 has no idle inside
    // any stage when (p-1)(F+B-2W) <= 0 (F = B = W), but within one synchronised step the last
    // stage still starts (p-1)F late: the fill alone.
    const double idle = h2_ ? t.f : t.f + t.b - t.w;
    return static_cast<double>(shape.stages - 1) * std::max(0.0, idle) /
           (static_cast<double>(shape.micro_batches) * (t.f + t.b + t.w));
  }

 private:
  // ZB-H2's list schedule: min(2(p-s)-1, m) micro-batches between F and B on stage s, the extra
  // warm-up forwards that fill the wait before the first B.
  static int64_t InFlightOf(const PipelineShape& shape, int s) {
    const int64_t ahead = 2 * (shape.stages - s) - 1;
    return std::max<int64_t>(1, std::min<int64_t>(ahead, shape.micro_batches));
  }
  // It defers up to 2p W's, moving them to the tail (the parallelogram).
  static int64_t MaxW(const PipelineShape& shape) { return 2 * int64_t{shape.stages}; }
  bool h2_;
};

}  // namespace

std::unique_ptr<PipelineSchedule> MakeZbH1Schedule() { return std::make_unique<ZbSchedule>(false); }
std::unique_ptr<PipelineSchedule> MakeZbH2Schedule() { return std::make_unique<ZbSchedule>(true); }

}  // namespace parasim
