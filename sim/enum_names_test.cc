#include "sim/enum_names.h"

#include <doctest/doctest.h>

namespace parasim {
namespace {

enum class Fruit { kApple, kPear, kPlum };
constexpr EnumNames<Fruit, 3> kFruits(
    "fruit", {{{Fruit::kApple, "apple"}, {Fruit::kPear, "pear"}, {Fruit::kPlum, "plum"}}});

TEST_CASE("an enum table names values, parses names and lists what it accepts") {
  static_assert(kFruits.Name(Fruit::kPear) == "pear");
  CHECK(*kFruits.Parse("plum") == Fruit::kPlum);
  const auto bad = kFruits.Parse("fig");
  REQUIRE(!bad.ok());
  CHECK(bad.status().message() == "unknown fruit 'fig'; expected apple, pear or plum");
  CHECK(kFruits.Names() == std::vector<std::string_view>{"apple", "pear", "plum"});
}

}  // namespace
}  // namespace parasim
