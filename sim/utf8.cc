#include "sim/utf8.h"

namespace parasim {

size_t Utf8SequenceAt(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  // Unicode Table 3-7: the lead byte fixes the length and the range of the second byte.
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c == 0xE0) {
    n = 3, lo = 0xA0;
  } else if (c == 0xED) {
    n = 3, hi = 0x9F;  // no surrogates
  } else if (c >= 0xE1 && c <= 0xEF) {
    n = 3;
  } else if (c == 0xF0) {
    n = 4, lo = 0x90;
  } else if (c == 0xF4) {
    n = 4, hi = 0x8F;  // nothing past U+10FFFF
  } else if (c >= 0xF1 && c <= 0xF3) {
    n = 4;
  } else {
    return 0;
  }
  if (i + n > s.size() || b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  }
  return n;
}

size_t InvalidUtf8At(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = Utf8SequenceAt(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

std::string ReplaceInvalidUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = Utf8SequenceAt(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

TextEncoding DetectEncoding(std::string_view h) {
  auto starts = [&](std::string_view m) { return h.substr(0, m.size()) == m; };
  using namespace std::string_view_literals;
  if (starts("\xEF\xBB\xBF"sv)) return {"UTF-8", 3};
  if (starts("\xFF\xFE\0\0"sv)) return {"UTF-32LE", 4};
  if (starts("\0\0\xFE\xFF"sv)) return {"UTF-32BE", 4};
  if (starts("\xFF\xFE"sv)) return {"UTF-16LE", 2};
  if (starts("\xFE\xFF"sv)) return {"UTF-16BE", 2};
  const auto ascii = [](char c) { return c != '\0' && static_cast<unsigned char>(c) < 0x80; };
  if (h.size() >= 4 && ascii(h[0]) && h.substr(1, 3) == "\0\0\0"sv) return {"UTF-32LE", 0};
  if (h.size() >= 4 && h.substr(0, 3) == "\0\0\0"sv && ascii(h[3])) return {"UTF-32BE", 0};
  if (h.size() >= 2 && ascii(h[0]) && h[1] == '\0') return {"UTF-16LE", 0};
  if (h.size() >= 2 && h[0] == '\0' && ascii(h[1])) return {"UTF-16BE", 0};
  return {};
}

std::string NotUtf8Message(const TextEncoding& e) {
  std::string out = "the file is ";
  out += e.name;
  out +=
      e.mark > 0 ? " text (its byte-order mark says so)" : " text (a NUL byte beside each letter)";
  out += ", not UTF-8: save it as UTF-8 (iconv -f ";
  out += e.name;
  out += " -t UTF-8)";
  return out;
}

}  // namespace parasim
