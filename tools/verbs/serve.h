// `parasim serve` (tools/verbs/serve.cc) in pieces the other verbs reuse: `run` hands a serving
// scenario to it, and `report` draws its figures.
//
//   PARASIM_ASSIGN_OR_RETURN(ServeOutcome o, ServeDocument(doc, sets, {}));
//   Json j = ServeJson(o);  std::string t = ServeText(o);
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/json.h"
#include "sim/status.h"
#include "strategies/serving_report.h"
#include "strategies/serving_sweep.h"
#include "tools/verbs/verb.h"

namespace parasim {

struct ServeFlags {
  bool sweep = false;      // the sweep block's layouts (the defaults without one)
  bool no_search = false;  // skip the search of the highest rate that holds the targets
  int jobs = 0;            // the sweep's threads, 0 = every core
};

struct ServeOutcome {
  ServingScenario s;
  ServingReport report;                      // the scenario's own layout (without --sweep)
  std::optional<ServingSweepOutcome> sweep;  // with --sweep
};

StatusOr<ServeOutcome> ServeDocument(const Document& doc, const std::vector<std::string>& sets,
                                     const ServeFlags& flags);
// One report's JSON; `kv_use`: with the KV cache's use over time, `load_key`: with the load view
// (a sweep's results leave both: they are not computed there).
Json ServingReportJson(const ServingReport& r, bool kv_use, bool load_key);
Json ServeJson(const ServeOutcome& o);
std::string ServeText(const ServeOutcome& o);
// The sweep's elapsed time and counts, for stderr.
std::string ServeNotes(const ServeOutcome& o);

}  // namespace parasim
