// A source that wraps another and, by default, hands every call on to it:
// the private sources (central_privacy.h, distributed_privacy.h) override
// only what they change, and call the inner source's version themselves
// where they add to it.
// Not thread-safe: the round loop's, as every source.
#ifndef SHEFL_SERVER_SOURCE_WRAPPING_SOURCE_H_
#define SHEFL_SERVER_SOURCE_WRAPPING_SOURCE_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "server/source/update_source.h"

namespace shefl {

class WrappingSource : public UpdateSource {
 public:
  explicit WrappingSource(std::unique_ptr<UpdateSource> inner)
      : inner_(std::move(inner)) {}

  AggregationConfig Aggregation(const AggregationConfig& configured) const override {
    return inner_->Aggregation(configured);
  }
  void Open(const RoundPlan& plan, int64_t round,
            Clock::time_point deadline) override {
    inner_->Open(plan, round, deadline);
  }
  bool Gather(RoundState& rs) override { return inner_->Gather(rs); }
  void BeforePublish(std::vector<ModelAggregator>& aggregators) override {
    inner_->BeforePublish(aggregators);
  }
  void Published() override { inner_->Published(); }
  void AddFields(int64_t round, nlohmann::json* line) const override {
    inner_->AddFields(round, line);
  }
  void AddSummary(nlohmann::json* summary) const override {
    inner_->AddSummary(summary);
  }
  bool Excludes(int64_t client, int64_t round) const override {
    return inner_->Excludes(client, round);
  }
  int64_t ExcludedCount(int64_t round) const override {
    return inner_->ExcludedCount(round);
  }
  std::string SaveState(int64_t round) const override {
    return inner_->SaveState(round);
  }
  absl::Status LoadState(const std::string& bytes, int64_t round) override {
    return inner_->LoadState(bytes, round);
  }
  absl::Status StateMissing(int64_t round) const override {
    return inner_->StateMissing(round);
  }
  std::string StopBefore(int64_t round) const override {
    return inner_->StopBefore(round);
  }

 protected:
  UpdateSource& inner() const { return *inner_; }

 private:
  const std::unique_ptr<UpdateSource> inner_;
};

}  // namespace shefl

#endif  // SHEFL_SERVER_SOURCE_WRAPPING_SOURCE_H_
