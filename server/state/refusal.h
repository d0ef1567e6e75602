// How the coordinator says why it refused a call: a status with a reason
// attached (metric label `reason`, rounds.jsonl `refusals`) and the mark
// of a late update, read by code rather than from the message text.
// Free functions on absl::Status values: thread-safe.
#ifndef SHEFL_SERVER_STATE_REFUSAL_H_
#define SHEFL_SERVER_STATE_REFUSAL_H_

#include <string>

#include "absl/status/status.h"

namespace shefl {

// A refusal because the update's round is over: FAILED_PRECONDITION with
// a payload that marks it late, so callers count it without reading text.
absl::Status LateError(const std::string& message);
bool IsLate(const absl::Status& status);

// Why an RPC was refused, for the refusal counts (metric label `reason`,
// rounds.jsonl `refusals`): the reason attached by WithReason, else one
// derived from the status code (late, unauthenticated, not_permitted,
// duplicate, stale, malformed, oversize, other).
absl::Status WithReason(absl::Status status, const std::string& reason);
std::string RefusalReason(const absl::Status& status);
// `status` with `prefix` before its message, payloads kept.
absl::Status WithContext(const absl::Status& status, const std::string& prefix);

}  // namespace shefl

#endif  // SHEFL_SERVER_STATE_REFUSAL_H_
