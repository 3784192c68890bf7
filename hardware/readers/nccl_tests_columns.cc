#include "hardware/readers/nccl_tests_columns.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

namespace parasim {
namespace {

// Limits past which a value is not a measurement: over 1000 s for one collective, more than a
// petabyte, faster than 100 TB/s (NVL72's busbw is under 1 TB/s).
constexpr double kMaxTimeUs = 1e9;
constexpr int64_t kMaxBytes = int64_t{1} << 50;
constexpr double kMaxGbps = 1e5;

void Close(NcclColumns::Half* h, int end) {
  if (h->first >= 0 && h->width == 0) h->width = end - h->first;
}

}  // namespace

std::optional<NcclColumns> NcclColumns::FromHeader(const std::vector<std::string_view>& header) {
  NcclColumns c;
  Half* half = nullptr;
  bool timestamp = false;
  for (int i = 0; i < static_cast<int>(header.size()); ++i) {
    const std::string_view f = header[i];
    if (f == "time" || f == "cputime") {
      if (half == &c.out_of_place) Close(half, i);
      half = c.out_of_place.first < 0 ? &c.out_of_place : &c.in_place;
      if (half->first >= 0) return std::nullopt;  // a third time column
      half->first = half->time = i;
      c.cputime = f == "cputime";
    } else if (half != nullptr && f == "algbw") {
      half->algbw = i;
    } else if (half != nullptr && f == "busbw") {
      half->busbw = i;
    } else if (half != nullptr && (f == "#wrong" || f == "error" || f == "res")) {
      half->wrong = i;
    } else if (f == "timestamp") {
      if (half) Close(half, i);
      timestamp = true;
    } else if (half == nullptr) {
      if (f == "size" || f == "bytes") c.size = i;
      if (f == "count" || f == "N") c.count = i;
      if (f == "type") c.type = i;
      if (f == "redop" || f == "op") c.redop = i;
      if (f == "root") c.root = i;
    }
  }
  if (half) Close(half, static_cast<int>(header.size()));
  c.fields = static_cast<int>(header.size()) + (timestamp ? 1 : 0);
  const Half& o = c.out_of_place;
  const Half& ip = c.in_place;
  if (c.size != 0 || o.time < 0 || o.algbw < 0 || o.busbw < 0) return std::nullopt;
  // An in-place half is whole (time, algbw and busbw) or not a header of nccl-tests.
  if (ip.first >= 0 && (ip.algbw < 0 || ip.busbw < 0)) return std::nullopt;
  return c;
}

std::optional<NcclColumns> NcclColumns::ForFields(size_t fields) {
  static constexpr std::string_view k13[] = {"size",  "count", "type",  "redop",  "root",
                                             "time",  "algbw", "busbw", "#wrong", "time",
                                             "algbw", "busbw", "#wrong"};
  std::vector<std::string_view> h(std::begin(k13), std::end(k13));
  if (fields == 12) h.erase(h.begin() + 4);                 // no root (2019-2022)
  if (fields == 11) h.erase(h.begin() + 3, h.begin() + 5);  // no redop, no root
  if (fields != 11 && fields != 12 && fields != 13) return std::nullopt;
  return FromHeader(h);
}

namespace {

StatusOr<int64_t> Int(std::string_view s, std::string_view what) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) {
    return InvalidArgument(fmt::format("{} '{}' is not an integer", what, s));
  }
  return v;
}

StatusOr<double> Number(std::string_view s, std::string_view what, double max) {
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) {
    return InvalidArgument(fmt::format("{} '{}' is not a number", what, s));
  }
  if (v < 0) return InvalidArgument(fmt::format("{} {} is negative", what, s));
  if (!std::isfinite(v) || v > max) {
    return InvalidArgument(fmt::format("{} {} is absurd (over {:g})", what, s, max));
  }
  return v;
}

// The half `h` of a row, its fields shifted by `shift` (an absent out-of-place half).
StatusOr<NcclTestsResult> ParseHalf(const std::vector<std::string_view>& f,
                                    const NcclColumns::Half& h, int shift, std::string_view name,
                                    std::string_view* at) {
  NcclTestsResult r;
  r.present = true;
  const int n = static_cast<int>(f.size());
  if (h.time < 0 || h.algbw < 0 || h.busbw < 0) {
    return InvalidArgument(fmt::format("{} lacks its time, algbw or busbw column", name));
  }
  for (int i : {h.time, h.algbw, h.busbw, h.wrong}) {
    if (i >= 0 && (i - shift < 0 || i - shift >= n)) {
      return InvalidArgument(
          fmt::format("{} column {} is outside the row's {} fields", name, i - shift + 1, n));
    }
  }
  *at = f[h.time - shift];
  PARASIM_ASSIGN_OR_RETURN(r.time_us,
                           Number(f[h.time - shift], fmt::format("{} time", name), kMaxTimeUs));
  if (r.time_us <= 0)
    return InvalidArgument(fmt::format("{} time {} is not positive", name, f[h.time - shift]));
  // nccl-tests prints microseconds with two decimals; less is no measurement (1e-308 fitted an
  // infinite latency).
  if (r.time_us < 0.01) {
    return InvalidArgument(fmt::format(
        "{} time {} us is under 0.01 us, the least nccl-tests prints", name, f[h.time - shift]));
  }
  *at = f[h.algbw - shift];
  PARASIM_ASSIGN_OR_RETURN(r.algbw_gbps,
                           Number(f[h.algbw - shift], fmt::format("{} algbw", name), kMaxGbps));
  *at = f[h.busbw - shift];
  PARASIM_ASSIGN_OR_RETURN(r.busbw_gbps,
                           Number(f[h.busbw - shift], fmt::format("{} busbw", name), kMaxGbps));
  if (h.wrong >= 0) r.wrong = std::string(f[h.wrong - shift]);
  return r;
}

}  // namespace

StatusOr<NcclTestsRow> ParseNcclRow(const std::vector<std::string_view>& f, const NcclColumns& c,
                                    std::string_view* at) {
  std::string_view unused;
  if (at == nullptr) at = &unused;
  *at = f.empty() ? std::string_view() : f.front();
  const int n = static_cast<int>(f.size());
  // Trace replays print blanks for the out-of-place half: the in-place half moves left.
  // Only when every column but the out-of-place half's precedes it and the in-place half follows.
  const int leading = std::max({c.size, c.count, c.type, c.redop, c.root});
  const bool ip_only = c.in_place.first > c.out_of_place.first && leading < c.out_of_place.first &&
                       n == c.fields - c.out_of_place.width;
  if (n != c.fields && !ip_only) {
    return InvalidArgument(fmt::format("{} fields where the column header has {}", n, c.fields));
  }
  NcclTestsRow row;
  *at = f[c.size];
  PARASIM_ASSIGN_OR_RETURN(row.bytes, Int(f[c.size], "size"));
  if (row.bytes < 0 || row.bytes > kMaxBytes) {
    return InvalidArgument(fmt::format("size {} is absurd", f[c.size]));
  }
  if (c.count >= 0) {
    *at = f[c.count];
    PARASIM_ASSIGN_OR_RETURN(row.count, Int(f[c.count], "count"));
    if (row.count < 0) return InvalidArgument(fmt::format("count {} is negative", f[c.count]));
  }
  if (c.type >= 0) row.type = std::string(f[c.type]);
  if (c.redop >= 0) row.redop = std::string(f[c.redop]);
  if (c.root >= 0) {
    *at = f[c.root];
    PARASIM_ASSIGN_OR_RETURN(row.root, Int(f[c.root], "root"));
  }
  if (!ip_only) {
    PARASIM_ASSIGN_OR_RETURN(row.out_of_place, ParseHalf(f, c.out_of_place, 0, "out-of-place", at));
  }
  if (c.in_place.first >= 0) {
    PARASIM_ASSIGN_OR_RETURN(
        row.in_place, ParseHalf(f, c.in_place, ip_only ? c.out_of_place.width : 0, "in-place", at));
  }
  return row;
}

}  // namespace parasim
