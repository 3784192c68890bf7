// The JSON of a finished `sweep --json` or `scale --json`, as `report --from` reads it, within
// bounds: a regular file of at most kMaxResultsJsonBytes, parsed with RapidJSON (a few times the
// text's size in memory, where a YAML parse of a 96 MB file took 66 s and 4.2 GB), and its list
// of results or points cut to the first kMaxDrawnRows before the report reads it.
//
//   PARASIM_ASSIGN_OR_RETURN(ResultsJson in, ReadResultsJson("sweep.json"));
//   in.text   // the document, its list cut to kMaxDrawnRows; in.rows, in.kept: the list's sizes
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/status.h"

namespace parasim {

// A sweep's JSON holds at most `top` results (sweep block, up to 100,000), about 1.6 KB each.
inline constexpr int64_t kMaxResultsJsonBytes = int64_t{256} << 20;
// Rows a report draws: a table or a scatter of more is unreadable.
inline constexpr size_t kMaxDrawnRows = 2000;

struct ResultsJson {
  std::string text;  // the JSON, its "results" or "points" list cut to kMaxDrawnRows
  size_t rows = 0;   // the list's length in the file
  size_t kept = 0;   // and in `text`
};

// Errors name the file, line and column ("sweep.json:3:17: error: JSON syntax: ...").
StatusOr<ResultsJson> ReadResultsJson(const std::string& path);

}  // namespace parasim
