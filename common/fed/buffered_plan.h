// What round.mode buffered needs from the rest of the config: the
// refusals of what it cannot go with, each naming its key (a buffer has
// no secure session, no privacy accountant and no paper-rule counts yet).
// Pure functions; thread-safe.
#ifndef SHEFL_COMMON_FED_BUFFERED_PLAN_H_
#define SHEFL_COMMON_FED_BUFFERED_PLAN_H_

#include "common/fed/methods/config_resolution.h"

namespace shefl {

void CheckBuffered(ConfigResolution& r);

}  // namespace shefl

#endif  // SHEFL_COMMON_FED_BUFFERED_PLAN_H_
