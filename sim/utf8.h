// UTF-8 checks for the text parasim reads and writes: a scenario's strings reach JSON, which
// must be valid UTF-8 (RFC 8259 section 8.1), so invalid input is refused where it is read and
// anything that slips past is replaced where JSON is written.
//
//   size_t at = InvalidUtf8At(text);            // std::string_view::npos when valid
//   std::string ok = ReplaceInvalidUtf8(text);  // each bad sequence -> U+FFFD
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace parasim {

// The offset of the first byte that does not begin a well-formed UTF-8 sequence (Unicode 15,
// Table 3-7: no overlong forms, no surrogates, nothing past U+10FFFF), or npos.
size_t InvalidUtf8At(std::string_view text);
// The length of the well-formed sequence at text[i], or 0 when none begins there.
size_t Utf8SequenceAt(std::string_view text, size_t i);
// `text` with every ill-formed byte replaced by U+FFFD (the Unicode replacement character).
std::string ReplaceInvalidUtf8(std::string_view text);

// The encoding of a file's first bytes: a byte-order mark's ("UTF-8", "UTF-16LE", "UTF-16BE",
// "UTF-32LE", "UTF-32BE"; `mark` its length), or UTF-16 without one, told by the NUL beside an
// ASCII first character (`mark` 0). `name` is empty for anything else.
struct TextEncoding {
  std::string_view name;
  size_t mark = 0;
  bool utf8() const { return name.empty() || name == "UTF-8"; }
};
TextEncoding DetectEncoding(std::string_view head);
// What to say of a file in an encoding other than UTF-8: "the file is UTF-16LE text (...)".
std::string NotUtf8Message(const TextEncoding& e);

}  // namespace parasim
