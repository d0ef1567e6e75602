// Call metadata the coordinator reads when a call starts, before any
// message: the run's token, which a daemon sends with every call after
// Register when the run has one, and optionally the session id (a peer
// that sends it is refused at once when the session is unknown or not its
// own). Keys are lowercase ASCII, as gRPC requires.
#ifndef SHEFL_COMMON_NET_CALL_METADATA_H_
#define SHEFL_COMMON_NET_CALL_METADATA_H_

namespace shefl {

inline constexpr char kTokenMetadata[] = "shefl-token";
inline constexpr char kSessionMetadata[] = "shefl-session";

}  // namespace shefl

#endif  // SHEFL_COMMON_NET_CALL_METADATA_H_
