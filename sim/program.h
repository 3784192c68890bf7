// A program to replay: tasks on ranks' streams with dependencies, memory events and flows over
// shared links. Knows nothing of GPUs or transformers.
//
//   Program p;
//   int r = p.AddRank("stage0");
//   StreamId compute = p.AddStream(r, "compute");
//   LinkId nic = p.AddLink("nic0", Bandwidth::GBps(25));
//   TaskId f = p.AddCompute(compute, /*cost_key=*/0, /*category=*/1, p.Intern("fwd"));
//   RouteId via_nic = p.AddRoute({nic});
//   TaskId s = p.AddFlow(comm, /*cost_key=*/1, 4, p.Intern("send"), via_nic);
//   p.AddDep(f, s);
//   p.AddMemory(f, r, Bytes::GiB(1), MemoryAt::kStart);
//
// Streams run one task at a time in the order tasks were added to them (like CUDA streams).
// Durations come from a CostProvider keyed by `cost_key`, asked once per distinct key.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/flat_map.h"
#include "sim/huge_pages.h"
#include "sim/status.h"
#include "sim/units.h"

namespace parasim::sim {

using TaskId = uint32_t;
using StreamId = uint32_t;
using LinkId = uint32_t;
using RouteId = uint32_t;
inline constexpr uint32_t kNone = 0xffffffffu;

enum class TaskKind : uint8_t { kCompute = 0, kFlow = 1 };
// What a stream's tasks do to each other on one rank. While any task of a kCommunication stream
// runs (a collective's kernel holds SMs for its whole length), compute tasks of the rank's
// kCompute streams progress at 1 / CostProvider::ContendedSlowdown of their rate alone.
enum class StreamRole : uint8_t { kOther = 0, kCompute = 1, kCommunication = 2 };
enum class MemoryAt : uint8_t { kStart, kEnd };

struct FlowCost {
  Duration latency;  // fixed part before bytes move (alpha)
  Bytes bytes;       // bytes over the task's links at the shared rate (beta)
};

// How long tasks take, injected into the engine (hardware cost models implement this).
class CostProvider {
 public:
  virtual ~CostProvider() = default;
  virtual Duration ComputeDuration(uint32_t cost_key) const = 0;
  virtual FlowCost Flow(uint32_t cost_key) const = 0;
  // How much longer a compute task takes while a communication kernel runs beside it on its
  // rank (1 = not at all).
  virtual double ContendedSlowdown(uint32_t cost_key) const {
    (void)cost_key;
    return 1.0;
  }
};

// A CostProvider backed by two tables, for tests and for planners that precompute costs.
class TableCost : public CostProvider {
 public:
  uint32_t AddCompute(Duration d, double contended_slowdown = 1.0);
  uint32_t AddFlow(FlowCost f);
  Duration ComputeDuration(uint32_t key) const override { return compute_[key]; }
  FlowCost Flow(uint32_t key) const override { return flows_[key]; }
  double ContendedSlowdown(uint32_t key) const override { return slowdown_[key]; }
  size_t size() const { return compute_.size(); }

 private:
  std::vector<Duration> compute_;  // indexed by key; flows hold a zero here
  std::vector<double> slowdown_;   // indexed by key
  std::vector<FlowCost> flows_;    // indexed by key; computes hold a zero here
};

struct MemoryEvent {
  TaskId task;
  uint32_t rank;
  double bytes;  // signed: + allocate, - free
  MemoryAt at;
};

class Program {
 public:
  uint32_t AddRank(std::string name);
  StreamId AddStream(uint32_t rank, std::string name, StreamRole role = StreamRole::kOther);
  LinkId AddLink(std::string name, Bandwidth capacity);
  uint32_t Intern(std::string_view label);

  // (Inline, with AddFlow, AddDep and AddMemory: a lowering calls them for every task.)
  TaskId AddCompute(StreamId stream, uint32_t cost_key, uint8_t category, uint32_t label) {
    return Add({stream, cost_key, label, kNone}, category);
  }
  // A route is the list of links a flow crosses; flows share routes (the same links, in the
  // same order, give the same route id).
  // A flow's route is one AddRoute returned.
  RouteId AddRoute(std::initializer_list<LinkId> links);
  RouteId AddRoute(std::span<const LinkId> links);
  TaskId AddFlow(StreamId stream, uint32_t cost_key, uint8_t category, uint32_t label,
                 RouteId route) {
    return Add({stream, cost_key, label, route}, category);
  }
  // Makes `t` also occupy `stream` (a collective over several ranks' streams in --full mode).
  void AddStreamToTask(TaskId t, StreamId stream);
  void AddDep(TaskId before, TaskId after) {
    Reopen();
    edges_.emplace_back(before, after);
  }
  void AddMemory(TaskId t, uint32_t rank, Bytes delta, MemoryAt at) {
    Reopen();
    memory_.push_back(MemoryEvent{t, rank, delta.bytes(), at});
  }
  // Room for this many tasks, dependencies and memory events, so that a builder that knows
  // about how large its program will be (a sweep lowering one layout after another) does not
  // grow the vectors step by step. Changes nothing else.
  void Reserve(size_t tasks, size_t edges, size_t memory_events);
  // Freezes the dependency lists into compressed rows (called by the engine when needed). A
  // task, dependency, memory event or extra stream added later reopens the program, keeping
  // what it held; the next Finalize freezes it all again.
  void Finalize();
  bool finalized() const { return finalized_; }
  // After Finalize: whether every dependency runs from a lower task id to a higher one, so that
  // task order is a topological order of the dependencies and stream orders together (streams
  // run their tasks in task order). Planners add tasks that way; MakespanLowerBound then needs
  // one pass in task order.
  bool deps_in_task_order() const { return deps_in_task_order_; }

  // Boost.Graph check that the dependencies form a DAG; names a task on a cycle otherwise.
  Status Validate() const;

  size_t num_tasks() const { return tasks_.size(); }
  size_t num_ranks() const { return rank_names_.size(); }
  size_t num_streams() const { return stream_rank_.size(); }
  size_t num_links() const { return link_capacity_.size(); }
  size_t num_routes() const { return route_offset_.size() - 1; }
  size_t num_edges() const { return finalized_ ? succ_.size() : edges_.size(); }
  // Bytes of program storage per task (vectors' capacities), for the benchmark.
  size_t MemoryBytes() const;

  // Read access for the engine and writers.
  // A flow is the task with a route.
  TaskKind kind(TaskId t) const {
    return tasks_[t].route == kNone ? TaskKind::kCompute : TaskKind::kFlow;
  }
  uint8_t category(TaskId t) const { return category_[t]; }
  StreamId stream(TaskId t) const { return tasks_[t].stream; }
  uint32_t cost_key(TaskId t) const { return tasks_[t].cost_key; }
  uint32_t label(TaskId t) const { return tasks_[t].label; }
  const std::string& label_text(uint32_t label) const { return labels_[label]; }
  const std::string& rank_name(uint32_t r) const { return rank_names_[r]; }
  const std::string& stream_name(StreamId s) const { return stream_names_[s]; }
  uint32_t stream_rank(StreamId s) const { return stream_rank_[s]; }
  StreamRole stream_role(StreamId s) const { return static_cast<StreamRole>(stream_role_[s]); }
  // How many tasks each stream runs, those on extra streams included (counted as they are
  // added: a replay lays out its stream queues without a pass of its own to count them).
  const std::vector<uint32_t>& stream_task_counts() const { return stream_tasks_; }
  const std::string& link_name(LinkId l) const { return link_names_[l]; }
  double link_capacity(LinkId l) const { return link_capacity_[l]; }
  const std::vector<double>& link_capacities() const { return link_capacity_; }
  // Successors of t (after Finalize).
  std::span<const TaskId> successors(TaskId t) const {
    return {succ_.data() + succ_offset_[t], succ_.data() + succ_offset_[t + 1]};
  }
  const HugePageVector<MemoryEvent>& memory_events() const { return memory_; }
  std::span<const LinkId> route_links(RouteId r) const {
    return {route_links_.data() + route_offset_[r], route_links_.data() + route_offset_[r + 1]};
  }
  RouteId route(TaskId t) const { return tasks_[t].route; }
  // A task's fields that the replay reads as it starts, in one record (a quarter of a cache
  // line): in a large program each column apart was a cache miss of its own, and a lowering
  // adding a task grew four arrays.
  struct Task {
    StreamId stream;
    uint32_t cost_key;
    uint32_t label;
    RouteId route;  // a flow's; kNone for a compute task (its kind)
    bool operator==(const Task&) const = default;
  };
  static_assert(sizeof(Task) == 16);
  // The per-task columns whole, in task order, for a pass over every task (the replay's check
  // of a periodic shift), and the successors' compressed rows (after Finalize).
  struct Columns {
    const Task* task;
    const uint8_t* category;
    const uint32_t* succ_offset;
    const TaskId* succ;
  };
  Columns columns() const {
    return {tasks_.data(), category_.data(), succ_offset_.data(), succ_.data()};
  }
  const std::vector<std::pair<TaskId, StreamId>>& extra_streams() const { return extra_streams_; }
  // The extra streams of task t, (t, stream) pairs (after Finalize, which sorts them; empty for
  // most tasks, answered without a search when no task has any).
  [[gnu::always_inline]] std::span<const std::pair<TaskId, StreamId>> extra_streams_of(
      TaskId t) const {
    if (extra_streams_.empty()) return {};
    const auto lo = std::lower_bound(extra_streams_.begin(), extra_streams_.end(),
                                     std::make_pair(t, StreamId{0}));
    auto hi = lo;
    while (hi != extra_streams_.end() && hi->first == t) ++hi;
    return {lo, hi};
  }

 private:
  // Before any change: a finalized program's dependencies back into the pair list (Thaw, out of
  // line; the check is all a program being built pays).
  void Reopen() {
    if (finalized_) Thaw();
  }
  [[gnu::noinline]] void Thaw();
  TaskId Add(const Task& task, uint8_t category) {
    Reopen();
    tasks_.push_back(task);
    category_.push_back(category);
    ++stream_tasks_[task.stream];
    return static_cast<TaskId>(tasks_.size() - 1);
  }

  // Per task: the record, and the category apart (the summary's). A large program's arrays are
  // in transparent huge pages (sim/huge_pages.h): the replay reads them by task id, far apart,
  // and with 4 KiB pages a program of millions of tasks missed the TLB on most of those reads.
  HugePageVector<Task> tasks_;
  HugePageVector<uint8_t> category_;
  // Dependencies: pairs while building, compressed rows after Finalize.
  bool finalized_ = false;
  bool deps_in_task_order_ = true;
  HugePageVector<std::pair<TaskId, TaskId>> edges_;
  HugePageVector<uint32_t> succ_offset_;
  HugePageVector<TaskId> succ_;
  // Sparse side tables.
  HugePageVector<MemoryEvent> memory_;  // sorted by task at Finalize
  std::vector<uint32_t> route_offset_ = {0};
  std::vector<LinkId> route_links_;
  std::vector<std::pair<TaskId, StreamId>> extra_streams_;
  // A hash of a route's links -> the first route with that hash; route_next_[r]: the next
  // route with r's hash (kNone at the end).
  struct HashOfLinks {
    size_t operator()(uint64_t h) const { return static_cast<size_t>(h); }
  };
  FlatMap<uint64_t, RouteId, HashOfLinks> route_index_;
  std::vector<RouteId> route_next_;
  // Resources.
  std::vector<std::string> rank_names_;
  std::vector<uint32_t> stream_rank_;
  std::vector<uint8_t> stream_role_;
  std::vector<uint32_t> stream_tasks_;
  std::vector<std::string> stream_names_;
  std::vector<std::string> link_names_;
  std::vector<double> link_capacity_;
  std::vector<std::string> labels_;
  std::unordered_map<std::string, uint32_t> label_index_;
};

}  // namespace parasim::sim
