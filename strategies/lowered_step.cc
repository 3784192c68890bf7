#include "strategies/lowered_step.h"

namespace parasim {

std::string_view TaskCatName(TaskCat c) {
  static constexpr std::string_view kNames[kNumTaskCats] = {
      "forward", "backward", "recompute", "optimizer", "tp-comm", "cp-comm",
      "ep-comm", "pp-comm",  "dp-comm",   "compress",  "dp-copy", "host"};
  const int i = static_cast<int>(c);
  return i >= 0 && i < kNumTaskCats ? kNames[i] : "?";
}

std::vector<std::string> TaskCatNames() {
  std::vector<std::string> out;
  for (int i = 0; i < kNumTaskCats; ++i) {
    out.emplace_back(TaskCatName(static_cast<TaskCat>(i)));
  }
  return out;
}

}  // namespace parasim
