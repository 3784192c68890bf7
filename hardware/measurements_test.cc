// Measurement files and nccl-tests logs, without a GPU: logs parse (operation, ranks per host,
// out-of-place times), files round-trip through their text form, and bad rows are refused at
// their line.
#include "hardware/measurements.h"

#include <doctest/doctest.h>
#include <fmt/core.h>
#include <zlib.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "hardware/fit_testing.h"
#include "sim/io.h"

namespace parasim {
namespace {

// Each text is refused, its error naming the place (`where`: file:line:) of the bad row.
void CheckRefused(const std::string& file,
                  const std::vector<std::pair<std::string, std::string>>& texts) {
  for (const auto& [text, where] : texts) {
    auto bad = ParseMeasurements(text, file);
    CAPTURE(text);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.status().message().find(where) != std::string::npos);
  }
}

TEST_CASE("nccl-tests logs: operation, ranks per host, both halves of every row") {
  auto ar = LoadMeasurements("hardware/testdata/all_reduce_perf_8gpu.log");
  REQUIRE_MESSAGE(ar.ok(), ar.status().message());
  // 12 rows, each with its out-of-place and in-place time (hardware/readers/nccl_tests_log.h).
  REQUIRE(ar->collectives.size() == 24);
  CHECK(ar->collectives[0].op == Collective::kAllReduce);
  CHECK(ar->collectives[0].ranks == 8);
  CHECK(ar->collectives[0].per_node == 8);
  CHECK_FALSE(ar->collectives[0].in_place);
  CHECK(ar->collectives[1].in_place);
  CHECK(ar->collectives[0].where.starts_with("hardware/testdata/all_reduce_perf_8gpu.log:"));
  CHECK(ar->device == "NVIDIA H100 80GB HBM3");
  const auto& big = ar->collectives[ar->collectives.size() - 2];
  CHECK(big.bytes.bytes() == doctest::Approx(4.0 * 1024 * 1024 * 1024));
  // Bus bandwidth of the largest row: about the 230 GB/s the fixture was written with.
  const double busbw = big.bytes.bytes() / big.time.seconds() * BusFactor(big.op, 8) / 1e9;
  CHECK(busbw == doctest::Approx(230).epsilon(0.01));
  auto ag = LoadMeasurements("hardware/testdata/all_gather_perf_2node.log");
  REQUIRE(ag.ok());
  CHECK(ag->collectives[0].op == Collective::kAllGather);
  CHECK(ag->collectives[0].ranks == 16);
  CHECK(ag->collectives[0].per_node == 8);
  CHECK(ag->collectives[0].CrossesNodes());
  CHECK_FALSE(ar->collectives[0].CrossesNodes());
  // A log from before nccl-tests printed "Collective test starting", under a name that does not
  // say the program: --op names the collective.
  std::string old_log;
  for (std::istringstream in(*ReadFile("hardware/testdata/all_reduce_perf_8gpu.log")); in;) {
    std::string line;
    std::getline(in, line);
    if (line.find("Collective test starting") == std::string::npos) old_log += line + "\n";
  }
  const std::string dir = std::getenv("TEST_TMPDIR");
  REQUIRE(WriteFileAtomic(dir + "/run-17.txt", old_log).ok());
  auto unnamed = LoadMeasurements(dir + "/run-17.txt");
  REQUIRE_FALSE(unnamed.ok());
  CHECK(unnamed.status().message().find("pass --op") != std::string::npos);
  auto told = LoadMeasurements(dir + "/run-17.txt", "all_reduce");
  REQUIRE_MESSAGE(told.ok(), told.status().message());
  CHECK(told->collectives.size() == ar->collectives.size());
  CHECK(told->collectives[0].op == Collective::kAllReduce);
  CHECK(told->collectives[0].ranks == 8);
}

TEST_CASE("runs of ops the cost model does not price are passed over, said") {
  NcclTestsLog log;
  log.file = "gather.log";
  NcclTestsSection s;
  s.op = "gather";
  s.ranks = 8;
  s.first_line = 3;
  s.last_line = 9;
  NcclTestsRow r;
  r.bytes = 1024;
  r.out_of_place = {true, 10.0, 0.1, 0.1, "0"};
  s.rows.push_back(r);
  log.sections.push_back(s);
  const Measurements m = MeasurementsFromNcclLog(log);
  CHECK(m.collectives.empty());
  REQUIRE(m.notes.size() == 1);
  CHECK(m.notes[0].find("gather.log:3: the gather run (lines 3-9) passed over") !=
        std::string::npos);
}

// An all_reduce table of `n` ranks as nccl-tests prints it (busbw = algbw x 2(n-1)/n), one row
// per size, #wrong as given, after `header`.
std::string AllReduceTable(const std::string& header, int n,
                           const std::vector<std::string>& wrong) {
  std::string text = header;
  text +=
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n";
  int64_t size = int64_t{1} << 20;
  for (const std::string& w : wrong) {
    const double us = 10 + static_cast<double>(size) / 100e3;
    const double alg = static_cast<double>(size) / us / 1e3;
    const double bus = alg * 2 * (n - 1) / n;
    text += fmt::format(
        "{:>12} {:>13}     float     sum      -1  {:7.2f}  {:6.2f}  {:6.2f}  {:>6}  "
        "{:7.2f}  {:6.2f}  {:6.2f}  {:>6}\n",
        size, size / 4, us, alg, bus, w, us, alg, bus, w);
    size *= 2;
  }
  return text;
}

// Before: rows whose #wrong was not 0 were fitted, and a log without device lines was nThread x
// nGpus ranks on one node whatever its busbw said.
TEST_CASE("nccl-tests rows that failed their check are left out; ranks checked by busbw/algbw") {
  const std::string header = "# nThread 1 nGpus 8 minBytes 1048576\n";
  auto some = ParseNcclTestsLog(AllReduceTable(header, 8, {"0", "17", "0"}), "all_reduce_perf.log");
  REQUIRE(some.ok());
  auto m = MeasurementsFromNcclLog(*some, {});
  REQUIRE_MESSAGE(m.ok(), m.status().message());
  REQUIRE(m->collectives.size() == 4);  // two rows, both halves
  CHECK(m->collectives[0].ranks == 8);
  CHECK(m->collectives[0].per_node == 8);
  CHECK(m->collectives[2].where == "all_reduce_perf.log:5");
  REQUIRE(m->notes.size() == 1);
  CHECK(m->notes[0].find("all_reduce_perf.log: lines 4: rows of the all_reduce run") == 0);
  auto all = ParseNcclTestsLog(AllReduceTable(header, 8, {"5", "1e+06"}), "all_reduce_perf.log");
  REQUIRE(all.ok());
  auto refused = MeasurementsFromNcclLog(*all, {});
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("all_reduce_perf.log:3:1: error: every row of the "
                                        "all_reduce run") == 0);
  const Measurements lenient = MeasurementsFromNcclLog(*all);  // the fuzzer's: passed over, said
  CHECK(lenient.collectives.empty());
  REQUIRE(lenient.notes.size() == 1);
  CHECK(lenient.notes[0].find("; passed over") != std::string::npos);
  // 16 ranks by busbw/algbw, 8 GPUs a process: where they ran must be given.
  auto two = ParseNcclTestsLog(AllReduceTable(header, 16, {"0", "0", "0"}), "all_reduce_perf.log");
  REQUIRE(two.ok());
  auto unplaced = MeasurementsFromNcclLog(*two, {});
  REQUIRE_FALSE(unplaced.ok());
  CHECK(unplaced.status().message().find("pass --per-node N") != std::string::npos);
  auto placed = MeasurementsFromNcclLog(*two, {.per_node = 8});
  REQUIRE_MESSAGE(placed.ok(), placed.status().message());
  CHECK(placed->collectives[0].ranks == 16);
  CHECK(placed->collectives[0].per_node == 8);
  CHECK(placed->collectives[0].CrossesNodes());
}

// Before: a gzipped log was "binary data, not YAML", a table without its header lines "expected a
// mapping".
TEST_CASE("LoadMeasurements reads gzipped logs and tables pasted alone") {
  const std::string dir = std::getenv("TEST_TMPDIR");
  const std::string table = AllReduceTable("", 8, {"0", "0"});
  REQUIRE(WriteFileAtomic(dir + "/all_reduce_perf.txt", table).ok());
  auto bare = LoadMeasurements(dir + "/all_reduce_perf.txt", "", {.per_node = 8});
  REQUIRE_MESSAGE(bare.ok(), bare.status().message());
  CHECK(bare->collectives.size() == 4);
  CHECK(bare->collectives[0].ranks == 8);
  const std::string gz = dir + "/all_reduce_perf.log.gz";
  gzFile f = gzopen(gz.c_str(), "wb");
  REQUIRE(f != nullptr);
  const std::string log = AllReduceTable("# nThread 1 nGpus 8 minBytes 1048576\n", 8, {"0"});
  CHECK(gzwrite(f, log.data(), static_cast<unsigned>(log.size())) == static_cast<int>(log.size()));
  gzclose(f);
  auto zipped = LoadMeasurements(gz);
  REQUIRE_MESSAGE(zipped.ok(), zipped.status().message());
  CHECK(zipped->collectives.size() == 2);
  CHECK(zipped->collectives[0].where == gz + ":3");
}

TEST_CASE("measurement files round-trip and refuse bad values with file:line:col") {
  Measurements m = Synthetic(H100Cluster(4));
  auto back = ParseMeasurements(FormatMeasurements(m), "m.yaml");
  REQUIRE_MESSAGE(back.ok(), back.status().message());
  CHECK(back->gemm.size() == m.gemm.size());
  CHECK(back->collectives.size() == m.collectives.size());
  CHECK(back->gemm[3].time.seconds() == doctest::Approx(m.gemm[3].time.seconds()).epsilon(1e-6));
  CHECK(back->collectives[5].per_node == m.collectives[5].per_node);
  auto bad = ParseMeasurements("gemm:\n  - {m: 1, n: 2, k: 3, time: -1ms}\n", "bad.yaml");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("bad.yaml:2:") != std::string::npos);
}

TEST_CASE("new measurement rows round-trip; bad rows are refused at their line") {
  Measurements m;
  m.file = "m.yaml";
  m.memory.push_back({"softmax", Bytes::MiB(256), Duration::Microseconds(120), 0.012});
  AttentionPoint a;
  a.batch = 64;
  a.seq = 2048;
  a.head_dim = 128;
  a.causal = true;
  a.forward = Duration::Microseconds(1900);
  a.backward = Duration::Microseconds(4100);
  a.spread = 0.02;
  m.attention.push_back(a);
  m.host_copies.push_back({"d2h", Bytes::MiB(64), Duration::Microseconds(1400), 0.003});
  m.collectives.push_back(
      {Collective::kAllGather, "", 8, 8, Bytes::GiB(4), Duration::Milliseconds(20), 0.015});
  auto back = ParseMeasurements(FormatMeasurements(m), "m.yaml");
  REQUIRE_MESSAGE(back.ok(), back.status().message());
  REQUIRE(back->attention.size() == 1);
  CHECK(back->attention[0].causal);
  CHECK(back->attention[0].ForwardFlops().flops() == doctest::Approx(a.ForwardFlops().flops()));
  CHECK(back->attention[0].backward.microseconds() == doctest::Approx(4100));
  CHECK(back->attention[0].spread == doctest::Approx(0.02));
  CHECK(back->memory[0].spread == doctest::Approx(0.012));
  CHECK(back->host_copies[0].direction == "d2h");
  CHECK(back->collectives[0].spread == doctest::Approx(0.015));
  CHECK(back->collectives[0].bytes.bytes() == doctest::Approx(4.0 * (1 << 30)));
  CheckRefused(
      "m.yaml",
      {
          {"memory:\n  - {kernel: memcpy, bytes: 1GiB, time: 1ms}\n", "m.yaml:2:"},
          {"memory:\n  - {kernel: copy, bytes: 1GiB, time: 1ms, spread: -3%}\n", "m.yaml:2:"},
          {"attention:\n  - {kind: sparse, batch: 1, seq: 2, head_dim: 8, forward: 1ms}\n",
           "m.yaml:2:"},
          {"host_copies:\n  - {direction: h2d, bytes: 0B, time: 1ms}\n", "m.yaml:2:"},
      });
}

TEST_CASE("contention and sustained rows round-trip; bad ones are refused at their line") {
  Measurements m;
  m.file = "c.yaml";
  m.gpu = "h100-sxm5-80gb";
  m.contention = {ContentionRow("gemm", "spin", 8, 500, 700),
                  ContentionRow("gemm", "copy", 16, 1000, 1900),
                  ContentionRow("copy", "spin", 32, 800, 840)};
  m.sustained.push_back(
      {8192, 8192, 8192, 30, Duration::Microseconds(1400), Duration::Microseconds(1680)});
  auto back = ParseMeasurements(FormatMeasurements(m), "c.yaml");
  REQUIRE_MESSAGE(back.ok(), back.status().message());
  REQUIRE(back->contention.size() == 3);
  CHECK(back->contention[1].rate.gbps() == doctest::Approx(450));
  CHECK(back->contention[2].bytes.bytes() == doctest::Approx(2.0 * (1 << 30)));
  CHECK(back->contention[2].blocks == 32);
  CHECK(back->contention[0].Slowdown() == doctest::Approx(1.4));
  REQUIRE(back->sustained.size() == 1);
  CHECK(back->sustained[0].last.microseconds() == doctest::Approx(1680));
  CheckRefused(
      "c.yaml",
      {
          {"contention:\n  - {victim: gemm, background: spin, blocks: 16, sms: 132, alone: 1ms, "
           "with: 2ms}\n",
           "c.yaml:2:"},  // a GEMM needs m, n, k
          {"contention:\n  - {victim: copy, bytes: 1GiB, background: spin, blocks: 200, sms: 132, "
           "alone: 1ms, with: 2ms}\n",
           "c.yaml:2:"},  // more blocks than SMs
          {"sustained:\n  - {m: 1, n: 1, k: 1, seconds: 30, first: 1ms}\n", "c.yaml:2:"},
      });
}

TEST_CASE("strings with quotes survive the text form; files with nothing in them are refused") {
  // Both found by tests/fuzz/nccl_fuzz.cc: a quote in a device name broke the written file, and a
  // file with no measurements parsed into one that did not parse back.
  auto m = ParseMeasurements("device: forwDIA H100 80GB HBM3\"\nlaunch: 4.5us\n", "q.yaml");
  REQUIRE_MESSAGE(m.ok(), m.status().message());
  auto back = ParseMeasurements(FormatMeasurements(*m), "back.yaml");
  REQUIRE_MESSAGE(back.ok(), back.status().message());
  CHECK(back->device == "forwDIA H100 80GB HBM3\"");
  auto empty = ParseMeasurements("gpu: &10\n", "e.yaml");
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.status().message().find("e.yaml:1:1: error: gpu: no value given") !=
        std::string::npos);
  auto none = ParseMeasurements("gpu: a100-sxm4-80gb\n", "n.yaml");
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().message().find("n.yaml:1:1: error: no measurements") != std::string::npos);
  auto blank = ParseMeasurements("# nothing\n", "b.yaml");
  REQUIRE_FALSE(blank.ok());
  CHECK(blank.status().message().find("keys such as gpu") != std::string::npos);
}

}  // namespace
}  // namespace parasim
