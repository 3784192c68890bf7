#include "sim/stream_queues.h"

#include <doctest/doctest.h>

#include <vector>

namespace parasim::sim {
namespace {

TEST_CASE("each stream queues its tasks in task order, a task on extra streams on each") {
  Program p;
  TableCost cost;
  const uint32_t r = p.AddRank("r");
  const StreamId a = p.AddStream(r, "a"), b = p.AddStream(r, "b"), idle = p.AddStream(r, "idle");
  auto task = [&](StreamId s) { return p.AddCompute(s, cost.AddCompute(Duration::Zero()), 0, 0); };
  const TaskId t0 = task(b), t1 = task(a), t2 = task(a), t3 = task(b);
  p.AddStreamToTask(t2, b);  // a collective holding both streams
  p.Finalize();
  std::vector<uint32_t> offset;
  HugePageVector<TaskId> queue;
  BuildStreamQueues(p, &offset, &queue);
  REQUIRE(offset == std::vector<uint32_t>{0, 2, 5, 5});
  CHECK(std::vector<TaskId>(queue.begin() + offset[a], queue.begin() + offset[a + 1]) ==
        std::vector<TaskId>{t1, t2});
  CHECK(std::vector<TaskId>(queue.begin() + offset[b], queue.begin() + offset[b + 1]) ==
        std::vector<TaskId>{t0, t2, t3});
  CHECK(offset[idle] == offset[idle + 1]);
}

}  // namespace
}  // namespace parasim::sim
