// Fuzzes the upload-stream assembler (server/state/upload_assembler.h) with the
// chunk sequences a peer can send, driven the way the UploadDelta reactor
// (server/rpc/coordinator_upload.cc) drives it.
//
// Input: the stream as it crosses the wire, gRPC's length-prefixed
// messages (a 0 byte, a 4-byte big-endian length, a serialized DeltaChunk),
// so the seeds are real uploads (fuzz/make_seeds.cc). The stream ends
// where the input does or a frame does not parse. The outcome is checked
// against the stream's rules stated once more here, from the other side:
// what a peer may send.
#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "server/state/round_state.h"
#include "server/state/upload_assembler.h"

namespace shefl {
namespace {

// The largest declared size the fuzzer lets through: the assembler
// reserves that much, and 64 KiB keeps runs fast.
constexpr uint64_t kMaxBytes = 1 << 16;

struct Stream {
  v1::DeltaChunk first;
  std::vector<v1::DeltaChunk> rest;
};

// The chunks of a framed stream; false when it holds none.
bool ReadStream(const uint8_t* data, size_t size, Stream* s) {
  std::vector<v1::DeltaChunk> chunks;
  while (size >= 5 && data[0] == 0) {
    const size_t len = (size_t{data[1]} << 24) | (size_t{data[2]} << 16) |
                       (size_t{data[3]} << 8) | size_t{data[4]};
    if (len > size - 5) break;
    v1::DeltaChunk c;
    if (!c.ParseFromArray(data + 5, static_cast<int>(len))) break;
    chunks.push_back(std::move(c));
    data += 5 + len;
    size -= 5 + len;
  }
  if (chunks.empty()) return false;
  s->first = std::move(chunks[0]);
  s->rest.assign(std::make_move_iterator(chunks.begin() + 1),
                 std::make_move_iterator(chunks.end()));
  return true;
}

// Which refusal the rules call for, or "" when the stream is acceptable;
// `used` is how many later chunks the receiver reads.
std::string Expected(const Stream& s, size_t* used) {
  *used = 0;
  if (!s.first.has_header()) return "no header";
  const uint64_t size = s.first.header().encoded_size();
  if (size > kMaxBytes) return "oversize";
  uint64_t have = s.first.data().size();
  if (have > size) return "oversize";
  for (const v1::DeltaChunk& c : s.rest) {
    ++*used;
    if (have == size) return "oversize";  // a chunk past the last byte
    if (c.has_header()) return "header repeated";
    if (c.data().empty()) return "empty chunk";
    if (c.data().size() > size - have) return "oversize";
    have += c.data().size();
  }
  return have == size ? "" : "truncated";
}

// The refusal in the words the assembler used, for comparison.
std::string Refusal(const absl::Status& st) {
  FUZZ_CHECK(st.code() == absl::StatusCode::kInvalidArgument);
  const std::string reason = RefusalReason(st);
  if (reason == "oversize") return reason;
  FUZZ_CHECK(reason == "malformed");
  for (const char* what : {"no header", "header repeated", "empty chunk",
                           "truncated"})
    if (st.message().find(what) != absl::string_view::npos) return what;
  FUZZ_CHECK(false && "unexpected refusal");
  return "";
}

}  // namespace
}  // namespace shefl

// Frames that do not parse (a session id that is not UTF-8, say) end the
// stream as they would in gRPC; protobuf's log line for each is noise.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shefl;
  Stream s;
  if (!ReadStream(data, size, &s)) return 0;  // UploadDelta refuses at once
  size_t want_used = 0;
  const std::string want = Expected(s, &want_used);

  UploadAssembler upload(kMaxBytes);
  absl::Status st = upload.Begin(s.first);
  size_t used = 0;
  while (st.ok() && used < s.rest.size()) st = upload.Add(s.rest[used++]);
  if (!st.ok()) {
    FUZZ_CHECK(Refusal(st) == want);
    FUZZ_CHECK(used == want_used);  // nothing read after the refusal
    return 0;
  }
  auto blob = upload.Finish();
  if (!blob.ok()) {
    FUZZ_CHECK(Refusal(blob.status()) == want);
    return 0;
  }
  FUZZ_CHECK(want.empty());
  // Accepted: exactly the bytes sent, in order, of the declared size.
  std::string sent = s.first.data();
  for (const v1::DeltaChunk& c : s.rest) sent += c.data();
  FUZZ_CHECK(*blob == sent);
  FUZZ_CHECK(blob->size() == s.first.header().encoded_size());
  return 0;
}
