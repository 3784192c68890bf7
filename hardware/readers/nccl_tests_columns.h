// The column layout of an nccl-tests result table, read from the column header each run prints,
// and the parsing of one result row against it. Every layout nccl-tests has printed is read by
// its column names: 2017 ("bytes N type op time algbw busbw res"), 2019-2022 ("size count type
// redop time algbw busbw error", all_gather without redop), 2022 on ("... redop root time algbw
// busbw #wrong"), with `copybw` (side-work runs), the per-iteration columns (i_min i_max i_p99
// i_cv%), `cputime` (-C) and a trailing `timestamp` (two fields: date and time). Rows pasted
// without their header are read by the three layouts their field count tells apart.
//
//   std::optional<NcclColumns> c = NcclColumns::FromHeader(NcclFields(header_line, true));
//   StatusOr<NcclTestsRow> row = ParseNcclRow(NcclFields(line), *c);
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "hardware/readers/nccl_tests_log.h"
#include "sim/status.h"

namespace parasim {

struct NcclColumns {
  // Field indices in a full row (-1: no such column).
  int size = -1, count = -1, type = -1, redop = -1, root = -1;
  struct Half {
    int first = -1;  // the half's first field (its time)
    int width = 0;   // fields it spans
    int time = -1, algbw = -1, busbw = -1, wrong = -1;
  };
  Half out_of_place, in_place;
  int fields = 0;  // fields of a full row
  bool cputime = false;

  // From the column header's fields (without the leading '#'); nullopt when it is not one.
  static std::optional<NcclColumns> FromHeader(const std::vector<std::string_view>& header);
  // For rows without a header: 13 fields (size count type redop root | 4 | 4), 12 (no root) or
  // 11 (no redop); nullopt otherwise.
  static std::optional<NcclColumns> ForFields(size_t fields);
};

// One row. The error says what is wrong, without the file and line (the caller adds them);
// `at`, when given, gets the field at fault (a view into `fields`' text, for its column).
StatusOr<NcclTestsRow> ParseNcclRow(const std::vector<std::string_view>& fields,
                                    const NcclColumns& columns, std::string_view* at = nullptr);

}  // namespace parasim
