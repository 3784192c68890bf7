// torchtitan's names for what parasim names otherwise, one table each, read both ways: by
// `parasim import torchtitan` (scenarios/torchtitan_import.cc) and by the torchtitan half of
// `--launch` (scenarios/launch_export_torchtitan.cc), so the round trip cannot lose a row.
//
//   for (const TorchtitanFlavor& f : kTorchtitanFlavors) if (f.id == "llama3-8b") f.name, f.flavor
//   TorchtitanScheduleOf("1f1b") == "1F1B"
//   ParasimScheduleOf("Interleaved1F1B") == "interleaved-1f1b"
#pragma once

#include <string_view>

namespace parasim {

// The catalog models torchtitan trains, by its model name and flavor
// (torchtitan/models/*/__init__.py).
struct TorchtitanFlavor {
  std::string_view id, name, flavor;
};
inline constexpr TorchtitanFlavor kTorchtitanFlavors[] = {
    {"llama3-8b", "llama3", "8B"},
    {"llama3-70b", "llama3", "70B"},
    {"llama3-405b", "llama3", "405B"},
    {"llama2-7b", "llama2", "7B"},
    {"llama2-13b", "llama2", "13B"},
    {"llama2-70b", "llama2", "70B"},
    {"deepseek-v3", "deepseek_v3", "671B"},
    {"qwen3-30b-a3b", "qwen3", "30B-A3B"},
    {"qwen3-235b-a22b", "qwen3", "235B-A22B"},
};

// torchtitan's pipeline schedules (torch.distributed.pipelining's class names) and parasim's.
struct TorchtitanSchedule {
  std::string_view torchtitan, parasim;
};
inline constexpr TorchtitanSchedule kTorchtitanSchedules[] = {
    {"1F1B", "1f1b"},          {"GPipe", "gpipe"},          {"Interleaved1F1B", "interleaved-1f1b"},
    {"ZBVZeroBubble", "zb-v"}, {"DualPipeV", "dualpipe-v"},
};

// parasim's schedule name of torchtitan's `name`, or "" for one parasim does not hold.
constexpr std::string_view ParasimScheduleOf(std::string_view name) {
  for (const TorchtitanSchedule& s : kTorchtitanSchedules) {
    if (s.torchtitan == name) return s.parasim;
  }
  return "";
}

// torchtitan's name of parasim's schedule `name`, or "" for one torchtitan does not run.
constexpr std::string_view TorchtitanScheduleOf(std::string_view name) {
  for (const TorchtitanSchedule& s : kTorchtitanSchedules) {
    if (s.parasim == name) return s.torchtitan;
  }
  return "";
}

}  // namespace parasim
