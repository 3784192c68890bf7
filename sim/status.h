// Recoverable errors as values (modelled on absl::Status): library code returns Status or
// StatusOr<T>; only the CLI turns them into exit codes (2 for bad input, 1 for internal).
//
//   StatusOr<Bytes> b = ParseBytes("80GiB");
//   if (!b.ok()) return b.status();
//   PARASIM_ASSIGN_OR_RETURN(Bytes size, ParseBytes(text));
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace parasim {

enum class StatusCode { kOk, kInvalidArgument, kNotFound, kFailedPrecondition, kInternal };

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // Exit code for the CLI: 0 ok, 2 bad input, 1 internal failure.
  int exit_code() const {
    switch (code_) {
      case StatusCode::kOk:
        return 0;
      case StatusCode::kInternal:
        return 1;
      default:
        return 2;
    }
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string msg) {
  return Status(StatusCode::kInvalidArgument, std::move(msg));
}
inline Status NotFound(std::string msg) { return Status(StatusCode::kNotFound, std::move(msg)); }
inline Status FailedPrecondition(std::string msg) {
  return Status(StatusCode::kFailedPrecondition, std::move(msg));
}
inline Status Internal(std::string msg) { return Status(StatusCode::kInternal, std::move(msg)); }

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : v_(std::move(value)) {}         // NOLINT: implicit like absl
  StatusOr(Status status) : v_(std::move(status)) {}  // NOLINT: must not be ok
  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

#define PARASIM_CONCAT_INNER(a, b) a##b
#define PARASIM_CONCAT(a, b) PARASIM_CONCAT_INNER(a, b)

#define PARASIM_RETURN_IF_ERROR(expr) \
  do {                                \
    ::parasim::Status _st = (expr);   \
    if (!_st.ok()) return _st;        \
  } while (0)

#define PARASIM_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()

#define PARASIM_ASSIGN_OR_RETURN(lhs, expr) \
  PARASIM_ASSIGN_OR_RETURN_IMPL(PARASIM_CONCAT(_statusor_, __LINE__), lhs, expr)

}  // namespace parasim
