// Early returns on an error, in the Abseil style (Abseil's own macros are
// not part of its public headers): the shape
//   if (auto st = F(); !st.ok()) return st;
//   auto x = G(); if (!x.ok()) return x.status(); ... *x ...
// written once. Prefixed SHEFL_ because protobuf's internal headers define
// the unprefixed names.
//
//   SHEFL_RETURN_IF_ERROR(F());            // F returns absl::Status
//   SHEFL_ASSIGN_OR_RETURN(auto x, G());   // G returns absl::StatusOr<T>
//   SHEFL_ASSIGN_OR_RETURN(member_, G());  // x, member_: the T, moved in
//
// ASSIGN_OR_RETURN declares a hidden variable, so it is a statement of its
// own (not the body of an unbraced if). Thread-safe: macros.
#ifndef SHEFL_COMMON_CORE_STATUS_MACROS_H_
#define SHEFL_COMMON_CORE_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define SHEFL_RETURN_IF_ERROR(expr)                                  \
  do {                                                               \
    if (::absl::Status shefl_status_ = (expr); !shefl_status_.ok()) \
      return shefl_status_;                                          \
  } while (false)

#define SHEFL_STATUS_CONCAT_INNER(a, b) a##b
#define SHEFL_STATUS_CONCAT(a, b) SHEFL_STATUS_CONCAT_INNER(a, b)

#define SHEFL_ASSIGN_OR_RETURN(lhs, rexpr)                                 \
  SHEFL_ASSIGN_OR_RETURN_IMPL(SHEFL_STATUS_CONCAT(shefl_or_, __LINE__), lhs, \
                              rexpr)

#define SHEFL_ASSIGN_OR_RETURN_IMPL(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                \
  if (!tmp.ok()) return std::move(tmp).status();     \
  lhs = std::move(*tmp)

#endif  // SHEFL_COMMON_CORE_STATUS_MACROS_H_
