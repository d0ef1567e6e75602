#include "cli/progress.h"

#include <fstream>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace shefl {

JsonlTailer::Batch JsonlTailer::Poll() {
  Batch batch;
  std::ifstream in(path_, std::ios::binary);
  if (!in) return batch;
  in.seekg(0, std::ios::end);
  uint64_t size = static_cast<uint64_t>(in.tellg());
  if (size < offset_) {
    // Truncated or replaced: start over rather than read garbage.
    offset_ = 0;
    partial_.clear();
  }
  if (size == offset_) return batch;
  in.seekg(static_cast<std::streamoff>(offset_));
  std::string chunk(size - offset_, '\0');
  in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
  chunk.resize(static_cast<size_t>(in.gcount()));
  offset_ += chunk.size();
  partial_ += chunk;
  size_t start = 0;
  for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos;
       start = nl + 1) {
    std::string line = partial_.substr(start, nl - start);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) {
      ++batch.malformed;
    } else {
      batch.records.push_back(std::move(j));
    }
  }
  partial_.erase(0, start);
  return batch;
}

namespace {

bool HasNumber(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number();
}

std::string Percent(const nlohmann::json& j, const char* key) {
  if (!HasNumber(j, key)) return "-";
  return absl::StrFormat("%.1f%%", 100.0 * j[key].get<double>());
}

std::string Megabytes(const nlohmann::json& j, const char* key) {
  if (!HasNumber(j, key)) return "-";
  return FormatMegabytes(j[key].get<double>());
}

std::string Seconds(const nlohmann::json& j, const char* key) {
  if (!HasNumber(j, key)) return "-";
  return absl::StrFormat("%.1f s", j[key].get<double>());
}

// "  secure 3/5 (not_run 2)": the members whose secure sum was applied, of
// all, and why the others were not; "" for a line without "secure".
std::string SecureOutcomes(const nlohmann::json& r) {
  auto s = r.find("secure");
  if (s == r.end() || !s->is_object() || s->empty()) return "";
  std::map<std::string, int> by;
  for (const auto& [model, entry] : s->items())
    if (entry.is_object() && entry.contains("outcome") && entry["outcome"].is_string())
      ++by[entry["outcome"].get<std::string>()];
  std::vector<std::string> others;
  for (const auto& [outcome, n] : by)
    if (outcome != "finished") others.push_back(absl::StrCat(outcome, " ", n));
  std::string out = absl::StrCat("  secure ", by["finished"], "/", s->size());
  if (!others.empty()) absl::StrAppend(&out, " (", absl::StrJoin(others, ", "), ")");
  return out;
}

}  // namespace

std::string FormatMegabytes(double bytes) {
  double mb = bytes / 1e6;
  if (mb >= 100) return absl::StrFormat("%.0f MB", mb);
  if (mb >= 10) return absl::StrFormat("%.1f MB", mb);
  return absl::StrFormat("%.2f MB", mb);
}

bool IsEvaluated(const nlohmann::json& r) {
  if (r.contains("evaluated") && r["evaluated"].is_boolean())
    return r["evaluated"].get<bool>();
  return HasNumber(r, "ensemble_accuracy");  // lines from before the flag
}

std::string FormatRoundLine(const nlohmann::json& r, int64_t total_rounds,
                            const nlohmann::json* last_evaluated) {
  std::string round = HasNumber(r, "round")
                          ? absl::StrCat(r["round"].get<int64_t>())
                          : "?";
  // A round between evaluations (eval.every > 1) has no figures of its
  // own: the last evaluated round's, named, or none before the first.
  const nlohmann::json* figures = &r;
  std::string of;
  if (!IsEvaluated(r)) {
    const bool have = last_evaluated != nullptr && HasNumber(*last_evaluated, "round");
    figures = have ? last_evaluated : nullptr;
    if (have)
      of = absl::StrCat(" (round ", (*last_evaluated)["round"].get<int64_t>(), ")");
  }
  const bool none = figures == nullptr;
  std::string loss = !none && HasNumber(*figures, "ensemble_loss")
                         ? absl::StrFormat("%.3f", (*figures)["ensemble_loss"].get<double>())
                         : "-";
  // round.mode buffered: a line per application of one model's buffer.
  const bool buffered = r.value("mode", "") == "buffered";
  if (buffered) total_rounds *= HasNumber(r, "models") ? r["models"].get<int64_t>() : 1;
  std::string what = "round ";
  if (buffered && HasNumber(r, "model"))
    what = absl::StrCat("model ", r["model"].get<int64_t>(), " v",
                        r.value("version", uint64_t{0}), " application ");
  return absl::StrCat(what, round, "/", total_rounds,
                      buffered ? absl::StrFormat("  staleness %.1f",
                                                 r.value("mean_staleness", 0.0))
                               : std::string(),
                      "  acc ", none ? std::string("-") : Percent(*figures, "ensemble_accuracy"), of,
                      "  loss ", loss,
                      "  up ", Megabytes(r, "bytes_up"),
                      "  down ", Megabytes(r, "bytes_down"),
                      "  ", Seconds(r, "wall_seconds"), SecureOutcomes(r),
                      HasNumber(r, "epsilon")
                          ? absl::StrFormat("  epsilon %.3f", r["epsilon"].get<double>())
                          : std::string());
}

std::string FormatSummaryLine(const nlohmann::json& s) {
  std::string reached = "not reached";
  if (HasNumber(s, "rounds_to_threshold")) {
    reached = absl::StrCat("reached at round ",
                           s["rounds_to_threshold"].get<int64_t>());
  }
  return absl::StrCat("done: final acc ", Percent(s, "final_accuracy"),
                      "  best ", Percent(s, "best_accuracy"),
                      "  threshold ", Percent(s, "threshold"), " ", reached,
                      "  up ", Megabytes(s, "total_bytes_up"),
                      "  down ", Megabytes(s, "total_bytes_down"),
                      "  wall ", Seconds(s, "wall_seconds"),
                      HasNumber(s, "epsilon")
                          ? absl::StrFormat("  epsilon %.3f", s["epsilon"].get<double>())
                          : std::string());
}

}  // namespace shefl
