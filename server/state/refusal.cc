#include "server/state/refusal.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace shefl {

namespace {
constexpr char kLatePayload[] = "type.shefl/late";
constexpr char kReasonPayload[] = "type.shefl/reason";
}  // namespace

absl::Status WithReason(absl::Status status, const std::string& reason) {
  status.SetPayload(kReasonPayload, absl::Cord(reason));
  return status;
}

absl::Status WithContext(const absl::Status& status,
                         const std::string& prefix) {
  absl::Status out(status.code(), absl::StrCat(prefix, status.message()));
  status.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
    out.SetPayload(url, payload);
  });
  return out;
}

std::string RefusalReason(const absl::Status& status) {
  if (IsLate(status)) return "late";
  if (auto r = status.GetPayload(kReasonPayload)) return std::string(*r);
  switch (status.code()) {
    case absl::StatusCode::kUnauthenticated: return "unauthenticated";
    case absl::StatusCode::kPermissionDenied: return "not_permitted";
    case absl::StatusCode::kAlreadyExists: return "duplicate";
    case absl::StatusCode::kFailedPrecondition: return "stale";
    case absl::StatusCode::kInvalidArgument: return "malformed";
    case absl::StatusCode::kResourceExhausted: return "oversize";
    default: return "other";
  }
}

absl::Status LateError(const std::string& message) {
  absl::Status st = absl::FailedPreconditionError(message);
  st.SetPayload(kLatePayload, absl::Cord("1"));
  return st;
}

bool IsLate(const absl::Status& status) {
  return status.GetPayload(kLatePayload).has_value();
}

}  // namespace shefl
