#include "sim/json.h"

#include <doctest/doctest.h>

namespace parasim {
namespace {

TEST_CASE("json output is deterministic and escaped") {
  Json j = Json::Object();
  j.Set("b", 1.5).Set("a", true).Set("s", "x\"y\n");
  Json arr = Json::Array();
  arr.Push(1).Push(int64_t{3000000000});
  j.Set("list", arr);
  CHECK(j.Dump(0) == R"({"b":1.5,"a":true,"s":"x\"y\n","list":[1,3000000000]})");
  Json nan = Json::Object();
  nan.Set("v", 0.0 / 0.0);
  CHECK(nan.Dump(0) == R"({"v":null})");
}

}  // namespace
}  // namespace parasim
