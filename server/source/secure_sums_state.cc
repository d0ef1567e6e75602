// The secure source's state across a checkpoint: what a resumed run needs
// to go on as if never stopped (the support of its next rounds depends on
// the accumulators; who sits out, on the blame book). One file per round:
//   "SHEFLSS1", round (int64), models (int64), d (int64), the
//   accumulators (models x d floats, native order), then the JSON of the
//   blame book, the benched clients and each model's last vote (a file
//   without votes restores none).
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/core/status_macros.h"
#include "server/source/secure_sums.h"

namespace shefl {
namespace {

constexpr char kMagic[8] = {'S', 'H', 'E', 'F', 'L', 'S', 'S', '1'};

void AppendInt(int64_t v, std::string* out) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

}  // namespace

std::string SecureSums::SaveState(int64_t round) const {
  const auto& acc = planner_->accumulators();
  std::string out(kMagic, sizeof(kMagic));
  AppendInt(round, &out);
  AppendInt(static_cast<int64_t>(acc.size()), &out);
  AppendInt(static_cast<int64_t>(state_->store->dim()), &out);
  for (const std::vector<float>& a : acc)
    out.append(reinterpret_cast<const char*>(a.data()), a.size() * sizeof(float));
  nlohmann::json rest = {{"blame", blame_.State()},
                         {"benched_clients", benched_clients_},
                         {"votes", planner_->votes()}};
  out += rest.dump();
  return out;
}

absl::Status SecureSums::LoadState(const std::string& bytes, int64_t round) {
  constexpr size_t kHead = sizeof(kMagic) + 3 * sizeof(int64_t);
  int64_t head[3] = {};
  if (bytes.size() < kHead || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)))
    return absl::DataLossError("the secure source's state: not one");
  std::memcpy(head, bytes.data() + sizeof(kMagic), sizeof(head));
  const uint64_t models = static_cast<uint64_t>(head[1]);
  const uint64_t d = static_cast<uint64_t>(head[2]);
  if (head[0] != round || d != state_->store->dim() || models > (1u << 20) ||
      bytes.size() < kHead + models * d * sizeof(float))
    return absl::DataLossError(absl::StrCat(
        "the secure source's state holds round ", head[0], " (", models,
        " x ", d, "); the checkpoint is of round ", round, " (d = ",
        state_->store->dim(), ")"));
  std::vector<std::vector<float>> acc(models, std::vector<float>(d));
  const char* p = bytes.data() + kHead;
  for (std::vector<float>& a : acc) {
    std::memcpy(a.data(), p, d * sizeof(float));
    p += d * sizeof(float);
  }
  SHEFL_RETURN_IF_ERROR(planner_->SetAccumulators(std::move(acc)));
  const auto rest = nlohmann::json::parse(p, bytes.data() + bytes.size(),
                                          nullptr, false);
  if (rest.is_discarded() || !rest.contains("blame") ||
      !rest.contains("benched_clients"))
    return absl::DataLossError("the secure source's state: bad blame record");
  try {
    benched_clients_ = rest["benched_clients"].get<std::map<int64_t, std::string>>();
    if (rest.contains("votes"))
      SHEFL_RETURN_IF_ERROR(planner_->SetVotes(
          rest["votes"].get<std::vector<std::vector<uint32_t>>>()));
  } catch (const nlohmann::json::exception& e) {
    return absl::DataLossError(absl::StrCat("the secure source's state: ", e.what()));
  }
  return blame_.Restore(rest["blame"]);
}

}  // namespace shefl
