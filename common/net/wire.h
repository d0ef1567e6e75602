// Framing rules both ends share: chunk sizes, which round and client a feed
// message belongs to, how an encoded delta is cut into upload chunks, and
// the exact bytes that framing adds (for the accounting tests).
#ifndef SHEFL_COMMON_NET_WIRE_H_
#define SHEFL_COMMON_NET_WIRE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "shefl.pb.h"

namespace shefl {

constexpr uint64_t kChunkBytes = 1 << 20;  // 1 MiB of payload per message
constexpr uint64_t kFloatsPerChunk = kChunkBytes / sizeof(float);

// The round a feed message is booked under (`current` for shutdown).
int64_t FeedRound(const v1::FeedMessage& m, int64_t current);
// The logical client it is booked under (kDaemonTraffic unless a task).
int64_t FeedClient(const v1::FeedMessage& m);
// The model it is booked under: a secure stage's model, else kNoModel.
int64_t FeedModel(const v1::FeedMessage& m);

// The secure-aggregation stage a message counts toward in rounds.jsonl's
// `secure_bytes`: "setup" (support, keys, roster, share boxes),
// "masked_input", "unmask" (the request and the shares); "" for a message
// that is not secure aggregation's. A call's reply counts with its call.
const char* SecureStage(const v1::FeedMessage& m);
const char* SecureStage(const v1::SecureCall& call);

// Cuts an encoded delta into upload chunks; the first carries `header`.
std::vector<v1::DeltaChunk> MakeUploadChunks(const v1::UploadHeader& header,
                                             const std::string& encoded);

// Bytes an upload of `encoded_size` payload bytes occupies on the wire
// beyond the payload itself: per chunk the bytes-field tag and length,
// the header once, and gRPC's 5-byte message header. A pure function of
// the header and the size.
uint64_t UploadFramingBytes(const v1::UploadHeader& header,
                            uint64_t encoded_size);

}  // namespace shefl

#endif  // SHEFL_COMMON_NET_WIRE_H_
