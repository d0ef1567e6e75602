#include "common/net/http_head.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace shefl {

size_t HttpHeadEnd(const std::string& data) {
  const size_t crlf = data.find("\r\n\r\n");
  const size_t lf = data.find("\n\n");
  if (crlf != std::string::npos && (lf == std::string::npos || crlf < lf))
    return crlf + 4;
  return lf == std::string::npos ? std::string::npos : lf + 2;
}

absl::StatusOr<HttpRequestLine> ParseHttpRequestLine(const std::string& head) {
  std::string line = head.substr(0, head.find('\n'));
  if (!line.empty() && line.back() == '\r') line.pop_back();
  const std::vector<std::string> parts = absl::StrSplit(line, ' ');
  if (parts.size() != 3 || parts[0].empty() || parts[1].empty() ||
      parts[1][0] != '/' || !absl::StartsWith(parts[2], "HTTP/"))
    return absl::InvalidArgumentError(
        "bad request line: expected 'METHOD /path HTTP/x.y'");
  return HttpRequestLine{parts[0], parts[1].substr(0, parts[1].find('?'))};
}

namespace {

const char* Reason(int code) {
  switch (code) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

}  // namespace

std::string HttpResponse(int code, const std::string& content_type,
                         const std::string& body) {
  // 405 must name the methods that would work (RFC 9110, 15.5.6).
  return absl::StrCat("HTTP/1.0 ", code, " ", Reason(code),
                      "\r\nContent-Type: ", content_type,
                      "\r\nContent-Length: ", body.size(),
                      code == 405 ? "\r\nAllow: GET" : "",
                      "\r\nConnection: close\r\n\r\n", body);
}

}  // namespace shefl
