// The call metadata a daemon sends with every call after Register, so the
// coordinator can refuse a call before it costs anything: the run's token
// (when one is set) and the daemon's session id. Keys are lowercase ASCII,
// as gRPC requires.
#ifndef SHEFL_COMMON_NET_CALL_METADATA_H_
#define SHEFL_COMMON_NET_CALL_METADATA_H_

namespace shefl {

inline constexpr char kTokenMetadata[] = "shefl-token";
inline constexpr char kSessionMetadata[] = "shefl-session";

}  // namespace shefl

#endif  // SHEFL_COMMON_NET_CALL_METADATA_H_
