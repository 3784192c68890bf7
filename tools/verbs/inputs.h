// What several verbs read the same way: a scenario from a file or a Python dict (and whether its
// own layout is valid, for the verbs that replay it), diff's and report --vs's two sides, the
// sweep options of --jobs, and scale's --gpus list.
//
//   PARASIM_ASSIGN_OR_RETURN(Scenario s, LoadFixedScenario(o.scenario, o.sets));
//   RunSweep(s, SweepOptionsOf(o.jobs, ctx.processes));
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scenarios/scenario.h"
#include "sim/status.h"
#include "strategies/sweep.h"
#include "tools/verbs/verb.h"

namespace parasim {

// The scenario of a document with --set overrides applied (the catalogs loaded for it).
StatusOr<Scenario> LoadScenarioOf(const Document& doc, const std::vector<std::string>& sets);
// The same, refused (located) when its own layout is not valid: for the verbs that replay that
// layout rather than sweep (run, memory, compare, report).
StatusOr<Scenario> LoadFixedScenario(const Document& doc, const std::vector<std::string>& sets);

// Two what-ifs: A with --set and --set-a; B (its document, or A's when B is empty) with --set
// and --set-b. Refused when there is nothing to compare (no B and no --set-a or --set-b).
struct ScenarioPair {
  Scenario a, b;
};
struct PairInput {
  Document a, b;
  std::vector<std::string> sets, sets_a, sets_b;
};
StatusOr<ScenarioPair> LoadPair(const PairInput& in);

// A hash of the scenario's text, its --set overrides and the files it names (`referenced`: its
// calibration profiles): the checks of a sweep's results file are
// made with it (strategies/sweep_results.h), so --resume refuses lines of another scenario.
uint64_t ScenarioFingerprint(const Document& doc, const std::vector<std::string>& sets,
                             const std::vector<std::string>& referenced = {});

// Worker threads (jobs, 0 = all cores) and the processes of the verbs that sweep.
SweepOptions SweepOptionsOf(int jobs, const Processes* processes);

// "8,16,64" or "8,16,...,4096" (the progression of the first two, up to the last); "" = none.
// At most kMaxGpuCounts counts: each is a layout sweep of its own (the 16K-GPU question's takes
// about 7 s), so 128 of them is a quarter of an hour at most, where "1,2,...,100000000" was cut
// at 100,000 points without a word.
inline constexpr size_t kMaxGpuCounts = 128;
StatusOr<std::vector<int64_t>> ParseGpuList(const std::string& text);

}  // namespace parasim
