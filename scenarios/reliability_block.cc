#include "scenarios/reliability_block.h"

#include <fmt/core.h>

#include <string>
#include <utility>

#include "sim/parse_units.h"
#include "sim/yaml_reader.h"

namespace parasim {
namespace {

// A failure rate per component-day, or the component's MTBF as a time ("2000d").
Status ReadRate(const MapReader& m, std::string_view key, double* out) {
  if (!m.Has(key)) return Status::Ok();
  const YAML::Node n = m.Node(key);
  const std::string text = n.IsScalar() ? n.Scalar() : std::string();
  if (StatusOr<double> v = ParseCount(text); v.ok() && *v >= 0 && *v <= 1e3) {
    *out = *v;
    return Status::Ok();
  }
  // An MTBF at least 86.4 s, as the rate at most 1000 a day.
  if (StatusOr<double> d = ParseSeconds(text); d.ok() && *d >= 86.4) {
    *out = 86400.0 / *d;
    return Status::Ok();
  }
  return m.Error(key, fmt::format("'{}' is neither a rate per component-day (a number from 0 "
                                  "to 1000, e.g. 4.9e-4) nor an MTBF with a time unit of at "
                                  "least 86.4s (e.g. 2000d)",
                                  text));
}

}  // namespace

const std::vector<std::string_view>& ReliabilityKeys() {
  static const std::vector<std::string_view> kKeys = {"gpu",
                                                      "node",
                                                      "link",
                                                      "switch",
                                                      "planned_per_day",
                                                      "detection",
                                                      "relaunch",
                                                      "checkpoint",
                                                      "checkpoint_interval",
                                                      "storage_write",
                                                      "storage_read",
                                                      "host_copy",
                                                      "window",
                                                      "straggler",
                                                      "seed",
                                                      "runs",
                                                      "step_samples"};
  return kKeys;
}

Status ParseReliability(const YamlContext& ctx, const YAML::Node& node, Reliability* r) {
  if (node.IsScalar()) {
    PARASIM_ASSIGN_OR_RETURN(std::string v, ReadScalar(ctx, node, "reliability"));
    if (v == "none") {
      r->enabled = false;
      return Status::Ok();
    }
    return ctx.ErrorAt(node, "reliability",
                       fmt::format("'{}' is not accepted; expected `none` or a mapping with "
                                   "keys such as gpu, detection, checkpoint, storage_write",
                                   v));
  }
  PARASIM_ASSIGN_OR_RETURN(MapReader m,
                           MapReader::Open(ctx, node, "reliability", ReliabilityKeys()));
  r->block = true;
  PARASIM_RETURN_IF_ERROR(ReadRate(m, "gpu", &r->gpu));
  PARASIM_RETURN_IF_ERROR(ReadRate(m, "node", &r->node));
  PARASIM_RETURN_IF_ERROR(ReadRate(m, "link", &r->link));
  PARASIM_RETURN_IF_ERROR(ReadRate(m, "switch", &r->switches));
  PARASIM_RETURN_IF_ERROR(m.Number("planned_per_day", &r->planned_per_day, 0, 1e4));
  PARASIM_RETURN_IF_ERROR(m.Time("detection", &r->detection));
  PARASIM_RETURN_IF_ERROR(m.Time("relaunch", &r->relaunch));
  std::string mode = r->async_checkpoint ? "async" : "sync";
  PARASIM_RETURN_IF_ERROR(m.Enum("checkpoint", &mode, {"sync", "async"}));
  r->async_checkpoint = mode == "async";
  PARASIM_RETURN_IF_ERROR(m.Time("checkpoint_interval", &r->checkpoint_interval));
  for (auto [key, bw] :
       {std::pair{"storage_write", &r->storage_write}, std::pair{"storage_read", &r->storage_read},
        std::pair{"host_copy", &r->host_copy}}) {
    PARASIM_RETURN_IF_ERROR(m.Rate(key, bw));
    // Below 1 MB/s a checkpoint of a model this tool plans takes months.
    if (!(bw->bytes_per_second() >= 1e6))
      return m.Error(key, "expected a bandwidth of at least 1MB/s, e.g. 2TB/s");
  }
  if (m.Has("window")) {
    PARASIM_ASSIGN_OR_RETURN(std::string w, ReadScalar(ctx, m.Node("window"), m.Path("window")));
    StatusOr<double> sec = ParseSeconds(w);
    if (!sec.ok()) return m.Error("window", sec.status().message());
    // Ten years (3652.5 days) at most: a run's snapshot, not an age.
    if (!(*sec > 0 && *sec <= 3652.5 * 86400)) {
      return m.Error("window",
                     fmt::format("'{}': expected a time more than 0 and at most 3652.5d", w));
    }
    r->window_s = *sec;
  }
  PARASIM_RETURN_IF_ERROR(m.Number("straggler", &r->straggler, 0, 1));
  int64_t seed = static_cast<int64_t>(r->seed);
  PARASIM_RETURN_IF_ERROR(m.Int("seed", &seed, 0, int64_t{1} << 62));
  r->seed = static_cast<uint64_t>(seed);
  PARASIM_RETURN_IF_ERROR(m.Int("runs", &r->runs, 1, 100000));
  PARASIM_RETURN_IF_ERROR(m.Int("step_samples", &r->step_samples, 0, 100000));
  // Where a step's sampling is told: its count, else the spread that turns it on.
  for (std::string_view key : {"step_samples", "straggler"}) {
    if (m.Has(key)) {
      r->step_samples_at = ctx.Where(m.Node(key), m.Path(key));
      break;
    }
  }
  return Status::Ok();
}

}  // namespace parasim
