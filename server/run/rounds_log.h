// rounds.jsonl read back: the one reader of the round records a run has
// written (the coordinator's resume history, its summary's sums and
// FENS figures, the /metrics gauges a resumed coordinator restores). A
// line that is not a JSON object is skipped: only a torn last line after
// a crash can be one, and RunResults::TruncateRounds removes it on resume.
// Stateless functions over the file: thread-safe as long as no one
// rewrites the file meanwhile (only the record thread writes it).
#ifndef SHEFL_SERVER_RUN_ROUNDS_LOG_H_
#define SHEFL_SERVER_RUN_ROUNDS_LOG_H_

#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace shefl {

class RoundsLog {
 public:
  // Calls `fn` on each record of `path`, in order; a missing file has none.
  static void ForEach(const std::string& path,
                      const std::function<void(nlohmann::json&)>& fn);

  // The last record (an empty object when there is none) and the last one
  // with "evaluated": true (null when none).
  struct Ends {
    nlohmann::json last = nlohmann::json::object();
    nlohmann::json evaluated;
  };
  static Ends ReadEnds(const std::string& path);

  // A numeric field summed over the records (absent: 0).
  static uint64_t Sum(const std::string& path, const char* key);

  // `key` of a record as a number; 0 when absent or not a number (a NaN
  // loss is written as null).
  static double Num(const nlohmann::json& record, const char* key);
  static bool Evaluated(const nlohmann::json& record);
};

}  // namespace shefl

#endif  // SHEFL_SERVER_RUN_ROUNDS_LOG_H_
