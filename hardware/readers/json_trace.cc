#include "hardware/readers/json_trace.h"

#include <fmt/core.h>
#include <rapidjson/error/en.h>
#include <rapidjson/reader.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <vector>

#include "sim/utf8.h"

namespace parasim {

std::optional<int64_t> MicrosecondsToNanos(std::string_view text) {
  std::string_view s = text;
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  const bool minus = !s.empty() && s.front() == '-';
  if (minus) s.remove_prefix(1);
  size_t i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  const std::string_view whole = s.substr(0, i);
  std::string_view frac;
  if (i < s.size() && s[i] == '.') {
    size_t j = i + 1;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;
    frac = s.substr(i + 1, j - i - 1);
    i = j;
  }
  if (whole.empty() && frac.empty()) return std::nullopt;
  if (i == s.size()) {
    // Plain decimal: exact. int64 holds 9.2e15 us in nanoseconds.
    int64_t us = 0;
    const std::string_view digits = whole.empty() ? std::string_view("0") : whole;
    if (digits.size() > 16) return std::nullopt;
    std::from_chars(digits.data(), digits.data() + digits.size(), us);
    if (us > 9'223'372'036'854'774) return std::nullopt;
    int64_t ns = us * 1000;
    int64_t scale = 100;
    for (size_t k = 0; k < frac.size() && k < 3; ++k, scale /= 10) ns += (frac[k] - '0') * scale;
    if (frac.size() > 3 && frac[3] >= '5') ++ns;
    return minus ? -ns : ns;
  }
  if (s[i] != 'e' && s[i] != 'E') return std::nullopt;
  // With an exponent: through a double (15-16 significant digits suffice for a duration).
  const std::string copy(text);
  char* end = nullptr;
  const double us = std::strtod(copy.c_str(), &end);
  while (end && *end == ' ') ++end;
  if (end == nullptr || *end != '\0' || !std::isfinite(us)) return std::nullopt;
  const double ns = us * 1000.0;
  if (!(std::fabs(ns) < 9.2e18)) return std::nullopt;
  return static_cast<int64_t>(std::llround(ns));
}

namespace {

// A RapidJSON input stream over a BoundedInput, refilled 1 MiB at a time (the pattern of
// rapidjson::FileReadStream). An input error ends the stream; status() then says why.
class ChunkStream {
 public:
  typedef char Ch;
  explicit ChunkStream(BoundedInput* in) : in_(in), buf_(kChunk + 1) {
    cur_ = last_ = buf_.data();
    Fill();
  }
  Ch Peek() const { return *cur_; }
  Ch Take() {
    const Ch c = *cur_;
    Advance();
    return c;
  }
  size_t Tell() const { return consumed_ + static_cast<size_t>(cur_ - buf_.data()); }
  bool at_end() const { return eof_ && cur_ == last_; }
  const Status& status() const { return status_; }
  // The text's encoding from its first bytes; a UTF-8 byte-order mark is passed over (offsets
  // stay the file's).
  TextEncoding SkipMark() {
    const TextEncoding e = DetectEncoding(std::string_view(buf_.data(), count_));
    if (e.name == "UTF-8") cur_ += e.mark;
    return e;
  }
  // Unused (not an in-situ parse), but part of RapidJSON's stream concept.
  Ch* PutBegin() { return nullptr; }
  void Put(Ch) {}
  void Flush() {}
  size_t PutEnd(Ch*) { return 0; }

 private:
  static constexpr size_t kChunk = size_t{1} << 20;
  void Advance() {
    if (cur_ < last_) {
      ++cur_;
    } else if (!eof_) {
      Fill();
    }
  }
  void Fill() {
    consumed_ += count_;
    size_t n = 0;
    while (n < kChunk && status_.ok()) {
      StatusOr<size_t> got = in_->Read(buf_.data() + n, kChunk - n);
      if (!got.ok()) {
        status_ = got.status();
        break;
      }
      if (*got == 0) break;
      n += *got;
    }
    count_ = n;
    cur_ = buf_.data();
    last_ = buf_.data() + n - 1;
    if (n < kChunk) {
      buf_[n] = '\0';
      last_ = buf_.data() + n;
      eof_ = true;
    }
  }
  BoundedInput* in_;
  std::vector<char> buf_;
  Ch* cur_ = nullptr;
  Ch* last_ = nullptr;
  size_t count_ = 0;
  size_t consumed_ = 0;
  bool eof_ = false;
  Status status_;
};

// Where the SAX handler is: what the innermost open container is.
enum class Frame : uint8_t { kTop, kEvents, kEvent, kArgs, kDevices, kDevice, kDistributed, kSkip };
// The key last seen in an object the handler reads.
enum class Field : uint8_t {
  kOther,
  kTraceEvents,
  kDeviceProperties,
  kDistributedInfo,  // top level
  kPh,
  kCat,
  kName,
  kTs,
  kDur,
  kPid,
  kTid,
  kArgs,  // an event
  kDevice,
  kStream,
  kCorrelation,  // an event's args
  kId,
  kNumSms,
  kTotalGlobalMem,
  kComputeMajor,
  kComputeMinor,  // a deviceProperties entry
  kBackend,
  kRank,
  kWorldSize,  // distributedInfo
};

Field FieldOf(Frame f, std::string_view k) {
  struct Entry {
    Frame frame;
    std::string_view key;
    Field field;
  };
  static constexpr Entry kFields[] = {
      {Frame::kTop, "traceEvents", Field::kTraceEvents},
      {Frame::kTop, "deviceProperties", Field::kDeviceProperties},
      {Frame::kTop, "distributedInfo", Field::kDistributedInfo},
      {Frame::kEvent, "ph", Field::kPh},
      {Frame::kEvent, "cat", Field::kCat},
      {Frame::kEvent, "name", Field::kName},
      {Frame::kEvent, "ts", Field::kTs},
      {Frame::kEvent, "dur", Field::kDur},
      {Frame::kEvent, "pid", Field::kPid},
      {Frame::kEvent, "tid", Field::kTid},
      {Frame::kEvent, "args", Field::kArgs},
      {Frame::kArgs, "device", Field::kDevice},
      {Frame::kArgs, "stream", Field::kStream},
      {Frame::kArgs, "correlation", Field::kCorrelation},
      {Frame::kDevice, "id", Field::kId},
      {Frame::kDevice, "name", Field::kName},
      {Frame::kDevice, "numSms", Field::kNumSms},
      {Frame::kDevice, "totalGlobalMem", Field::kTotalGlobalMem},
      {Frame::kDevice, "computeMajor", Field::kComputeMajor},
      {Frame::kDevice, "computeMinor", Field::kComputeMinor},
      {Frame::kDistributed, "backend", Field::kBackend},
      {Frame::kDistributed, "rank", Field::kRank},
      {Frame::kDistributed, "world_size", Field::kWorldSize},
  };
  for (const Entry& e : kFields) {
    if (e.frame == f && e.key == k) return e.field;
  }
  return Field::kOther;
}

std::optional<int64_t> ToInt(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == y;
         });
}

// The fields of the event being read; reset for each event, storage reused.
struct EventScratch {
  char ph = 0;
  std::string cat, name, ts, dur;
  bool has_ts = false, has_dur = false;
  std::optional<int64_t> pid, tid, device, stream, correlation;
  size_t offset = 0;  // byte where the event's object opens
  void Reset(size_t at) {
    ph = 0;
    cat.clear(), name.clear(), ts.clear(), dur.clear();
    has_ts = has_dur = false;
    pid = tid = device = stream = correlation = std::nullopt;
    offset = at;
  }
};

class TraceHandler {
 public:
  TraceHandler(const JsonTraceOptions& o, ChunkStream* s, ProfilerTraceBuilder* b)
      : options_(o), stream_(s), builder_(b) {}

  bool Null() { return true; }
  bool Bool(bool) { return true; }
  bool Int(int) { return true; }  // unused: numbers arrive as text (RawNumber)
  bool Uint(unsigned) { return true; }
  bool Int64(int64_t) { return true; }
  bool Uint64(uint64_t) { return true; }
  bool Double(double) { return true; }
  bool RawNumber(const char* s, rapidjson::SizeType n, bool) { return Value({s, n}, true); }
  bool String(const char* s, rapidjson::SizeType n, bool) { return Value({s, n}, false); }
  bool Key(const char* s, rapidjson::SizeType n, bool) {
    const Frame f = stack_.back();
    field_ = f == Frame::kSkip ? Field::kOther : FieldOf(f, {s, n});
    return true;
  }
  bool StartObject() { return Open(true); }
  bool StartArray() { return Open(false); }
  bool EndObject(rapidjson::SizeType) { return Close(); }
  bool EndArray(rapidjson::SizeType) { return Close(); }

  // Why the handler stopped the parse ("" when it did not), and the byte it points at.
  const std::string& failure() const { return failure_; }
  size_t failure_offset() const { return failure_offset_; }
  bool saw_events() const { return saw_events_; }
  bool root_ok() const { return root_ok_; }

 private:
  bool Open(bool object);
  bool Close();
  bool Value(std::string_view v, bool number);
  bool FinishEvent();
  bool Distributed(Field k, std::string_view v, bool number, TraceDistributed* d);
  bool Fail(std::string message, size_t offset);
  std::string EventWhere() const;

  const JsonTraceOptions& options_;
  ChunkStream* stream_;
  ProfilerTraceBuilder* builder_;
  std::vector<Frame> stack_;
  Field field_ = Field::kOther;
  EventScratch ev_;
  TraceDevice device_;
  int64_t event_index_ = -1;
  bool saw_events_ = false, root_ok_ = false;
  std::string failure_;
  size_t failure_offset_ = 0;
};

bool TraceHandler::Fail(std::string message, size_t offset) {
  failure_ = std::move(message);
  failure_offset_ = offset;
  return false;
}

std::string TraceHandler::EventWhere() const {
  std::string name = ev_.name.size() > 80 ? ev_.name.substr(0, 77) + "..." : ev_.name;
  bool repaired = false;
  return fmt::format("in traceEvents[{}] \"{}\" at byte {}", event_index_,
                     RepairUtf8(name, &repaired), ev_.offset);
}

bool TraceHandler::Open(bool object) {
  constexpr size_t kMaxDepth = 256;
  if (stack_.size() >= kMaxDepth) {
    return Fail(fmt::format("JSON nested over {} deep, at byte {}", kMaxDepth, stream_->Tell()),
                stream_->Tell());
  }
  Frame next = Frame::kSkip;
  if (stack_.empty()) {
    root_ok_ = true;
    next = object ? Frame::kTop : Frame::kEvents;  // a bare array: Chrome's JSON Array Format
    if (!object) saw_events_ = true;
  } else {
    const Frame parent = stack_.back();
    if (parent == Frame::kTop && !object && field_ == Field::kTraceEvents) {
      next = Frame::kEvents;
      saw_events_ = true;
    } else if (parent == Frame::kTop && !object && field_ == Field::kDeviceProperties) {
      next = Frame::kDevices;
    } else if (parent == Frame::kTop && object && field_ == Field::kDistributedInfo) {
      next = Frame::kDistributed;
      builder_->trace().distributed.emplace();
    } else if (parent == Frame::kEvents && object) {
      next = Frame::kEvent;
      ++event_index_;
      ev_.Reset(stream_->Tell());  // the event's "{" (not yet taken)
    } else if (parent == Frame::kEvent && object && field_ == Field::kArgs) {
      next = Frame::kArgs;
    } else if (parent == Frame::kDevices && object) {
      next = Frame::kDevice;
      device_ = TraceDevice{};
    }
  }
  stack_.push_back(next);
  field_ = Field::kOther;
  return true;
}

bool TraceHandler::Close() {
  const Frame done = stack_.back();
  stack_.pop_back();
  field_ = Field::kOther;
  if (done == Frame::kEvent) return FinishEvent();
  if (done == Frame::kDevice) builder_->trace().devices.push_back(std::move(device_));
  return true;
}

bool TraceHandler::Value(std::string_view v, bool number) {
  if (stack_.empty()) return true;  // a scalar document: rejected after the parse
  const Frame f = stack_.back();
  const Field k = field_;
  if (f == Frame::kEvent) {
    switch (k) {
      case Field::kPh:
        ev_.ph = v.empty() ? 0 : v[0];
        break;
      case Field::kCat:
        ev_.cat.assign(v);
        break;
      case Field::kName:
        ev_.name.assign(v.substr(0, options_.max_name_bytes));
        break;
      case Field::kTs:
        ev_.ts.assign(v), ev_.has_ts = true;
        break;
      case Field::kDur:
        ev_.dur.assign(v), ev_.has_dur = true;
        break;
      case Field::kPid:
        ev_.pid = number ? ToInt(v) : std::nullopt;
        break;
      case Field::kTid:
        ev_.tid = number ? ToInt(v) : std::nullopt;
        break;
      default:
        break;
    }
  } else if (f == Frame::kArgs && number) {
    if (k == Field::kDevice) ev_.device = ToInt(v);
    if (k == Field::kStream) ev_.stream = ToInt(v);
    if (k == Field::kCorrelation) ev_.correlation = ToInt(v);
  } else if (f == Frame::kDevice) {
    const int64_t n = number ? ToInt(v).value_or(0) : 0;
    if (k == Field::kName) device_.name.assign(v);
    if (k == Field::kId) device_.id = n;
    if (k == Field::kNumSms) device_.sms = n;
    if (k == Field::kTotalGlobalMem) device_.memory_bytes = n;
    if (k == Field::kComputeMajor) device_.compute_major = n;
    if (k == Field::kComputeMinor) device_.compute_minor = n;
  } else if (f == Frame::kDistributed) {
    TraceDistributed& d = *builder_->trace().distributed;
    if (k == Field::kBackend) d.backend.assign(v);
    if (k == Field::kRank || k == Field::kWorldSize) return Distributed(k, v, number, &d);
  }
  return true;
}

// distributedInfo.rank and world_size: numbers as Kineto writes them (its distributedInfo is
// torch.distributed's get_rank() and get_world_size(), integers), or the same written as
// strings ("3"); anything else is said, not taken for "no rank".
bool TraceHandler::Distributed(Field k, std::string_view v, bool number, TraceDistributed* d) {
  const std::optional<int64_t> n = ToInt(v);
  const bool rank = k == Field::kRank;
  if (!n || *n < (rank ? 0 : 1)) {
    bool repaired = false;
    return Fail(
        fmt::format("distributedInfo.{} {} is not {} (a whole number{}), at byte {}",
                    rank ? "rank" : "world_size",
                    number ? std::string(v.substr(0, 40))
                           : "\"" + RepairUtf8(std::string(v.substr(0, 40)), &repaired) + "\"",
                    rank ? "a rank" : "a number of ranks", rank ? ", 0 or more" : ", 1 or more",
                    stream_->Tell()),
        stream_->Tell());
  }
  (rank ? d->rank : d->world_size) = *n;
  return true;
}

bool TraceHandler::FinishEvent() {
  ++builder_->trace().events_read;
  if (ev_.ph != 'X' && ev_.ph != 'B') return true;
  std::optional<GpuEventCategory> category;
  if (EqualsIgnoreCase(ev_.cat, "kernel")) category = GpuEventCategory::kKernel;
  if (EqualsIgnoreCase(ev_.cat, "gpu_memcpy") || EqualsIgnoreCase(ev_.cat, "memcpy")) {
    category = GpuEventCategory::kMemcpy;
  }
  if (EqualsIgnoreCase(ev_.cat, "gpu_memset") || EqualsIgnoreCase(ev_.cat, "memset")) {
    category = GpuEventCategory::kMemset;
  }
  if (ev_.ph == 'B') {
    if (category) ++builder_->trace().gpu_begin_events;
    return true;
  }
  const bool step =
      !category && ev_.name.starts_with("ProfilerStep#") && ev_.cat != "gpu_user_annotation";
  const bool launch =
      !category && ev_.correlation &&
      (EqualsIgnoreCase(ev_.cat, "cuda_runtime") || EqualsIgnoreCase(ev_.cat, "cuda_driver") ||
       EqualsIgnoreCase(ev_.cat, "runtime"));
  if (!category && !step && !launch) return true;
  const std::optional<int64_t> ts = MicrosecondsToNanos(ev_.ts);
  if (!ts) {
    return Fail(fmt::format("ts '{}' is not a number of microseconds, {}",
                            ev_.has_ts ? ev_.ts.substr(0, 40) : "(missing)", EventWhere()),
                ev_.offset);
  }
  if (launch) {
    builder_->AddLaunch({*ev_.correlation, *ts});
    return true;
  }
  const std::optional<int64_t> dur = MicrosecondsToNanos(ev_.dur);
  if (!dur) {
    return Fail(fmt::format("dur '{}' is not a finite number of microseconds, {}",
                            ev_.has_dur ? ev_.dur.substr(0, 40) : "(missing)", EventWhere()),
                ev_.offset);
  }
  if (*dur < 0) {
    return Fail(fmt::format("dur {} us is negative, {}", ev_.dur, EventWhere()), ev_.offset);
  }
  if (*dur > options_.max_dur_ns) {
    return Fail(fmt::format("dur {} us is over {:.0f} s, not a real duration, {}",
                            ev_.dur.substr(0, 40), options_.max_dur_ns * 1e-9, EventWhere()),
                ev_.offset);
  }
  if (step) {
    const std::optional<int64_t> n = ToInt(std::string_view(ev_.name).substr(13));
    if (n) builder_->AddStep({*n, *ts, *dur});
    return true;
  }
  GpuEvent e;
  e.start_ns = *ts;
  e.dur_ns = *dur;
  e.correlation = ev_.correlation.value_or(-1);
  e.name = builder_->InternName(ev_.name);
  e.stream = static_cast<int32_t>(ev_.stream ? *ev_.stream : ev_.tid.value_or(-1));
  e.device = static_cast<int16_t>(ev_.device ? *ev_.device : ev_.pid.value_or(-1));
  e.category = *category;
  builder_->AddEvent(e);
  return true;
}

// The message for a parse that stopped: the input's own error, the handler's, or RapidJSON's.
Status ParseFailure(const rapidjson::ParseResult& r, const ChunkStream& s, const TraceHandler& h,
                    const std::string& path, const InputLimits& limits) {
  if (!s.status().ok()) return s.status();
  auto at = [&](size_t offset, const std::string& what) {
    const auto [line, col] = LineColumnAt(path, static_cast<int64_t>(offset), limits);
    return InvalidArgument(InputError(path, line, col, what));
  };
  if (!h.failure().empty()) return at(h.failure_offset(), h.failure());
  if (s.at_end() && r.Offset() + 1 >= s.Tell()) {
    return at(r.Offset(),
              fmt::format("the JSON ends early at byte {} ({}): a truncated trace? (the "
                          "profiler was stopped before it finished writing)",
                          r.Offset(), rapidjson::GetParseError_En(r.Code())));
  }
  return at(r.Offset(), fmt::format("malformed JSON: {}, at byte {}",
                                    rapidjson::GetParseError_En(r.Code()), r.Offset()));
}

}  // namespace

StatusOr<ProfilerTrace> ReadJsonTrace(const std::string& path, const JsonTraceOptions& options) {
  PARASIM_ASSIGN_OR_RETURN(std::unique_ptr<BoundedInput> in,
                           BoundedInput::Open(path, options.limits));
  ProfilerTraceBuilder builder(path);
  ChunkStream stream(in.get());
  if (const TextEncoding e = stream.SkipMark(); !e.utf8() && stream.status().ok()) {
    return InvalidArgument(InputError(path, 1, 1, NotUtf8Message(e)));
  }
  TraceHandler handler(options, &stream, &builder);
  rapidjson::Reader reader;
  constexpr unsigned kFlags = rapidjson::kParseIterativeFlag |
                              rapidjson::kParseNumbersAsStringsFlag |
                              rapidjson::kParseNanAndInfFlag | rapidjson::kParseTrailingCommasFlag;
  const rapidjson::ParseResult r = reader.Parse<kFlags>(stream, handler);
  if (r.IsError()) return ParseFailure(r, stream, handler, path, options.limits);
  if (!handler.root_ok() || !handler.saw_events()) {
    return InvalidArgument(InputError(
        path, 1, 1,
        "no traceEvents list: expected a PyTorch profiler (Kineto) Chrome trace, a JSON object "
        "whose traceEvents list holds the events (torch.profiler export_chrome_trace)"));
  }
  builder.trace().bytes_read = in->bytes_read();
  ProfilerTrace t = std::move(builder).Finish();
  if (t.events.empty() && !options.allow_no_gpu_events && t.gpu_begin_events > 0) {
    return InvalidArgument(InputError(
        path, 1, 1,
        fmt::format("its {} GPU events (\"cat\": \"kernel\", ...) are begin/end pairs (\"ph\": "
                    "\"B\" then \"E\"); parasim reads complete events (\"ph\": \"X\" with a "
                    "\"dur\"), as the PyTorch profiler writes them (export_chrome_trace)",
                    t.gpu_begin_events)));
  }
  if (t.events.empty() && !options.allow_no_gpu_events) {
    return InvalidArgument(InputError(
        path, 1, 1,
        fmt::format("no GPU kernels among its {} events (none with \"cat\": \"kernel\"); "
                    "profile with ProfilerActivity.CUDA",
                    t.events_read)));
  }
  return t;
}

}  // namespace parasim
