// One formatter for a layout (parallel split x micro-batching x recompute), in three styles:
//   kKey       "tp8 pp8 dp16 cp1 ep1 sp1 zero1 interleaved-1f1b v2 mb1 gb1536 selective"
//              every field, stable: sweep CSV rows, resume and validation cases are keyed by it;
//   kShort     "TP8+SP PP8 DP16 int-v2 Z1 mb1 gb1536 rc-selective": what differs from the
//              defaults, for tables (sweep ranking and Pareto front, scale, report);
//   kSentence  "TP8 PP8 DP16 CP1 EP1 +SP, ZeRO-1, interleaved-1f1b (v=2), 96 micro-batches of
//              1 x 2048 tokens, recompute selective": the header of run, memory and the report.
#pragma once

#include <string>

#include "models/training.h"
#include "strategies/layout.h"

namespace parasim {

enum class LayoutStyle { kKey, kShort, kSentence };

std::string FormatLayout(const Layout& l, const Training& t, LayoutStyle style);

}  // namespace parasim
