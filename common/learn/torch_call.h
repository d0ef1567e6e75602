// LibTorch code where a failure must come back as an absl::Status.
// LibTorch reports a bad shape, a dtype mismatch or a device out of memory
// by throwing c10::Error; the project returns statuses, so every call into
// it that can fail on data from outside is wrapped:
//
//   return TorchCall("unflatten", [&] { ... });             // absl::Status
//   return TorchCall("torch", [&]() -> absl::StatusOr<X> {  // StatusOr<X>
//     SHEFL_RETURN_IF_ERROR(Check(x));
//     return X{...};
//   });
//
// Light on purpose: c10's exception header and Abseil, not
// <torch/torch.h>, so that any file may include it. Thread-safe: free
// functions.
#ifndef SHEFL_COMMON_LEARN_TORCH_CALL_H_
#define SHEFL_COMMON_LEARN_TORCH_CALL_H_

#include <c10/util/Exception.h>

#include <exception>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace shefl {

// INTERNAL "<what>: <LibTorch's message>", without the C++ backtrace
// LibTorch appends (it names LibTorch's frames, not the caller's).
inline absl::Status TorchError(absl::string_view what, const c10::Error& e) {
  return absl::InternalError(
      absl::StrCat(what, ": ", e.what_without_backtrace()));
}

namespace torch_call_internal {

// The status type a call returning T comes back as.
template <typename T>
struct Result {
  using type = absl::StatusOr<T>;
};
template <>
struct Result<void> {
  using type = absl::Status;
};
template <>
struct Result<absl::Status> {
  using type = absl::Status;
};
template <typename T>
struct Result<absl::StatusOr<T>> {
  using type = absl::StatusOr<T>;
};

template <typename F>
using ResultOf = typename Result<
    std::remove_cv_t<std::remove_reference_t<std::invoke_result_t<F>>>>::type;

template <typename F>
ResultOf<F> Invoke(F&& f) {
  if constexpr (std::is_void_v<std::invoke_result_t<F>>) {
    std::forward<F>(f)();
    return absl::OkStatus();
  } else {
    return std::forward<F>(f)();
  }
}

}  // namespace torch_call_internal

// Runs f(); a c10::Error it throws comes back as TorchError(what, e).
// f returning void or absl::Status gives absl::Status; f returning T or
// absl::StatusOr<T> gives absl::StatusOr<T>. Other exceptions propagate:
// they are not LibTorch's, and callers that expect some use
// TorchCallCatchAll.
template <typename F>
torch_call_internal::ResultOf<F> TorchCall(absl::string_view what, F&& f) {
  try {
    return torch_call_internal::Invoke(std::forward<F>(f));
  } catch (const c10::Error& e) {
    return TorchError(what, e);
  }
}

// TorchCall that also turns any other std::exception into INTERNAL
// "<what>: <e.what()>": for the training loops, where the data loading and
// worker threads around LibTorch may throw too, and a failed task must
// still report rather than end the process.
template <typename F>
torch_call_internal::ResultOf<F> TorchCallCatchAll(absl::string_view what,
                                                   F&& f) {
  try {
    return TorchCall(what, std::forward<F>(f));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(what, ": ", e.what()));
  }
}

}  // namespace shefl

#endif  // SHEFL_COMMON_LEARN_TORCH_CALL_H_
