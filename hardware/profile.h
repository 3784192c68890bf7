// Calibration profiles: fitted cost-model parameters for one GPU type and its fabrics, written by
// `parasim fit` and referenced from a scenario's `cluster.calibration`. Values in a profile
// replace the catalog defaults; the run report lists which ones did.
//
//   # parasim calibration profile
//   gpu: h100-sxm5-80gb                 # the catalog id it was measured on
//   source: "parasim fit, H100 80GB HBM3, driver 550.54, 2026-11-22"
//   compute:
//     gemm_efficiency: 0.80             # large-GEMM fraction of the dense peak
//     memory_efficiency: 0.87           # streaming fraction of HBM bandwidth
//     launch_overhead: 4.1us            # per kernel
//     host_op_time: 15us                # host time to issue a framework op (hardware/spec.h)
//     sustained_factor: 0.83            # in-step kernel rates vs alone (hardware/spec.h)
//     contended_compute: 1.30           # GEMM/attention slowdown beside a collective
//     contended_memory: 1.06            # memory-bound kernels' slowdown beside a collective
//     gemm_efficiency_fp8: 0.62         # large fp8 GEMMs vs the fp8 peak
//     attention_standard: {forward: 0.45, backward: 0.41}   # vs the 16-bit peak
//     attention_flash: {forward: 0.62, backward: 0.50}
//   gemm_shapes:                        # exact shapes measured (calibrate --scenario)
//     - {dtype: bf16, m: 8192, n: 4608, k: 12288, efficiency: 0.78}
//   fabrics:
//     nvlink4-h100: {efficiency: 0.82, latency: 6us}
//     ib-ndr-400g:
//       efficiency: 0.92
//       latency: 8us
//       collectives:                    # per collective, algorithm and group shape
//         - {op: all_reduce, algo: tree, ranks: 16, per_node: 8, efficiency: 0.9, latency: 11us}
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hardware/cost_model.h"
#include "hardware/spec.h"
#include "sim/status.h"
#include "sim/units.h"

namespace parasim {

struct FabricFit {
  std::string id;
  std::optional<double> efficiency;
  std::optional<Duration> latency;
  std::vector<FabricSpec::CollectiveFit> collectives;
};

struct CalibrationProfile {
  std::string file;
  std::string gpu;        // catalog id of the GPU measured
  std::string gpu_where;  // file:line:col of the gpu key
  std::string source;
  std::optional<double> gemm_efficiency;
  std::optional<double> memory_efficiency;
  std::optional<Duration> launch_overhead;
  std::optional<Duration> host_op_time;           // GpuSpec::host_op_time
  std::optional<Duration> host_micro_batch_time;  // GpuSpec::host_micro_batch_time
  std::optional<Duration> host_step_time;         // GpuSpec::host_step_time
  std::optional<double> sustained_factor;
  // Slowdowns beside a running collective (GpuSpec::contended_compute / contended_memory).
  std::optional<double> contended_compute;
  std::optional<double> contended_memory;
  std::optional<double> gemm_efficiency_fp8;
  std::optional<AttentionEfficiency> attention_standard;
  std::optional<AttentionEfficiency> attention_flash;
  std::optional<AttentionEfficiency> attention_flash2;  // GpuSpec::attention_flash2
  std::optional<ElementwiseRates> elementwise_rates;    // GpuSpec::elementwise_rates, whole
  std::vector<GemmShapeFit> gemm_shapes;
  std::vector<FabricFit> fabrics;
};

StatusOr<CalibrationProfile> LoadCalibrationProfile(const std::string& path);
// Parses a profile from YAML text (errors name `file`).
StatusOr<CalibrationProfile> ParseCalibrationProfile(const std::string& text,
                                                     const std::string& file);
// The profile as YAML (the format above); Parse(Format(p)) == p.
std::string FormatCalibrationProfile(const CalibrationProfile& p);

// Replaces the cluster's defaults with the profile's values. Returns one line per replaced
// value ("gemm_efficiency 0.80 (catalog 0.813)"). A profile measured on another GPU is refused.
StatusOr<std::vector<std::string>> ApplyCalibrationProfile(const CalibrationProfile& p,
                                                           ClusterSpec* cluster);

}  // namespace parasim
