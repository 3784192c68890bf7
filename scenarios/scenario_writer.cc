#include "scenarios/scenario_writer.h"

#include <fmt/core.h>

#include <algorithm>
#include <memory>

namespace parasim {
namespace {

// The contract's order of the top-level keys.
constexpr const char* kBlocks[] = {"name",        "cluster", "model",      "training",
                                   "parallelism", "sweep",   "reliability"};
constexpr size_t kCommentColumn = 40;

size_t BlockIndex(const std::string& key) {
  const std::string head = key.substr(0, key.find('.'));
  for (size_t i = 0; i < std::size(kBlocks); ++i) {
    if (head == kBlocks[i]) return i;
  }
  return std::size(kBlocks);
}

// A key path's node: a value (a leaf) or the keys under it, in the order first set.
struct Node {
  std::string name;
  const void* leaf = nullptr;  // the entry, for a leaf
  std::vector<std::unique_ptr<Node>> children;
  Node* Child(const std::string& n) {
    for (auto& c : children) {
      if (c->name == n) return c.get();
    }
    children.push_back(std::make_unique<Node>());
    children.back()->name = n;
    return children.back().get();
  }
};

std::string Commented(std::string line, const std::string& from) {
  if (from.empty()) return line;
  line.resize(std::max(line.size() + 2, kCommentColumn), ' ');
  return line + "# " + from;
}

// The flags (`--x`) and config keys (`[table] key`) named in the children's origins, for a
// mapping's line; "defaults" where a child came from none.
std::string Origins(const std::vector<std::string>& froms) {
  std::vector<std::string> names;
  for (const std::string& f : froms) {
    std::vector<std::string> words;
    for (size_t i = 0; i < f.size();) {
      const size_t end = std::min(f.find(' ', i), f.size());
      words.push_back(f.substr(i, end - i));
      i = end + 1;
    }
    bool found = false;
    for (size_t i = 0; i < words.size(); ++i) {
      std::string w = words[i];
      if (w.rfind("--", 0) == 0 || (w.front() == '[' && w.back() == ']' && i + 1 < words.size())) {
        if (w.front() == '[') w += " " + words[i + 1];
        while (!w.empty() && (w.back() == ',' || w.back() == ':' || w.back() == ';')) w.pop_back();
        found = true;
        if (std::find(names.begin(), names.end(), w) == names.end()) names.push_back(w);
      }
    }
    if (!found && std::find(names.begin(), names.end(), "defaults") == names.end()) {
      names.push_back("defaults");
    }
  }
  std::string out;
  for (const std::string& n : names) {
    if (out.size() + n.size() > 56) return out + ", ...";
    out += (out.empty() ? "" : ", ") + n;
  }
  return out;
}

}  // namespace

std::string YamlQuote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

void ScenarioWriter::Set(const std::string& key, const std::string& value, const std::string& from,
                         const std::string& at) {
  for (Entry& e : entries_) {
    if (e.key == key) {
      e = {key, value, from, at};
      return;
    }
  }
  entries_.push_back({key, value, from, at});
}

bool ScenarioWriter::Has(const std::string& key) const {
  return std::any_of(entries_.begin(), entries_.end(),
                     [&](const Entry& e) { return e.key == key; });
}

std::string ScenarioWriter::Get(const std::string& key) const {
  for (const Entry& e : entries_) {
    if (e.key == key) return e.value;
  }
  return "";
}

void ScenarioWriter::Erase(const std::string& key) {
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [&](const Entry& e) { return e.key == key; }),
                 entries_.end());
}

void ScenarioWriter::Trailer(const std::string& heading, const std::vector<std::string>& lines) {
  if (lines.empty()) return;
  trailer_.push_back(heading);
  for (const std::string& l : lines) trailer_.push_back("  " + l);
}

std::vector<std::string> ScenarioWriter::Keys() const {
  std::vector<const Entry*> sorted;
  for (const Entry& e : entries_) sorted.push_back(&e);
  std::stable_sort(sorted.begin(), sorted.end(), [](const Entry* a, const Entry* b) {
    return BlockIndex(a->key) < BlockIndex(b->key);
  });
  std::vector<std::string> out;
  for (const Entry* e : sorted) out.push_back(e->key);
  return out;
}

std::string ScenarioWriter::Render(const std::string& header, std::vector<std::string>* line_at,
                                   std::vector<std::string>* line_key) const {
  Node root;
  std::vector<const Entry*> sorted;
  for (const Entry& e : entries_) sorted.push_back(&e);
  std::stable_sort(sorted.begin(), sorted.end(), [](const Entry* a, const Entry* b) {
    return BlockIndex(a->key) < BlockIndex(b->key);
  });
  for (const Entry* e : sorted) {
    Node* n = &root;
    size_t from = 0;
    for (size_t dot = e->key.find('.');; dot = e->key.find('.', from)) {
      n = n->Child(e->key.substr(from, dot - from));
      if (dot == std::string::npos) break;
      from = dot + 1;
    }
    n->leaf = e;
  }
  std::vector<std::string> lines, ats, keys;
  for (size_t start = 0; start < header.size();) {
    const size_t nl = header.find('\n', start);
    lines.push_back(header.substr(start, nl - start));
    ats.push_back("");
    keys.push_back("");
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  // Depth-first: a leaf is `key: value  # from`, a mapping `key:  # the origins below`.
  auto emit = [&](auto&& self, const Node& n, int depth, const std::string& path) -> std::string {
    const std::string indent(2 * static_cast<size_t>(depth), ' ');
    const std::string key = path.empty() ? n.name : path + "." + n.name;
    if (n.leaf) {
      const Entry& e = *static_cast<const Entry*>(n.leaf);
      lines.push_back(Commented(fmt::format("{}{}: {}", indent, n.name, e.value), e.from));
      ats.push_back(e.at);
      keys.push_back(key);
      return e.from;
    }
    const size_t at = lines.size();
    lines.emplace_back();
    ats.push_back("");
    keys.push_back(key);
    std::vector<std::string> froms;
    for (const auto& c : n.children) {
      const std::string f = self(self, *c, depth + 1, key);
      if (!f.empty() && std::find(froms.begin(), froms.end(), f) == froms.end()) {
        froms.push_back(f);
      }
    }
    const std::string joined = Origins(froms);
    lines[at] = Commented(fmt::format("{}{}:", indent, n.name), "from " + joined);
    return froms.empty() ? "" : froms.front();
  };
  for (const auto& block : root.children) emit(emit, *block, 0, "");
  for (const std::string& t : trailer_) {
    lines.push_back("# " + t);
    ats.push_back("");
    keys.push_back("");
  }
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  if (line_at) *line_at = std::move(ats);
  if (line_key) *line_key = std::move(keys);
  return out;
}

}  // namespace parasim
