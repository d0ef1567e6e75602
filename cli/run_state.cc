#include "cli/run_state.h"

#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/proc_identity.h"
#include "cli/progress.h"
#include "common/core/status_macros.h"

namespace shefl {
namespace {

namespace fs = std::filesystem;

bool Exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

// config.yaml's few keys, read raw: a folder of an older or newer schema
// should still be listed rather than refused by the config loader.
void ReadConfig(const std::string& dir, RunInfo* info) {
  info->name = fs::path(dir).lexically_normal().filename().string();
  info->method = "-";
  try {  // yaml-cpp reports errors by exception; none may escape.
    const YAML::Node c = YAML::LoadFile(dir + "/config.yaml");
    if (c["name"] && c["name"].IsScalar()) info->name = c["name"].as<std::string>();
    if (c["method"] && c["method"].IsScalar())
      info->method = c["method"].as<std::string>();
    if (c["rounds"] && c["rounds"].IsScalar())
      info->rounds_planned = c["rounds"].as<int64_t>();
    if (c["clients"] && c["clients"]["num_clients"])
      info->num_clients = c["clients"]["num_clients"].as<int64_t>();
    if (c["eval"] && c["eval"]["threshold"])
      info->threshold = c["eval"]["threshold"].as<double>();
  } catch (const YAML::Exception&) {
  }
}

void ReadRounds(const std::string& dir, RunInfo* info) {
  JsonlTailer tailer(dir + "/rounds.jsonl");
  JsonlTailer::Batch batch = tailer.Poll();
  info->rounds = std::move(batch.records);
  info->malformed_lines = batch.malformed;
  for (const nlohmann::json& r : info->rounds) {
    if (!r.is_object()) continue;
    if (r.contains("round") && r["round"].is_number_integer())
      info->rounds_done = r["round"].get<int64_t>();
    if (r.contains("wall_seconds") && r["wall_seconds"].is_number())
      info->wall_seconds += r["wall_seconds"].get<double>();
    // A round without an evaluation of its own (older runs repeated the
    // last figures on it, or 0 before the first): not a measurement.
    if (!IsEvaluated(r) || !r.contains("ensemble_accuracy") ||
        !r["ensemble_accuracy"].is_number())
      continue;
    const double a = r["ensemble_accuracy"].get<double>();
    info->last_accuracy = a;
    info->best_accuracy = std::max(info->best_accuracy.value_or(a), a);
  }
}

// summary.json counts only when written after the last recorded round: a
// resumed run that went on past it leaves the earlier sitting's behind.
void ReadSummary(const std::string& dir, RunInfo* info) {
  std::ifstream in(dir + "/summary.json");
  if (!in) return;
  nlohmann::json s = nlohmann::json::parse(in, nullptr, false);
  if (!s.is_object() || !s.contains("rounds") || !s["rounds"].is_number_integer())
    return;
  if (s["rounds"].get<int64_t>() < info->rounds_done) return;
  info->rounds_done = s["rounds"].get<int64_t>();
  if (s.contains("best_accuracy") && s["best_accuracy"].is_number())
    info->best_accuracy = s["best_accuracy"].get<double>();
  if (s.contains("wall_seconds") && s["wall_seconds"].is_number())
    info->wall_seconds = s["wall_seconds"].get<double>();
  info->summary = std::move(s);
}

// The launcher names a folder results/<name>-YYYYmmdd-HHMMSS (local time);
// otherwise the oldest of the files written once at the first start.
std::optional<std::time_t> Started(const std::string& dir) {
  const std::string base = fs::path(dir).lexically_normal().filename().string();
  std::tm tm{};
  if (base.size() >= 15) {
    const char* stamp = base.c_str() + base.size() - 15;
    const char* end = strptime(stamp, "%Y%m%d-%H%M%S", &tm);
    if (end != nullptr && *end == '\0') {
      tm.tm_isdst = -1;
      return std::mktime(&tm);
    }
  }
  std::optional<std::time_t> oldest;
  for (const char* f : {"config.yaml", "certs/ca.pem", "launch.json"}) {
    struct stat st {};
    if (::stat((dir + "/" + f).c_str(), &st) != 0) continue;
    oldest = std::min(oldest.value_or(st.st_mtime), st.st_mtime);
  }
  return oldest;
}

void ReadFailure(const std::string& dir, RunInfo* info) {
  std::ifstream in(dir + "/" + kFailureFile);
  std::string line;
  while (in && std::getline(in, line))
    if (!line.empty()) {
      info->failure = line;
      return;
    }
}

void ReadProcesses(const std::string& dir, RunInfo* info) {
  if (!Exists(dir + "/endpoints.json")) return;
  absl::StatusOr<Endpoints> e = ReadEndpoints(dir + "/endpoints.json");
  if (!e.ok()) return;  // half a run folder: its processes are unknown
  info->coordinator_alive = IsRunCoordinator(e->coordinator_pid, dir);
  info->launcher_alive = IsRunLauncher(e->launcher_pid, dir, e->coordinator_pid);
  info->endpoints = std::move(*e);
}

}  // namespace

std::string RunStateName(RunState state) {
  switch (state) {
    case RunState::kRunning: return "running";
    case RunState::kFinished: return "finished";
    case RunState::kStopped: return "stopped";
    case RunState::kResumable: return "resumable";
    case RunState::kCrashed: return "crashed";
    case RunState::kFailed: return "failed";
  }
  return "?";
}

absl::Status CheckRunFolder(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return absl::NotFoundError(absl::StrCat("no folder ", dir));
  if (!Exists(dir + "/config.yaml"))
    return absl::NotFoundError(absl::StrCat(
        dir, " is not a run folder: it has no config.yaml"));
  if (!Exists(dir + "/rounds.jsonl") && !Exists(dir + "/endpoints.json"))
    return absl::NotFoundError(absl::StrCat(
        dir, " is not a run folder: it has neither rounds.jsonl nor "
             "endpoints.json"));
  return absl::OkStatus();
}

absl::StatusOr<RunInfo> ReadRunInfo(const std::string& dir) {
  SHEFL_RETURN_IF_ERROR(CheckRunFolder(dir));
  RunInfo info;
  info.dir = dir;
  ReadConfig(dir, &info);
  ReadRounds(dir, &info);
  ReadSummary(dir, &info);
  ReadProcesses(dir, &info);
  info.has_checkpoint = Exists(dir + "/checkpoints/latest.ckpt");
  ReadFailure(dir, &info);
  info.started = Started(dir);
  info.state = DecideState(info);
  return info;
}

RunState DecideState(const RunInfo& info) {
  const bool summary_done =
      info.summary && info.rounds_done >= info.rounds_planned;
  if (summary_done) return RunState::kFinished;
  if (info.coordinator_alive) return RunState::kRunning;
  // The coordinator's clean stop after a failure writes a summary too.
  if (!info.failure.empty()) return RunState::kFailed;
  if (info.summary) return RunState::kStopped;
  return info.has_checkpoint ? RunState::kResumable : RunState::kCrashed;
}

double EtaSeconds(const RunInfo& info) {
  double wall = 0;
  int n = 0;
  for (const nlohmann::json& r : info.rounds)
    if (r.is_object() && r.contains("wall_seconds") && r["wall_seconds"].is_number()) {
      wall += r["wall_seconds"].get<double>();
      ++n;
    }
  const int64_t left = info.rounds_planned - info.rounds_done;
  if (n == 0 || left < 0) return -1;
  return wall / n * static_cast<double>(left);
}

std::string FormatStarted(const std::optional<std::time_t>& t) {
  if (!t) return "-";
  std::tm local{};
  localtime_r(&*t, &local);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M", &local);
  return buf;
}

std::string FormatWall(double seconds) {
  const int64_t s = std::llround(std::max(0.0, seconds));
  if (s < 60) return absl::StrCat(s, " s");
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%dh%02dm", s / 3600, (s % 3600) / 60);
}

}  // namespace shefl
