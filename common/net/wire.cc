#include "common/net/wire.h"

#include <google/protobuf/io/coded_stream.h>

#include <algorithm>

#include "common/net/accounting.h"

namespace shefl {

int64_t FeedRound(const v1::FeedMessage& m, int64_t current) {
  if (m.has_task()) return static_cast<int64_t>(m.task().round());
  if (m.has_round_end()) return static_cast<int64_t>(m.round_end().round());
  switch (m.kind_case()) {
    case v1::FeedMessage::kSecureSetup:
      return static_cast<int64_t>(m.secure_setup().round());
    case v1::FeedMessage::kSecureRoster:
      return static_cast<int64_t>(m.secure_roster().round());
    case v1::FeedMessage::kSecureBoxes:
      return static_cast<int64_t>(m.secure_boxes().round());
    case v1::FeedMessage::kSecureUnmask:
      return static_cast<int64_t>(m.secure_unmask().round());
    default:
      return current;
  }
}

int64_t FeedModel(const v1::FeedMessage& m) {
  switch (m.kind_case()) {
    case v1::FeedMessage::kSecureSetup:
      return m.secure_setup().model_id();
    case v1::FeedMessage::kSecureRoster:
      return m.secure_roster().model_id();
    case v1::FeedMessage::kSecureBoxes:
      return m.secure_boxes().model_id();
    case v1::FeedMessage::kSecureUnmask:
      return m.secure_unmask().model_id();
    default:
      return kNoModel;
  }
}

const char* SecureStage(const v1::FeedMessage& m) {
  switch (m.kind_case()) {
    case v1::FeedMessage::kSecureSetup:
    case v1::FeedMessage::kSecureRoster:
    case v1::FeedMessage::kSecureBoxes:
      return "setup";
    case v1::FeedMessage::kSecureUnmask:
      return "unmask";
    default:
      return "";
  }
}

const char* SecureStage(const v1::SecureCall& call) {
  switch (call.stage_case()) {
    case v1::SecureCall::kKeys:
    case v1::SecureCall::kBoxes:
      return "setup";
    case v1::SecureCall::kInput:
      return "masked_input";
    case v1::SecureCall::kShares:
      return "unmask";
    default:
      return "";
  }
}

int64_t FeedClient(const v1::FeedMessage& m) {
  return m.has_task() ? static_cast<int64_t>(m.task().client_id())
                      : kDaemonTraffic;
}

std::vector<v1::DeltaChunk> MakeUploadChunks(const v1::UploadHeader& header,
                                             const std::string& encoded) {
  std::vector<v1::DeltaChunk> chunks;
  uint64_t off = 0;
  do {
    const uint64_t n = std::min<uint64_t>(kChunkBytes, encoded.size() - off);
    v1::DeltaChunk c;
    if (off == 0) *c.mutable_header() = header;
    c.set_data(encoded.substr(off, n));
    chunks.push_back(std::move(c));
    off += n;
  } while (off < encoded.size());
  return chunks;
}

namespace {

uint64_t LengthDelimited(uint64_t len) {
  // one tag byte (field numbers 1 and 2) + varint length + body
  return 1 + google::protobuf::io::CodedOutputStream::VarintSize64(len) + len;
}

}  // namespace

uint64_t UploadFramingBytes(const v1::UploadHeader& header,
                            uint64_t encoded_size) {
  uint64_t framing = LengthDelimited(header.ByteSizeLong());
  uint64_t off = 0;
  do {
    const uint64_t n = std::min<uint64_t>(kChunkBytes, encoded_size - off);
    // proto3 omits an empty bytes field
    framing += (n > 0 ? LengthDelimited(n) - n : 0) + kGrpcMessageHeader;
    off += n;
  } while (off < encoded_size);
  return framing;
}

}  // namespace shefl
