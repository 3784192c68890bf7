// Parsing of unit strings at the input boundary (SCENARIO.md "Quantities").
//
//   ParseBytes("80GiB")        -> 85899345920 bytes
//   ParseBandwidth("200Gb/s")  -> 25e9 bytes/s (lowercase b = bits)
//   ParseFlopRate("989TFLOP/s"), ParseDuration("1.5us"), ParseCount("3e11")
//
// Errors are InvalidArgument with a hint that shows accepted spellings; the caller adds
// file:line:col and the key name.
#pragma once

#include <string>
#include <string_view>

#include "sim/status.h"
#include "sim/units.h"

namespace parasim {

StatusOr<Bytes> ParseBytes(std::string_view text);
StatusOr<Bandwidth> ParseBandwidth(std::string_view text);
StatusOr<FlopRate> ParseFlopRate(std::string_view text);
StatusOr<Duration> ParseDuration(std::string_view text);
// A time in seconds with no upper limit (a component's MTBF of years, a months-long window).
StatusOr<double> ParseSeconds(std::string_view text);
// Plain non-negative number, integer or scientific ("3e11"); no unit allowed.
StatusOr<double> ParseCount(std::string_view text);

// Human-readable renderings used in tables ("80.0 GiB", "900 GB/s", "12.3 s").
std::string FormatBytes(Bytes b);  // binary prefixes (GiB)
std::string FormatBandwidth(Bandwidth bw);
std::string FormatDuration(Duration d);
// The same for a time in seconds of any length (an MTBF of months, a run of years), never
// saturated: "128.0 days"; "inf" only for an infinite one.
std::string FormatSeconds(double s);
// A count in the units of its size, as tables print rates ("1.20M", "33.1k", "512"): the text,
// and the number that text reads back as (a Pareto front kept at the printed digits).
std::string FormatCount(double x);
double PrintedCount(double x);

}  // namespace parasim
