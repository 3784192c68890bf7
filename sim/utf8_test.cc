#include "sim/utf8.h"

#include <doctest/doctest.h>

namespace parasim {
namespace {

TEST_CASE("well-formed UTF-8 passes; ill-formed bytes are found and replaced") {
  struct Case {
    std::string text;
    size_t bad;  // npos = valid
  };
  const size_t ok = std::string_view::npos;
  // Unicode 15, Table 3-7, and its examples of ill-formed sequences (section 3.9).
  const Case cases[] = {
      {"plain ascii", ok},
      {"caf\xC3\xA9", ok},       // U+00E9
      {"\xE2\x82\xAC 5", ok},    // U+20AC
      {"\xF0\x9F\x98\x80", ok},  // U+1F600
      {"\xF4\x8F\xBF\xBF", ok},  // U+10FFFF, the last code point
      {"name \xFF", 5},          // never a UTF-8 byte
      {"\xC0\xAF", 0},           // overlong '/'
      {"\xE0\x80\xAF", 0},       // overlong, three bytes
      {"\xED\xA0\x80", 0},       // a surrogate, U+D800
      {"\xF4\x90\x80\x80", 0},   // past U+10FFFF
      {"ab\xE2\x82", 2},         // cut short at the end
      {"a\x80", 1},              // a continuation byte alone
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    CHECK(InvalidUtf8At(c.text) == c.bad);
    const std::string fixed = ReplaceInvalidUtf8(c.text);
    CHECK(InvalidUtf8At(fixed) == ok);
    if (c.bad == ok) CHECK(fixed == c.text);
  }
  CHECK(ReplaceInvalidUtf8("a\xFF"
                           "b") ==
        "a\xEF\xBF\xBD"
        "b");
}

TEST_CASE("a file's encoding from its byte-order mark, or UTF-16's NULs") {
  using namespace std::string_view_literals;
  CHECK(DetectEncoding("\xEF\xBB\xBF# a"sv).name == "UTF-8");
  CHECK(DetectEncoding("\xEF\xBB\xBF# a"sv).mark == 3);
  CHECK(DetectEncoding("\xFF\xFE#\0"sv).name == "UTF-16LE");
  CHECK(DetectEncoding("\xFE\xFF\0#"sv).name == "UTF-16BE");
  CHECK(DetectEncoding("\xFF\xFE\0\0#\0\0\0"sv).name == "UTF-32LE");
  CHECK(DetectEncoding("\0\0\xFE\xFF"sv).name == "UTF-32BE");
  CHECK(DetectEncoding("#\0 \0"sv).name == "UTF-16LE");
  CHECK(DetectEncoding("#\0 \0"sv).mark == 0);
  CHECK(DetectEncoding("\0#\0 "sv).name == "UTF-16BE");
  CHECK(DetectEncoding("n\0\0\0"sv).name == "UTF-32LE");  // (a review: read as UTF-16LE)
  CHECK(DetectEncoding("\0\0\0n"sv).name == "UTF-32BE");
  CHECK(DetectEncoding("# plain"sv).utf8());
  CHECK(DetectEncoding(""sv).utf8());
  CHECK(DetectEncoding("\0\0"sv).utf8());  // binary, told elsewhere
  CHECK(NotUtf8Message(DetectEncoding("\xFF\xFE"sv)) ==
        "the file is UTF-16LE text (its byte-order mark says so), not UTF-8: save it as UTF-8 "
        "(iconv -f UTF-16LE -t UTF-8)");
}

}  // namespace
}  // namespace parasim
