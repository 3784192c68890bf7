// The torchtitan import's reader of a job config (scenarios/torchtitan_import.cc): located reads
// of the TOML document, remembering the keys read, so that what was not read is listed.
#pragma once

#include <fmt/core.h>
#include <toml++/toml.h>

#include <functional>
#include <initializer_list>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/status.h"

namespace parasim::torchtitan_import {

// A key of the config: a table path and a key ("parallelism", "tensor_parallel_degree").
struct Key {
  std::string_view table, key;
  std::string Path() const { return fmt::format("{}.{}", table, key); }
};

// The TOML document with located reads; remembers the keys it read.
class Config {
 public:
  Config(std::string file, toml::table t) : file_(std::move(file)), t_(std::move(t)) {}

  // The first of `keys` present, or null; `label` gets "[table] key = value".
  const toml::node* Find(std::initializer_list<Key> keys, std::string* label = nullptr) {
    for (const Key& k : keys) {
      const toml::node* n = t_.at_path(k.Path()).node();
      if (!n) continue;
      read_.insert(k.Path());
      if (label) *label = fmt::format("[{}] {} = {}", k.table, k.key, Text(*n));
      return n;
    }
    return nullptr;
  }
  StatusOr<int64_t> Int(std::initializer_list<Key> keys, int64_t lo, int64_t hi, int64_t fallback,
                        std::string* label) {
    const toml::node* n = Find(keys, label);
    if (!n) return fallback;
    const std::optional<int64_t> v = n->is_integer() ? n->value<int64_t>() : std::nullopt;
    if (!v || *v < lo || *v > hi) {
      return Error(*n, fmt::format("{}: expected an integer from {} to {}", *label, lo, hi));
    }
    return *v;
  }
  // A string; another type is an error at it.
  StatusOr<std::string> Str(std::initializer_list<Key> keys, const std::string& fallback,
                            std::string* label) {
    const toml::node* n = Find(keys, label);
    if (!n) return fallback;
    if (!n->is_string()) return Error(*n, fmt::format("{}: expected a quoted string", *label));
    return *n->value<std::string>();
  }
  // A boolean (true or false, unquoted); another type is an error at it.
  StatusOr<bool> Bool(std::initializer_list<Key> keys, bool fallback, std::string* label) {
    const toml::node* n = Find(keys, label);
    if (!n) return fallback;
    if (!n->is_boolean()) return Error(*n, fmt::format("{}: expected true or false", *label));
    return *n->value<bool>();
  }
  // A string that `ok` accepts, else an error at it saying what would be (`expected`).
  StatusOr<std::string> Str(std::initializer_list<Key> keys, const std::string& fallback,
                            std::string* label, bool (*ok)(const std::string&),
                            std::string_view expected) {
    const toml::node* n = Find(keys, label);
    if (!n) return fallback;
    if (!n->is_string() || !ok(*n->value<std::string>())) {
      return Error(*n, fmt::format("{}: expected {}", *label, expected));
    }
    return *n->value<std::string>();
  }
  Status Error(const toml::node& n, const std::string& message) const {
    return InvalidArgument(fmt::format("{}:{}:{}: error: {}", file_, n.source().begin.line,
                                       n.source().begin.column, message));
  }
  // At a key found (Find), else at the file's start.
  Status Error(const toml::node* n, const std::string& message) const {
    if (n != nullptr) return Error(*n, message);
    return InvalidArgument(fmt::format("{}:1:1: error: {}", file_, message));
  }
  // Every leaf key the import did not read, "table.key".
  std::vector<std::string> Unread() const {
    std::vector<std::string> out;
    Walk(t_, "", &out);
    return out;
  }
  const std::string& file() const { return file_; }

 private:
  static std::string Text(const toml::node& n) {
    if (n.is_string()) return "\"" + *n.value<std::string>() + "\"";
    if (n.is_boolean()) return *n.value<bool>() ? "true" : "false";
    if (n.is_integer()) return std::to_string(*n.value<int64_t>());
    if (n.is_floating_point()) return fmt::format("{}", *n.value<double>());
    if (const toml::array* a = n.as_array()) {
      std::string out = "[";
      for (const auto& e : *a) out += (out.size() > 1 ? ", " : "") + Text(e);
      return out + "]";
    }
    return "...";
  }
  void Walk(const toml::table& t, const std::string& at, std::vector<std::string>* out) const {
    for (const auto& [k, v] : t) {
      const std::string path = at.empty() ? std::string(k.str()) : at + "." + std::string(k.str());
      if (const toml::table* sub = v.as_table()) {
        Walk(*sub, path, out);
      } else if (read_.count(path) == 0) {
        out->push_back(path);
      }
    }
  }
  std::string file_;
  toml::table t_;
  std::set<std::string> read_;
};

}  // namespace parasim::torchtitan_import
