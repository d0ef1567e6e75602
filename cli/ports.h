// Local TCP ports for the children: free ones to hand out, and a probe to
// tell when a child has started listening.
#ifndef SHEFL_CLI_PORTS_H_
#define SHEFL_CLI_PORTS_H_

#include <vector>

#include "absl/status/statusor.h"

namespace shefl {

// Returns `count` distinct ports on 127.0.0.1 that were free a moment ago.
// All sockets are bound before any is closed, so the kernel cannot hand the
// same port out twice. (Another process may still take one before our child
// binds it; that race is accepted, the child then fails loudly.)
absl::StatusOr<std::vector<int>> PickFreePorts(int count);

// True when something accepts a TCP connection on 127.0.0.1:port now.
bool PortAcceptsConnection(int port);

}  // namespace shefl

#endif  // SHEFL_CLI_PORTS_H_
