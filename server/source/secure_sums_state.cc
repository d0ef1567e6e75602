// The secure source's state across a checkpoint: what a resumed run needs
// to go on as if never stopped (the support of its next rounds depends on
// the accumulators; who sits out, on the blame book). One file per round:
//   "SHEFLSS2", round (int64), models (int64), d (int64), blocks
//   (int64: 1, or 2 with the oracle's residuals), the accumulators (models
//   x d floats, native order), the oracle's residuals (models x d floats,
//   zeros before the first) when blocks is 2, then the JSON of the
//   blame book, the benched clients and each model's last vote (a file
//   without votes restores none). "SHEFLSS1" files, without the blocks
//   field, still load.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/core/status_macros.h"
#include "server/source/secure_sums.h"

namespace shefl {
namespace {

constexpr char kMagic[8] = {'S', 'H', 'E', 'F', 'L', 'S', 'S', '2'};

void AppendInt(int64_t v, std::string* out) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

void AppendFloats(const std::vector<float>& v, uint64_t d, std::string* out) {
  if (v.size() == d) {
    out->append(reinterpret_cast<const char*>(v.data()), d * sizeof(float));
  } else {
    out->append(d * sizeof(float), '\0');  // none yet: zeros
  }
}

// models x d floats from `*p`, which moves past them.
std::vector<std::vector<float>> ReadBlock(uint64_t models, uint64_t d,
                                          const char** p) {
  std::vector<std::vector<float>> out(models, std::vector<float>(d));
  for (std::vector<float>& a : out) {
    std::memcpy(a.data(), *p, d * sizeof(float));
    *p += d * sizeof(float);
  }
  return out;
}

}  // namespace

std::string SecureSums::SaveState(int64_t round) const {
  const auto& acc = planner_->accumulators();
  const uint64_t d = state_->store->dim();
  const int64_t blocks = oracle_residuals_.empty() ? 1 : 2;
  std::string out(kMagic, sizeof(kMagic));
  AppendInt(round, &out);
  AppendInt(static_cast<int64_t>(acc.size()), &out);
  AppendInt(static_cast<int64_t>(d), &out);
  AppendInt(blocks, &out);
  for (const std::vector<float>& a : acc) AppendFloats(a, d, &out);
  if (blocks == 2)
    for (const std::vector<float>& r : oracle_residuals_) AppendFloats(r, d, &out);
  nlohmann::json rest = {{"blame", blame_.State()},
                         {"benched_clients", benched_clients_},
                         {"votes", planner_->votes()}};
  out += rest.dump();
  return out;
}

absl::Status SecureSums::LoadState(const std::string& bytes, int64_t round) {
  // "SHEFLSS1" (before the oracle) has no blocks field: one block.
  const bool first = bytes.size() >= sizeof(kMagic) &&
                     std::memcmp(bytes.data(), "SHEFLSS1", sizeof(kMagic)) == 0;
  const size_t kHead = sizeof(kMagic) + (first ? 3 : 4) * sizeof(int64_t);
  int64_t head[4] = {0, 0, 0, 1};
  if (bytes.size() < kHead ||
      (!first && std::memcmp(bytes.data(), kMagic, sizeof(kMagic))))
    return absl::DataLossError("the secure source's state: not one");
  std::memcpy(head, bytes.data() + sizeof(kMagic), kHead - sizeof(kMagic));
  const uint64_t models = static_cast<uint64_t>(head[1]);
  const uint64_t d = static_cast<uint64_t>(head[2]);
  const uint64_t blocks = static_cast<uint64_t>(head[3]);
  if (head[0] != round || d != state_->store->dim() || models > (1u << 20) ||
      (blocks != 1 && blocks != 2) ||
      bytes.size() < kHead + blocks * models * d * sizeof(float))
    return absl::DataLossError(absl::StrCat(
        "the secure source's state holds round ", head[0], " (", models,
        " x ", d, "); the checkpoint is of round ", round, " (d = ",
        state_->store->dim(), ")"));
  const char* p = bytes.data() + kHead;
  SHEFL_RETURN_IF_ERROR(planner_->SetAccumulators(ReadBlock(models, d, &p)));
  if (blocks == 2) oracle_residuals_ = ReadBlock(models, d, &p);
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
