// What a header that declares a YAML parser needs, without yaml-cpp's headers: the context
// that locates errors (YamlContext), a document to load (YamlInput) and declarations of
// YAML::Node and MapReader. yaml-cpp's headers cost about a second of compile time in each
// file that includes them (g++ 12, -O2 or ASan -O1; 2026-12-02), and most files that include a
// scenario, model or hardware header never read YAML; those that do include sim/yaml_reader.h.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "sim/status.h"

namespace YAML {
class Node;
}  // namespace YAML

namespace parasim {

class MapReader;  // sim/yaml_reader.h

// Where YAML nodes came from: a file name and the key paths that a --set replaced.
struct YamlContext {
  std::string file;
  std::map<std::string, std::string> overrides;  // dotted path -> "--set path=value"
  // Values another file placed (a validation file's stated keys): dotted path -> that file's
  // "file:line:col".
  std::map<std::string, std::string> placed;
  // Mappings a --set rebuilt (their nodes lose the file's marks): dotted path -> the file's
  // "file:line:col" of the mapping, where an error about a key missing below it points.
  std::map<std::string, std::string> rebuilt;

  // "file:line:col" for a node at `path` (or the option text for an overridden path).
  std::string Where(const YAML::Node& node, std::string_view path) const;
  Status ErrorAt(const YAML::Node& node, std::string_view path, std::string_view message) const;
};

// A document to load: a file, or text held in memory (a dict from the Python module) under a
// display name that its error messages use in place of a path.
struct YamlInput {
  YamlInput(std::string path) : name(std::move(path)) {}  // NOLINT: a path reads as a file
  YamlInput(const char* path) : name(path) {}             // NOLINT
  YamlInput(std::string display_name, std::string document)
      : name(std::move(display_name)), text(std::move(document)) {}
  std::string name;
  std::optional<std::string> text;
};

}  // namespace parasim
