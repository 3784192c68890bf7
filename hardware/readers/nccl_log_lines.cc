#include "hardware/readers/nccl_log_lines.h"

#include <cctype>
#include <charconv>

namespace parasim {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::string_view TrimLeft(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

std::string_view Trim(std::string_view s) {
  s = TrimLeft(s);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// Reads digits at s[*i]; false when there are none.
bool Digits(std::string_view s, size_t* i, int64_t* value) {
  const size_t start = *i;
  int64_t v = 0;
  while (*i < s.size() && IsDigit(s[*i]) && *i - start < 12) v = v * 10 + (s[(*i)++] - '0');
  *value = v;
  return *i > start;
}

// One launcher prefix at the start of `s`, removed; its rank in *rank. False when none.
bool StripPrefix(std::string_view* s, int64_t* rank) {
  size_t i = 0;
  int64_t a = 0, b = 0;
  if (!s->empty() && s->front() == '[') {
    i = 1;
    if (!Digits(*s, &i, &a)) return false;
    // Open MPI --tag-output: "[jobid,rank]<stdout>:" (or <stderr>).
    if (i < s->size() && (*s)[i] == ',') {
      ++i;
      if (!Digits(*s, &i, &b)) return false;
      for (std::string_view tag : {"]<stdout>:", "]<stderr>:"}) {
        if (s->substr(i).starts_with(tag)) {
          *rank = b;
          s->remove_prefix(i + tag.size());
          return true;
        }
      }
      return false;
    }
    // MPICH/Hydra -prepend-rank: "[rank] ".
    if (i + 1 < s->size() && (*s)[i] == ']' && (*s)[i + 1] == ' ') {
      *rank = a;
      s->remove_prefix(i + 2);
      return true;
    }
    return false;
  }
  // Slurm srun --label: "rank: " (padded with spaces to the widest rank).
  if (Digits(*s, &i, &a) && i < s->size() && (*s)[i] == ':' &&
      (i + 1 == s->size() || (*s)[i + 1] == ' ' || (*s)[i + 1] == '\t')) {
    *rank = a;
    s->remove_prefix(i + 1);
    return true;
  }
  return false;
}

// A result row begins with two whole numbers in every layout (size and count, 2019 on; bytes and
// N, 2017): prose that begins with a number ("8 H100 GPUs in one node ...") is not one.
bool IsRow(std::string_view text) {
  const std::vector<std::string_view> f = NcclFields(text);
  if (f.size() < 6) return false;
  for (int i = 0; i < 2; ++i) {
    for (char c : f[static_cast<size_t>(i)]) {
      if (!IsDigit(c)) return false;
    }
  }
  return true;
}

NcclLineKind CommentKind(std::string_view text) {
  const std::vector<std::string_view> f = NcclFields(text, true);
  if (f.empty()) return NcclLineKind::kComment;
  if (f[0] == "nThread" || (f.size() > 1 && f[0] == "nccl-tests" && f[1] == "version") ||
      (f.size() > 3 && f[0] == "Collective" && f[2] == "starting:")) {
    return NcclLineKind::kRunStart;
  }
  if (f[0] == "Rank" && f.size() > 4) return NcclLineKind::kDevice;
  if ((f[0] == "size" || f[0] == "bytes") && f.size() > 4) return NcclLineKind::kColumns;
  if ((f.size() > 2 && f[0] == "Out" && f[1] == "of" && f[2] == "bounds") ||
      (f.size() > 2 && f[0] == "Avg" && f[1] == "bus") ||
      (f.size() > 2 && f[0] == "Collective" && f[2] == "concluded:")) {
    return NcclLineKind::kFooter;
  }
  return NcclLineKind::kComment;
}

}  // namespace

std::vector<std::string_view> NcclFields(std::string_view text, bool comment) {
  text = TrimLeft(text);
  if (comment && !text.empty() && text.front() == '#') text.remove_prefix(1);
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    const size_t start = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i > start) out.push_back(text.substr(start, i - start));
  }
  return out;
}

NcclLine ClassifyNcclLine(std::string_view raw) {
  NcclLine l;
  std::string_view s = Trim(raw);
  // Prefixes nest (an srun label inside a markdown block); a few rounds strip them all.
  for (int round = 0; round < 4; ++round) {
    s = TrimLeft(s);
    if (!s.empty() && s.front() == '>') {
      s.remove_prefix(1);
      continue;
    }
    if (!StripPrefix(&s, &l.prefix_rank)) break;
  }
  l.text = Trim(s);
  if (l.text.starts_with("#")) {
    l.kind = CommentKind(l.text);
  } else if (l.text.starts_with("nThread ")) {
    l.kind = NcclLineKind::kRunStart;  // nccl-tests of 2017 printed it without '#'
  } else if (IsRow(l.text)) {
    l.kind = NcclLineKind::kRow;
  }
  return l;
}

bool ParseNcclDeviceLine(std::string_view text, NcclDeviceLine* out) {
  const std::vector<std::string_view> f = NcclFields(text, true);
  if (f.size() < 6 || f[0] != "Rank") return false;
  auto to_int = [](std::string_view s, int64_t* v) {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
    return ec == std::errc() && end == s.data() + s.size();
  };
  NcclDeviceLine d;
  if (!to_int(f[1], &d.rank)) return false;
  size_t i = 2;
  while (i < f.size() && f[i] != "on") ++i;
  if (i + 3 >= f.size() || f[i + 2] != "device" || !to_int(f[i + 3], &d.device)) return false;
  d.host = std::string(f[i + 1]);
  // The name follows the bus id "[0x07]" / "[0000:04:00]".
  const size_t after = static_cast<size_t>(f[i + 3].data() - text.data());
  const size_t open = text.find('[', after), close = text.find(']', after);
  if (close != std::string_view::npos) d.name = std::string(Trim(text.substr(close + 1)));
  if (open != std::string_view::npos && close != std::string_view::npos && open < close) {
    d.bus = std::string(Trim(text.substr(open + 1, close - open - 1)));
  }
  *out = std::move(d);
  return true;
}

}  // namespace parasim
