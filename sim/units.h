// Strong quantity types shared by every layer of parasim.
//
// Time is an integer count of picoseconds (deterministic arithmetic in the event engine);
// sizes, work and rates are doubles wrapped in distinct types so that bytes never meet FLOPs
// or bits by accident. Mixing goes through named functions only:
//
//   Duration t = TransferTime(Bytes::GiB(1), Bandwidth::GBps(900));   // 1.19 ms
//   Duration c = ComputeTime(Flops(1e15), FlopRate::TFLOPs(989.4));    // 1.01 s
//   double s = t.seconds();
//
// Decimal and binary prefixes are both spelled out (GB = 1e9 bytes, GiB = 2^30 bytes).
#pragma once

#include <algorithm>
#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>

namespace parasim {

// A span of simulated time, stored as signed picoseconds. Saturates instead of overflowing.
// std::llround without the library call (it is hot in the replay): the nearest integer, halves
// away from zero. The same result as llround for every finite |x| < 2^63: below 2^52 the
// truncation and the remainder are exact, above it every double is an integer.
constexpr int64_t RoundHalfAway(double x) {
  const int64_t t = static_cast<int64_t>(x);
  const double frac = x - static_cast<double>(t);
  return frac >= 0.5 ? t + 1 : frac <= -0.5 ? t - 1 : t;
}

class Duration {
 public:
  constexpr Duration() = default;
  static constexpr Duration Picoseconds(int64_t ps) { return Duration(ps); }
  static Duration Seconds(double s) { return FromDoublePs(s * 1e12); }
  static Duration Milliseconds(double ms) { return FromDoublePs(ms * 1e9); }
  static Duration Microseconds(double us) { return FromDoublePs(us * 1e6); }
  static Duration Nanoseconds(double ns) { return FromDoublePs(ns * 1e3); }
  static constexpr Duration Zero() { return Duration(0); }
  static constexpr Duration Infinite() { return Duration(std::numeric_limits<int64_t>::max()); }

  constexpr int64_t picoseconds() const { return ps_; }
  constexpr double seconds() const { return static_cast<double>(ps_) * 1e-12; }
  constexpr double milliseconds() const { return static_cast<double>(ps_) * 1e-9; }
  constexpr double microseconds() const { return static_cast<double>(ps_) * 1e-6; }
  constexpr bool is_infinite() const { return ps_ == std::numeric_limits<int64_t>::max(); }

  constexpr Duration operator+(Duration o) const { return Duration(SatAdd(ps_, o.ps_)); }
  constexpr Duration operator-(Duration o) const { return Duration(SatSub(ps_, o.ps_)); }
  Duration operator*(double k) const { return FromDoublePs(static_cast<double>(ps_) * k); }
  constexpr Duration& operator+=(Duration o) { return *this = *this + o; }
  constexpr Duration& operator-=(Duration o) { return *this = *this - o; }
  constexpr auto operator<=>(const Duration&) const = default;

 private:
  constexpr explicit Duration(int64_t ps) : ps_(ps) {}
  static constexpr int64_t SatAdd(int64_t a, int64_t b) {
    int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) {
      return a > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
    }
    return r;
  }
  static constexpr int64_t SatSub(int64_t a, int64_t b) {
    int64_t r = 0;
    if (__builtin_sub_overflow(a, b, &r)) {
      return b < 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
    }
    return r;
  }
  static Duration FromDoublePs(double ps) {
    constexpr double kMax = 9.2e18;       // just under INT64_MAX
    if (!(ps < kMax)) return Infinite();  // also catches NaN
    if (ps < -kMax) return Duration(std::numeric_limits<int64_t>::min());
    return Duration(RoundHalfAway(ps));
  }
  int64_t ps_ = 0;
};

// The longest time a replay covers: 1e6 s (11.6 days). Picoseconds in an int64 reach 106.7
// days; below a tenth of that, any two times of a replay add without wrapping, and a training
// step (seconds to minutes) is far inside it. A step that would run longer is refused as out of
// range (sim::Engine::Run), never wrapped or saturated into a wrong answer.
inline constexpr int64_t kMaxReplayPs = 1'000'000'000'000'000'000;
inline constexpr double kMaxReplaySeconds = 1e6;

inline Duration Max(Duration a, Duration b) { return a < b ? b : a; }
inline Duration Min(Duration a, Duration b) { return a < b ? a : b; }

// Generic double-valued quantity with a tag; arithmetic only within the same type.
template <typename Tag>
class Quantity {
 public:
  constexpr Quantity() = default;
  constexpr explicit Quantity(double v) : v_(v) {}
  constexpr double value() const { return v_; }
  constexpr Quantity operator+(Quantity o) const { return Quantity(v_ + o.v_); }
  constexpr Quantity operator-(Quantity o) const { return Quantity(v_ - o.v_); }
  constexpr Quantity operator*(double k) const { return Quantity(v_ * k); }
  constexpr Quantity operator/(double k) const { return Quantity(v_ / k); }
  constexpr double operator/(Quantity o) const { return v_ / o.v_; }
  constexpr Quantity& operator+=(Quantity o) {
    v_ += o.v_;
    return *this;
  }
  constexpr Quantity& operator-=(Quantity o) {
    v_ -= o.v_;
    return *this;
  }
  constexpr auto operator<=>(const Quantity&) const = default;

 private:
  double v_ = 0;
};

struct BytesTag {};
struct FlopsTag {};
struct BandwidthTag {};
struct FlopRateTag {};

// A number of bytes. Decimal (GB) and binary (GiB) factories are both explicit.
class Bytes : public Quantity<BytesTag> {
 public:
  using Quantity::Quantity;
  constexpr Bytes(Quantity<BytesTag> q) : Quantity(q) {}  // NOLINT: same unit
  static constexpr Bytes KB(double v) { return Bytes(v * 1e3); }
  static constexpr Bytes MB(double v) { return Bytes(v * 1e6); }
  static constexpr Bytes GB(double v) { return Bytes(v * 1e9); }
  static constexpr Bytes TB(double v) { return Bytes(v * 1e12); }
  static constexpr Bytes KiB(double v) { return Bytes(v * 1024.0); }
  static constexpr Bytes MiB(double v) { return Bytes(v * 1048576.0); }
  static constexpr Bytes GiB(double v) { return Bytes(v * 1073741824.0); }
  static constexpr Bytes TiB(double v) { return Bytes(v * 1099511627776.0); }
  constexpr double bytes() const { return value(); }
  constexpr double gb() const { return value() / 1e9; }
  constexpr double gib() const { return value() / 1073741824.0; }
};

// A count of floating-point operations (multiply and add count as two).
class Flops : public Quantity<FlopsTag> {
 public:
  using Quantity::Quantity;
  constexpr Flops(Quantity<FlopsTag> q) : Quantity(q) {}  // NOLINT: same unit
  constexpr double flops() const { return value(); }
};

// Bytes per second (one direction unless a name says otherwise).
class Bandwidth : public Quantity<BandwidthTag> {
 public:
  using Quantity::Quantity;
  constexpr Bandwidth(Quantity<BandwidthTag> q) : Quantity(q) {}  // NOLINT: same unit
  static constexpr Bandwidth BytesPerSecond(double v) { return Bandwidth(v); }
  static constexpr Bandwidth GBps(double v) { return Bandwidth(v * 1e9); }
  static constexpr Bandwidth Gbps(double bits) { return Bandwidth(bits * 1e9 / 8.0); }  // bits!
  constexpr double bytes_per_second() const { return value(); }
  constexpr double gbps() const { return value() / 1e9; }  // GB/s (bytes)
};

// FLOP per second.
class FlopRate : public Quantity<FlopRateTag> {
 public:
  using Quantity::Quantity;
  constexpr FlopRate(Quantity<FlopRateTag> q) : Quantity(q) {}  // NOLINT: same unit
  static constexpr FlopRate TFLOPs(double v) { return FlopRate(v * 1e12); }
  constexpr double flops_per_second() const { return value(); }
  constexpr double tflops() const { return value() / 1e12; }
};

// Time to move `b` at rate `bw`; infinite for a zero or negative rate.
inline Duration TransferTime(Bytes b, Bandwidth bw) {
  if (b.bytes() <= 0) return Duration::Zero();
  if (bw.bytes_per_second() <= 0) return Duration::Infinite();
  return Duration::Seconds(b.bytes() / bw.bytes_per_second());
}

// Bytes moved in `t` at rate `bw` (zero for a negative time): the inverse of TransferTime.
inline Bytes TransferBytes(Duration t, Bandwidth bw) {
  return Bytes(std::max(0.0, t.seconds()) * bw.bytes_per_second());
}

// Time to execute `f` at rate `r`; infinite for a zero or negative rate.
inline Duration ComputeTime(Flops f, FlopRate r) {
  if (f.flops() <= 0) return Duration::Zero();
  if (r.flops_per_second() <= 0) return Duration::Infinite();
  return Duration::Seconds(f.flops() / r.flops_per_second());
}

// Achieved rates from an amount and a time.
inline FlopRate RateOf(Flops f, Duration t) {
  return FlopRate(t.seconds() > 0 ? f.flops() / t.seconds() : 0.0);
}
inline Bandwidth RateOf(Bytes b, Duration t) {
  return Bandwidth(t.seconds() > 0 ? b.bytes() / t.seconds() : 0.0);
}

}  // namespace parasim
