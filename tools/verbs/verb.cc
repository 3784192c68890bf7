#include "tools/verbs/verb.h"

#include <fmt/core.h>

#include <string>
#include <string_view>
#include <utility>

#include "sim/io.h"

namespace parasim {

std::vector<FlagValue> Verb::Defaults() const {
  std::vector<FlagValue> out;
  out.reserve(flags.size());
  for (const Flag& f : flags) out.push_back(f.default_value);
  return out;
}

bool Verb::WantsJson(const std::vector<FlagValue>& values) const {
  for (size_t i = 0; i < flags.size() && i < values.size(); ++i) {
    if (flags[i].json) return std::get<bool>(values[i]);
  }
  return false;
}

Status CheckFlagValues(const std::vector<Flag>& flags, const std::vector<FlagValue>& values) {
  for (size_t i = 0; i < flags.size() && i < values.size(); ++i) {
    const Flag& f = flags[i];
    int64_t v = 0;
    if (const int* x = std::get_if<int>(&values[i])) {
      v = *x;
    } else if (const int64_t* y = std::get_if<int64_t>(&values[i])) {
      v = *y;
    } else {
      continue;
    }
    if (v >= f.min && v <= f.max) continue;
    if (f.positive) {
      return InvalidArgument(
          fmt::format("{}={}:1:1: error: expected a positive number", f.name, v));
    }
    return InvalidArgument(
        fmt::format("{}={}:1:1: error: expected a value from {} to {}", f.name, v, f.min, f.max));
  }
  return Status::Ok();
}

Status CheckOutputsAreNotInputs(const std::vector<Flag>& flags,
                                const std::vector<FlagValue>& values) {
  std::vector<std::string> inputs;
  std::vector<std::pair<std::string, std::string>> outputs;  // flag, path
  for (size_t i = 0; i < flags.size() && i < values.size(); ++i) {
    const Flag& f = flags[i];
    const FlagValue& v = values[i];
    if (const Document* doc = std::get_if<Document>(&v); doc != nullptr && !doc->text) {
      inputs.push_back(doc->file);
    } else if (const std::string* s = std::get_if<std::string>(&v)) {
      if (f.positional || f.input) inputs.push_back(*s);
      if (f.output) outputs.emplace_back(f.name, *s);
    } else if (const auto* list = std::get_if<std::vector<std::string>>(&v)) {
      if (f.positional || f.input) inputs.insert(inputs.end(), list->begin(), list->end());
    }
  }
  for (const auto& [flag, path] : outputs) {
    PARASIM_RETURN_IF_ERROR(RefuseOverwrite(path, flag, inputs));
  }
  return Status::Ok();
}

namespace {

// Whether the message's first line holds "FILE:LINE:COL: error: " (a located error). A plain
// scan: std::regex recursed once a character and overflowed the stack on a line of thousands.
bool Located(std::string_view message) {
  const std::string_view line = message.substr(0, message.find('\n'));
  const std::string_view tag = ": error: ";
  for (size_t at = line.find(tag); at != std::string_view::npos; at = line.find(tag, at + 1)) {
    size_t i = at;
    auto digits = [&] {
      const size_t end = i;
      while (i > 0 && line[i - 1] >= '0' && line[i - 1] <= '9') --i;
      return i < end;
    };
    if (!digits() || i == 0 || line[--i] != ':' || !digits() || i == 0 || line[i - 1] != ':') {
      continue;
    }
    return true;
  }
  return false;
}

}  // namespace

Status LocateAtInput(Status status, const std::vector<FlagValue>& values) {
  if (status.exit_code() != 2) return status;
  if (Located(status.message())) return status;
  for (const FlagValue& v : values) {
    const Document* doc = std::get_if<Document>(&v);
    if (doc == nullptr || doc->file.empty()) continue;
    return Status(status.code(), fmt::format("{}:1:1: error: {}", doc->file, status.message()));
  }
  return status;
}

std::string PythonName(const std::string& flag_name) {
  std::string out = flag_name.substr(flag_name.find_first_not_of('-'));
  for (char& c : out) {
    if (c == '-') c = '_';
  }
  return out;
}

}  // namespace parasim
