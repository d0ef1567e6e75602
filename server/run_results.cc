#include "server/run_results.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

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
  std::stringstream kept;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.contains("round")) break;  // a torn last line
    if (j["round"].get<int64_t>() > round) break;
    kept << line << "\n";
  }
  return WriteFileDurably(path, kept.str());
}

absl::Status RunResults::WriteSummary(const nlohmann::json& summary) const {
  return WriteFileDurably(dir_ + "/summary.json", summary.dump(2) + "\n");
}

}  // namespace shefl
