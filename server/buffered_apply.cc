// One application of a buffer under round.mode buffered: the aggregate
// through the method's round kind, the entry in buffer_log.jsonl that a
// replay follows, and the line of rounds.jsonl with its record (the
// evaluation every eval.every x M applications, the checkpoint), beside
// the next tasks as a synchronous round's record is.
#include <algorithm>
#include <future>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/core/status_macros.h"
#include "server/buffered_loop.h"

namespace shefl {

absl::Status BufferedLoop::Apply(int64_t model, bool early) {
  CoordinatorState& s = *c_.state_;
  const auto apply_start = Clock::now();
  std::vector<UpdateBuffer::Entry> entries;
  std::vector<ModelAggregator> aggs;
  for (int64_t m = 0; m < cfg_.model.num_models; ++m) {
    if (m == model)
      aggs.push_back(buffers_[m].Take(&entries));
    else
      aggs.emplace_back(BufferAggregation(cfg_), shape_, s.store->dim());
  }
  SHEFL_ASSIGN_OR_RETURN(ClosedRound closed, c_.kind_->Close(aggs));
  ++applications_;
  if (early) ++early_;
  const uint64_t version = s.store->Version(model);
  std::vector<int64_t> staleness;
  for (const UpdateBuffer::Entry& e : entries) {
    staleness.push_back(e.staleness);
    auto it = tickets_.find(e.ticket);
    if (it != tickets_.end()) --it->second.waiting;
  }
  LogApplication(model, version, entries);
  s.metrics.CountApplication(staleness);
  s.metrics.SetBufferFill(model, 0);

  Coordinator::PendingRecord rec;
  rec.round = applications_;
  rec.closed = std::move(closed);
  const int64_t every = cfg_.eval.every * cfg_.model.num_models;
  rec.evaluate = applications_ % every == 0 ||
                 applications_ == total_applications();
  rec.wall = Coordinator::Since(last_application_);
  rec.own = Coordinator::Since(apply_start);
  rec.line = ApplicationLine(model, version, entries, early);
  for (const auto& [key, value] : rec.closed.fields.items())
    rec.line[key] = value;
  rec.summary = absl::StrFormat(
      "model %d version %d: %d updates, staleness up to %d, %.2f s",
      model, version, entries.size(),
      staleness.empty() ? 0 : *std::max_element(staleness.begin(),
                                                staleness.end()),
      rec.wall);
  last_application_ = Clock::now();
  SHEFL_RETURN_IF_ERROR(c_.WaitForRecord());
  // The record outlives this loop (Coordinator::Run waits for it).
  Coordinator* c = &c_;
  c_.pending_record_ = std::async(
      std::launch::async, [c, rr = std::move(rec)] { return c->Record(rr); });
  return absl::OkStatus();
}

void BufferedLoop::LogApplication(
    int64_t model, uint64_t version,
    const std::vector<UpdateBuffer::Entry>& entries) {
  nlohmann::json list = nlohmann::json::array();
  for (const UpdateBuffer::Entry& e : entries) {
    const auto it = tickets_.find(e.ticket);
    const Tier tier = it == tickets_.end() ? Tier::kLpc : it->second.task.tier;
    list.push_back({{"ticket", e.ticket},
                    {"client", e.client},
                    {"tier", TierName(tier)},
                    {"trained_from", e.trained_from},
                    {"staleness", e.staleness},
                    {"weight", e.weight}});
  }
  log_ << nlohmann::json{{"application", applications_},
                         {"model", model},
                         {"version", version},
                         {"entries", list}}
              .dump()
       << "\n";
  log_.flush();
}

nlohmann::json BufferedLoop::ApplicationLine(
    int64_t model, uint64_t version,
    const std::vector<UpdateBuffer::Entry>& entries, bool early) const {
  const CoordinatorState& s = *c_.state_;
  std::map<std::string, int64_t> histogram;
  nlohmann::json clients = nlohmann::json::array();
  uint64_t up = 0, down = 0;
  double mean = 0;
  for (const UpdateBuffer::Entry& e : entries) {
    ++histogram[std::to_string(e.staleness)];
    clients.push_back(e.client);
    mean += static_cast<double>(e.staleness) / entries.size();
    const auto books = s.ledger.ByModel(e.ticket);
    if (auto it = books.find(model); it != books.end()) {
      up += it->second.payload_up;
      down += it->second.payload_down;
    }
  }
  return {{"round", applications_},
          {"mode", "buffered"},
          {"model", model},
          {"models", cfg_.model.num_models},
          {"version", version},
          {"updates", entries.size()},
          {"early", early},
          {"staleness", histogram},
          {"mean_staleness", mean},
          {"clients", clients},
          {"bytes_up", up},
          {"bytes_down", down},
          {"wall_seconds", Coordinator::Since(last_application_)},
          {"elapsed_seconds", Coordinator::Since(start_)},
          {"tasks_in_flight", tickets_.size()},
          {"updates_stale_total", stale_},
          {"updates_lost_total", lost_}};
}

}  // namespace shefl
