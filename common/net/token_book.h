// The coordinator's registration tokens (--token-file). A file of one
// token is the deployment's shared token: every holder is the one identity
// "token". A file of lines "NAME TOKEN" gives each daemon its own token,
// and each token is its own identity "token:NAME", so one daemon cannot
// take another's name or client ids. Blank lines and lines starting with
// '#' are skipped.
// Thread-compatible: immutable after Read.
#ifndef SHEFL_COMMON_NET_TOKEN_BOOK_H_
#define SHEFL_COMMON_NET_TOKEN_BOOK_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace shefl {

// The text of a --token-file; an error names the flag and the file.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

class TokenBook {
 public:
  TokenBook() = default;  // no token asked for

  // Reads `path` (empty: no token asked for). Errors name the file and the
  // line: a token shorter than 16 characters, a name or token repeated, a
  // line of more than two fields.
  static absl::StatusOr<TokenBook> Read(const std::string& path);
  // The same from text (`where` names it in errors).
  static absl::StatusOr<TokenBook> Parse(std::string_view text,
                                         const std::string& where);

  bool required() const { return !entries_.empty(); }
  size_t size() const { return entries_.size(); }

  // The identity `token` proves ("token" or "token:NAME"), or nullopt.
  // Every entry is compared, each in time that depends only on lengths.
  std::optional<std::string> Identify(std::string_view token) const;

 private:
  std::vector<std::pair<std::string, std::string>> entries_;  // identity, token
};

}  // namespace shefl

#endif  // SHEFL_COMMON_NET_TOKEN_BOOK_H_
