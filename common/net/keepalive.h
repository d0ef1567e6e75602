// HTTP/2 keepalive on both ends of a daemon's connection, so a daemon or a
// coordinator that vanishes without closing its socket (power loss, a cut
// cable, a partition) is noticed in seconds: its feed stream fails, its
// clients stop being sampled, and the daemon reconnects.
#ifndef SHEFL_COMMON_NET_KEEPALIVE_H_
#define SHEFL_COMMON_NET_KEEPALIVE_H_

#include <grpcpp/server_builder.h>
#include <grpcpp/support/channel_arguments.h>

namespace shefl {

// A ping every 10 s when idle; a peer that does not answer in 5 s is gone.
constexpr int kKeepaliveTimeMs = 10000;
constexpr int kKeepaliveTimeoutMs = 5000;

void AddClientKeepalive(grpc::ChannelArguments* args);
// Both server settings below also refuse to share the port (no
// SO_REUSEPORT), so a port in use fails the start.
// Keepalive, a ping policy that accepts the daemons' pings, and limits:
// concurrent streams per connection and a resource quota (threads and
// memory), so no peer can grow the coordinator without bound.
void AddServerKeepaliveAndLimits(grpc::ServerBuilder* builder);
// Limits for a plaintext probe port (the health service): a probe makes
// one short call, so a connection gets a 10 s handshake, 60 s without a
// call and 10 minutes in all, 4 streams, and the port 16 handler threads.
void AddProbePortLimits(grpc::ServerBuilder* builder);

}  // namespace shefl

#endif  // SHEFL_COMMON_NET_KEEPALIVE_H_
