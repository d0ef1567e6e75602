// `shefl run`'s one live status line on a terminal: while the coordinator
// waits, how many clients are connected; in a round, the uploads done of
// those its tasks ask for, the bytes up so far and an ETA. It reads the
// coordinator's own /metrics (the figures a dashboard shows), at most once
// a second. Not thread-safe: the launcher's watch loop owns it.
#ifndef SHEFL_CLI_LIVE_STATUS_H_
#define SHEFL_CLI_LIVE_STATUS_H_

#include <cstdint>
#include <map>
#include <ostream>
#include <string>

#include "absl/time/time.h"

namespace shefl {

// What the line shows; -1 where a figure is not known yet.
struct StatusFigures {
  int64_t round = 0;            // last completed round
  int64_t rounds_planned = 0;
  int64_t connected = 0;
  int64_t num_clients = 0;
  int64_t quorum = 0;            // connected clients a round needs; 0: unknown
  int64_t uploads_expected = 0;  // the open round's; 0 before round 1 opens
  int64_t uploads_received = 0;
  double bytes_up = 0;
  double eta_s = -1;
};

// "waiting for clients: 12/20 connected" before round 1;
// "waiting for clients: 8/20 connected, below the quorum of 11" whenever
// too few are connected for a round;
// "round 4/10: 6/8 uploads  up 1.21 MB  ETA 42 s" in a round.
std::string FormatStatusLine(const StatusFigures& f);

// Prometheus text: "name{labels}" -> value, comments skipped; the run
// label is dropped (one endpoint serves one run).
std::map<std::string, double> ParsePrometheusText(const std::string& text);

// GET /metrics on 127.0.0.1:port with a short timeout; "" on any failure.
std::string FetchLocalMetrics(int port, absl::Duration timeout);

class LiveStatus {
 public:
  // enabled: stderr is a terminal (a log file gets no redrawn line).
  LiveStatus(std::ostream& out, int metrics_port, int64_t num_clients, bool enabled);
  void Tick();   // scrape (once a second at most) and redraw
  void Clear();  // erase the line before a normal line is printed

 private:
  std::ostream& out_;
  int port_;
  int64_t num_clients_;
  bool enabled_;
  bool shown_ = false;
  absl::Time last_scrape_ = absl::InfinitePast();
  // For the ETA: when this launch first saw a round end, and which.
  int64_t first_round_seen_ = -1;
  absl::Time first_round_time_;
};

}  // namespace shefl

#endif  // SHEFL_CLI_LIVE_STATUS_H_
