// Fuzzes what MetricsServer does with the bytes a peer sends before its
// reply (common/net/http_head.h): the head is looked for as the bytes arrive in
// recv()-sized pieces, capped at 8 KiB, then its request line is parsed.
//
// Input: the bytes the peer sends (the seeds are real scrapes' heads). They
// are fed in the server's 4 KiB pieces, and again in small ones, so that a
// head is also found when the socket cuts it anywhere.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/match.h"
#include "common/net/http_head.h"
#include "fuzz/fuzz_check.h"

namespace shefl {
namespace {

constexpr size_t kMaxHeadBytes = 8192;  // common/net/metrics_server.cc

// The head end must sit right after a blank line, and be the first one.
void CheckHeadEnd(const std::string& in, size_t end) {
  if (end == std::string::npos) {
    FUZZ_CHECK(in.find("\n\n") == std::string::npos);
    FUZZ_CHECK(in.find("\r\n\r\n") == std::string::npos);
    return;
  }
  FUZZ_CHECK(end >= 2 && end <= in.size());
  const std::string head = in.substr(0, end);
  FUZZ_CHECK(absl::EndsWith(head, "\n\n") || absl::EndsWith(head, "\r\n\r\n"));
  const std::string before = head.substr(0, end - 1);  // its last byte cut
  FUZZ_CHECK(before.find("\n\n") == std::string::npos);
  FUZZ_CHECK(before.find("\r\n\r\n") == std::string::npos);
}

void CheckRequestLine(const std::string& head) {
  auto line = ParseHttpRequestLine(head);
  if (!line.ok()) {
    FUZZ_CHECK(line.status().code() == absl::StatusCode::kInvalidArgument);
    FUZZ_CHECK(!HttpResponse(400, "text/plain", "bad\n").empty());
    return;
  }
  FUZZ_CHECK(!line->method.empty());
  FUZZ_CHECK(line->method.find(' ') == std::string::npos);
  FUZZ_CHECK(!line->path.empty() && line->path[0] == '/');
  FUZZ_CHECK(line->path.find_first_of(" ?\n") == std::string::npos);
  // The parsed line is the head's own first line, in order.
  FUZZ_CHECK(absl::StartsWith(head, line->method + " " + line->path));
}

// What the server makes of a head found at `end` in buffered bytes `in`:
// the head's length, kTooLarge (answered 431), or npos (waits for more).
constexpr size_t kTooLarge = std::string::npos - 1;
size_t Outcome(const std::string& in, size_t end) {
  if (end != std::string::npos && end <= kMaxHeadBytes) return end;
  return in.size() > kMaxHeadBytes ? kTooLarge : std::string::npos;
}

// Feeds `sent` to the head search `piece` bytes at a time, as ReadHead
// does, and returns the outcome; *in is what the server buffered.
size_t FeedHead(const std::string& sent, size_t piece, std::string* in) {
  size_t end = std::string::npos;
  for (size_t at = 0; at < sent.size() && in->size() <= kMaxHeadBytes &&
                      end == std::string::npos;
       at += piece) {
    *in += sent.substr(at, piece);
    end = HttpHeadEnd(*in);
    CheckHeadEnd(*in, end);
  }
  return Outcome(*in, end);
}

}  // namespace
}  // namespace shefl

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shefl;
  const std::string sent(reinterpret_cast<const char*>(data), size);
  std::string in;
  const size_t outcome = FeedHead(sent, 4096, &in);  // the server's buffer
  // Where the socket cuts the bytes changes nothing.
  std::string small;
  FUZZ_CHECK(FeedHead(sent, 13, &small) == outcome);
  if (outcome == kTooLarge || outcome == std::string::npos) return 0;
  FUZZ_CHECK(HttpHeadEnd(sent) == outcome);
  CheckRequestLine(in.substr(0, outcome));
  return 0;
}
