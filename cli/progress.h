// Live progress of a run: follows rounds.jsonl as the coordinator appends
// to it, and formats one line per finished round and the closing summary.
// Not thread-safe: one tailer per reader.
#ifndef SHEFL_CLI_PROGRESS_H_
#define SHEFL_CLI_PROGRESS_H_

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace shefl {

// Reads the complete lines appended to a JSONL file since the last Poll.
// The writer may be caught mid-line: the unfinished tail is kept until its
// newline arrives, so a round is reported exactly once and only whole.
// A file that does not exist yet is simply empty.
class JsonlTailer {
 public:
  explicit JsonlTailer(std::string path) : path_(std::move(path)) {}

  struct Batch {
    std::vector<nlohmann::json> records;  // complete, parsed lines, in order
    int malformed = 0;                    // complete lines that were not JSON
  };
  Batch Poll();

 private:
  std::string path_;
  uint64_t offset_ = 0;   // bytes consumed so far, partial tail included
  std::string partial_;   // bytes after the last newline
};

// "round 3/8  acc 81.2%  loss 0.532  up 1.21 MB  down 4.50 MB  6.1 s".
// Missing or null fields print as "-" (rounds without evaluation).
// A round that was not evaluated (eval.every > 1) shows `last_evaluated`'s
// figures, naming its round, or "-" when there is none yet.
std::string FormatRoundLine(const nlohmann::json& round, int64_t total_rounds,
                            const nlohmann::json* last_evaluated = nullptr);
// Whether a rounds.jsonl line holds an evaluation of its own.
bool IsEvaluated(const nlohmann::json& round);

// "done: final acc 85.8%  best 86.0%  80% reached at round 3  up 9.63 MB
//  down 36.0 MB  wall 52.3 s" from summary.json.
std::string FormatSummaryLine(const nlohmann::json& summary);

// Bytes as decimal megabytes with three significant digits: "1.21 MB".
std::string FormatMegabytes(double bytes);

}  // namespace shefl

#endif  // SHEFL_CLI_PROGRESS_H_
