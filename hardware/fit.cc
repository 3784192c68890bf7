#include "hardware/fit.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "hardware/collective_fit.h"
#include "hardware/kernel_fit.h"
#include "hardware/system_fit.h"

namespace parasim {
namespace {

// The profile's GPU and source; measurements of another GPU are refused.
Status Sources(FitContext* f) {
  CalibrationProfile& p = f->result.profile;
  const ClusterSpec& c = f->cluster;
  p.gpu = c.gpu.id;
  std::vector<std::string> sources;
  for (const auto& m : f->measurements) {
    if (!m.gpu.empty() && m.gpu != c.gpu.id) {
      return InvalidArgument(
          fmt::format("{}:1:1: error: gpu: measured on '{}' but fitting for '{}'; pass --gpu {}",
                      m.file, m.gpu, c.gpu.id, m.gpu));
    }
    sources.push_back(m.file.substr(m.file.find_last_of('/') + 1));
  }
  p.source = fmt::format("parasim fit of {}", fmt::format("{}", fmt::join(sources, ", ")));
  const auto& ms = f->measurements;
  if (!ms.empty() && !ms[0].device.empty()) p.source += fmt::format(" ({})", ms[0].device);
  return Status::Ok();
}

// Why no family was fitted: what reading passed over and the points the fitters left out,
// located at the first file.
Status NothingFitted(const FitContext& f) {
  std::string why;
  for (const Measurements& m : f.measurements) {
    for (const std::string& n : m.notes) why += "\n  " + n;
  }
  for (const std::string& s : f.result.skipped) why += "\n  skipped: " + s;
  const std::string file = f.measurements.empty() ? "fit" : f.measurements.front().file;
  return InvalidArgument(fmt::format(
      "{}:1:1: error: nothing to fit: the measurements hold no GEMM, memory, collective or "
      "contention point the fit can use{}",
      file, why.empty() ? "" : ":" + why));
}

}  // namespace

// One fitter per measurement family, in an order where later families see earlier fits.
StatusOr<FitResult> FitMeasurements(const std::vector<Measurements>& ms,
                                    const ClusterSpec& cluster) {
  FitContext fit(ms, cluster);
  if (Status s = Sources(&fit); !s.ok()) return s;
  FitLaunch(&fit);
  FitGemms(&fit, false);
  FitGemms(&fit, true);
  FitMemory(&fit);
  FitAttention(&fit, false);
  FitAttention(&fit, true);
  FitCollectives(&fit);
  FitHostCopies(&fit);
  FitContention(&fit);
  FitSustained(&fit);
  if (fit.result.families.empty()) return NothingFitted(fit);
  return std::move(fit.result);
}

}  // namespace parasim
