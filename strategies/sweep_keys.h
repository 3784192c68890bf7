// The one table of keys a sweep block may vary (SCENARIO.md "sweep"): for each, the scenario
// block it belongs to, how a value is read (what is accepted, within which limits, and the
// error otherwise), how it is applied to a layout and training, and what `auto` means for a
// scenario. It is the only reader of these keys: the loader reads them with it in their
// `parallelism` or `training` block (scenarios/table_keys.h), and so does `--set`; it checks
// the sweep block's values, and the sweep enumerates its grid from it. A value travels typed
// (an integer) from parse to apply. Parse errors read as the YAML readers' (sim/yaml_reader.h),
// without the location, which the caller adds.
//
//   const SweepKey* k = FindSweepKey("tp");
//   PARASIM_ASSIGN_OR_RETURN(int64_t v, k->parse("4"));
//   k->apply(v, &layout, &training);
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "models/training.h"
#include "sim/flat_map.h"
#include "sim/status.h"
#include "strategies/layout.h"

namespace parasim {

struct Scenario;

struct SweepKey {
  std::string_view name;
  StatusOr<int64_t> (*parse)(std::string_view value);
  void (*apply)(int64_t value, Layout* l, Training* t);
  // Every value worth trying for `s` (empty: derived per layout, as dp is, or not auto-able).
  std::vector<int64_t> (*auto_values)(const Scenario& s);
  // The scenario block that holds the key: "parallelism" or "training".
  std::string_view block = "parallelism";
};

// In the order the sweep enumerates them: tp, pp, dp, cp, ep, etp, micro_batch, virtual_stages,
// schedule, zero, recompute, sp, grad_reduce, cp_comm, global_batch, recompute_layers,
// precision, fp8_recipe.
const std::vector<SweepKey>& SweepKeys();
const SweepKey* FindSweepKey(std::string_view name);
// The names of the keys `block` holds, in the table's order.
std::vector<std::string_view> SweepKeysOf(std::string_view block);

// What the keys above set in a layout and training, one number per key (sp as 0/1, enums by
// value): two grid points with the same SweepPoint over the same base scenario are the same
// layout and training. A key added to the table adds its field here (sweep_test checks).
using SweepPoint = std::array<int64_t, 19>;
SweepPoint SweepPointOf(const Layout& l, const Training& t);
using SweepPointHash = sim::WholeNumbersHash;

}  // namespace parasim
