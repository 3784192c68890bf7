// Each stream's tasks in the order the stream runs them: task order, a task on extra streams
// (Program::AddStreamToTask) queuing on each of them. The replay (sim/engine.cc) starts a task
// only when it heads every stream it needs; the makespan lower bound (sim/lower_bound.h) walks
// the same order. Compressed rows: stream s's tasks are queue[offset[s] .. offset[s + 1]).
//
//   std::vector<uint32_t> offset;
//   HugePageVector<TaskId> queue;
//   BuildStreamQueues(program, &offset, &queue);
//   for (uint32_t k = offset[s]; k < offset[s + 1]; ++k) Visit(queue[k]);
#pragma once

#include <cstdint>
#include <vector>

#include "sim/huge_pages.h"
#include "sim/program.h"

namespace parasim::sim {

// Lays out the queues of a finalized program (one pass over its tasks).
void BuildStreamQueues(const Program& p, std::vector<uint32_t>* offset,
                       HugePageVector<TaskId>* queue);

}  // namespace parasim::sim
