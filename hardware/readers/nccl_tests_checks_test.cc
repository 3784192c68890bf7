#include "hardware/readers/nccl_tests_checks.h"

#include <doctest/doctest.h>
#include <fmt/core.h>

#include <string>

#include "hardware/readers/test_files.h"

namespace parasim {
namespace {

using testing::Fixture;

// By value: the caller's log is a temporary (a reference into it dangled once the statement
// ended, which AddressSanitizer caught).
NcclTestsSection OnlyRun(const StatusOr<NcclTestsLog>& log) {
  REQUIRE_MESSAGE(log.ok(), log.status().message());
  REQUIRE(log->sections.size() == 1);
  return log->sections[0];
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

constexpr std::string_view kColumns =
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
    "time   algbw   busbw #wrong\n";

TEST_CASE("the bus factor of each op, as nccl-tests computes busbw") {
  CHECK(*NcclBusFactor("all_reduce", 8) == doctest::Approx(1.75));
  CHECK(*NcclBusFactor("all_gather", 8) == doctest::Approx(0.875));
  CHECK(*NcclBusFactor("reduce_scatter", 16) == doctest::Approx(0.9375));
  CHECK(*NcclBusFactor("alltoall", 4) == doctest::Approx(0.75));
  CHECK(*NcclBusFactor("broadcast", 8) == 1);
  CHECK(*NcclBusFactor("sendrecv", 2) == 1);
  CHECK_FALSE(NcclBusFactor("alltoallv", 8).has_value());
}

// Before: no device lines and "nThread 1 nGpus 8" were taken for 8 ranks on one node, though
// busbw/algbw = 1.875 is 16 ranks of all_reduce: the fit priced 16 ranks' times as 8's.
TEST_CASE("a run without device lines: its rank count from busbw/algbw, its nodes asked for") {
  const std::string file = Fixture("nccl/all_reduce_perf-2node-no-devices.log");
  const NcclTestsSection& s = OnlyRun(ReadNcclTestsLog(file));
  CHECK(s.ranks == 0);
  auto unknown = NcclRunRanks(s, file, {});
  REQUIRE_FALSE(unknown.ok());
  const std::string why = unknown.status().message();
  CAPTURE(why);
  CHECK(Has(why, "no-devices.log:8:1: error: the all_reduce run (lines 1-18) has no device lines"));
  CHECK(Has(why, "nThread 1 nGpus 8 (the GPUs of one process)"));
  CHECK(Has(why, "16 ranks ran by its rows' busbw/algbw of 1.875 at line 17"));
  CHECK(Has(why, "busbw = algbw x 2(n-1)/n"));
  CHECK(Has(why, "pass --per-node N"));
  auto given = NcclRunRanks(s, file, {.per_node = 8});
  REQUIRE_MESSAGE(given.ok(), given.status().message());
  CHECK(given->ranks == 16);
  CHECK(given->per_node == 8);
  CHECK(Has(given->note, "say 16 ranks; fitted as 16 ranks, 8 per node"));
  // --ranks that the rows contradict is refused; one they allow is taken.
  auto wrong = NcclRunRanks(s, file, {.ranks = 8, .per_node = 8});
  REQUIRE_FALSE(wrong.ok());
  CHECK(Has(wrong.status().message(), "--ranks 8 disagrees with busbw/algbw of 1.875"));
  CHECK(NcclRunRanks(s, file, {.ranks = 16, .per_node = 8})->ranks == 16);

  // One node, eight processes of one GPU each: 8 ranks, where the header says 1.
  const std::string one = Fixture("nccl/all_reduce_perf-1node-no-devices.log");
  const NcclTestsSection& s1 = OnlyRun(ReadNcclTestsLog(one));
  CHECK_FALSE(NcclRunRanks(s1, one, {}).ok());
  auto eight = NcclRunRanks(s1, one, {.per_node = 8});
  REQUIRE(eight.ok());
  CHECK(eight->ranks == 8);
  CHECK(eight->per_node == 8);
}

TEST_CASE("a run without device lines whose header counts every rank is one node, quietly") {
  std::string text =
      "# nThread 1 nGpus 8 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 5\n";
  text += kColumns;
  text +=
      "     1048576        262144     float     sum      -1    15.10   69.45  121.55       0"
      "    15.10   69.45  121.55       0\n";
  const NcclTestsSection& s = OnlyRun(ParseNcclTestsLog(text, "all_reduce_perf.log"));
  auto shape = NcclRunRanks(s, "all_reduce_perf.log", {});
  REQUIRE_MESSAGE(shape.ok(), shape.status().message());
  CHECK(shape->ranks == 8);
  CHECK(shape->per_node == 8);
  CHECK(shape->note.empty());
  // broadcast prints busbw = algbw: the header is taken, and said to be unconfirmed.
  std::string bc = "# nThread 1 nGpus 4 minBytes 1048576\n";
  bc += kColumns;
  bc +=
      "     1048576        262144     float    none       0    15.10   69.45   69.45       0"
      "    15.10   69.45   69.45       0\n";
  const NcclTestsSection& b = OnlyRun(ParseNcclTestsLog(bc, "broadcast_perf.log"));
  auto four = NcclRunRanks(b, "broadcast_perf.log", {});
  REQUIRE(four.ok());
  CHECK(four->ranks == 4);
  CHECK(Has(four->note, "which its rows cannot confirm"));
  // Without the header either, nothing tells: --ranks is asked for.
  std::string bare(kColumns);
  bare +=
      "     1048576        262144     float    none       0    15.10   69.45   69.45       0"
      "    15.10   69.45   69.45       0\n";
  const NcclTestsSection& nb = OnlyRun(ParseNcclTestsLog(bare, "broadcast_perf.log"));
  auto none = NcclRunRanks(nb, "broadcast_perf.log", {});
  REQUIRE_FALSE(none.ok());
  CHECK(Has(none.status().message(), "broadcast_perf.log:2:1: error:"));
  CHECK(Has(none.status().message(), "or pass --ranks N"));
  // Bandwidths printed too coarsely to tell 60 ranks from 70: open, refused.
  std::string coarse(kColumns);
  coarse +=
      "     1048576        262144     float     sum      -1    15.10    1.00    1.97       0"
      "    15.10    1.00    1.97       0\n";
  const NcclTestsSection& c = OnlyRun(ParseNcclTestsLog(coarse, "all_reduce_perf.log"));
  auto open = NcclRunRanks(c, "all_reduce_perf.log", {});
  REQUIRE_FALSE(open.ok());
  CHECK(Has(open.status().message(), "leave the rank count open"));
}

TEST_CASE("--ranks and --per-node against a run's device lines") {
  const std::string file = Fixture("nccl/all_reduce_perf_mpi-tag-output-2node-h100.log");
  const NcclTestsSection& s = OnlyRun(ReadNcclTestsLog(file));
  CHECK(NcclRunRanks(s, file, {})->ranks == 16);
  CHECK(NcclRunRanks(s, file, {.ranks = 16, .per_node = 8})->per_node == 8);
  auto clash = NcclRunRanks(s, file, {.per_node = 4});
  REQUIRE_FALSE(clash.ok());
  CHECK(Has(clash.status().message(), "its device lines list 16 ranks, 8 per node"));
}

// Before: rows whose #wrong was 12345 (and the footer "Out of bounds values : 12 FAILED") were
// fitted as good measurements, `holds: true`.
TEST_CASE("rows that failed nccl-tests' data check are left out; a run of only those refused") {
  const std::string file = Fixture("nccl/all_reduce_perf-wrong-rows.log");
  const NcclTestsSection& s = OnlyRun(ReadNcclTestsLog(file));
  CHECK(s.out_of_bounds == 12);
  CHECK(s.out_of_bounds_line == 28);
  auto all = NcclRowsThatPassed(s, file);
  REQUIRE_FALSE(all.ok());
  const std::string why = all.status().message();
  CAPTURE(why);
  CHECK(Has(why,
            "wrong-rows.log:16:1: error: every row of the all_reduce run (lines 1-27) failed "
            "nccl-tests' data check (#wrong is not 0 on lines 16-27) (line 28: Out of "
            "bounds values : 12 FAILED)"));
  // Two of three rows good: the bad one is left out, by line.
  std::string text = "# nThread 1 nGpus 8\n";
  text += kColumns;
  int64_t size = 1048576;
  for (const char* wrong : {"0", "3", "N/A"}) {
    text += fmt::format(
        "{:>12}  {:>12}     float     sum      -1    15.10   69.45  121.55  {:>6}"
        "    15.10   69.45  121.55       0\n",
        size, size / 4, wrong);
    size *= 2;
  }
  text += "# Out of bounds values : 1 FAILED\n";
  const NcclTestsSection& p = OnlyRun(ParseNcclTestsLog(text, "all_reduce_perf.log"));
  auto some = NcclRowsThatPassed(p, "all_reduce_perf.log");
  REQUIRE_MESSAGE(some.ok(), some.status().message());
  CHECK(some->rows.size() == 2);
  CHECK(some->rows[1]->line == 5);
  CHECK(Has(some->note, "all_reduce_perf.log: lines 4: rows of the all_reduce run"));
  // The old layout's error column is a deviation: a failed footer cannot be placed, refused.
  std::string old = "# nThread 1 nGpus 8\n";
  old +=
      "#       size         count    type   redop     time   algbw   busbw  error     time   "
      "algbw   busbw  error\n";
  old +=
      "     1048576        262144   float     sum    15.10   69.45  121.55  2e-01    15.10   "
      "69.45  121.55  2e-01\n";
  old += "# Out of bounds values : 2 FAILED\n";
  const NcclTestsSection& o = OnlyRun(ParseNcclTestsLog(old, "all_reduce_perf.log"));
  auto unplaced = NcclRowsThatPassed(o, "all_reduce_perf.log");
  REQUIRE_FALSE(unplaced.ok());
  CHECK(Has(unplaced.status().message(), "all_reduce_perf.log:4:1: error:"));
  CHECK(Has(unplaced.status().message(), "its error column is a deviation, not a count"));
  // A run that passed its check keeps every row.
  const std::string good = Fixture("nccl/all_reduce_perf_mpi-tag-output-2node-h100.log");
  const NcclTestsSection& g = OnlyRun(ReadNcclTestsLog(good));
  auto kept = NcclRowsThatPassed(g, good);
  REQUIRE(kept.ok());
  CHECK(kept->rows.size() == g.rows.size());
  CHECK(kept->note.empty());
}

}  // namespace
}  // namespace parasim
