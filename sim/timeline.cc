#include "sim/timeline.h"

namespace parasim::sim {

double Timeline::LinkUtilisation(const Program& p, LinkId l) const {
  double cap = p.link_capacity(l) * makespan.seconds();
  return cap > 0 ? link_bytes[l] / cap : 0.0;
}

}  // namespace parasim::sim
