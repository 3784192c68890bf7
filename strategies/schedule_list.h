// Greedy list scheduling with unit times, shared by the zero-bubble schedules (ZB-H1 and ZB-H2
// in schedule_zb.cc, ZB-V in schedule_v.cc); internal to the schedule library.
//
// Every stage at once, each unit (one chunk's F, B or W for one micro-batch) taking one tick and
// transfers free: an idle stage runs the oldest pending W when it holds `max_w` of them, else a
// B whose gradient has arrived, else an F whose input has arrived while it holds fewer than
// `limit[stage]` chunks' activations between F and B and fewer than `max_held` between F and W
// (those and its pending W's), else the oldest pending W. With `v_shape` each stage holds
// two chunks in a V (stage s: virtual stages s and 2p-1-s); B's take chunk 0 first (it ends the
// micro-batch), F's chunk 1 first (it reaches a B sooner).
#pragma once

#include <cstdint>
#include <vector>

#include "strategies/schedule.h"

namespace parasim {

std::vector<std::vector<Unit>> ListSchedule(int p, bool v_shape, int64_t m,
                                            const std::vector<int64_t>& limit, int64_t max_w,
                                            int64_t max_held = INT64_MAX);

}  // namespace parasim
