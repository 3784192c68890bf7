#include "scenarios/parallelism_block.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "scenarios/table_keys.h"
#include "sim/parse_units.h"
#include "sim/yaml_reader.h"

namespace parasim {
namespace {

// An uneven split of the layers over the stages: one count per stage.
Status ReadStageLayers(const YamlContext& ctx, const MapReader& m, Layout* l) {
  if (!m.Has("stage_layers")) return Status::Ok();
  YAML::Node sl = m.Node("stage_layers");
  if (!sl.IsSequence()) {
    return m.Error("stage_layers",
                   "expected a list of layer counts, one per stage, e.g. [7, 8, 8, 7]");
  }
  l->stage_layers.clear();
  for (size_t i = 0; i < sl.size(); ++i) {
    PARASIM_ASSIGN_OR_RETURN(
        int64_t v, ReadInt(ctx, sl[i], fmt::format("parallelism.stage_layers[{}]", i), 1, 100000));
    l->stage_layers.push_back(static_cast<int>(v));
  }
  return Status::Ok();
}

// What the pipeline split counts as a layer besides the layers: [embedding], [loss] or both.
Status ReadAccountFor(const MapReader& m, Layout* l) {
  if (!m.Has("account_for")) return Status::Ok();
  YAML::Node af = m.Node("account_for");
  bool ok = af.IsSequence();
  for (size_t i = 0; ok && i < af.size(); ++i) {
    const std::string v = af[i].IsScalar() ? af[i].Scalar() : "";
    bool& flag = v == "embedding" ? l->split_embedding : l->split_loss;
    ok = (v == "embedding" || v == "loss") && !flag;
    flag = true;
  }
  if (!ok) {
    return m.Error("account_for",
                   "expected a list of what the pipeline split counts as a layer: "
                   "[embedding], [loss] or [embedding, loss]");
  }
  return Status::Ok();
}

Status ReadOverlap(const YamlContext& ctx, const MapReader& m, Layout* l) {
  if (!m.Has("overlap")) return Status::Ok();
  PARASIM_ASSIGN_OR_RETURN(MapReader o, MapReader::Open(ctx, m.Node("overlap"),
                                                        "parallelism.overlap", {"dp", "tp", "ep"}));
  PARASIM_RETURN_IF_ERROR(o.Bool("dp", &l->overlap_dp));
  if (o.Has("tp")) {
    // true / false as for dp, or `backward`: only what Megatron-LM overlaps by default.
    std::string tp;
    PARASIM_RETURN_IF_ERROR(o.String("tp", &tp));
    if (tp == "backward") {
      l->overlap_tp = Layout::TpOverlap::kBackward;
    } else {
      bool all = false;
      if (!o.Bool("tp", &all).ok()) {
        return o.Error("tp", fmt::format("expected true, false or backward, got '{}'", tp));
      }
      l->overlap_tp = all ? Layout::TpOverlap::kAll : Layout::TpOverlap::kNone;
    }
  }
  return o.Bool("ep", &l->overlap_ep);
}

// The DP gradient bucket and compression.
Status ReadGradientSync(const YamlContext& ctx, const MapReader& m, Layout* l) {
  PARASIM_RETURN_IF_ERROR(m.Size("bucket", &l->bucket));
  if (m.Has("bucket") && l->bucket.bytes() < 1024) {
    return m.Error("bucket", "a gradient bucket must be at least 1KiB, e.g. '25MiB'");
  }
  if (m.Has("compression")) {
    PARASIM_ASSIGN_OR_RETURN(std::string c,
                             ReadScalar(ctx, m.Node("compression"), "parallelism.compression"));
    Status st = ParseCompression(c, l);
    if (!st.ok()) return m.Error("compression", st.message());
  }
  return Status::Ok();
}

Status ReadOrder(const MapReader& m, Layout* l) {
  if (!m.Has("order")) return Status::Ok();
  YAML::Node o = m.Node("order");
  std::vector<RankDim> order;
  for (size_t i = 0; o.IsSequence() && i < o.size(); ++i) {
    auto d = o[i].IsScalar() ? ParseRankDim(o[i].Scalar()) : StatusOr<RankDim>(InvalidArgument(""));
    if (d.ok() && std::find(order.begin(), order.end(), *d) == order.end()) order.push_back(*d);
  }
  if (!o.IsSequence() || order.size() != 5 || o.size() != 5) {
    return m.Error("order", "expected a permutation of [tp, cp, ep, dp, pp], innermost first");
  }
  l->order = order;
  return Status::Ok();
}

}  // namespace

const std::vector<std::string_view>& ParallelismKeys() {
  static const std::vector<std::string_view> kKeys = {
      "tp",           "pp",           "dp",          "cp",          "ep",
      "etp",          "sp",           "zero",        "schedule",    "virtual_stages",
      "stage_layers", "account_for",  "overlap",     "grad_reduce", "cp_comm",
      "zero3_copies", "bucket",       "compression", "order",       "microbatch_group",
      "param_gather", "zero3_reshard"};
  return kKeys;
}

Status ParseParallelism(const YamlContext& ctx, const YAML::Node& node, Scenario* s) {
  Layout& l = s->layout;
  PARASIM_ASSIGN_OR_RETURN(MapReader m,
                           MapReader::Open(ctx, node, "parallelism", ParallelismKeys()));
  // dp: a number (read by the table), or auto (the default): GPUs / (tp*pp*cp), which the
  // loader works out once it knows the cluster.
  s->dp_auto = !m.Has("dp") || (m.Node("dp").IsScalar() && m.Node("dp").Scalar() == "auto");
  PARASIM_RETURN_IF_ERROR(ReadTableKeys(
      m, "parallelism", &l, &s->training,
      s->dp_auto ? std::vector<std::string_view>{"dp"} : std::vector<std::string_view>{}));
  PARASIM_RETURN_IF_ERROR(ReadStageLayers(ctx, m, &l));
  PARASIM_RETURN_IF_ERROR(ReadAccountFor(m, &l));
  PARASIM_RETURN_IF_ERROR(ReadOverlap(ctx, m, &l));
  PARASIM_RETURN_IF_ERROR(m.Bool("zero3_copies", &l.zero3_copies));
  if (m.Has("param_gather")) {
    PARASIM_ASSIGN_OR_RETURN(std::string g,
                             ReadScalar(ctx, m.Node("param_gather"), "parallelism.param_gather"));
    auto pg = ParseParamGather(g);
    if (!pg.ok()) return m.Error("param_gather", pg.status().message());
    l.param_gather = *pg;
  }
  // Interleaving's micro-batch group: checked against pp and the micro-batch count with the
  // schedule (strategies/schedule_interleaved.cc).
  PARASIM_RETURN_IF_ERROR(m.Int("microbatch_group", &l.microbatch_group, 1, int64_t{1} << 30));
  PARASIM_RETURN_IF_ERROR(ReadGradientSync(ctx, m, &l));
  return ReadOrder(m, &l);
}

Status ParseCompression(std::string_view s, Layout* l) {
  auto bad = [&] {
    return InvalidArgument(
        fmt::format("'{}' is not a compression; expected none, fp16, int8, "
                    "topk:FRACTION (e.g. topk:0.01) or powersgd:RANK",
                    std::string(s)));
  };
  if (s == "none") {
    l->compression = CompressionKind::kNone;
  } else if (s == "fp16") {
    l->compression = CompressionKind::kFp16;
  } else if (s == "int8") {
    l->compression = CompressionKind::kInt8;
  } else if (s.starts_with("topk:")) {
    auto v = ParseCount(s.substr(5));
    if (!v.ok() || *v <= 0 || *v > 1) return bad();
    l->compression = CompressionKind::kTopK;
    l->compression_param = *v;
  } else if (s.starts_with("powersgd:")) {
    auto v = ParseCount(s.substr(9));
    if (!v.ok() || *v < 1 || *v != std::floor(*v) || *v > 4096) return bad();
    l->compression = CompressionKind::kPowerSgd;
    l->compression_param = *v;
  } else {
    return bad();
  }
  return Status::Ok();
}

}  // namespace parasim
