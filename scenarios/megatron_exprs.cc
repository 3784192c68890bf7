#include "scenarios/megatron_exprs.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>

namespace parasim {
namespace {

// How deeply parentheses may nest: the recursion below must not run out of stack on hostile
// input (Megatron-LM's own layout regex does not nest at all).
constexpr int kMaxDepth = 64;

// Recursive descent over a short expression; `max` bounds the expanded length. With `commas`
// set, commas are skipped like blanks (a layout's commas are cosmetic:
// megatron/core/transformer/pipeline_parallel_layer_layout.py parse_str_to_list removes them).
class Parser {
 public:
  Parser(std::string_view s, size_t max, bool commas = false) : s_(s), max_(max), commas_(commas) {}

  // Enter one level of parentheses; an error past kMaxDepth.
  Status Enter() {
    if (++depth_ > kMaxDepth) {
      return Problem(fmt::format("parentheses nested deeper than {} levels", kMaxDepth));
    }
    return Status::Ok();
  }
  void Leave() { --depth_; }

  bool AtEnd() {
    SkipBlanks();
    return i_ >= s_.size();
  }
  bool Eat(char c) {
    SkipBlanks();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  StatusOr<int> Count() {
    SkipBlanks();
    int n = 0;
    const size_t start = i_;
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
      n = n * 10 + (s_[i_++] - '0');
      if (n > 1000000) return Problem("a repeat count over 1000000");
    }
    if (i_ == start) return Problem("expected a number");
    return n;
  }
  template <typename T>
  Status Repeat(std::vector<T>* v, int n) {
    if (v->size() * static_cast<size_t>(n) > max_) {
      return Problem(fmt::format("expands past {} items", max_));
    }
    std::vector<T> one = *v;
    v->clear();
    for (int k = 0; k < n; ++k) v->insert(v->end(), one.begin(), one.end());
    return Status::Ok();
  }
  // The expression quoted in full when short, else the 40 characters around the problem.
  Status Problem(const std::string& what) const {
    std::string quoted(s_);
    if (s_.size() > 60) {
      const size_t from = i_ > 20 ? std::min(i_ - 20, s_.size() - 40) : 0;
      quoted = fmt::format("{}{}...", from > 0 ? "..." : "", s_.substr(from, 40));
    }
    return InvalidArgument(fmt::format("'{}': {} at character {}", quoted, what, i_ + 1));
  }
  char Peek() {
    SkipBlanks();
    return i_ < s_.size() ? s_[i_] : '\0';
  }
  void Skip() { ++i_; }

 private:
  void SkipBlanks() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || (commas_ && s_[i_] == ','))) {
      ++i_;
    }
  }
  std::string_view s_;
  size_t i_ = 0;
  size_t max_;
  bool commas_;
  int depth_ = 0;
};

// list := term ('+' term)*; term := atom ('*' count)*; atom := '(' list ')' | '[' ints ']'.
StatusOr<std::vector<int>> ListExpr(Parser& p);

StatusOr<std::vector<int>> ListAtom(Parser& p) {
  if (p.Eat('(')) {
    PARASIM_RETURN_IF_ERROR(p.Enter());
    PARASIM_ASSIGN_OR_RETURN(std::vector<int> v, ListExpr(p));
    if (!p.Eat(')')) return p.Problem("expected ')'");
    p.Leave();
    return v;
  }
  if (!p.Eat('[')) return p.Problem("expected '[' or '('");
  std::vector<int> v;
  if (p.Eat(']')) return v;
  do {
    PARASIM_ASSIGN_OR_RETURN(int x, p.Count());
    v.push_back(x);
  } while (p.Eat(','));
  if (!p.Eat(']')) return p.Problem("expected ']' or ','");
  return v;
}

StatusOr<std::vector<int>> ListExpr(Parser& p) {
  std::vector<int> out;
  do {
    PARASIM_ASSIGN_OR_RETURN(std::vector<int> term, ListAtom(p));
    while (p.Eat('*')) {
      PARASIM_ASSIGN_OR_RETURN(int n, p.Count());
      PARASIM_RETURN_IF_ERROR(p.Repeat(&term, n));
    }
    out.insert(out.end(), term.begin(), term.end());
  } while (p.Eat('+'));
  return out;
}

// layout := item*; item := atom ('*' count)?; atom := '(' layout ')' | E | t | m | L | '|'.
StatusOr<std::vector<char>> LayoutExpr(Parser& p) {
  std::vector<char> out;
  for (char c = p.Peek(); c != '\0' && c != ')'; c = p.Peek()) {
    std::vector<char> item;
    if (p.Eat('(')) {
      PARASIM_RETURN_IF_ERROR(p.Enter());
      PARASIM_ASSIGN_OR_RETURN(item, LayoutExpr(p));
      if (!p.Eat(')')) return p.Problem("expected ')'");
      p.Leave();
    } else if (c == 'E' || c == 't' || c == 'm' || c == 'L' || c == '|') {
      p.Skip();
      item.push_back(c);
    } else {
      return p.Problem(
          fmt::format("unexpected '{}' (expected E, t, m, L, |, *, a comma or parentheses)", c));
    }
    if (p.Eat('*')) {
      PARASIM_ASSIGN_OR_RETURN(int n, p.Count());
      PARASIM_RETURN_IF_ERROR(p.Repeat(&item, n));
    }
    out.insert(out.end(), item.begin(), item.end());
  }
  return out;
}

}  // namespace

StatusOr<std::vector<int>> ParseLayerList(std::string_view text) {
  Parser p(text, 1 << 20);
  PARASIM_ASSIGN_OR_RETURN(std::vector<int> v, ListExpr(p));
  if (!p.AtEnd()) return p.Problem("unexpected text after the list");
  return v;
}

StatusOr<std::vector<LayoutSegment>> ParsePipelineLayout(std::string_view text) {
  Parser p(text, 1 << 20, /*commas=*/true);
  PARASIM_ASSIGN_OR_RETURN(std::vector<char> items, LayoutExpr(p));
  if (!p.AtEnd()) return p.Problem("unbalanced ')'");
  std::vector<LayoutSegment> out(1);
  for (char c : items) {
    LayoutSegment& s = out.back();
    if (c == 'E') s.embedding = true;
    if (c == 'L') s.loss = true;
    if (c == 't') ++s.layers;
    if (c == 'm') ++s.mtp;
    if (c == '|') out.emplace_back();
  }
  // A closing `|` ends the last segment rather than opening an empty one.
  if (out.size() > 1 && !items.empty() && items.back() == '|') out.pop_back();
  return out;
}

std::string HybridPattern::Stack() const {
  std::string out;
  for (const std::string& seg : segments) out += seg;
  return out;
}

HybridPattern SplitHybridPattern(std::string_view text) {
  auto split = [](std::string_view t, char sep) {
    std::vector<std::string> out;
    for (size_t at = 0;;) {
      const size_t cut = t.find(sep, at);
      out.emplace_back(t.substr(at, cut == std::string_view::npos ? t.npos : cut - at));
      if (cut == std::string_view::npos) return out;
      at = cut + 1;
    }
  };
  HybridPattern p;
  std::vector<std::string> parts = split(text, '/');
  p.segments = split(parts[0], '|');
  p.mtp.assign(parts.begin() + 1, parts.end());
  return p;
}

}  // namespace parasim
