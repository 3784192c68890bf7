// One table per enum that has names in files or output: the name of a value, the value of a
// name (with an error that lists what is accepted), and the list of names for readers that
// check a key against them (MapReader::Enum). Replaces the hand-written switch pairs.
#pragma once

#include <fmt/core.h>

#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/status.h"

namespace parasim {

template <typename E, size_t N>
class EnumNames {
 public:
  // `what` names the kind in errors ("dtype"); `table` lists every value once.
  constexpr EnumNames(std::string_view what, std::array<std::pair<E, std::string_view>, N> table)
      : what_(what), table_(table) {}

  constexpr std::string_view Name(E e) const {
    for (const auto& [value, name] : table_) {
      if (value == e) return name;
    }
    return "?";
  }

  StatusOr<E> Parse(std::string_view s) const {
    for (const auto& [value, name] : table_) {
      if (name == s) return value;
    }
    return InvalidArgument(
        fmt::format("unknown {} '{}'; expected {}", what_, std::string(s), Expected()));
  }

  std::vector<std::string_view> Names() const {
    std::vector<std::string_view> out;
    for (const auto& entry : table_) out.push_back(entry.second);
    return out;
  }

  // "a, b or c"
  std::string Expected() const {
    std::string out;
    for (size_t i = 0; i < N; ++i) {
      if (i > 0) out += i + 1 == N ? " or " : ", ";
      out += table_[i].second;
    }
    return out;
  }

 private:
  std::string_view what_;
  std::array<std::pair<E, std::string_view>, N> table_;
};

}  // namespace parasim
