#include "scenarios/shell_branches.h"

#include <fmt/core.h>

#include <charconv>
#include <cstdint>

namespace parasim {
namespace {

std::optional<int64_t> Integer(const std::string& s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// One binary test of `[ a OP b ]`; nullopt where OP is none it evaluates.
std::optional<bool> Binary(const std::string& a, const std::string& op, const std::string& b) {
  if (op == "=" || op == "==") {
    // [[ a == b* ]] matches a pattern: not evaluated.
    if (b.find_first_of("*?[") != std::string::npos) return std::nullopt;
    return a == b;
  }
  if (op == "!=") {
    if (b.find_first_of("*?[") != std::string::npos) return std::nullopt;
    return a != b;
  }
  const std::optional<int64_t> x = Integer(a), y = Integer(b);
  if (!x || !y) return std::nullopt;
  if (op == "-eq") return *x == *y;
  if (op == "-ne") return *x != *y;
  if (op == "-lt") return *x < *y;
  if (op == "-le") return *x <= *y;
  if (op == "-gt") return *x > *y;
  if (op == "-ge") return *x >= *y;
  return std::nullopt;
}

}  // namespace

std::optional<bool> ShellBranches::Test(const std::vector<std::string>& words) {
  std::vector<std::string> w = words;
  bool negate = false;
  while (!w.empty() && w.front() == "!") {
    negate = !negate;
    w.erase(w.begin());
  }
  std::vector<std::string> inner;
  const bool double_bracket = w.size() >= 2 && w.front() == "[[" && w.back() == "]]";
  if (w.size() >= 2 && ((w.front() == "[" && w.back() == "]") || double_bracket)) {
    inner.assign(w.begin() + 1, w.end() - 1);
  } else if (!w.empty() && w.front() == "test") {
    inner.assign(w.begin() + 1, w.end());
  } else {
    return std::nullopt;  // a command's exit status
  }
  std::optional<bool> v;
  if (!inner.empty() && inner.front() == "!") {
    inner.erase(inner.begin());
    negate = !negate;
  }
  // A variable the script never sets (the environment's) stays as written: not evaluated.
  for (const std::string& x : inner) {
    if (x.find('$') != std::string::npos) return std::nullopt;
  }
  // [[ -n $EMPTY ]]: bash splits no words inside [[ ]], so the operand is there, empty (the
  // expansion dropped it).
  if (double_bracket && inner.size() == 1 && (inner[0] == "-n" || inner[0] == "-z")) {
    inner.push_back("");
  }
  if (inner.size() == 3) {
    v = Binary(inner[0], inner[1], inner[2]);
  } else if (inner.size() == 2 && (inner[0] == "-z" || inner[0] == "-n")) {
    v = inner[0] == "-z" ? inner[1].empty() : !inner[1].empty();
  } else if (inner.size() == 1) {
    v = !inner[0].empty();
  }
  if (v && negate) v = !*v;
  return v;
}

bool ShellBranches::Active() const {
  for (const Frame& f : frames_) {
    if (f.testing || f.taken == false) return false;
  }
  return true;
}

void ShellBranches::Open(std::optional<bool> first) {
  Frame& f = frames_.back();
  f.testing = false;
  if (f.earlier_taken) {
    f.taken = false;
  } else if (!first) {
    f.taken = std::nullopt;
  } else if (*first) {
    f.taken = f.earlier_unknown ? std::nullopt : std::optional<bool>(true);
  } else {
    f.taken = false;
  }
}

void ShellBranches::EndBranch() {
  Frame& f = frames_.back();
  if (f.testing) return;  // a condition with no branch after it
  if (f.taken == true) f.earlier_taken = true;
  if (!f.taken) f.earlier_unknown = true;
  if (f.branch_has_content) ++f.branches_with_content;
  f.branch_has_content = false;
}

StatusOr<bool> ShellBranches::Step(const std::vector<std::string>& words, int line,
                                   const std::string& sep, const std::string& file) {
  if (words.empty()) return true;
  const std::string& first = words.front();
  const std::vector<std::string> rest(words.begin() + 1, words.end());
  if (!frames_.empty() && frames_.back().testing && (sep == "&&" || sep == "||")) {
    // The condition goes on: `[ a ] || [ b ]` (bash's && and || bind left to right).
    Frame& f = frames_.back();
    const std::optional<bool> v = Test(words);
    const bool conj = sep == "&&";
    if (f.chain && *f.chain == !conj) return false;  // decided: true || x, false && x
    if (!f.chain || !v) {
      f.chain = (v && *v == !conj) ? v : std::nullopt;
    } else {
      f.chain = *v;
    }
    return false;
  }
  if (first == "if") {
    frames_.push_back({.line = line});
    frames_.back().chain = Test(rest);
    return false;
  }
  if (frames_.empty()) return true;
  Frame& f = frames_.back();
  if (first == "elif") {
    EndBranch();
    f.testing = true;
    f.chain = Test(rest);
    return false;
  }
  if (first == "then" || first == "else") {
    if (first == "else") {
      EndBranch();
      Open(true);
    } else {
      Open(f.chain);
    }
    // What follows on the line is a command of the branch (`then if ...` opens another if).
    return rest.empty() ? false : Step(rest, line, "", file);
  }
  if (first == "fi") {
    EndBranch();
    const Frame done = frames_.back();
    frames_.pop_back();
    if (done.earlier_unknown && done.branches_with_content > 1) {
      return InvalidArgument(fmt::format(
          "{}:{}:1: error: the flags depend on a shell condition parasim cannot evaluate (the "
          "`if` here tests a file, a command, a pattern or a variable the script does not set, "
          "and more than one of its branches "
          "sets something): keep the branch the run takes, or give the flags as a plain list",
          file, done.line));
    }
    return false;
  }
  if (f.testing) {
    // A condition spread over lines before its `then`.
    f.chain = Test(words);
    return false;
  }
  return Active();
}

void ShellBranches::SetsSomething() {
  // Every enclosing branch holds it (an if inside a branch sets what it sets for its branch).
  for (Frame& f : frames_) f.branch_has_content = true;
}

}  // namespace parasim
