#include "hardware/readers/trace_summary.h"

#include <doctest/doctest.h>

#include "hardware/readers/json_trace.h"
#include "hardware/readers/test_files.h"

namespace parasim {
namespace {

using K = KernelClass;

const KernelClassTable& Table() {
  static const KernelClassTable t = *KernelClassTable::Builtin();
  return t;
}

ProfilerTrace Read(const std::string& fixture) {
  auto t = ReadJsonTrace(testing::Fixture(fixture));
  REQUIRE(t.ok());
  return std::move(t).value();
}

// The issue's first failure: DeepEP counted as element-wise, communication 0 ns. The fixture's
// sums are known by hand (us): GEMM 200 + 15, attention 120 + 60, normalization 20, element-wise
// 30 + 5 + 8, copy 2, memset 1, communication 40 + 300 + 150 + 20 (DeepEP).
TEST_CASE("a DeepSeek-style trace: DeepEP is communication, by family, beside compute") {
  auto s = SummarizeTrace(Read("traces/deepseek-dualpipe-h800.json"), Table());
  REQUIRE(s.ok());
  const KindSums& m = s->measured;
  CHECK(m.Time(K::kGemm) == 215000);
  CHECK(m.Time(K::kAttention) == 180000);
  CHECK(m.Time(K::kNormalization) == 20000);
  CHECK(m.Time(K::kElementwise) == 43000);
  CHECK(m.Time(K::kMemcpy) == 2000);
  CHECK(m.Time(K::kMemset) == 1000);
  CHECK(m.Time(K::kCommunication) == 510000);
  CHECK(m.Count(K::kCommunication) == 4);
  CHECK(m.comm_time_ns.at("DeepEP dispatch") == 300000);
  CHECK(m.comm_time_ns.at("DeepEP combine") == 150000);
  CHECK(m.comm_time_ns.at("DeepEP notify and layout") == 60000);
  CHECK(m.span_ns == 580000);
  CHECK(m.idle_ns == 29000);
  CHECK(m.overlap.comm_ns == 510000);
  CHECK(m.overlap.overlapped_ns == 420000);
  CHECK(m.overlap.exposed_ns == 90000);
  CHECK(s->steps_said == "ProfilerStep#1, the trace's only step");
  CHECK(s->steps_chosen == std::vector<int64_t>{1});
  REQUIRE(s->kernels.size() == 14);
  CHECK(s->kernels[0].family == "DeepEP dispatch");
  CHECK(s->kernels[0].time_ns == 300000);
  CHECK(s->notes.empty());
}

// The issue's ResNet failure: softmax counted as attention, three steps summed silently.
TEST_CASE("three steps: the default average leaves the warm-up step out and says so") {
  const ProfilerTrace t = Read("traces/resnet-a100-3steps.json");
  auto s = SummarizeTrace(t, Table());
  REQUIRE(s.ok());
  CHECK(s->steps_chosen == std::vector<int64_t>{2, 3});
  CHECK(s->steps_said.find("the average of ProfilerStep#2..#3 (2 of 3 steps; #1 left out as "
                           "warm-up") == 0);
  REQUIRE(s->per_step.size() == 3);
  // Step 1 ran its three convolutions at 200 us, the others at 100 us; wgrad 150, fc 15.
  CHECK(s->per_step[0].second.Time(K::kGemm) == 3 * 200000 + 15000 + 150000);
  CHECK(s->per_step[1].second.Time(K::kGemm) == 3 * 100000 + 15000 + 150000);
  CHECK(s->measured.Time(K::kGemm) == 465000);
  CHECK(s->measured.Time(K::kAttention) == 0);
  CHECK(s->measured.Time(K::kNormalization) == 3 * 30000 + 8000);  // batch norms and softmax
  CHECK(s->measured.Count(K::kGemm) == 5);
  CHECK(s->measured.Time(K::kMemcpy) == 20000);
  // The listing covers both steps: the convolution ran 6 times for 600 us.
  CHECK(s->kernels[0].count == 6);
  CHECK(s->kernels[0].time_ns == 600000);
  CHECK(s->kernels[0].family == "cuDNN convolution");

  auto one = SummarizeTrace(t, Table(), *StepChoice::Parse("1"));
  REQUIRE(one.ok());
  CHECK(one->steps_said == "ProfilerStep#1 of ProfilerStep#1..#3 (--step 1)");
  CHECK(one->measured.Time(K::kGemm) == 765000);
  auto all = SummarizeTrace(t, Table(), *StepChoice::Parse("all"));
  REQUIRE(all.ok());
  CHECK(all->measured.Time(K::kGemm) == 565000);
  CHECK(all->steps_said == "the average of ProfilerStep#1..#3 (3 steps; --step N takes one)");
  auto missing = SummarizeTrace(t, Table(), *StepChoice::Parse("7"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message().find("--step 7: the trace holds ProfilerStep#1..#3") !=
        std::string::npos);
}

TEST_CASE("a step range holding no GPU kernel is left out of the average, and said") {
  const ProfilerTrace t = Read("traces/empty-last-step.json");
  auto s = SummarizeTrace(t, Table());
  REQUIRE(s.ok());
  // #1 is the warm-up; #4 closed before any kernel ran: averaged in, it took a quarter off.
  CHECK(s->steps_chosen == std::vector<int64_t>{2, 3});
  CHECK(s->steps_said.find("; left out, holding no GPU kernel: #4") != std::string::npos);
  CHECK(s->measured.Time(K::kGemm) == 200000);
  auto all = SummarizeTrace(t, Table(), *StepChoice::Parse("all"));
  REQUIRE(all.ok());
  CHECK(all->steps_chosen == std::vector<int64_t>{1, 2, 3});
  CHECK(all->measured.Time(K::kGemm) == 200000);
}

// tests/traces/kineto-step.json: the sums its README states (GEMM 1.3 ms, attention 0.7 ms,
// element-wise with the copy and the norm 0.2 ms, NCCL 0.73 ms: all-reduce 0.25, reduce-scatter
// 0.4, send/recv 0.08; span 2.9 ms, idle 0.12 ms), as compare --trace has read them.
TEST_CASE("the hand-written Kineto step of tests/traces keeps its sums") {
  auto t = ReadJsonTrace("tests/traces/kineto-step.json");
  REQUIRE(t.ok());
  auto s = SummarizeTrace(*t, Table());
  REQUIRE(s.ok());
  const KindSums& m = s->measured;
  CHECK(m.Time(K::kGemm) == 1300000);
  CHECK(m.Time(K::kAttention) == 700000);
  CHECK(m.Time(K::kElementwise) + m.Time(K::kNormalization) + m.Time(K::kMemcpy) == 200000);
  CHECK(m.comm_time_ns.at("NCCL AllReduce") == 250000);
  CHECK(m.comm_time_ns.at("NCCL ReduceScatter") == 400000);
  CHECK(m.comm_time_ns.at("NCCL SendRecv") == 80000);
  CHECK(m.span_ns == 2900000);
  CHECK(m.idle_ns == 120000);
}

TEST_CASE("step flags") {
  CHECK(StepChoice::Parse("")->mode == StepChoice::Mode::kDefault);
  CHECK(StepChoice::Parse("all")->mode == StepChoice::Mode::kAll);
  CHECK(StepChoice::Parse("12")->step == 12);
  CHECK_FALSE(StepChoice::Parse("last").ok());
  CHECK_FALSE(StepChoice::Parse("-1").ok());
}

TEST_CASE("no steps: the whole trace; other devices left out with a note") {
  const std::string p = testing::TempFile("two-devices.json");
  testing::WriteText(p, R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "nvjet_a", "ts": 10, "dur": 5, "args": {"device": 0, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "nvjet_a", "ts": 20, "dur": 5, "args": {"device": 0, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "nvjet_a", "ts": 20, "dur": 5, "args": {"device": 1, "stream": 7}}]})");
  auto t = ReadJsonTrace(p);
  REQUIRE(t.ok());
  auto s = SummarizeTrace(*t, Table());
  REQUIRE(s.ok());
  CHECK(s->steps_said == "the whole trace (it marks no ProfilerStep#N)");
  CHECK(s->measured.Time(K::kGemm) == 10000);
  CHECK(s->measured.idle_ns == 5000);
  REQUIRE(s->notes.size() == 1);
  CHECK(s->notes[0] == "1 GPU events of other devices than device 0 left out");
}

TEST_CASE("GPU events written as begin/end pairs are left out with a note") {
  const std::string p = testing::TempFile("begin-end.json");
  testing::WriteText(p, R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "nvjet_a", "ts": 10, "dur": 5, "args": {"device": 0, "stream": 7}},
    {"ph": "B", "cat": "kernel", "name": "nvjet_a", "ts": 20, "args": {"device": 0, "stream": 7}},
    {"ph": "E", "cat": "kernel", "name": "nvjet_a", "ts": 25, "args": {"device": 0, "stream": 7}}]})");
  auto t = ReadJsonTrace(p);
  REQUIRE(t.ok());
  auto s = SummarizeTrace(*t, Table());
  REQUIRE(s.ok());
  CHECK(s->measured.Time(K::kGemm) == 5000);
  REQUIRE(s->notes.size() == 1);
  CHECK(
      s->notes[0] ==
      "1 GPU events written as begin/end pairs (\"ph\": \"B\" then \"E\") left out: only complete "
      "events (\"ph\": \"X\") are read, as the PyTorch profiler writes them");
}

TEST_CASE("the listing as text and as TSV") {
  std::vector<KernelListing> rows = {{"nvjet\tx", K::kGemm, "cuBLAS nvjet", 4, 2000000},
                                     {"Memset (Device)", K::kMemset, "memset", 2, 1500}};
  const std::string text = FormatKernelListing(rows, 2);
  CHECK(text.find("GEMM") != std::string::npos);
  CHECK(text.find("2.000        1.000") != std::string::npos);
  CHECK(KernelListingTsv(rows) ==
        "name\tkind\tfamily\tcount\ttotal_us\nnvjet x\tGEMM\tcuBLAS nvjet\t4\t2000.000\n"
        "Memset (Device)\tmemset\tmemset\t2\t1.500\n");
}

}  // namespace
}  // namespace parasim
