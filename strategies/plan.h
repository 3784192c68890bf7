// A planning problem: cluster x model x training x layout, and an optional sweep space, as
// the scenario loader (scenarios/scenario.h) builds it from YAML. Layouts are checked here,
// below the loader: CheckLayout names the key at fault and what disagrees, the loader only
// locates it at file:line:col, and the sweep calls it directly for every grid point.
//
//   if (auto p = CheckLayout(scenario)) fmt::print("parallelism.{}: {}", p->key, p->message);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hardware/spec.h"
#include "models/model_spec.h"
#include "models/training.h"
#include "sim/status.h"
#include "strategies/layout.h"
#include "strategies/reliability.h"

namespace parasim {

inline constexpr int64_t kMaxGpus = int64_t{1} << 24;   // 16.7M GPUs: far past any cluster
inline constexpr int64_t kMaxCount = int64_t{1} << 40;  // sequences, tokens per count key
// Micro-batches per step (global_batch / (dp x micro_batch)), at most: the replay is linear in
// them (100,001 take 12 s and 1.4 GiB to replay), and gradient accumulation runs tens to
// hundreds of micro-batches (GPT-3 on 1024 A100s: 96; SC21 Table 1).
inline constexpr int64_t kMaxMicroBatches = 16384;
// The most pipeline units (pp x micro-batches x model chunks) a step replays: the replay holds
// about 1.6 KB a unit (measured: 1.67 GB at 2^20, 3.3 GB at 2^21, std::bad_alloc past 2^23).
inline constexpr int64_t kMaxPipelineUnits = int64_t{1} << 20;

// One swept knob: "auto" (every valid value) or an explicit list of values.
struct SweepAxis {
  bool is_auto = false;
  std::vector<std::string> values;  // raw scalars, typed when applied
};

enum class Objective { kThroughput, kTimeToTrain, kCost, kMemory };

// One cluster and model that a co-design sweep compares: the scenario with one value of each
// cluster or model key the sweep block lists applied ("gpu=b200 nodes=64").
struct SweepHardware {
  std::string label;  // "key=value" per listed key, in file order
  ClusterSpec cluster;
  ModelSpec model;
};

struct SweepSpec {
  std::vector<std::pair<std::string, SweepAxis>> axes;  // key -> values, in file order
  // Hardware co-design: every combination of the listed cluster and model keys, each swept over
  // the layout axes; empty when the block lists none (the scenario's cluster and model).
  std::vector<SweepHardware> hardware;
  int64_t global_batch_max = 0;  // {max: N}: per layout the largest multiple of dp*mb <= N
  Objective objective = Objective::kThroughput;
  int top = 10;
  std::string where;  // file:line:col of the sweep block, for messages
};

struct Scenario {
  std::string name;
  std::string file;
  ClusterSpec cluster;
  ModelSpec model;
  Training training;
  Layout layout;
  bool dp_auto = false;
  std::optional<SweepSpec> sweep;
  Reliability reliability;  // failures, checkpoints, stragglers (strategies/goodput.h)
  // With a sweep block the scenario's own layout need not be valid alone (the sweep varies it), so
  // the loader does not refuse it: this says (located) whether it is valid, for the commands that
  // replay it (run, memory, diff, report, compare).
  Status fixed_layout = Status::Ok();
};

// Keys a sweep block may vary (parallelism and training keys).
const std::vector<std::string_view>& SweepableKeys();
// Applies one sweep value (e.g. "tp" = "4") to a scenario's layout/training.
Status ApplySweepValue(Scenario* s, std::string_view key, std::string_view value);

// What is wrong with a layout: the parallelism key at fault and a message naming the numbers
// that disagree.
struct LayoutProblem {
  std::string key;
  std::string message;
};
// Checks the layout against cluster, model and training (and the schedule's constraints).
std::optional<LayoutProblem> CheckLayout(const Scenario& s);
// The part of CheckLayout's batch check that is arithmetic alone: the global batch splits into a
// whole number of micro-batches per replica, at most kMaxMicroBatches of them. The sweep asks it
// of every grid point before anything else (most points of a wide grid fail it).
bool BatchDivides(const Layout& l, const Training& t);
// What a training's number format asks of a GPU: tensor cores of that type (a catalog peak),
// and for MXFP8 tensor cores that apply its block scales. The training key at fault
// ("precision" or "fp8_recipe") and what the GPU can run instead.
std::optional<LayoutProblem> PrecisionProblem(const Training& t, const GpuSpec& g);

}  // namespace parasim
