#include "sim/stream_queues.h"

namespace parasim::sim {

void BuildStreamQueues(const Program& p, std::vector<uint32_t>* offset,
                       HugePageVector<TaskId>* queue) {
  const auto& extra = p.extra_streams();
  const size_t ns = p.num_streams();
  const size_t n = p.num_tasks();
  const std::vector<uint32_t>& count = p.stream_task_counts();
  offset->assign(ns + 1, 0);
  for (size_t st = 0; st < ns; ++st) (*offset)[st + 1] = (*offset)[st] + count[st];
  queue->assign((*offset)[ns], 0);
  std::vector<uint32_t> fill(offset->begin(), offset->end() - 1);
  size_t e = 0;
  for (TaskId t = 0; t < n; ++t) {
    (*queue)[fill[p.stream(t)]++] = t;
    for (; e < extra.size() && extra[e].first == t; ++e) (*queue)[fill[extra[e].second]++] = t;
  }
}

}  // namespace parasim::sim
