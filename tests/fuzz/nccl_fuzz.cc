// libFuzzer target: nccl-tests logs, measurement files and calibration profiles parse or are
// refused, never crash; what parses survives its own text form; parsed measurements fit (or are
// refused) without crashing, and a fitted profile is finite.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "hardware/fit.h"
#include "hardware/measurements.h"
#include "hardware/profile.h"

namespace {

[[noreturn]] void Fail(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "nccl_fuzz: %s\n%s\n", what, detail.c_str());
  std::abort();
}

const parasim::ClusterSpec& H100() {
  static const parasim::ClusterSpec c = [] {
    parasim::HardwareCatalog cat = *parasim::LoadHardwareCatalog();
    parasim::ClusterSpec s;
    s.gpu = *cat.FindGpu("h100-sxm5-80gb");
    s.intra = *cat.FindFabric("nvlink4-h100");
    s.inter = *cat.FindFabric("ib-ndr-400g");
    s.nodes = 2;
    return s;
  }();
  return c;
}

void CheckFit(const parasim::Measurements& m) {
  auto fit = parasim::FitMeasurements({m}, H100());
  if (!fit.ok()) return;
  const auto& p = fit->profile;
  for (auto v : {p.gemm_efficiency, p.memory_efficiency, p.gemm_efficiency_fp8}) {
    if (v && !(*v > 0 && *v <= 1)) std::abort();
  }
  for (const auto& g : p.gemm_shapes) {
    if (!(g.efficiency > 0 && g.efficiency <= 1)) std::abort();
  }
  for (const auto& f : p.fabrics) {
    if (f.latency && !std::isfinite(f.latency->seconds())) std::abort();
    for (const auto& c : f.collectives) {
      if (!(c.efficiency > 0 && c.efficiency <= 1) || !std::isfinite(c.latency.seconds())) {
        std::abort();
      }
    }
  }
  // A fitted profile is a valid profile.
  const std::string text = parasim::FormatCalibrationProfile(p);
  if (auto r = parasim::ParseCalibrationProfile(text, "fit.yaml"); !r.ok()) {
    Fail("a fitted profile is not a valid profile", text + "\n" + r.status().message());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (auto log = parasim::ParseNcclTestsLog(text, "all_reduce_perf.log"); log.ok()) {
    const parasim::Measurements m = parasim::MeasurementsFromNcclLog(*log);
    for (const auto& c : m.collectives) {
      if (!(c.time.seconds() > 0) || !std::isfinite(c.bytes.bytes())) std::abort();
    }
  }
  if (auto m = parasim::ParseMeasurements(text, "m.yaml"); m.ok()) {
    const std::string again = parasim::FormatMeasurements(*m);
    if (auto r = parasim::ParseMeasurements(again, "again.yaml"); !r.ok()) {
      Fail("measurements do not survive their text form", again + "\n" + r.status().message());
    }
    if (m->gemm.size() + m->memory.size() + m->attention.size() + m->collectives.size() < 200) {
      CheckFit(*m);
    }
  }
  if (auto p = parasim::ParseCalibrationProfile(text, "p.yaml"); p.ok()) {
    const std::string again = parasim::FormatCalibrationProfile(*p);
    if (auto r = parasim::ParseCalibrationProfile(again, "again.yaml"); !r.ok()) {
      Fail("a profile does not survive its text form", again + "\n" + r.status().message());
    }
  }
  return 0;
}
