// What the serving fuzz targets require of a scenario before they replay it, for fuzzing speed:
// no sweep block (a sweep's own layout need not be valid alone: serve --sweep varies it), at
// most 512 GPUs and 128 layers, and requests of at most a few thousand tokens (long ones are
// legitimate but slow to replay, a token an iteration). The request count is each target's own
// (serving_fuzz caps it, serving_validation_fuzz refuses more).
#pragma once

#include "strategies/serving_spec.h"

namespace parasim::fuzz {

inline bool QuickToReplay(const ServingScenario& s) {
  if (s.serving.sweep || s.cluster.gpus() > 512 || s.model.layers > 128) return false;
  auto short_dist = [](const LengthDist& d) {
    return d.Mean() <= 2048 && (d.max > 0 ? d.max <= 8192 : d.kind == LengthDist::Kind::kFixed);
  };
  const RequestSpec& rq = s.serving.requests;
  if (!short_dist(rq.input) || !short_dist(rq.output)) return false;
  for (const TraceRow& t : rq.trace) {
    if (t.input > 8192 || t.output > 8192) return false;
  }
  return true;
}

}  // namespace parasim::fuzz
