// The little of HTTP/1.x that MetricsServer speaks: where a request head
// ends, its method and path, and a whole reply that closes the connection.
// Pure functions on strings, so the server's loop stays about sockets and
// deadlines.
// Thread-compatible: HttpRequestLine is a plain value.
#ifndef SHEFL_COMMON_NET_HTTP_HEAD_H_
#define SHEFL_COMMON_NET_HTTP_HEAD_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"

namespace shefl {

// The length of the request head in `data`, up to and including the blank
// line that ends it ("\r\n\r\n", or "\n\n" from a hand-typed request), or
// std::string::npos while the head is incomplete.
size_t HttpHeadEnd(const std::string& data);

struct HttpRequestLine {
  std::string method;  // "GET"
  std::string path;    // "/metrics", the query string removed
};

// Parses the first line of `head`: "METHOD /path[?query] HTTP/x.y".
// Anything else is InvalidArgument, which the server answers with 400.
absl::StatusOr<HttpRequestLine> ParseHttpRequestLine(const std::string& head);

// A complete HTTP/1.0 reply (status line, Content-Type, Content-Length,
// Connection: close, and Allow for a 405) carrying `body`.
std::string HttpResponse(int code, const std::string& content_type,
                         const std::string& body);

}  // namespace shefl

#endif  // SHEFL_COMMON_NET_HTTP_HEAD_H_
