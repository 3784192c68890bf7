#include "sim/deadlock.h"

#include <fmt/core.h>

namespace parasim::sim {

Status DeadlockError(const ReplayState& s) {
  const Program& p = s.p;
  Status cyc = p.Validate();
  if (!cyc.ok()) return cyc;
  const size_t n = p.num_tasks();
  // A task whose dependencies are all done but which does not head each of its streams.
  auto heads = [&](StreamId st, TaskId t) { return s.Head(st) == t ? 1u : 0u; };
  for (TaskId t = 0; t < n; ++t) {
    if (s.tl.end[t] != Duration::Zero()) continue;
    uint32_t needed = 1, held = heads(p.stream(t), t);
    for (const auto& [task, extra] : p.extra_streams_of(t)) {
      ++needed;
      held += heads(extra, t);
    }
    if (s.waiting[t] == needed - held && held < needed) {
      return InvalidArgument(fmt::format(
          "deadlock: task {} ('{}' on {}/{}) is ready but waits behind another task in its "
          "stream order; {} of {} tasks finished",
          t, p.label_text(p.label(t)), p.rank_name(p.stream_rank(p.stream(t))),
          p.stream_name(p.stream(t)), s.done, n));
    }
  }
  return InvalidArgument(fmt::format("deadlock: {} of {} tasks finished", s.done, n));
}

}  // namespace parasim::sim
