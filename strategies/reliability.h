// What a scenario says about failures, checkpoints and stragglers (its optional `reliability`
// block), with defaults taken from published fleet measurements. strategies/goodput.h turns it
// into interruptions, lost work, effective training time and a step-time distribution.
#pragma once

#include <cstdint>

#include "sim/units.h"

namespace parasim {

// Unexpected interruptions per GPU-day, all causes (GPU, host, network, software): the geometric
// mean of the two Meta research clusters of Kokolis et al., "Revisiting Reliability in
// Large-Scale Machine Learning Research Clusters" (HPCA 2025, arXiv 2410.21680): RSC-1 6.50 and
// RSC-2 2.34 failures per 1000 node-days of 8 A100 each, sqrt(6.50 x 2.34) = 3.90 per 1000
// node-days = 4.87e-4 per GPU-day. The two clusters are 2.8x apart; the log-midpoint is the
// central estimate for a fleet that has not measured its own (set `reliability.gpu` then).
inline constexpr double kRscGpuFailuresPerDay = 3.90e-3 / 8;

// Checkpoint write and read bandwidth of the whole storage system: Llama 3's Tectonic, "a
// sustainable throughput of 2 TB/s and a peak throughput of 7 TB/s" (arXiv 2407.21783, 3.3.1).
inline constexpr double kStorageBytesPerSecond = 2e12;

// Device-to-host copy per GPU for an asynchronous checkpoint's snapshot: pinned 64 MiB copies
// measured at 54.8 GB/s on an H100 SXM5 (hardware/profiles/h100-sxm5-80gb-2026-11-22-measurements
// /gpt-2.7b-b4-flash.yaml, host_copies, d2h 67108864 B in 1225 us).
inline constexpr double kHostCopyBytesPerSecond = 54.8e9;

// Time for the job to notice a failure: PyTorch's default collective timeout for NCCL process
// groups, 10 minutes (torch.distributed.init_process_group, `timeout`), after which the
// watchdog tears the job down. A crash that kills a process is seen sooner; a hang is not.
inline constexpr double kDetectionSeconds = 600;

// Rescheduling, process start and communicator setup before training resumes (assumption, not
// a measurement: 2 minutes; Kokolis et al. model restart overheads of 5 to 20 minutes in all,
// detection included). Set `reliability.relaunch` to your scheduler's figure.
inline constexpr double kRelaunchSeconds = 120;

// Per-GPU, per-step speed spread, an example value rather than the default: a lognormal sigma
// of 0.020, derived from the variability brief of issue #19 (about 9% GPU-time spread at 64K
// GPUs) read as the median of the largest of 65,536 draws: exp(sigma x 4.25) = 1.09 (4.25 = the
// standard normal's 0.5^(1/65536) point). The default spread is 0: the step-time model's sustained
// factor is fitted to measured runs (docs/MODEL.md), whose steps already carry their clusters'
// stragglers, so a default spread would count them twice. Set `reliability.straggler` to a
// fleet's measured spread to see the step's P50/P99 grow with the GPUs that synchronise.
inline constexpr double kStragglerSigma = 0.020;

struct Reliability {
  bool enabled = true;  // `reliability: none` turns the goodput model off
  bool block = false;   // the scenario has a reliability mapping
  // Unexpected interruptions per component-day. The default GPU rate is all-cause (it includes
  // host and network failures), so node, link and switch rates default to 0; a fleet that
  // measured its own splits sets them.
  double gpu = kRscGpuFailuresPerDay;
  double node = 0;
  double link = 0;      // per NIC-to-leaf link (nics_per_node x nodes of them)
  double switches = 0;  // per leaf switch (one per 32 NIC ports: 64-port switches, half down)
  double planned_per_day = 0;  // planned interruptions of the job (maintenance, upgrades)
  Duration detection = Duration::Seconds(kDetectionSeconds);
  Duration relaunch = Duration::Seconds(kRelaunchSeconds);
  Duration checkpoint_interval = Duration::Zero();  // of training time; 0 = Young/Daly
  bool async_checkpoint = false;  // frameworks' default (PyTorch DCP save, Megatron without
                                  // --async-save) stalls for the whole write
  Bandwidth storage_write = Bandwidth::BytesPerSecond(kStorageBytesPerSecond);
  Bandwidth storage_read = Bandwidth::BytesPerSecond(kStorageBytesPerSecond);
  Bandwidth host_copy = Bandwidth::BytesPerSecond(kHostCopyBytesPerSecond);
  double window_s = 0;   // wall clock to simulate, seconds; 0 = the run of training.tokens
  double straggler = 0;  // lognormal sigma of per-GPU step speed (kStragglerSigma); 0 = none
  uint64_t seed = 1;
  int runs = 200;               // Monte Carlo runs of the whole training
  int step_samples = 200;       // replays with sampled GPU speeds
  std::string step_samples_at;  // "file:line:col" of step_samples (else straggler), for errors
};

}  // namespace parasim
