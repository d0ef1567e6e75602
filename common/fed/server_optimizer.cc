#include "common/fed/server_optimizer.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/core/durable_file.h"

namespace shefl {
namespace {

constexpr char kMagic[8] = {'S', 'H', 'E', 'F', 'L', 'O', 'P', '1'};

struct Header {
  int64_t round;
  int64_t kind;
  int64_t members;
  uint64_t dim;
};

}  // namespace

absl::StatusOr<ServerOptimizer> ServerOptimizer::Create(
    const AggregationConfig& cfg, int64_t num_models, uint64_t dim) {
  ServerOptimizer o;
  o.cfg_ = cfg;
  o.dim_ = dim;
  if (cfg.server_optimizer == "none") return o;
  if (cfg.server_optimizer == "momentum") {
    o.kind_ = Kind::kMomentum;
  } else if (cfg.server_optimizer == "adam") {
    o.kind_ = Kind::kAdam;
    o.second_.assign(num_models, std::vector<float>(dim, 0.0f));
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("key 'aggregation.server_optimizer': '",
                     cfg.server_optimizer, "' is not none, momentum or adam"));
  }
  o.first_.assign(num_models, std::vector<float>(dim, 0.0f));
  return o;
}

void ServerOptimizer::Step(int64_t model, const std::vector<float>& delta,
                           std::vector<float>* weights) {
  float* w = weights->data();
  const size_t n = delta.size();
  if (kind_ == Kind::kNone) {
    for (size_t i = 0; i < n; ++i) w[i] += delta[i];
    return;
  }
  const float mu = static_cast<float>(cfg_.server_momentum);
  float* v = first_[model].data();
  if (kind_ == Kind::kMomentum) {
    for (size_t i = 0; i < n; ++i) {
      v[i] = mu * v[i] + delta[i];
      w[i] += v[i];
    }
    return;
  }
  const float eta = static_cast<float>(cfg_.server_lr);
  const float b2 = static_cast<float>(cfg_.server_beta2);
  const float tau = static_cast<float>(cfg_.server_epsilon);
  float* s = second_[model].data();
  for (size_t i = 0; i < n; ++i) {
    const float g = delta[i] / eta;
    v[i] = mu * v[i] + (1.0f - mu) * g;
    s[i] = b2 * s[i] + (1.0f - b2) * g * g;
    w[i] += eta * v[i] / (std::sqrt(s[i]) + tau);
  }
}

absl::Status ServerOptimizer::Save(const std::string& path,
                                   int64_t round) const {
  std::string bytes(kMagic, sizeof(kMagic));
  const Header h{round, static_cast<int64_t>(kind_),
                 static_cast<int64_t>(first_.size()), dim_};
  bytes.append(reinterpret_cast<const char*>(&h), sizeof(h));
  for (const auto* state : {&first_, &second_})
    for (const std::vector<float>& v : *state)
      bytes.append(reinterpret_cast<const char*>(v.data()),
                   v.size() * sizeof(float));
  return WriteFileDurably(path, bytes);
}

absl::Status ServerOptimizer::Load(const std::string& path, int64_t round) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(absl::StrCat(
        "no server optimiser state at '", path, "' for round ", round));
  char magic[sizeof(kMagic)];
  Header h{};
  if (!in.read(magic, sizeof(magic)) ||
      std::memcmp(magic, kMagic, sizeof(kMagic)) != 0 ||
      !in.read(reinterpret_cast<char*>(&h), sizeof(h)))
    return absl::DataLossError(
        absl::StrCat("'", path, "' is not a server optimiser state"));
  if (h.round != round || h.kind != static_cast<int64_t>(kind_) ||
      h.members != static_cast<int64_t>(first_.size()) || h.dim != dim_)
    return absl::DataLossError(absl::StrCat(
        "'", path, "' holds round ", h.round, " of optimiser ", h.kind, " (",
        h.members, " x ", h.dim, "); the checkpoint needs round ", round,
        " of ", cfg_.server_optimizer, " (", first_.size(), " x ", dim_, ")"));
  for (auto* state : {&first_, &second_})
    for (std::vector<float>& v : *state)
      in.read(reinterpret_cast<char*>(v.data()), v.size() * sizeof(float));
  if (!in || in.peek() != EOF)
    return absl::DataLossError(
        absl::StrCat("'", path, "': truncated or trailing bytes"));
  return absl::OkStatus();
}

}  // namespace shefl
