// Test helpers for the scenario's block readers: the catalogs, loaded once, and one block of a
// YAML document read by a reader, its errors located in "x.yaml".
//
//   Training t;
//   Status st = testing::ReadBlock("training: {seq_len: 8}\n", "training",
//                                  [&](const YamlContext& ctx, const YAML::Node& n) {
//                                    return ParseTraining(ctx, n, &t);
//                                  });
#pragma once

#include <doctest/doctest.h>

#include <functional>
#include <string>

#include "scenarios/catalogs.h"
#include "sim/status.h"
#include "sim/yaml_reader.h"

namespace parasim::testing {

inline const Catalogs& TestCatalogs() {
  static const Catalogs cat = *LoadCatalogs();
  return cat;
}

// `read` applied to root[key] of the document `text` (the root itself for an empty key).
inline Status ReadBlock(const std::string& text, const std::string& key,
                        const std::function<Status(const YamlContext&, const YAML::Node&)>& read) {
  const YamlContext ctx{"x.yaml", {}};
  StatusOr<YAML::Node> root = ParseYaml(text, "x.yaml");
  REQUIRE_MESSAGE(root.ok(), root.status().message());
  const YAML::Node& doc = *root;
  return read(ctx, key.empty() ? doc : doc[key]);
}

}  // namespace parasim::testing
