#include "common/net/keepalive.h"

#include <grpc/grpc.h>
#include <grpcpp/resource_quota.h>

namespace shefl {

void AddClientKeepalive(grpc::ChannelArguments* args) {
  args->SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, kKeepaliveTimeMs);
  args->SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kKeepaliveTimeoutMs);
  args->SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args->SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
}

// gRPC sets SO_REUSEPORT on its listeners by default: a second coordinator
// started on a taken port then listens beside the first, and the kernel
// spreads daemons between two runs. Off, the second bind fails.
void DenyPortSharing(grpc::ServerBuilder* builder) {
  builder->AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
}

void AddServerKeepaliveAndLimits(grpc::ServerBuilder* builder) {
  DenyPortSharing(builder);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, kKeepaliveTimeMs);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                              kKeepaliveTimeoutMs);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // Daemons ping every kKeepaliveTimeMs; allow that and a little more.
  builder->AddChannelArgument(
      GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
      kKeepaliveTimeMs / 2);
  // A daemon needs its feed, one download or upload at a time, and the
  // odd probe; 32 streams per connection leave room and stop a flood.
  builder->AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, 32);
  // A connection that has not finished its handshake in 10 s is closed
  // (idle TCP connections would otherwise hold descriptors), and one with
  // no call for 10 minutes is told to go away (a daemon always has its
  // feed open).
  builder->AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, 10000);
  builder->AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, 600000);
  grpc::ResourceQuota quota("shefl-coordinator");
  quota.SetMaxThreads(512);        // the sync server's handler threads
  quota.Resize(size_t{1} << 30);   // gRPC's buffers, 1 GiB at most
  builder->SetResourceQuota(quota);
}

void AddProbePortLimits(grpc::ServerBuilder* builder) {
  DenyPortSharing(builder);
  builder->AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, 10000);
  builder->AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, 60000);
  builder->AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS, 600000);
  builder->AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS, 5000);
  builder->AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, 4);
  grpc::ResourceQuota quota("shefl-probe-port");
  quota.SetMaxThreads(16);
  quota.Resize(size_t{64} << 20);
  builder->SetResourceQuota(quota);
}

}  // namespace shefl
