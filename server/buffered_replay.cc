#include "server/buffered_replay.h"

#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "common/core/durable_file.h"
#include "common/core/status_macros.h"
#include "common/fed/config_load.h"
#include "common/fed/update_buffer.h"
#include "common/sparse/codec.h"
#include "server/round/round_kind.h"
#include "server/shared/coordinator_state.h"

namespace shefl {

namespace {

// One logged application's updates, each with its logged weight and tier.
absl::Status AddEntries(const std::string& run_dir, const nlohmann::json& line,
                        uint64_t dim, ModelAggregator* agg) {
  const int64_t model = line.at("model").get<int64_t>();
  for (const nlohmann::json& e : line.at("entries")) {
    const std::string path =
        absl::StrCat(run_dir, "/uploads/", e.at("ticket").get<int64_t>(), "-",
                     model, ".delta");
    SHEFL_ASSIGN_OR_RETURN(std::string bytes, ReadWholeFile(path));
    auto delta = DecodeSparseDelta(bytes, dim, dim);
    if (!delta.ok())
      return absl::DataLossError(
          absl::StrCat(path, ": ", delta.status().message()));
    ReceivedUpdate u;
    u.client_id = e.at("client").get<int64_t>();
    u.tier = e.at("tier").get<std::string>() == "hpc" ? Tier::kHpc : Tier::kLpc;
    u.num_samples = e.at("weight").get<double>();
    u.delta = *std::move(delta);
    SHEFL_RETURN_IF_ERROR(agg->Add(std::move(u)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ReplayBufferedRun(
    const std::string& run_dir) {
  SHEFL_ASSIGN_OR_RETURN(ExperimentConfig config,
                         LoadConfig(run_dir + "/config.yaml", {}));
  if (config.round.mode != "buffered" || !config.buffered.record_uploads)
    return absl::FailedPreconditionError(absl::StrCat(
        run_dir, " is not a buffered run that kept its uploads (round.mode: "
        "buffered with buffered.record_uploads: true)"));
  SHEFL_ASSIGN_OR_RETURN(auto loaded, ModelStore::LoadCheckpoint(
                                          run_dir + "/initial_models.ckpt"));
  const uint64_t dim = loaded.first->dim();
  CoordinatorState state(config, std::move(loaded.first));
  SHEFL_ASSIGN_OR_RETURN(std::unique_ptr<RoundKind> kind, MakeRoundKind(config));
  RoundContext ctx;
  ctx.state = &state;
  SHEFL_RETURN_IF_ERROR(kind->Bind(ctx));
  const CohortShape shape{config.model.num_models, config.clients.per_round_hpc,
                          config.clients.per_round_lpc, false};
  std::ifstream log(run_dir + "/buffer_log.jsonl");
  if (!log) return absl::NotFoundError(run_dir + "/buffer_log.jsonl is missing");
  std::string text;
  for (int64_t n = 1; std::getline(log, text); ++n) {
    const auto line = nlohmann::json::parse(text, nullptr, false);
    if (line.is_discarded() || !line.contains("entries"))
      return absl::DataLossError(
          absl::StrCat(run_dir, "/buffer_log.jsonl:", n, ": not an application"));
    const int64_t model = line.at("model").get<int64_t>();
    std::vector<ModelAggregator> aggs;
    for (int64_t m = 0; m < config.model.num_models; ++m)
      aggs.emplace_back(BufferAggregation(config), shape, dim);
    SHEFL_RETURN_IF_ERROR(AddEntries(run_dir, line, dim, &aggs.at(model)));
    SHEFL_RETURN_IF_ERROR(kind->Close(aggs).status());
    if (state.store->Version(model) != line.at("version").get<uint64_t>())
      return absl::DataLossError(absl::StrCat(
          run_dir, "/buffer_log.jsonl:", n, ": model ", model, " reached version ",
          state.store->Version(model), ", the run logged ",
          line.at("version").get<uint64_t>()));
  }
  return state.store->Digests();
}

absl::Status ReplayAndCompare(const std::string& run_dir) {
  SHEFL_ASSIGN_OR_RETURN(std::vector<std::string> digests,
                         ReplayBufferedRun(run_dir));
  SHEFL_ASSIGN_OR_RETURN(std::string text,
                         ReadWholeFile(run_dir + "/summary.json"));
  const auto summary = nlohmann::json::parse(text, nullptr, false);
  if (summary.is_discarded() || !summary.contains("model_sha256"))
    return absl::DataLossError(run_dir + "/summary.json has no model_sha256");
  const auto run = summary["model_sha256"].get<std::vector<std::string>>();
  for (size_t m = 0; m < digests.size(); ++m) {
    std::cout << "model " << m << " " << digests[m] << "\n";
    if (m >= run.size() || run[m] != digests[m])
      return absl::DataLossError(absl::StrCat(
          "model ", m, ": the replay reached ", digests[m], ", the run ",
          m < run.size() ? run[m] : "nothing"));
  }
  std::cout << "replay equals the run: " << digests.size() << " models\n";
  return absl::OkStatus();
}

}  // namespace shefl
