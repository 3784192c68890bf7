#include "sim/json.h"

#include <fmt/core.h>

#include <cmath>

#include "sim/utf8.h"

namespace parasim {

Json& Json::Set(std::string key, Json value) {
  for (auto& [k, v] : fields_) {
    if (k == key) {
      v = std::move(value);
      return *this;
    }
  }
  fields_.emplace_back(std::move(key), std::move(value));
  return *this;
}

Json& Json::Push(Json value) {
  items_.push_back(std::move(value));
  return *this;
}

std::string JsonEscape(const std::string& text) {
  // JSON is UTF-8 (RFC 8259 section 8.1): a byte that is not is written as U+FFFD. The loaders
  // refuse such input (sim/yaml_reader.h); this keeps every output parseable regardless.
  const std::string fixed =
      InvalidUtf8At(text) == std::string_view::npos ? std::string() : ReplaceInvalidUtf8(text);
  const std::string& s = fixed.empty() ? text : fixed;
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  return out;
}

void Json::DumpTo(std::string* out, int indent, int depth) const {
  auto newline = [&](int d) {
    if (indent <= 0) return;
    *out += '\n';
    out->append(static_cast<size_t>(indent * d), ' ');
  };
  switch (kind_) {
    case Kind::kNull:
      *out += "null";
      break;
    case Kind::kBool:
      *out += b_ ? "true" : "false";
      break;
    case Kind::kNumber:
      if (!std::isfinite(d_)) {
        *out += "null";
      } else if (d_ == std::floor(d_) && std::fabs(d_) < 9e15) {
        *out += fmt::format("{}", static_cast<int64_t>(d_));
      } else {
        *out += fmt::format("{}", d_);  // shortest round-trip representation
      }
      break;
    case Kind::kString:
      *out += JsonEscape(s_);
      break;
    case Kind::kArray:
      *out += '[';
      for (size_t i = 0; i < items_.size(); ++i) {
        if (i) *out += ',';
        newline(depth + 1);
        items_[i].DumpTo(out, indent, depth + 1);
      }
      if (!items_.empty()) newline(depth);
      *out += ']';
      break;
    case Kind::kObject:
      *out += '{';
      for (size_t i = 0; i < fields_.size(); ++i) {
        if (i) *out += ',';
        newline(depth + 1);
        *out += JsonEscape(fields_[i].first);
        *out += indent > 0 ? ": " : ":";
        fields_[i].second.DumpTo(out, indent, depth + 1);
      }
      if (!fields_.empty()) newline(depth);
      *out += '}';
      break;
  }
}

std::string Json::Dump(int indent) const {
  std::string out;
  DumpTo(&out, indent, 0);
  return out;
}

}  // namespace parasim
