// The size rules of the house (issue 59): no library or tool file over 600 lines and no function
// over 80 lines, tests aside. The sources come from each package's `sources` filegroup; a
// function is found the way a reader finds one, by its braces: comments and string literals are
// blanked first, then a `{` that follows a parameter list (or `const`, `override`, `noexcept`,
// `mutable` or a trailing return type), outside any other function, opens a function body that
// runs to its matching `}`. Braces after `namespace`, `class`, `struct`, `union`, `enum` or
// `extern "C"` open scopes that may hold functions; every other brace (an initializer, a lambda
// inside a function, a block) is part of what holds it.
#include <doctest/doctest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli_runner.h"

namespace parasim {
namespace {

constexpr int kMaxFileLines = 600;
constexpr int kMaxFunctionLines = 80;

// `source` with comments and string and character literals replaced by spaces (newlines kept,
// so line numbers hold).
std::string Blank(const std::string& source) {
  std::string out = source;
  const size_t n = source.size();
  auto blank = [&](size_t from, size_t to) {
    for (size_t i = from; i < to && i < n; ++i) {
      if (out[i] != '\n') out[i] = ' ';
    }
  };
  for (size_t i = 0; i < n;) {
    if (source.compare(i, 2, "//") == 0) {
      const size_t end = source.find('\n', i);
      blank(i, end == std::string::npos ? n : end);
      i = end == std::string::npos ? n : end;
    } else if (source.compare(i, 2, "/*") == 0) {
      const size_t end = source.find("*/", i + 2);
      const size_t stop = end == std::string::npos ? n : end + 2;
      blank(i, stop);
      i = stop;
    } else if (source.compare(i, 2, "R\"") == 0 &&
               (i == 0 || !std::isalnum(static_cast<unsigned char>(source[i - 1])))) {
      const size_t paren = source.find('(', i + 2);
      if (paren == std::string::npos) break;
      const std::string close = ")" + source.substr(i + 2, paren - i - 2) + "\"";
      const size_t end = source.find(close, paren);
      const size_t stop = end == std::string::npos ? n : end + close.size();
      blank(i, stop);
      i = stop;
    } else if (source[i] == '"' ||
               (source[i] == '\'' &&
                (i == 0 || !std::isalnum(static_cast<unsigned char>(source[i - 1]))))) {
      const char quote = source[i];
      size_t j = i + 1;
      while (j < n && source[j] != quote && source[j] != '\n') j += source[j] == '\\' ? 2 : 1;
      blank(i, j + 1);
      i = j + 1;
    } else {
      ++i;
    }
  }
  return out;
}

struct FunctionSpan {
  int first_line = 0;
  int lines = 0;
};

// The function bodies of a blanked source, with the line each opens on and its length.
std::vector<FunctionSpan> Functions(const std::string& blanked) {
  static const std::regex kScope(R"((namespace|class|struct|union|enum)\b[^;(){}]*$|extern\s*$)");
  static const std::regex kBody(
      R"((\)|\bconst|\boverride|\bnoexcept|\bmutable|->\s*[\w:<>,\s*&]+)\s*$)");
  static const std::regex kInitializer(R"(=\s*$)");
  enum class Kind { kScope, kFunction, kBlock };
  std::vector<std::pair<Kind, int>> open;  // kind, line it opened on
  std::vector<FunctionSpan> out;
  int line = 1;
  size_t head_start = 0;
  for (size_t i = 0; i < blanked.size(); ++i) {
    const char c = blanked[i];
    if (c == '\n') ++line;
    if (c == ';') head_start = i + 1;
    if (c != '{' && c != '}') continue;
    if (c == '}') {
      if (!open.empty()) {
        if (open.back().first == Kind::kFunction) {
          out.push_back({open.back().second, line - open.back().second + 1});
        }
        open.pop_back();
      }
      head_start = i + 1;
      continue;
    }
    std::string head = blanked.substr(head_start, i - head_start);
    head = std::regex_replace(head, std::regex(R"(\s+)"), " ");
    bool in_function = false;
    for (const auto& o : open) in_function = in_function || o.first == Kind::kFunction;
    Kind kind = Kind::kBlock;
    if (!in_function && std::regex_search(head, kScope)) {
      kind = Kind::kScope;
    } else if (!in_function && std::regex_search(head, kBody) &&
               !std::regex_search(head, kInitializer)) {
      kind = Kind::kFunction;
    }
    open.emplace_back(kind, line);
    head_start = i + 1;
  }
  return out;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int LineCount(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

TEST_CASE("the brace reader finds functions, and only functions") {
  const std::string source = R"(namespace a {
// a comment with { braces }
struct S {
  int f() const {
    return 1;
  }
};
const int kTable[] = {
  1, 2, 3,
};
int g(int x) {
  auto l = [&](int y) {
    return y + x;
  };
  if (x) {
    return l(x);
  }
  return "}"[0];
}
}  // namespace a
)";
  const std::vector<FunctionSpan> f = Functions(Blank(source));
  REQUIRE(f.size() == 2);
  CHECK(f[0].first_line == 4);  // S::f
  CHECK(f[0].lines == 3);
  CHECK(f[1].first_line == 11);  // g, its lambda and block inside it
  CHECK(f[1].lines == 9);
}

TEST_CASE("no library or tool file over 600 lines, no function over 80 lines, tests aside") {
  int files = 0;
  for (const char* package : {"sim", "hardware", "hardware/readers", "models", "strategies",
                              "scenarios", "tools", "tools/calibrate", "python"}) {
    for (const auto& e :
         std::filesystem::recursive_directory_iterator(testing::Runfile(std::string(package)))) {
      const std::string path = e.path().string();
      const std::string name = e.path().filename().string();
      const std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".cc" && ext != ".h" && ext != ".cu")) continue;
      if (name.size() > 8 && name.substr(name.size() - 8) == "_test.cc") continue;
      // Only the package's own files (a subpackage is listed on its own).
      const std::string rel = path.substr(path.find(package));
      if (rel.substr(std::string(package).size() + 1).find('/') != std::string::npos &&
          rel.find("/verbs/") == std::string::npos) {
        continue;
      }
      ++files;
      const std::string text = Slurp(path);
      CAPTURE(rel);
      CHECK(LineCount(text) <= kMaxFileLines);
      for (const FunctionSpan& f : Functions(Blank(text))) {
        CAPTURE(f.first_line);
        CHECK(f.lines <= kMaxFunctionLines);
      }
    }
  }
  CHECK(files > 200);
}

}  // namespace
}  // namespace parasim
