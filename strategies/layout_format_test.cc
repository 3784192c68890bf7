#include "strategies/layout_format.h"

#include <doctest/doctest.h>

namespace parasim {
namespace {

TEST_CASE("one layout, three styles") {
  Layout l;
  l.tp = 8;
  l.pp = 8;
  l.dp = 16;
  l.sp = true;
  l.zero = 1;
  l.schedule = kScheduleInterleaved;
  l.virtual_stages = 2;
  Training t;
  t.seq_len = 2048;
  t.global_batch = 1536;
  t.micro_batch = 1;
  t.recompute = RecomputeKind::kSelective;
  CHECK(FormatLayout(l, t, LayoutStyle::kKey) ==
        "tp8 pp8 dp16 cp1 ep1 sp1 zero1 interleaved-1f1b v2 mb1 gb1536 selective");
  CHECK(FormatLayout(l, t, LayoutStyle::kShort) ==
        "TP8+SP PP8 DP16 int-v2 Z1 mb1 gb1536 rc-selective");
  CHECK(FormatLayout(l, t, LayoutStyle::kSentence) ==
        "TP8 PP8 DP16 CP1 EP1 +SP, ZeRO-1, interleaved-1f1b (v=2), 96 micro-batches of 1 x 2048 "
        "tokens, recompute selective");
  // SP means nothing without TP, and a one-stage layout has no schedule to name.
  l.tp = 1;
  l.pp = 1;
  CHECK(FormatLayout(l, t, LayoutStyle::kShort) == "TP1 PP1 DP16 Z1 mb1 gb1536 rc-selective");
}

}  // namespace
}  // namespace parasim
