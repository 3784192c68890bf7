#include "tools/results_json.h"

#include <fmt/core.h>
#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <string_view>

#include "sim/io.h"

namespace parasim {
namespace {

// "line:col" of a byte offset into `text` (1-based, columns in bytes).
std::string LineCol(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  const auto line = 1 + std::count(text.begin(), text.begin() + offset, '\n');
  const size_t nl = offset == 0 ? std::string_view::npos : text.rfind('\n', offset - 1);
  return fmt::format("{}:{}", line, offset - (nl == std::string_view::npos ? 0 : nl + 1) + 1);
}

}  // namespace

StatusOr<ResultsJson> ReadResultsJson(const std::string& path) {
  PARASIM_ASSIGN_OR_RETURN(std::string text, ReadFile(path, kMaxResultsJsonBytes));
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseFullPrecisionFlag>(text.data(), text.size());
  if (doc.HasParseError()) {
    return InvalidArgument(
        fmt::format("{}:{}: error: JSON syntax: {}; expected the JSON of `parasim sweep --json` or "
                    "`parasim scale --json`",
                    path, LineCol(text, doc.GetErrorOffset()),
                    rapidjson::GetParseError_En(doc.GetParseError())));
  }
  ResultsJson out;
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  if (!doc.IsObject()) {
    doc.Accept(w);
  } else {
    w.StartObject();
    // By index: rapidjson's member iterators compare with an operator!= that C++20 (clang) calls
    // ambiguous beside its reversed operator==.
    for (rapidjson::SizeType k = 0; k < doc.MemberCount(); ++k) {
      const auto& m = doc.MemberBegin()[k];
      w.Key(m.name.GetString(), m.name.GetStringLength());
      const std::string_view name(m.name.GetString(), m.name.GetStringLength());
      if ((name != "results" && name != "points") || !m.value.IsArray()) {
        m.value.Accept(w);
        continue;
      }
      out.rows = m.value.Size();
      out.kept = std::min(out.rows, kMaxDrawnRows);
      w.StartArray();
      for (size_t i = 0; i < out.kept; ++i) m.value[static_cast<rapidjson::SizeType>(i)].Accept(w);
      w.EndArray(static_cast<rapidjson::SizeType>(out.kept));
    }
    w.EndObject();
  }
  out.text.assign(buf.GetString(), buf.GetSize());
  return out;
}

}  // namespace parasim
