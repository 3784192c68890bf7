#include "sim/replay_state.h"

#include "sim/stream_queues.h"

namespace parasim::sim {

ReplayState::ReplayState(const Program& program, const RunOptions& options)
    : p(program),
      memory(program, options.record_memory, &tl),
      flows(program, &tl.link_bytes, &seq) {
  const size_t n = p.num_tasks();
  tl.start.assign(n, Duration::Zero());
  tl.end.assign(n, Duration::Zero());
  tl.peak_memory.assign(p.num_ranks(), 0.0);
  tl.peak_time.assign(p.num_ranks(), Duration::Zero());
  tl.busy.assign(p.num_streams(), Duration::Zero());
  tl.link_bytes.assign(p.num_links(), 0.0);
  waiting.assign(n, 1);
  for (TaskId t = 0; t < n; ++t) {
    for (TaskId s : p.successors(t)) ++waiting[s];
  }
  for (const auto& [t, s] : p.extra_streams()) ++waiting[t];
  BuildStreamQueues(p, &q_offset, &queue);
  head.assign(q_offset.begin(), q_offset.end() - 1);
  stream_last.assign(p.num_streams(), kNone);
  enabler.assign(options.critical_path ? n : 0, kNone);
  comm_running.assign(p.num_ranks(), 0);
  running.assign(p.num_streams(), Running{});
  events.Track(waiting.data());
}

size_t ReplayState::state_bytes() const {
  auto cap = [](const auto& v) { return StorageBytes(v); };
  return cap(waiting) + cap(q_offset) + cap(queue) + cap(head) + cap(stream_last) + cap(enabler) +
         cap(tl.start) + cap(tl.end) + cap(comm_running) + cap(running) + memory.state_bytes() +
         flows.state_bytes() + events.capacity_bytes();
}

}  // namespace parasim::sim
