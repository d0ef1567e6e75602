// One line per event a person needs (registration, round start and end,
// refusals, reconnects), on stderr, with a UTC timestamp and the component.
#ifndef SHEFL_COMMON_LOG_H_
#define SHEFL_COMMON_LOG_H_

#include <string_view>

namespace shefl {

void LogLine(std::string_view component, std::string_view message);

}  // namespace shefl

#endif  // SHEFL_COMMON_LOG_H_
