#include "sim/parse_units.h"

#include <fmt/core.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace parasim {
namespace {

struct Split {
  double number = 0;
  std::string unit;
};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Splits "1.5 GiB" into 1.5 and "GiB". Fails when no number leads the text.
StatusOr<Split> SplitNumber(std::string_view text, std::string_view kind,
                            std::string_view example) {
  std::string_view s = Trim(text);
  if (s.empty()) {
    return InvalidArgument(
        fmt::format("empty {}; write a number with a unit, e.g. '{}'", kind, example));
  }
  double v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr == s.data()) {
    return InvalidArgument(fmt::format("'{}' is not a {}; write a number with a unit, e.g. '{}'",
                                       std::string(text), kind, example));
  }
  if (!std::isfinite(v)) {
    return InvalidArgument(fmt::format("'{}' is not a finite number", std::string(text)));
  }
  if (v < 0) {
    return InvalidArgument(
        fmt::format("'{}' is negative; a {} must be zero or more", std::string(text), kind));
  }
  Split out;
  out.number = v;
  out.unit = std::string(Trim(std::string_view(ptr, s.data() + s.size() - ptr)));
  return out;
}

using Table = std::vector<std::pair<std::string_view, double>>;

StatusOr<double> Scaled(std::string_view text, std::string_view kind, std::string_view example,
                        const Table& table, std::string_view accepted,
                        std::string_view extra_hint) {
  PARASIM_ASSIGN_OR_RETURN(Split sp, SplitNumber(text, kind, example));
  if (sp.unit.empty()) {
    return InvalidArgument(fmt::format("{} '{}' has no unit; write e.g. '{}' (units: {})", kind,
                                       std::string(Trim(text)), example, accepted));
  }
  for (const auto& [name, factor] : table) {
    if (sp.unit == name) {
      double v = sp.number * factor;
      if (!std::isfinite(v))
        return InvalidArgument(fmt::format("'{}' overflows", std::string(text)));
      return v;
    }
  }
  std::string msg = fmt::format("unknown {} unit '{}' in '{}'; accepted: {}", kind, sp.unit,
                                std::string(Trim(text)), accepted);
  if (!extra_hint.empty()) msg += fmt::format(" ({})", extra_hint);
  return InvalidArgument(msg);
}

}  // namespace

StatusOr<Bytes> ParseBytes(std::string_view text) {
  static const Table kTable = {{"B", 1.0},
                               {"KB", 1e3},
                               {"MB", 1e6},
                               {"GB", 1e9},
                               {"TB", 1e12},
                               {"PB", 1e15},
                               {"KiB", 1024.0},
                               {"MiB", 1048576.0},
                               {"GiB", 1073741824.0},
                               {"TiB", 1099511627776.0},
                               {"PiB", 1125899906842624.0}};
  std::string_view hint;
  std::string_view t = Trim(text);
  if (!t.empty() && (t.back() == 'b'))
    hint = "lowercase b means bits; sizes are in bytes: B, GB, GiB";
  PARASIM_ASSIGN_OR_RETURN(double v,
                           Scaled(text, "size", "80GiB", kTable,
                                  "B, KB, MB, GB, TB (powers of 1000), KiB, MiB, GiB, TiB "
                                  "(powers of 1024)",
                                  hint));
  return Bytes(v);
}

StatusOr<Bandwidth> ParseBandwidth(std::string_view text) {
  static const Table kTable = {
      {"B/s", 1.0},      {"KB/s", 1e3},           {"MB/s", 1e6},        {"GB/s", 1e9},
      {"TB/s", 1e12},    {"GiB/s", 1073741824.0}, {"MiB/s", 1048576.0}, {"b/s", 1.0 / 8},
      {"Kb/s", 1e3 / 8}, {"Mb/s", 1e6 / 8},       {"Gb/s", 1e9 / 8},    {"Tb/s", 1e12 / 8},
      {"Gbps", 1e9 / 8}, {"GBps", 1e9},           {"PB/s", 1e15},       {"Pb/s", 1e15 / 8}};
  PARASIM_ASSIGN_OR_RETURN(
      double v,
      Scaled(text, "bandwidth", "900GB/s", kTable,
             "bytes: B/s, MB/s, GB/s, TB/s, PB/s, GiB/s; bits: Mb/s, Gb/s, Tb/s (1 GB/s = 8 Gb/s)",
             ""));
  return Bandwidth(v);
}

StatusOr<FlopRate> ParseFlopRate(std::string_view text) {
  static const Table kTable = {{"FLOP/s", 1.0},   {"GFLOP/s", 1e9}, {"TFLOP/s", 1e12},
                               {"PFLOP/s", 1e15}, {"FLOPS", 1.0},   {"GFLOPS", 1e9},
                               {"TFLOPS", 1e12},  {"PFLOPS", 1e15}};
  PARASIM_ASSIGN_OR_RETURN(double v, Scaled(text, "compute rate", "989TFLOP/s", kTable,
                                            "GFLOP/s, TFLOP/s (or TFLOPS), PFLOP/s", ""));
  return FlopRate(v);
}

StatusOr<double> ParseSeconds(std::string_view text) {
  static const Table kTable = {{"ps", 1e-12}, {"ns", 1e-9},  {"us", 1e-6},  {"ms", 1e-3},
                               {"s", 1.0},    {"min", 60.0}, {"h", 3600.0}, {"d", 86400.0}};
  return Scaled(text, "time", "1.5us", kTable, "ns, us, ms, s, min, h, d", "");
}

StatusOr<Duration> ParseDuration(std::string_view text) {
  PARASIM_ASSIGN_OR_RETURN(double v, ParseSeconds(text));
  if (v > 9.2e6) {
    return InvalidArgument(fmt::format("time '{}' is too long (over 106 days)", std::string(text)));
  }
  return Duration::Seconds(v);
}

StatusOr<double> ParseCount(std::string_view text) {
  std::string_view s = Trim(text);
  double v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) {
    return InvalidArgument(fmt::format(
        "'{}' is not a plain number; counts take no unit, e.g. 8 or 3e11", std::string(text)));
  }
  if (!std::isfinite(v))
    return InvalidArgument(fmt::format("'{}' is not finite", std::string(text)));
  if (v < 0)
    return InvalidArgument(
        fmt::format("'{}' is negative; counts are zero or more", std::string(text)));
  return v;
}

std::string FormatBytes(Bytes b) {
  double v = b.bytes();
  if (v >= 1099511627776.0) return fmt::format("{:.2f} TiB", v / 1099511627776.0);
  if (v >= 1073741824.0) return fmt::format("{:.1f} GiB", v / 1073741824.0);
  if (v >= 1048576.0) return fmt::format("{:.1f} MiB", v / 1048576.0);
  if (v >= 1024.0) return fmt::format("{:.1f} KiB", v / 1024.0);
  return fmt::format("{:.0f} B", v);
}

std::string FormatBandwidth(Bandwidth bw) {
  double v = bw.bytes_per_second();
  if (v >= 1e12) return fmt::format("{:.2f} TB/s", v / 1e12);
  if (v >= 1e9) return fmt::format("{:.1f} GB/s", v / 1e9);
  return fmt::format("{:.1f} MB/s", v / 1e6);
}

std::string FormatDuration(Duration d) {
  if (d.is_infinite()) return "inf";
  return FormatSeconds(d.seconds());
}

namespace {

// FormatCount's scale for x: the unit it divides by, the decimals kept and the suffix.
struct CountScale {
  double unit;
  int decimals;
  const char* suffix;
};
CountScale CountScaleOf(double x) {
  if (x >= 1e9) return {1e9, 2, "B"};
  if (x >= 1e6) return {1e6, 2, "M"};
  if (x >= 1e3) return {1e3, 1, "k"};
  return {1, 0, ""};
}

}  // namespace

std::string FormatCount(double x) {
  const CountScale c = CountScaleOf(x);
  return fmt::format("{:.{}f}{}", x / c.unit, c.decimals, c.suffix);
}

double PrintedCount(double x) {
  const CountScale c = CountScaleOf(x);
  return std::stod(fmt::format("{:.{}f}", x / c.unit, c.decimals)) * c.unit;
}

std::string FormatSeconds(double s) {
  if (std::isinf(s)) return s > 0 ? "inf" : "-inf";
  if (std::isnan(s)) return "nan";
  if (s >= 86400 * 2) return fmt::format("{:.1f} days", s / 86400);
  if (s >= 7200) return fmt::format("{:.1f} h", s / 3600);
  if (s >= 1) return fmt::format("{:.3f} s", s);
  if (s >= 1e-3) return fmt::format("{:.3f} ms", s * 1e3);
  if (s >= 1e-6) return fmt::format("{:.3f} us", s * 1e6);
  return fmt::format("{:.0f} ns", s * 1e9);
}

}  // namespace parasim
