// The sweep's grid: the axes of a sweep block with their typed values (strategies/sweep_keys.h),
// and every point of it with dp and the global batch derived, folded onto its canonical form
// (NormaliseLayout), checked (CheckLayout) and kept once, as the entries the sweep evaluates.
//
//   StatusOr<SweepGrid> g = BuildGrid(scenario, *scenario.sweep, /*max_layouts=*/1e7,
//   /*before=*/0); std::vector<SweepEntry> entries; EnumerateGrid(scenario, *scenario.sweep, *g,
//   /*hardware=*/0, /*cost_per_s=*/0, jobs, &entries); KeepOnce(&entries);  // sorted by key, each
//   layout once
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/status.h"
#include "strategies/plan.h"
#include "strategies/sweep_entry.h"
#include "strategies/sweep_keys.h"

namespace parasim {

// One axis of the grid: a key of the sweep-key table and its typed values.
struct GridAxis {
  const SweepKey* key;
  std::vector<int64_t> values;
};

// The grid a sweep block spans, its axes in the order they vary (the keys NormaliseLayout folds
// fastest); dp follows the GPU count unless listed.
struct SweepGrid {
  std::vector<GridAxis> axes;
  bool dp_auto = false;
  int64_t points = 0;
};

// Points of the grid that behave exactly like another point are folded onto it (SP without
// TP is no SP; one model chunk is plain 1F1B; one stage has no schedule; ZeRO without data
// parallelism shards nothing; an FP8 recipe without FP8 scales nothing); the duplicates then
// collapse by key.
void NormaliseLayout(Layout* l, Training* t);

// The axes of `spec` over `base` with typed values, and the grid's size, refused (located at
// the sweep block) when it and the `before` points of the grids enumerated before it (other
// clusters of a co-design sweep) span more than `max_layouts`.
StatusOr<SweepGrid> BuildGrid(const Scenario& base, const SweepSpec& spec, int64_t max_layouts,
                              int64_t before);

// Appends an entry for every valid layout of the grid, in grid order whatever `jobs` (threads,
// each over a contiguous range of points): its key (named by its cluster, `hardware`, in a
// co-design sweep), layout, training and the cluster's cost per second. A layout may come
// twice (a listed value equal to the derived one, or from two ranges): see KeepOnce.
void EnumerateGrid(const Scenario& base, const SweepSpec& spec, const SweepGrid& g, size_t hardware,
                   double cost_per_s, int jobs, std::vector<SweepEntry>* entries);

// Sorts the entries by key and keeps each layout once.
void KeepOnce(std::vector<SweepEntry>* entries);

}  // namespace parasim
