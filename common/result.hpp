// Result<T>: the return type of control-path code that can fail (docs/conventions.md: results and errors).
// The error is a sentence a person can act on; no exceptions cross library boundaries.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace vxfed {

struct Error {
  std::string message;
};

// ValueOr<T, E>: a value or an error of type E. The body shared by Result<T> (the error is
// a sentence) and cni::Expected<T> (the error carries a CNI code too, cni/errors.hpp); each
// names its own error() accessor.
template <typename T, typename E>
class [[nodiscard]] ValueOr {
 public:
  ValueOr(T value) : state_(std::move(value)) {}          // NOLINT: implicit by design
  ValueOr(E error) : state_(std::move(error)) {}          // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 protected:
  const E& error_value() const { return std::get<E>(state_); }

 private:
  std::variant<T, E> state_;
};

template <typename T>
class [[nodiscard]] Result : public ValueOr<T, Error> {
 public:
  using ValueOr<T, Error>::ValueOr;
  const std::string& error() const { return this->error_value().message; }
};

// Result<void>: success or an error message.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error.message)), failed_(true) {}  // NOLINT

  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const std::string& error() const { return error_; }

 private:
  std::string error_;
  bool failed_ = false;
};

using Status = Result<void>;

inline Error make_error(std::string message) { return Error{std::move(message)}; }

}  // namespace vxfed
