// One line per event a person needs (registration, round start and end,
// refusals, reconnects), on stderr, with a UTC timestamp and the component.
#ifndef SHEFL_COMMON_CORE_LOG_H_
#define SHEFL_COMMON_CORE_LOG_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace shefl {

void LogLine(std::string_view component, std::string_view message);

// A peer-supplied string (a daemon name, a device) made safe to log: bytes
// outside printable ASCII become \xNN, so no peer can forge a log line, and
// the result is cut to `max_bytes` of input with "..." appended, so no peer
// can fill the log.
std::string LogSafe(std::string_view peer_text, size_t max_bytes = 64);

}  // namespace shefl

#endif  // SHEFL_COMMON_CORE_LOG_H_
