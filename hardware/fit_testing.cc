#include "hardware/fit_testing.h"

#include <utility>
#include <vector>

#include "hardware/cost_model.h"

namespace parasim {

ClusterSpec H100Cluster(int nodes) {
  HardwareCatalog cat = *LoadHardwareCatalog();
  ClusterSpec c;
  c.gpu = *cat.FindGpu("h100-sxm5-80gb");
  c.intra = *cat.FindFabric("nvlink4-h100");
  c.inter = *cat.FindFabric("ib-ndr-400g");
  c.nodes = nodes;
  c.gpus_per_node = 8;
  return c;
}

Measurements Synthetic(const ClusterSpec& truth) {
  ClusterSpec c = truth;
  c.gpu.sustained_factor = 1.0;
  CostModel cm(c, Dtype::kBf16);
  Measurements m;
  m.file = "synthetic.yaml";
  m.gpu = c.gpu.id;
  m.launch = c.gpu.launch_overhead;
  for (int64_t a : {1024, 2048, 4096, 8192, 12288}) {
    for (int64_t b : {1024, 4096, 8192}) {
      m.gemm.push_back({Dtype::kBf16, a, b, 4096, cm.GemmTime(a, b, 4096), 0});
      m.gemm.push_back({Dtype::kBf16, 4096, a, b, cm.GemmTime(4096, a, b), 0});
    }
  }
  for (double gib : {0.25, 1.0, 4.0, 8.0}) {
    Bytes b = Bytes::GiB(gib);
    m.memory.push_back({"copy", b, cm.MemoryTime(b) + cm.Launch()});
  }
  for (double mib = 1; mib <= 4096; mib *= 4) {
    Bytes b = Bytes::MiB(mib);
    for (Collective op :
         {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter}) {
      m.collectives.push_back({op, "", 8, 8, b, cm.CollectiveTime(op, b, {8, 8}).time});
      m.collectives.push_back({op, "", 32, 8, b, cm.CollectiveTime(op, b, {32, 8}).time});
    }
    m.collectives.push_back({Collective::kAllToAll, "", 32, 8, b,
                             cm.CollectiveTime(Collective::kAllToAll, b, {32, 8}).time});
  }
  return m;
}

ContentionPoint ContentionRow(std::string victim, std::string background, int64_t blocks,
                              double alone_us, double with_us) {
  ContentionPoint p;
  p.victim = std::move(victim);
  if (p.victim == "gemm") {
    p.m = p.n = p.k = 8192;
  } else {
    p.bytes = Bytes::GiB(2);
  }
  p.background = std::move(background);
  p.blocks = blocks;
  p.sms = 132;
  p.alone = Duration::Microseconds(alone_us);
  p.with = Duration::Microseconds(with_us);
  if (p.background == "copy") p.rate = Bandwidth::GBps(450);
  return p;
}

FitResult RunFit(const Measurements& m, const ClusterSpec& cluster,
                 std::initializer_list<void (*)(FitContext*)> parts) {
  const std::vector<Measurements> ms = {m};
  FitContext f(ms, cluster);
  for (auto part : parts) part(&f);
  return std::move(f.result);
}

}  // namespace parasim
