// A minimal JSON value with deterministic output (object keys keep insertion order, numbers
// print with 17 significant digits only when needed), for the CLI's --json and reports.
//
//   Json j = Json::Object();
//   j.Set("step_time_s", 24.8).Set("fits", true);
//   std::string text = j.Dump(2);
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace parasim {

class Json {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Json() = default;
  Json(bool b) : kind_(Kind::kBool), b_(b) {}                            // NOLINT
  Json(double d) : kind_(Kind::kNumber), d_(d) {}                        // NOLINT
  Json(int v) : kind_(Kind::kNumber), d_(v) {}                           // NOLINT
  Json(int64_t v) : kind_(Kind::kNumber), d_(static_cast<double>(v)) {}  // NOLINT
  Json(const char* s) : kind_(Kind::kString), s_(s) {}                   // NOLINT
  Json(std::string s) : kind_(Kind::kString), s_(std::move(s)) {}        // NOLINT
  static Json Array() {
    Json j;
    j.kind_ = Kind::kArray;
    return j;
  }
  static Json Object() {
    Json j;
    j.kind_ = Kind::kObject;
    return j;
  }
  Json& Set(std::string key, Json value);
  Json& Push(Json value);
  Kind kind() const { return kind_; }
  // The value, read back by kind (the Python module converts the tree without printing it).
  bool bool_value() const { return b_; }
  double number() const { return d_; }
  const std::string& string_value() const { return s_; }
  const std::vector<Json>& items() const { return items_; }
  const std::vector<std::pair<std::string, Json>>& fields() const { return fields_; }
  std::string Dump(int indent = 2) const;

 private:
  void DumpTo(std::string* out, int indent, int depth) const;
  Kind kind_ = Kind::kNull;
  bool b_ = false;
  double d_ = 0;
  std::string s_;
  std::vector<Json> items_;
  std::vector<std::pair<std::string, Json>> fields_;
};

std::string JsonEscape(const std::string& s);

}  // namespace parasim
