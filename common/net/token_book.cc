#include "common/net/token_book.h"

#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/core/status_macros.h"
#include "common/net/tls.h"

namespace shefl {

namespace {

constexpr size_t kMinTokenChars = 16;

absl::Status LineError(const std::string& where, int line,
                       const std::string& what) {
  return absl::InvalidArgumentError(
      absl::StrCat("--token-file '", where, "' line ", line, ": ", what));
}

}  // namespace

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(
        absl::StrCat("--token-file '", path, "': cannot read the file"));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::StatusOr<TokenBook> TokenBook::Read(const std::string& path) {
  if (path.empty()) return TokenBook();
  SHEFL_ASSIGN_OR_RETURN(auto text, ReadTokenFile(path));
  return Parse(text, path);
}

absl::StatusOr<TokenBook> TokenBook::Parse(std::string_view text,
                                           const std::string& where) {
  TokenBook book;
  std::set<std::string> names, tokens;
  bool shared = false;
  int n = 0;
  for (absl::string_view raw :
       absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    ++n;
    const absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (line.empty() || line.front() == '#') continue;
    std::vector<std::string> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (fields.size() > 2)
      return LineError(where, n, "expected TOKEN or NAME TOKEN");
    if (shared || (fields.size() == 1 && !book.entries_.empty()))
      return LineError(where, n,
                       "a file of one shared token holds nothing else; give "
                       "every daemon a line NAME TOKEN instead");
    const std::string& token = fields.back();
    if (token.size() < kMinTokenChars)
      return LineError(where, n,
                       absl::StrCat("a token needs at least ", kMinTokenChars,
                                    " characters (", token.size(), " found)"));
    if (!tokens.insert(token).second)
      return LineError(where, n, "this token is on an earlier line too");
    if (fields.size() == 1) {
      shared = true;
      book.entries_.push_back({"token", token});
      continue;
    }
    if (!names.insert(fields[0]).second)
      return LineError(where, n,
                       absl::StrCat("the name '", fields[0],
                                    "' is on an earlier line too"));
    book.entries_.push_back({absl::StrCat("token:", fields[0]), token});
  }
  if (book.entries_.empty())
    return absl::InvalidArgumentError(
        absl::StrCat("--token-file '", where, "': no token in the file"));
  return book;
}

std::optional<std::string> TokenBook::Identify(std::string_view token) const {
  std::optional<std::string> found;
  for (const auto& [identity, t] : entries_)
    if (TokensEqual(token, t) && !found) found = identity;
  return found;
}

}  // namespace shefl
