// What a calibration of a serving scenario times (parasim calibrate --scenario): each pool's
// GEMMs exactly as ServingCost prices them, at the token counts the replay interpolates between.
// Defined apart from serving_cost.cc, which prices iterations.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "models/layer_graph.h"
#include "strategies/serving_cost.h"

namespace parasim {

std::vector<ServeGemmShape> ServingCost::GemmShapes(int64_t tokens) const {
  std::vector<ServeGemmShape> out;
  auto add = [&](const Op& op, double rows, double touched) {
    if (rows <= 0 || touched <= 0 || op.n <= 0 || op.k <= 0) return;
    const ServeGemmShape g = ServeGemmShapeOf(op, rows, touched);
    for (const ServeGemmShape& o : out) {
      if (o.m == g.m && o.n == g.n && o.k == g.k && o.quantised == g.quantised) return;
    }
    out.push_back(g);
  };
  const ModelGraph g = GraphFor(tokens);
  // The embedding, and the layer kinds some stage runs.
  std::vector<const Block*> blocks = {&g.embedding};
  for (int k = 0; k < kLayerKinds; ++k) {
    const Block& b = g.Layer(static_cast<LayerKind>(k));
    if (b.size() > 0 && Runs(static_cast<LayerKind>(k))) blocks.push_back(&b);
  }
  for (const Block* b : blocks) {
    for (size_t i = 0; i < b->size(); ++i) {
      const Op& op = b->op(i);
      if (op.kind != OpKind::kGemm) continue;
      const auto [rows, touched] = GemmRowsOf(op, tokens);
      add(op, rows, touched);
    }
  }
  // The LM head runs on the sequences sampling, at most max_seqs (Head).
  add(lm_head_, static_cast<double>(std::min(tokens, engine_.max_seqs)), 1);
  return out;
}

std::vector<int64_t> ServingCost::CalibrationTokens() const {
  std::vector<int64_t> out;
  const int64_t top = std::max(engine_.max_seqs, engine_.max_num_tokens);
  for (int64_t t = 1; t < top; t *= 2) out.push_back(t);
  for (int64_t cap : {engine_.max_seqs, engine_.max_num_tokens}) {
    if (cap <= 0) continue;
    out.push_back(cap);
    auto at = std::lower_bound(grid_.begin(), grid_.end(), cap);
    if (at != grid_.end()) out.push_back(*at);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace parasim
