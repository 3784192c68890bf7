// What the step lowering produces: a sim::Program of one training step with its cost table,
// and the facts about it that the summary reads back (stage ranks, pipeline transfers, states).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/engine.h"
#include "sim/huge_pages.h"
#include "sim/program.h"

namespace parasim {

enum class Granularity { kCoarse, kOp };

// Categories of replayed tasks (sim::Program's category byte).
enum class TaskCat : uint8_t {
  kForward,
  kBackward,
  kRecompute,
  kOptimizer,
  kTp,
  kCp,
  kEp,
  kPp,
  kDp,
  kCompress,
  // FSDP2's copies of gathered parameters out of the all-gather buffer (ZeRO 3), on the compute
  // stream: data-parallel work that holds the GPU.
  kDpCopy,
  // The host's issue of GPU work (RankTopology::Issue, Sync): CPU time on the rank's host
  // stream, not the GPU's.
  kHost
};
inline constexpr int kNumTaskCats = 12;
std::string_view TaskCatName(TaskCat c);
std::vector<std::string> TaskCatNames();

struct StepOptions {
  Granularity granularity = Granularity::kCoarse;
  bool full = false;  // every rank instead of one per pipeline stage
  bool record_memory = false;
  bool critical_path = true;
};

// --full replays every rank; beyond this many GPUs the symmetric replay is the tool.
inline constexpr int64_t kMaxFullRanks = 1024;

struct LoweredStep {
  sim::Program program;
  sim::TableCost costs;
  int stages = 1;
  int replicas = 1;                          // program ranks per pipeline stage
  std::vector<uint32_t> stage_rank;          // program rank standing for each stage
  std::vector<sim::StreamId> stage_compute;  // its compute stream
  std::vector<sim::TaskId> pp_flows;         // pipeline transfers
  std::vector<uint32_t> pp_receiver;         // program rank receiving each of pp_flows
  std::vector<double> static_bytes;          // per stage: states and buffers held all step
  std::vector<double> reserve_bytes;         // per stage: of them, outside PyTorch's allocator
  int64_t micro_batches = 1;
  // A chunk's forward, input-gradient backward (with recompute) and weight gradient (0 unless
  // the schedule splits the backward) in seconds, each the mean over every stage's chunks of
  // its compute and blocking collectives: the ideal bubble's F, B and W (UnitTimes).
  std::array<double, 3> unit_times_s = {1, 1, 1};
  // Each task's counterpart one micro-batch later, where its unit has one of the same shape
  // (kNone elsewhere), and the first task of each of stage 0's forwards of its first chunk:
  // the engine's steady-state periodicity (sim::RunOptions::shift, anchors).
  sim::HugePageVector<sim::TaskId> shift;  // per task, read by task id (huge pages)
  std::vector<sim::TaskId> anchors;
};

}  // namespace parasim
