// Ranking a sweep's layouts: what each objective ranks by (throughput, throughput kept through
// failures, tokens per unit of cost, or peak memory), the order with its ties broken, and the
// Pareto front of throughput against peak memory (co-design sweeps: against cost per token).
//
//   SweepRanking r = RankEntries(spec, entries);
//   r.ranked[0]                 // the best layout that fits
//   r.ranked[r.pareto[k]]       // the front, fastest first
#pragma once

#include <cstddef>
#include <vector>

#include "strategies/plan.h"
#include "strategies/sweep_entry.h"

namespace parasim {

// Closer than 2% a sequence, two measured layouts count as equally fast (validate's ranking,
// scenarios/validate.h; the sweep's ties with its first layout, and --robust): the choice gains a
// planner little, and single published runs (throughputs rounded to three or four figures, some
// read from charts) do not order them reliably. Megatron-Bridge's 25.11 and 26.02 rows of Llama
// 3 70B on 64 H100, one layout at global batches of 128 and 256, are 1.2% apart a sequence
// (tests/validation/regimes/megatron-bridge-h100.yaml).
inline constexpr double kRankTie = 0.02;

// The throughput an objective ranks by: time to train ranks by the throughput kept through
// failures and checkpoints, cost by that throughput per unit of the cluster's cost (tokens
// per dollar, or per GPU-hour), the others by tokens per second.
double RankedThroughput(const SweepEntry& e, Objective o);
// What an objective ranks by, higher first (memory: the peak, negated).
double RankedValue(const SweepEntry& e, Objective o);

// A layout on the Pareto front's axes: throughput (higher is better) against peak memory, or
// in a co-design sweep the throughput kept through failures against the cost per token (lower
// is better).
struct FrontPoint {
  double tokens;
  double other;
};
FrontPoint FrontOf(const SweepEntry& e, bool codesign);
// The same point as the sweep prints it, and as the front compares it (so that no point the
// front lists looks dominated by another): throughput to the digits tools/text.h's Human
// prints ("62.9k", "1.20M"), peak memory in tenths of a GiB (the free memory printed is the
// capacity's tenths less these), cost per million tokens to the 4 significant digits printed.
FrontPoint PrintedFrontOf(const SweepEntry& e, bool codesign);
// A throughput as Human prints it: 62,947 -> 62,900; 1,204,321 -> 1,200,000.
double TokensAsPrinted(double tokens_per_s);
// Peak memory in tenths of a GiB, as printed: 73.34 GiB -> 733.
double PeakTenthsOfGib(double bytes);

// Whether `a` ranks before `b` by objective `o`; ties by raw throughput, then by key.
bool RanksBefore(const SweepEntry& a, const SweepEntry& b, Objective o);

struct SweepRanking {
  std::vector<SweepEntry> ranked;  // the layouts that fit, best first
  // Of the layouts that do not fit (pruned ones aside), the one with the least peak: what a
  // sweep where nothing fits reports, with its reason. Empty key when there is none.
  SweepEntry leanest;
  // Indices into ranked, fastest first: no other layout is as fast and as low on the front's
  // other axis, one of the two strictly, as printed (PrintedFrontOf); of layouts that print
  // alike, the fastest (then lowest) stands for them. A subset of the front of the exact
  // figures (FrontOf), so pruning by FrontOf keeps it whole.
  std::vector<size_t> pareto;
};
// The layouts that fit, best first by the spec's objective, and the Pareto front.
SweepRanking RankEntries(const SweepSpec& spec, const std::vector<SweepEntry>& entries);

}  // namespace parasim
