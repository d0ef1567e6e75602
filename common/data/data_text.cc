// AG News: CSV rows "class","title","description" turned into hashed token
// ids, so that every process maps a word to the same id without sharing a
// vocabulary file.
#include <ATen/ops/zeros.h>

#include <cctype>
#include <cstring>
#include <exception>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/core/status_macros.h"
#include "common/data/data.h"

namespace shefl {
namespace {

constexpr int64_t kAgNewsClasses = 4;

// One CSV field starting at text[*pos]; leaves *pos on the delimiter
// (',' '\r' '\n') or at the end. Counts newlines inside quotes in *line.
absl::StatusOr<std::string> CsvField(std::string_view text, size_t* pos,
                                     int* line, const std::string& source) {
  std::string field;
  size_t i = *pos;
  if (i < text.size() && text[i] == '"') {
    const int start_line = *line;
    for (++i;; ++i) {
      if (i >= text.size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            source, ": line ", start_line, ": unterminated quoted field"));
      }
      if (text[i] == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field.push_back('"');
          ++i;
          continue;
        }
        ++i;
        break;
      }
      if (text[i] == '\n') ++*line;
      field.push_back(text[i]);
    }
    if (i < text.size() && text[i] != ',' && text[i] != '\n' &&
        text[i] != '\r') {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ": line ", *line, ": unexpected '", std::string(1, text[i]),
          "' after a closing quote"));
    }
  } else {
    while (i < text.size() && text[i] != ',' && text[i] != '\n' &&
           text[i] != '\r') {
      field.push_back(text[i++]);
    }
  }
  *pos = i;
  return field;
}

// Text of one AG News row, class field parsed: label 0-3, or -1 when the
// class field is not a number (a header row).
absl::StatusOr<int64_t> AgNewsLabel(const std::vector<std::string>& row,
                                    const std::string& where) {
  if (row.size() != 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": expected 3 fields (class, title, description), got ",
        row.size()));
  }
  int64_t cls = 0;
  if (!absl::SimpleAtoi(row[0], &cls)) return -1;
  if (cls < 1 || cls > kAgNewsClasses) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": class ", row[0], " is not in 1..4"));
  }
  return cls - 1;
}

}  // namespace

absl::StatusOr<std::vector<std::vector<std::string>>> ParseCsv(
    std::string_view text, const std::string& source) {
  std::vector<std::vector<std::string>> rows;
  size_t pos = 0;
  int line = 1;
  while (pos < text.size()) {
    if (text[pos] == '\n' || text[pos] == '\r') {  // blank line
      if (text[pos] == '\n') ++line;
      ++pos;
      continue;
    }
    std::vector<std::string> row;
    for (;;) {
      SHEFL_ASSIGN_OR_RETURN(auto field, CsvField(text, &pos, &line, source));
      row.push_back(std::move(field));
      if (pos < text.size() && text[pos] == ',') {
        ++pos;
        continue;
      }
      break;  // end of line or of text; the loop above eats the newline
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

uint64_t Fnv1a64(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::vector<int64_t> TokenizeText(std::string_view text, int64_t vocab,
                                  int64_t max_len) {
  std::vector<int64_t> ids;
  std::string word;
  auto flush = [&] {
    if (!word.empty() && static_cast<int64_t>(ids.size()) < max_len) {
      ids.push_back(1 + static_cast<int64_t>(
                            Fnv1a64(word) % static_cast<uint64_t>(vocab - 1)));
    }
    word.clear();
  };
  for (unsigned char c : text) {
    if (c < 128 && std::isalnum(c)) {
      word.push_back(static_cast<char>(std::tolower(c)));
    } else {
      flush();
    }
  }
  flush();
  return ids;
}

absl::StatusOr<Dataset> ReadAgNews(const std::string& path, int64_t vocab,
                                   int64_t max_len) {
  if (vocab < 2 || max_len < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": text_vocab must be >= 2 and text_max_len >= 1, got ", vocab,
        " and ", max_len));
  }
  SHEFL_ASSIGN_OR_RETURN(auto text, ReadMaybeGzipFile(path));
  SHEFL_ASSIGN_OR_RETURN(auto rows, ParseCsv(text, path));
  std::vector<int64_t> labels;
  std::vector<std::vector<int64_t>> tokens;
  for (size_t r = 0; r < rows.size(); ++r) {
    SHEFL_ASSIGN_OR_RETURN(
        auto label, AgNewsLabel(rows[r], absl::StrCat(path, ": row ", r + 1)));
    if (label < 0) {
      if (r == 0) continue;  // header
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": row ", r + 1, ": class '", rows[r][0],
          "' is not a number"));
    }
    labels.push_back(label);
    tokens.push_back(TokenizeText(rows[r][1] + " " + rows[r][2], vocab,
                                  max_len));
  }
  if (labels.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": no data rows"));
  }
  try {
    const int64_t n = static_cast<int64_t>(labels.size());
    Dataset out;
    out.name = "agnews";
    out.num_classes = kAgNewsClasses;
    out.x = at::zeros({n, max_len}, at::TensorOptions().dtype(at::kLong));
    out.y = at::zeros({n}, at::TensorOptions().dtype(at::kLong));
    int64_t* x = out.x.data_ptr<int64_t>();
    int64_t* y = out.y.data_ptr<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      y[i] = labels[i];
      std::memcpy(x + i * max_len, tokens[i].data(),
                  tokens[i].size() * sizeof(int64_t));
    }
    return out;
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("reading ", path, ": ", e.what()));
  }
}

}  // namespace shefl
