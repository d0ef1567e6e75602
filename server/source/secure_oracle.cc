// The oracle support's step (secure.support: oracle; common/fed/
// oracle_support.h): each model's clear sum on every coordinate plus what
// its earlier sums left, cut to the top K; the rest stays for the next
// round, as a client's residual would.
#include "common/fed/oracle_support.h"
#include "server/source/secure_sums.h"

namespace shefl {

bool SecureSums::SelectOracle(int64_t model, uint64_t k, SparseDelta* update,
                              nlohmann::json* entry) {
  if (oracle_residuals_.empty())
    oracle_residuals_.resize(static_cast<size_t>(state_->config.model.num_models));
  std::vector<float>& residual = oracle_residuals_[static_cast<size_t>(model)];
  if (update->indices.size() != update->dim) {
    (*entry)["why"] = "the oracle needs the sum on every coordinate";
    return false;
  }
  auto choice = OracleSelect(update->values, k, &residual);
  if (!choice) {
    (*entry)["why"] = "the sum is not finite";
    return false;
  }
  (*entry)["energy"] = choice->energy;
  *update = std::move(choice->update);
  return true;
}

}  // namespace shefl
