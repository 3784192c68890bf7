// The lines of an nccl-tests log as people keep them: launcher prefixes stripped (mpirun
// --tag-output "[1,0]<stdout>:", srun --label "0: ", MPICH -prepend-rank "[0] "), markdown
// indentation and quoting removed ("    " code blocks, "> "), and each line told apart: a header
// line that starts a run, a device line, the column header, a result row, a footer, or other
// text (NCCL INFO lines, shell prompts, prose), which the log reader passes over.
//
//   NcclLine l = ClassifyNcclLine("[1,0]<stdout>:#  Rank  0 Group  0 Pid 4000 on node0 device  0
//   [0x07] NVIDIA H100 80GB HBM3");
//   // l.kind == NcclLineKind::kDevice, l.prefix_rank == 0, l.text starts at '#'
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace parasim {

enum class NcclLineKind : uint8_t {
  kRunStart,  // "# nThread ...", "# Collective test starting: X", "# nccl-tests version ..."
  kDevice,    // "#  Rank  0 Group  0 Pid ... on HOST device  0 [0x07] NAME"
  kColumns,   // "#       size         count      type   redop    root     time ..."
  kRow,       // "        1024           256     float     sum      -1    45.01 ..."
  kFooter,    // "# Out of bounds values", "# Avg bus bandwidth", "# Collective test concluded"
  kComment,   // any other "#" line
  kOther,     // anything else
};

struct NcclLine {
  NcclLineKind kind = NcclLineKind::kOther;
  std::string_view text;     // the line without prefixes and indentation
  int64_t prefix_rank = -1;  // the rank a launcher prefix named, else -1
};

NcclLine ClassifyNcclLine(std::string_view raw);

// The whitespace-separated fields of `text` (after a leading '#', when `comment`).
std::vector<std::string_view> NcclFields(std::string_view text, bool comment = false);

// A device line's facts: "#  Rank  3 Group  0 Pid  4003 on node000 device  3 [0x37] NVIDIA H100".
struct NcclDeviceLine {
  int64_t rank = -1;
  std::string host;
  int64_t device = -1;
  std::string bus;   // the bus id in brackets ("0x37", "0000:04:00"); empty without one
  std::string name;  // what follows the bus id: the CUDA device name
};
bool ParseNcclDeviceLine(std::string_view text, NcclDeviceLine* out);

}  // namespace parasim
