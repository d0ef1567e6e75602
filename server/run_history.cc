#include "server/run_history.h"

#include <algorithm>

#include "server/run/rounds_log.h"

namespace shefl {

namespace {

// A round line's traffic: its clients' and its daemons' counts.
ByteCounts LineBytes(const nlohmann::json& j) {
  ByteCounts sum;
  auto add = [&sum](const nlohmann::json& b) {
    if (!b.is_object()) return;
    ByteCounts c;
    c.payload_up = static_cast<uint64_t>(RoundsLog::Num(b, "payload_up"));
    c.payload_down = static_cast<uint64_t>(RoundsLog::Num(b, "payload_down"));
    c.control_up = static_cast<uint64_t>(RoundsLog::Num(b, "control_up"));
    c.control_down = static_cast<uint64_t>(RoundsLog::Num(b, "control_down"));
    sum += c;
  };
  if (auto by = j.find("bytes_by_client"); by != j.end() && by->is_object())
    for (const auto& [client, b] : by->items()) add(b);
  if (auto d = j.find("daemon_bytes"); d != j.end()) add(*d);
  return sum;
}

void ReadEvaluation(const nlohmann::json& j, EvalResult* last) {
  last->ensemble_accuracy = RoundsLog::Num(j, "ensemble_accuracy");
  last->ensemble_nll = RoundsLog::Num(j, "ensemble_loss");
  last->member_accuracy.clear();
  if (auto m = j.find("model_accuracy"); m != j.end() && m->is_array())
    for (const auto& a : *m)
      last->member_accuracy.push_back(a.is_number() ? a.get<double>() : 0.0);
}

}  // namespace

RunHistory ReadRunHistory(const std::string& dir, double threshold) {
  RunHistory h;
  RoundsLog::ForEach(dir + "/rounds.jsonl", [&](nlohmann::json& j) {
    h.wall_seconds += RoundsLog::Num(j, "wall_seconds");
    h.bytes += LineBytes(j);
    if (!RoundsLog::Evaluated(j)) return;  // no figures of its own
    const double acc = RoundsLog::Num(j, "ensemble_accuracy");
    h.best_accuracy = std::max(h.best_accuracy, acc);
    const auto round = static_cast<int64_t>(RoundsLog::Num(j, "round"));
    if (h.rounds_to_threshold < 0 && acc >= threshold) h.rounds_to_threshold = round;
    h.evaluated = true;
    h.last_eval_round = round;
    ReadEvaluation(j, &h.last_eval);
  });
  return h;
}

}  // namespace shefl
