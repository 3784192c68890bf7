// The subsets.yaml beside a validation file (or a folder up): its named lists of files and
// cases (training, held_out, ...) and its `stated` map, what a copied file does not state and
// its own source does (file -> scenario key -> value), which joins the file's defaults.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "sim/status.h"
#include "sim/yaml_context.h"

namespace parasim {

// The cases a subset of the subsets.yaml beside a validation file holds: all (the file is
// listed) or those named; `any` when no subset was asked for.
struct Subset {
  bool any = true;
  bool whole_file = false;
  std::set<std::string> cases;
};

// The subset `name` of the subsets.yaml beside the validation file at `path` (any, when `name`
// is empty).
StatusOr<Subset> LoadSubset(const std::string& path, const std::string& name);

// What that subsets.yaml states for the file's cases: set into `defaults` (under each case's own
// keys and --set), the keys' places in subsets.yaml kept in `ctx` for errors, each as
// "key=value" in `stated`.
Status ApplyStated(const std::string& path, YAML::Node* defaults, YamlContext* ctx,
                   std::vector<std::string>* stated);

// Forgets the stated keys' places (ApplyStated) that a case's own scenario fragment sets:
// errors there are the case's.
void ForgetOwnKeys(const YAML::Node& scenario, YamlContext* ctx);
// Records where the file places each key of a case's own scenario fragment (ctx->placed), so that
// errors find them in a copy of the fragment (a copy keeps the case's nodes out of the file's
// yaml-cpp memory, which each merge into it had copied whole: the file's load grew with the
// square of its cases).
void PlaceOwnKeys(const YAML::Node& scenario, const YamlContext& file, YamlContext* ctx);

}  // namespace parasim
