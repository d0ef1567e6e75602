// HTTP/2 keepalive on both ends of a daemon's connection, so a daemon or a
// coordinator that vanishes without closing its socket (power loss, a cut
// cable, a partition) is noticed in seconds: its feed stream fails, its
// clients stop being sampled, and the daemon reconnects.
#ifndef SHEFL_COMMON_KEEPALIVE_H_
#define SHEFL_COMMON_KEEPALIVE_H_

#include <grpcpp/server_builder.h>
#include <grpcpp/support/channel_arguments.h>

namespace shefl {

// A ping every 10 s when idle; a peer that does not answer in 5 s is gone.
constexpr int kKeepaliveTimeMs = 10000;
constexpr int kKeepaliveTimeoutMs = 5000;

void AddClientKeepalive(grpc::ChannelArguments* args);
// Keepalive, a ping policy that accepts the daemons' pings, and limits:
// concurrent streams per connection and a resource quota (threads and
// memory), so no peer can grow the coordinator without bound.
void AddServerKeepaliveAndLimits(grpc::ServerBuilder* builder);

}  // namespace shefl

#endif  // SHEFL_COMMON_KEEPALIVE_H_
