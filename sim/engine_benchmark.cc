// Engine benchmark: replays a synthetic program of a million tasks mixing compute, flows over
// shared links and memory events, and prints events_per_second (events handled: each task's
// completion and each flow's start), tasks_per_second, moves (completions moved in place when
// flows re-share a link, no event each) and bytes_per_task. With --repeat N it replays the
// program N times in one process and reports the median replay (the rates are the median's),
// the fastest and the first: the first replay touches its memory fresh from the kernel, which
// on a virtual machine costs from a few to a hundred milliseconds depending on the host. It also
// prints the replay's setup and event loop apart (setup_s, loop_s, medians with --repeat) and
// the events handled per second of the loop alone.
//
//   tools/bazel run -c opt //sim:engine_benchmark -- [tasks] [--repeat N]
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "sim/engine.h"

using namespace parasim;
using namespace parasim::sim;

namespace {

struct Args {
  int64_t tasks = 1'000'000;
  int repeat = 1;
};

// [tasks] [--repeat N]; false for anything else.
bool ParseArgs(int argc, char** argv, Args* args) {
  // A positive count, or 0 when `s` is not one.
  auto count = [](const char* s) {
    char* end = nullptr;
    const long long v = std::strtoll(s, &end, 10);
    return end != s && *end == '\0' && v > 0 ? v : 0;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const long long v = a == "--repeat" ? (i + 1 < argc ? count(argv[++i]) : 0) : count(argv[i]);
    if (v <= 0 || (a == "--repeat" && v > 1'000'000)) return false;
    if (a == "--repeat") {
      args->repeat = static_cast<int>(v);
    } else {
      args->tasks = v;
    }
  }
  return true;
}

// The synthetic program: 64 ranks of a compute and a comm stream, eight NICs each shared by
// eight ranks' flows, sixteen compute and sixteen flow costs.
void BuildProgram(int64_t tasks, Program* program, TableCost* costs) {
  Program& p = *program;
  TableCost& cost = *costs;
  const int ranks = 64;
  std::vector<StreamId> compute, comm;
  std::vector<RouteId> routes;
  for (int r = 0; r < ranks; ++r) {
    uint32_t rank = p.AddRank(fmt::format("rank{}", r));
    compute.push_back(p.AddStream(rank, "compute"));
    comm.push_back(p.AddStream(rank, "comm"));
  }
  // Eight NICs, each shared by eight ranks' flows.
  for (int l = 0; l < 8; ++l) {
    routes.push_back(p.AddRoute({p.AddLink(fmt::format("nic{}", l), Bandwidth::GBps(25))}));
  }
  std::vector<uint32_t> compute_keys, flow_keys;
  for (int k = 0; k < 16; ++k) {
    compute_keys.push_back(cost.AddCompute(Duration::Microseconds(50 + 13 * k)));
    flow_keys.push_back(cost.AddFlow({Duration::Microseconds(5), Bytes::MB(1 + k)}));
  }
  uint32_t label_c = p.Intern("compute"), label_f = p.Intern("flow");
  std::vector<TaskId> last_compute(ranks, kNone);
  for (int64_t i = 0; i < tasks; ++i) {
    int r = static_cast<int>(i % ranks);
    TaskId t;
    if (i % 4 == 3) {
      t = p.AddFlow(comm[r], flow_keys[i % 16], 1, label_f, routes[r % 8]);
      if (last_compute[r] != kNone) p.AddDep(last_compute[r], t);
    } else {
      t = p.AddCompute(compute[r], compute_keys[i % 16], 0, label_c);
      if (i % 8 == 0) {
        p.AddMemory(t, r, Bytes::MB(64), MemoryAt::kStart);
        p.AddMemory(t, r, Bytes::MB(-64), MemoryAt::kEnd);
      }
      // Cross-rank dependency (like a pipeline hand-off).
      int prev = (r + ranks - 1) % ranks;
      if (i % 16 == 5 && last_compute[prev] != kNone) p.AddDep(last_compute[prev], t);
      last_compute[r] = t;
    }
  }
  p.Finalize();
}

// Each replay's wall-clock seconds, and its setup and event loop apart.
struct Times {
  std::vector<double> replay, setup, loop;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void PrintReport(const Args& args, const Program& p, const Timeline& tl, const Times& times) {
  const int64_t tasks = args.tasks;
  const double secs = Median(times.replay);
  const double loop_s = Median(times.loop);
  double bytes_per_task = static_cast<double>(p.MemoryBytes() + tl.state_bytes) / tasks;
  fmt::print("tasks: {}\n", tasks);
  fmt::print("events: {}\n", tl.events);
  fmt::print("moves: {}\n", tl.moves);
  fmt::print("replay_s: {:.3f}\n", secs);
  if (args.repeat > 1) {
    fmt::print("replays: {} (replay_s is their median)\n", args.repeat);
    fmt::print("replay_fastest_s: {:.3f}\n",
               *std::min_element(times.replay.begin(), times.replay.end()));
    fmt::print("replay_first_s: {:.3f}\n", times.replay.front());
  }
  // The replay apart: its setup (per-task state laid out, its memory touched for the first
  // time, which on a virtual machine varies with the host) and its event loop.
  fmt::print("setup_s: {:.4f}\n", Median(times.setup));
  fmt::print("loop_s: {:.4f}\n", loop_s);
  fmt::print("simulated_makespan_s: {:.6f}\n", tl.makespan.seconds());
  fmt::print("events_per_second: {:.0f}\n", tl.events / secs);
  fmt::print("loop_events_per_second: {:.0f}\n", tl.events / loop_s);
  fmt::print("tasks_per_second: {:.0f}\n", tasks / secs);
  fmt::print("bytes_per_task: {:.1f}\n", bytes_per_task);
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!ParseArgs(argc, argv, &args)) {
    fmt::print(stderr, "usage: engine_benchmark [tasks] [--repeat N] (positive counts)\n");
    return 2;
  }
  Program p;
  TableCost cost;
  BuildProgram(args.tasks, &p, &cost);
  Engine engine;
  Times times;
  StatusOr<Timeline> tl = Internal("no replay");
  for (int i = 0; i < args.repeat; ++i) {
    RunOptions::Timing timing;
    auto t0 = std::chrono::steady_clock::now();
    tl = engine.Run(p, cost, {.record_memory = false, .critical_path = true, .timing = &timing});
    auto t1 = std::chrono::steady_clock::now();
    if (!tl.ok()) {
      fmt::print(stderr, "{}\n", tl.status().message());
      return 1;
    }
    times.replay.push_back(std::chrono::duration<double>(t1 - t0).count());
    times.setup.push_back(timing.setup_s);
    times.loop.push_back(timing.loop_s);
  }
  PrintReport(args, p, *tl, times);
  return 0;
}
