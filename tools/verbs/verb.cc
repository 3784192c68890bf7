#include "tools/verbs/verb.h"

#include <fmt/core.h>

namespace parasim {

std::vector<FlagValue> Verb::Defaults() const {
  std::vector<FlagValue> out;
  out.reserve(flags.size());
  for (const Flag& f : flags) out.push_back(f.default_value);
  return out;
}

bool Verb::WantsJson(const std::vector<FlagValue>& values) const {
  for (size_t i = 0; i < flags.size() && i < values.size(); ++i) {
    if (flags[i].json) return std::get<bool>(values[i]);
  }
  return false;
}

Status CheckFlagValues(const std::vector<Flag>& flags, const std::vector<FlagValue>& values) {
  for (size_t i = 0; i < flags.size() && i < values.size(); ++i) {
    const Flag& f = flags[i];
    int64_t v = 0;
    if (const int* x = std::get_if<int>(&values[i])) {
      v = *x;
    } else if (const int64_t* y = std::get_if<int64_t>(&values[i])) {
      v = *y;
    } else {
      continue;
    }
    if (v >= f.min && v <= f.max) continue;
    if (f.positive) {
      return InvalidArgument(
          fmt::format("{}={}:1:1: error: expected a positive number", f.name, v));
    }
    return InvalidArgument(
        fmt::format("{}={}:1:1: error: expected a value from {} to {}", f.name, v, f.min, f.max));
  }
  return Status::Ok();
}

std::string PythonName(const std::string& flag_name) {
  std::string out = flag_name.substr(flag_name.find_first_not_of('-'));
  for (char& c : out) {
    if (c == '-') c = '_';
  }
  return out;
}

}  // namespace parasim
