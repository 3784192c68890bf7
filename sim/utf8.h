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

}  // namespace parasim
