// RdpAccountant's Save and Load: the orders and each order's RDP as the
// bit patterns of their doubles (a resumed run's epsilon is exactly the
// run's), behind a header, a count and an FNV-1a checksum, so a truncated
// or edited file is refused naming what is wrong.
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/privacy/rdp_accountant.h"

namespace shefl {
namespace {

constexpr absl::string_view kSaveHeader = "shefl-rdp-accountant 1";
uint64_t Fnv1a64(absl::string_view text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string HexBits(double x) {
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return absl::StrCat(absl::Hex(bits, absl::kZeroPad16));
}

// Exactly 16 lowercase hex digits, as HexBits writes them.
bool ParseHexBits(absl::string_view word, double* x) {
  if (word.size() != 16) return false;
  for (char c : word) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  uint64_t bits;
  if (!absl::SimpleHexAtoi(word, &bits)) return false;
  std::memcpy(x, &bits, sizeof bits);
  return true;
}

absl::Status LoadError(absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("RDP accountant checkpoint: ", what));
}

// At most 40 characters of a line, for a message.
std::string Clip(absl::string_view line) {
  return line.size() <= 40 ? std::string(line)
                           : absl::StrCat(line.substr(0, 40), "...");
}

// The checkpoint's text before its checksum line, once that line matches.
absl::StatusOr<absl::string_view> CheckedBody(absl::string_view bytes) {
  if (bytes.empty() || bytes.back() != '\n') {
    return LoadError("empty or cut short (no final newline)");
  }
  const size_t cut = bytes.rfind('\n', bytes.size() - 2);
  const size_t body_size = cut == absl::string_view::npos ? 0 : cut + 1;
  const absl::string_view body = bytes.substr(0, body_size);
  const absl::string_view last =
      bytes.substr(body_size, bytes.size() - 1 - body_size);
  const std::string want =
      absl::StrCat("fnv1a64 ", absl::Hex(Fnv1a64(body), absl::kZeroPad16));
  if (last != want) {
    return LoadError(absl::StrCat("the checksum line '", Clip(last),
                                  "' is not '", want,
                                  "' (the text was changed or cut)"));
  }
  return body;
}

// "orders N" followed by exactly N lines.
absl::StatusOr<size_t> OrderCount(const std::vector<absl::string_view>& lines) {
  if (lines.empty() || lines[0] != kSaveHeader) {
    return LoadError(absl::StrCat("the first line is '",
                                  Clip(lines.empty() ? "" : lines[0]),
                                  "', not '", kSaveHeader, "'"));
  }
  absl::string_view count_line = lines.size() > 1 ? lines[1] : "";
  size_t n = 0;
  if (!absl::ConsumePrefix(&count_line, "orders ") ||
      !absl::SimpleAtoi(count_line, &n)) {
    return LoadError(absl::StrCat("the second line '",
                                  Clip(lines.size() > 1 ? lines[1] : ""),
                                  "' is not 'orders N'"));
  }
  if (lines.size() - 2 != n) {
    return LoadError(absl::StrCat("it says ", n, " orders but ",
                                  lines.size() - 2, " lines follow"));
  }
  return n;
}

// Line `k` (0-based among the orders): "ORDER_BITS RDP_BITS".
absl::Status ParseOrderLine(absl::string_view line, size_t k, double* order,
                            double* rdp) {
  const std::vector<absl::string_view> words = absl::StrSplit(line, ' ');
  if (words.size() != 2 || !ParseHexBits(words[0], order) ||
      !ParseHexBits(words[1], rdp)) {
    return LoadError(absl::StrCat("order line ", k, " '", Clip(line),
                                  "' is not two 16-digit hex words"));
  }
  if (std::isnan(*order)) {
    return LoadError(absl::StrCat("order ", k, " is NaN"));
  }
  if (std::isnan(*rdp) || *rdp < 0) {
    return LoadError(absl::StrCat("the RDP at order ", k, " (", *order, ") is ",
                                  *rdp, ", not >= 0"));
  }
  return absl::OkStatus();
}

}  // namespace

std::string RdpAccountant::Save() const {
  std::string text =
      absl::StrCat(kSaveHeader, "\norders ", orders_.size(), "\n");
  for (size_t i = 0; i < orders_.size(); ++i) {
    absl::StrAppend(&text, HexBits(orders_[i]), " ", HexBits(rdp_[i]), "\n");
  }
  absl::StrAppend(&text, "fnv1a64 ", absl::Hex(Fnv1a64(text), absl::kZeroPad16),
                  "\n");
  return text;
}

absl::StatusOr<RdpAccountant> RdpAccountant::Load(const std::string& bytes) {
  absl::StatusOr<absl::string_view> body = CheckedBody(bytes);
  if (!body.ok()) return body.status();
  std::vector<absl::string_view> lines = absl::StrSplit(*body, '\n');
  lines.pop_back();  // the body ends with a newline
  absl::StatusOr<size_t> n = OrderCount(lines);
  if (!n.ok()) return n.status();
  std::vector<double> orders(*n), rdp(*n);
  for (size_t k = 0; k < *n; ++k) {
    absl::Status s = ParseOrderLine(lines[k + 2], k, &orders[k], &rdp[k]);
    if (!s.ok()) return s;
  }
  RdpAccountant accountant(std::move(orders));
  accountant.rdp_ = std::move(rdp);
  return accountant;
}

}  // namespace shefl
