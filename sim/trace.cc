#include "sim/trace.h"

#include <fmt/core.h>

#include <cmath>

#include "sim/json.h"

namespace parasim::sim {

std::string ChromeTraceJson(const Program& p, const Timeline& tl,
                            const std::vector<std::string>& category_names) {
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  auto emit = [&](const std::string& ev) {
    if (!first) out += ",\n";
    first = false;
    out += ev;
  };
  for (uint32_t r = 0; r < p.num_ranks(); ++r) {
    emit(fmt::format(R"({{"ph":"M","pid":{},"name":"process_name","args":{{"name":{}}}}})", r,
                     JsonEscape(p.rank_name(r))));
    emit(fmt::format(
        R"({{"ph":"M","pid":{},"name":"process_sort_index","args":{{"sort_index":{}}}}})", r, r));
  }
  for (StreamId s = 0; s < p.num_streams(); ++s) {
    emit(fmt::format(R"({{"ph":"M","pid":{},"tid":{},"name":"thread_name","args":{{"name":{}}}}})",
                     p.stream_rank(s), s, JsonEscape(p.stream_name(s))));
  }
  for (TaskId t = 0; t < p.num_tasks(); ++t) {
    uint8_t c = p.category(t);
    std::string cat = c < category_names.size() ? category_names[c] : fmt::format("cat{}", c);
    // The start and the end each rounded to the nanosecond the text carries, the duration their
    // difference: rounding the two apart left back-to-back spans 1 ns into each other, which a
    // viewer nests.
    const double ts = std::round(tl.start[t].microseconds() * 1e3) / 1e3;
    const double end = std::round(tl.end[t].microseconds() * 1e3) / 1e3;
    emit(
        fmt::format(R"({{"ph":"X","pid":{},"tid":{},"ts":{:.3f},"dur":{:.3f},"name":{},"cat":{}}})",
                    p.stream_rank(p.stream(t)), p.stream(t), ts, end - ts,
                    JsonEscape(p.label_text(p.label(t))), JsonEscape(cat)));
  }
  for (const auto& m : tl.memory) {
    emit(fmt::format(R"({{"ph":"C","pid":{},"ts":{:.3f},"name":"memory","args":{{"GiB":{:.4f}}}}})",
                     m.rank, m.time.microseconds(), m.bytes / 1073741824.0));
  }
  out += "\n]}\n";
  return out;
}

}  // namespace parasim::sim
