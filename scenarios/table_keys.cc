#include "scenarios/table_keys.h"

#include <algorithm>
#include <string>

#include "sim/yaml_reader.h"
#include "strategies/sweep_keys.h"

namespace parasim {

Status ReadTableKeys(const MapReader& m, std::string_view block, Layout* l, Training* t,
                     const std::vector<std::string_view>& skip) {
  for (const SweepKey& k : SweepKeys()) {
    if (k.block != block || !m.Has(k.name)) continue;
    if (std::find(skip.begin(), skip.end(), k.name) != skip.end()) continue;
    PARASIM_ASSIGN_OR_RETURN(std::string text, ReadScalar(m.ctx(), m.Node(k.name), m.Path(k.name)));
    StatusOr<int64_t> v = k.parse(text);
    if (!v.ok()) return m.Error(k.name, v.status().message());
    k.apply(*v, l, t);
  }
  return Status::Ok();
}

}  // namespace parasim
