#include "server/run/run_results.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/core/durable_file.h"

namespace shefl {

absl::StatusOr<RunResults> RunResults::Open(const std::string& dir) {
  std::error_code ec;
  for (const char* sub : {"", "/checkpoints", "/daemons"}) {
    std::filesystem::create_directories(dir + sub, ec);
    if (ec)
      return absl::InternalError(absl::StrCat(
          "cannot create results folder '", dir, sub, "': ", ec.message()));
  }
  return RunResults(dir);
}

absl::Status RunResults::WriteConfig(const std::string& yaml) const {
  return WriteFileDurably(dir_ + "/config.yaml", yaml);
}

absl::Status RunResults::AppendRound(const nlohmann::json& line) const {
  return AppendDurably(dir_ + "/rounds.jsonl", line.dump() + "\n");
}

absl::Status RunResults::TruncateRounds(int64_t round) const {
  const std::string path = dir_ + "/rounds.jsonl";
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  std::stringstream kept;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    auto j = nlohmann::json::parse(lines[i], nullptr, /*allow_exceptions=*/false);
    const bool record = j.is_object() && j.contains("round") &&
                        j["round"].is_number_integer();
    if (!record) {
      // A crash in the middle of an append leaves a torn last line: it is
      // the open round's, dropped. Anywhere else the file was damaged, and
      // dropping everything after it would lose rounds silently.
      if (i + 1 == lines.size()) break;
      return absl::DataLossError(absl::StrCat(
          path, ":", i + 1, ": not a round record (a JSON object with an "
          "integer \"round\"); repair or remove that line, then resume"));
    }
    if (j["round"].get<int64_t>() > round) break;
    kept << lines[i] << "\n";
  }
  return WriteFileDurably(path, kept.str());
}

absl::Status RunResults::WriteSummary(const nlohmann::json& summary) const {
  return WriteFileDurably(dir_ + "/summary.json", summary.dump(2) + "\n");
}

}  // namespace shefl
