#include "hardware/readers/nccl_tests_columns.h"

#include <doctest/doctest.h>

#include "hardware/readers/nccl_log_lines.h"

namespace parasim {
namespace {

NcclColumns Header(std::string_view line) {
  auto c = NcclColumns::FromHeader(NcclFields(line, true));
  REQUIRE(c.has_value());
  return *c;
}

TEST_CASE("every version's column header") {
  const NcclColumns v2022 = Header(
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong");
  CHECK(v2022.fields == 13);
  CHECK(v2022.root == 4);
  CHECK(v2022.in_place.time == 9);
  CHECK(v2022.out_of_place.width == 4);
  const NcclColumns v2019 = Header(
      "#       size         count      type   redop     time   algbw   busbw  error     time   "
      "algbw   busbw  error");
  CHECK(v2019.fields == 12);
  CHECK(v2019.root == -1);
  CHECK(v2019.out_of_place.wrong == 7);
  const NcclColumns gather2019 = Header(
      "#       size         count      type     time   algbw   busbw  error     time   "
      "algbw   busbw  error");
  CHECK(gather2019.redop == -1);
  const NcclColumns v2017 = Header(
      "#      bytes             N    type      op     time  algbw  busbw      res     time  algbw  "
      "busbw      res");
  CHECK(v2017.redop == 3);
  CHECK(v2017.count == 1);
  const NcclColumns copybw = Header(
      "#       size         count      type   redop    root     time   algbw   busbw copybw "
      "#wrong     time   algbw   busbw copybw #wrong");
  CHECK(copybw.out_of_place.width == 5);
  CHECK(copybw.in_place.busbw == 12);
  const NcclColumns per_iter = Header(
      "#       size   count   type   redop    root     time   algbw   busbw  #wrong   i_min   "
      "i_max   i_p99   i_cv%     time   algbw   busbw  #wrong   i_min   i_max   i_p99   i_cv%");
  CHECK(per_iter.fields == 21);
  CHECK(per_iter.in_place.time == 13);
  const NcclColumns stamped = Header(
      "#       size   count   type   redop    root  cputime   algbw   busbw #wrong  cputime   "
      "algbw   busbw #wrong           timestamp");
  CHECK(stamped.cputime);
  CHECK(stamped.fields == 15);
  CHECK_FALSE(NcclColumns::FromHeader(NcclFields("# size count type", true)).has_value());
}

TEST_CASE("rows: both halves, in-place only, defaults by width") {
  const NcclColumns c = *NcclColumns::ForFields(13);
  auto r = ParseNcclRow(NcclFields("  1073741824  268435456  float  sum  -1  5637.41  190.47  "
                                   "178.56  0  5693.78  188.58  176.80  0"),
                        c);
  REQUIRE(r.ok());
  CHECK(r->bytes == 1073741824);
  CHECK(r->redop == "sum");
  CHECK(r->out_of_place.time_us == 5637.41);
  CHECK(r->in_place.busbw_gbps == 176.80);
  CHECK(r->in_place.wrong == "0");
  // A trace replay prints blanks for the out-of-place half.
  auto ip = ParseNcclRow(NcclFields("1024 256 float sum -1 45.46 0.02 0.02 0"), c);
  REQUIRE(ip.ok());
  CHECK_FALSE(ip->out_of_place.present);
  CHECK(ip->in_place.time_us == 45.46);
  auto old = ParseNcclRow(NcclFields("8 2 float sum 158.3 0.00 0.00 1e-07 158.4 0.00 0.00 0e+00"),
                          *NcclColumns::ForFields(12));
  REQUIRE(old.ok());
  CHECK(old->in_place.wrong == "0e+00");
  CHECK(NcclColumns::ForFields(11)->redop == -1);
  CHECK_FALSE(NcclColumns::ForFields(9).has_value());
}

TEST_CASE("a header whose in-place half lacks a column is no header (found by nccl_fuzz)") {
  // The second busbw misspelt: the in-place half had no busbw column and a row read field -1.
  CHECK_FALSE(
      NcclColumns::FromHeader(
          NcclFields(
              "#       size         count      type   redop    root     time   algbw   busbw "
              "#wrong     time   algbw   bsbuw #wrong",
              true))
          .has_value());
}

TEST_CASE("values that are no measurement") {
  const NcclColumns c = *NcclColumns::ForFields(13);
  struct Case {
    std::string_view row, says;
  };
  for (const Case& k : {
           Case{"1024 256 float sum -1 -3.1 0.02 0.02 0 45 0.02 0.02 0",
                "out-of-place time -3.1 is negative"},
           Case{"1024 256 float sum -1 45 0.02 1e+308 0 45 0.02 0.02 0", "busbw 1e+308 is absurd"},
           Case{"1024 256 float sum -1 2e9 0.02 0.02 0 45 0.02 0.02 0", "time 2e9 is absurd"},
           Case{"1024 256 float sum -1 0 0.02 0.02 0 45 0.02 0.02 0", "time 0 is not positive"},
           Case{"1024 256 float sum -1 1e-308 0.02 0.02 0 45 0.02 0.02 0",
                "time 1e-308 us is under 0.01 us"},
           Case{"1024 256 float sum -1 nan 0.02 0.02 0 45 0.02 0.02 0", "is absurd"},
           Case{"2000000000000000000 256 float sum -1 1 1 1 0 1 1 1 0",
                "size 2000000000000000000 is absurd"},
           Case{"1024 x float sum -1 1 1 1 0 1 1 1 0", "count 'x' is not an integer"},
           Case{"1024 256 float sum -1 1 1 1 0 1 1", "11 fields where the column header has 13"},
       }) {
    CAPTURE(k.row);
    auto r = ParseNcclRow(NcclFields(k.row), c);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find(k.says) != std::string::npos);
  }
}

}  // namespace
}  // namespace parasim
