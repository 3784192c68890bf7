// The small languages inside Megatron-LM flag values:
// - --moe-layer-freq as a Python list expression: `([0]*3+[1]*11)`, `[1,0,1,0]`: a 0 or 1 per
//   layer (1 = MoE);
// - --pipeline-model-parallel-layout: `Et*3|(tt|)*6mL`: E the embedding, t a decoder layer, m an
//   MTP layer, L the output layer and loss, `|` the end of a segment, `x*n` repeats x n times and
//   parentheses group. There are pp x vp segments; segment i runs on pipeline rank i mod pp as
//   its virtual stage i div pp (Megatron-LM's pipeline_parallel_layer_layout.py);
// - --hybrid-layer-pattern: `M*|M-/*E`: a symbol a layer, `|` between pipeline segments, `/`
//   before each multi-token-prediction module's part (SplitHybridPattern).
//
//   ParseLayerList("([0]*3+[1]*11)")       -> 0, 0, 0, 1, ... (14 entries)
//   ParsePipelineLayout("Et*7|t*7mL")      -> {E, 7 t}, {7 t, m, L}
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sim/status.h"

namespace parasim {

// The list a --moe-layer-freq expression gives; an error names what is wrong (unlocated).
StatusOr<std::vector<int>> ParseLayerList(std::string_view text);

struct LayoutSegment {
  int layers = 0;  // decoder layers (t)
  int mtp = 0;     // MTP layers (m)
  bool embedding = false;
  bool loss = false;
};

// The segments of a pipeline layout, in order; an error names what is wrong (unlocated).
StatusOr<std::vector<LayoutSegment>> ParsePipelineLayout(std::string_view text);

// A hybrid layer pattern (--hybrid-layer-pattern, megatron/core/models/hybrid/
// hybrid_layer_allocation.py) split, not checked: the main stack's pipeline segments (cut at
// '|'), then each multi-token-prediction module's part (after a '/').
//   SplitHybridPattern("M*|M-/*E/*E")  -> segments {M*, M-}, mtp {*E, *E}
struct HybridPattern {
  std::vector<std::string> segments;  // at least one
  std::vector<std::string> mtp;
  std::string Stack() const;  // the segments joined: one symbol a layer
};
HybridPattern SplitHybridPattern(std::string_view text);

}  // namespace parasim
