#include "hardware/readers/json_trace.h"

#include <doctest/doctest.h>

#include <map>
#include <string>

#include "hardware/readers/synthetic_trace.h"
#include "hardware/readers/test_files.h"

namespace parasim {
namespace {

using testing::Fixture;

TEST_CASE("microseconds as Kineto writes them, to exact nanoseconds") {
  struct Case {
    std::string_view text;
    std::optional<int64_t> ns;
  };
  for (const Case& c :
       {Case{"12", 12000}, Case{"4800027888463.797", 4800027888463797}, Case{"0.0005", 1},
        Case{"0.0004", 0}, Case{"-3", -3000}, Case{"1.5e3", 1500000}, Case{"2E-3", 2},
        Case{".5", 500}, Case{"1e308", std::nullopt}, Case{"NaN", std::nullopt},
        Case{"", std::nullopt}, Case{"12abc", std::nullopt},
        Case{"99999999999999999", std::nullopt}, Case{"1e", std::nullopt}}) {
    CAPTURE(c.text);
    CHECK(MicrosecondsToNanos(c.text) == c.ns);
  }
}

TEST_CASE("a DeepSeek-style H800 trace: events, streams, steps, devices, rank") {
  auto t = ReadJsonTrace(Fixture("traces/deepseek-dualpipe-h800.json"));
  REQUIRE(t.ok());
  CHECK(t->events.size() == 14);
  CHECK(t->names.size() == 14);
  REQUIRE(t->steps.size() == 1);
  CHECK(t->steps[0].number == 1);
  CHECK(t->steps[0].dur_ns == 700000);
  for (const GpuEvent& e : t->events) CHECK(e.step == 0);
  REQUIRE(t->devices.size() == 2);
  CHECK(t->devices[1].name == "NVIDIA H800");
  CHECK(t->devices[1].sms == 132);
  CHECK(t->devices[1].memory_bytes == 84943110144);
  REQUIRE(t->distributed.has_value());
  CHECK(t->distributed->rank == 0);
  CHECK(t->distributed->world_size == 64);
  CHECK(t->MainDevice() == 0);
  const GpuEvent& dispatch = t->events[3];
  CHECK(t->name(dispatch).starts_with("void dpsk::ep::internode::dispatch<"));
  CHECK(dispatch.stream == 37);
  CHECK(dispatch.dur_ns == 300000);
  CHECK(dispatch.start_ns == (1740000000000100 + 60) * 1000);
  CHECK(t->events[12].category == GpuEventCategory::kMemcpy);
  CHECK(t->events[13].category == GpuEventCategory::kMemset);
}

TEST_CASE("three ProfilerSteps: each kernel in the step that launched it") {
  auto t = ReadJsonTrace(Fixture("traces/resnet-a100-3steps.json"));
  REQUIRE(t.ok());
  REQUIRE(t->steps.size() == 3);
  std::map<int, int> per_step;
  for (const GpuEvent& e : t->events) ++per_step[e.step];
  CHECK(per_step == std::map<int, int>{{0, 14}, {1, 14}, {2, 14}});
  CHECK(t->devices.at(0).name == "NVIDIA A100-SXM4-80GB");
  CHECK_FALSE(t->distributed.has_value());
}

TEST_CASE("gzipped and plain read alike; a bare event array is a trace") {
  auto gz = ReadJsonTrace(Fixture("traces/two-ranks/rank-1.json.gz"));
  REQUIRE(gz.ok());
  CHECK(gz->events.size() == 4);
  CHECK(gz->distributed->rank == 1);
  const std::string bare = testing::TempFile("bare.json");
  testing::WriteText(bare, R"([{"ph": "X", "cat": "Kernel", "name": "k", "ts": 1, "dur": 2.5,
    "pid": 3, "tid": 9}, {"ph": "i", "name": "x"}])");
  auto t = ReadJsonTrace(bare);
  REQUIRE(t.ok());
  REQUIRE(t->events.size() == 1);
  CHECK(t->events[0].dur_ns == 2500);
  CHECK(t->events[0].device == 3);  // from pid, as old traces give it
  CHECK(t->events[0].stream == 9);
  CHECK(t->events_read == 2);
  // A UTF-8 byte-order mark (Windows editors write one) is passed over; UTF-16 is named (both
  // were "malformed JSON: Invalid value., at byte 0").
  testing::WriteText(bare,
                     "\xEF\xBB\xBF[{\"ph\": \"X\", \"cat\": \"Kernel\", \"name\": "
                     "\"k\", \"ts\": 1, \"dur\": 2}]");
  auto marked = ReadJsonTrace(bare);
  REQUIRE_MESSAGE(marked.ok(), marked.status().message());
  CHECK(marked->events.size() == 1);
  testing::WriteText(bare, std::string("\xFF\xFE[\0]\0", 6));
  auto wide = ReadJsonTrace(bare);
  REQUIRE_FALSE(wide.ok());
  CHECK(wide.status().message().find(":1:1: error: the file is UTF-16LE text (its byte-order "
                                     "mark says so), not UTF-8") != std::string::npos);
}

TEST_CASE("errors name the file, what is wrong and where") {
  struct Case {
    std::string file;
    std::string where;  // line:column of the event or of the break
    std::vector<std::string> says;
  };
  for (const Case& c : {
           Case{"traces/bad/negative-dur.json",
                "5:5",
                {"dur -3 us is negative", "traceEvents[1]", "ncclKernel_AllReduce", "at byte 2"}},
           Case{"traces/bad/absurd-dur.json",
                "4:5",
                {"dur '1e308' is not a finite number", "traceEvents[0]", "at byte"}},
           Case{"traces/bad/truncated.json", "10:51", {"ends early at byte", "truncated trace?"}},
           Case{"traces/bad/no-kernels.json", "1:1", {"no GPU kernels among its 2 events"}},
       }) {
    CAPTURE(c.file);
    auto t = ReadJsonTrace(Fixture(c.file));
    REQUIRE_FALSE(t.ok());
    CHECK(t.status().message().find(Fixture(c.file) + ":" + c.where + ": error: ") == 0);
    for (const std::string& s : c.says) {
      CAPTURE(s);
      CHECK(t.status().message().find(s) != std::string::npos);
    }
  }
}

TEST_CASE("malformed JSON and absurd values, written inline") {
  struct Case {
    std::string text, says;
  };
  for (const Case& c : {
           Case{R"({"traceEvents": [{"ph": "X",, }]})", "malformed JSON: "},
           Case{R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1,
                "dur": 90000000000000}]})",
                "over 86400 s"},
           Case{R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": "soon",
                "dur": 1}]})",
                "ts 'soon' is not a number"},
           Case{R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1,
                "dur": NaN}]})",
                "not a finite number"},
           Case{R"({"schemaVersion": 1})", "no traceEvents list"},
           Case{R"("just a string")", "no traceEvents list"},
           Case{R"({"traceEvents": [{"name": "\ud800"}]})", "malformed JSON"},
           Case{std::string(300, '[') + std::string(300, ']'), "nested over 256 deep"},
       }) {
    CAPTURE(c.text);
    const std::string p = testing::TempFile("inline.json");
    testing::WriteText(p, c.text);
    auto t = ReadJsonTrace(p);
    REQUIRE_FALSE(t.ok());
    CHECK(t.status().message().find(c.says) != std::string::npos);
  }
}

// Before: a trace of B/E kernel pairs was "no GPU kernels (none with \"cat\": \"kernel\")", though
// it had such events; a rank written as a string was dropped without a word.
TEST_CASE("begin/end kernel pairs are said; distributedInfo.rank as a string is read") {
  const std::string be = testing::TempFile("be.json");
  testing::WriteText(be, R"({"traceEvents": [
    {"ph": "B", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10},
    {"ph": "E", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 110}]})");
  auto only = ReadJsonTrace(be);
  REQUIRE_FALSE(only.ok());
  CHECK(only.status().message().find(be + ":1:1: error: its 1 GPU events") == 0);
  CHECK(only.status().message().find("are begin/end pairs (\"ph\": \"B\" then \"E\"); parasim "
                                     "reads complete events (\"ph\": \"X\" with a \"dur\")") !=
        std::string::npos);
  const std::string mixed = testing::TempFile("mixed.json");
  testing::WriteText(mixed, R"({"distributedInfo": {"rank": "3", "world_size": "8"},
    "traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2},
    {"ph": "B", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10},
    {"ph": "E", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 110}]})");
  auto t = ReadJsonTrace(mixed);
  REQUIRE_MESSAGE(t.ok(), t.status().message());
  CHECK(t->events.size() == 1);
  CHECK(t->gpu_begin_events == 1);
  REQUIRE(t->distributed.has_value());
  CHECK(t->distributed->rank == 3);
  CHECK(t->distributed->world_size == 8);
  for (const char* rank : {R"("three")", "-1", "1.5", R"("")"}) {
    CAPTURE(rank);
    const std::string p = testing::TempFile("rank.json");
    testing::WriteText(
        p, std::string(R"({"distributedInfo": {"rank": )") + rank + R"(}, "traceEvents": []})");
    auto bad = ReadJsonTrace(p);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.status().message().find(p + ":1:") == 0);
    CHECK(bad.status().message().find("distributedInfo.rank") != std::string::npos);
    CHECK(bad.status().message().find("is not a rank (a whole number, 0 or more)") !=
          std::string::npos);
  }
}

TEST_CASE("invalid UTF-8 in a kernel name is repaired, not fatal") {
  auto t = ReadJsonTrace(Fixture("traces/bad/invalid-utf8.json"));
  REQUIRE(t.ok());
  CHECK(t->names_repaired == 1);
  CHECK(t->names.at(0) == "my_kernel_\xEF\xBF\xBD\xEF\xBF\xBD_v2");
}

TEST_CASE("not a regular file, and a gzip bomb, are refused") {
  for (const std::string& p : {std::string("/dev/zero"), Fixture("traces/two-ranks")}) {
    auto t = ReadJsonTrace(p);
    REQUIRE_FALSE(t.ok());
    CHECK(t.status().message().find("not a regular file") != std::string::npos);
  }
  const std::string bomb = testing::TempFile("bomb.json.gz");
  testing::WriteGzipBomb(bomb, R"({"traceEvents": [)", int64_t{4} << 30);
  auto t = ReadJsonTrace(bomb);
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().message().find("a gzip bomb?") != std::string::npos);
}

TEST_CASE("a generated trace: every kernel read, sums exact") {
  const std::string p = testing::TempFile("synthetic.json.gz");
  SyntheticTraceOptions o;
  o.target_bytes = 2 << 20;
  o.kernels_per_step = 500;
  auto stats = WriteSyntheticTrace(p, o);
  REQUIRE(stats.ok());
  auto t = ReadJsonTrace(p);
  REQUIRE(t.ok());
  CHECK(static_cast<int64_t>(t->events.size()) == stats->kernels);
  CHECK(t->events_read == stats->events);
  CHECK(static_cast<int64_t>(t->steps.size()) == stats->steps);
  std::map<std::string, int64_t> sums;
  for (const GpuEvent& e : t->events) {
    sums[std::string(t->name(e))] += e.dur_ns;
    CHECK(e.step >= 0);
  }
  CHECK(sums == stats->dur_ns_by_name);
}

}  // namespace
}  // namespace parasim
