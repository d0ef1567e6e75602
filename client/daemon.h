// shefl-client: one daemon hosting one or many logical clients. It dials
// the coordinator, registers, holds the task feed open and heartbeats into
// its silences, and reconnects with exponential backoff and jitter when
// the coordinator goes away; it exits when the coordinator says the run is
// over. The work itself goes through named pieces:
//   feed -> TaskQueue (client/task_queue.h: order, round ends, cancelling)
//        -> worker threads -> TaskTrainer (client/task_trainer.h: model
//           version, local training, delta, top-k with error feedback)
//        -> TaskUploader (client/task_uploader.h) and ModelDownloader
//           (client/model_download.h), all booked in RoundBooks
//           (client/round_books.h), whose round lines the queue triggers.
// Thread-safe: Run on one thread, RequestStop from any (a signal handler
// included). Within a session the feed thread, the heartbeat thread and
// `workers_` worker threads share only the pieces above (each thread-safe)
// and atomics; the rest is written by the feed thread before the others
// start.
#ifndef SHEFL_CLIENT_DAEMON_H_
#define SHEFL_CLIENT_DAEMON_H_

#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/adversary.h"
#include "client/coordinator_link.h"
#include "client/daemon_metrics.h"
#include "client/model_download.h"
#include "client/round_books.h"
#include "client/secure_sessions.h"
#include "client/task_queue.h"
#include "client/task_trainer.h"
#include "client/task_uploader.h"
#include "common/net/metrics_server.h"
#include "common/net/tls.h"
#include "shefl.grpc.pb.h"

namespace shefl {

struct DaemonOptions {
  std::string coordinator;        // HOST:PORT
  std::vector<int64_t> clients;   // logical client ids
  uint32_t auto_clients = 0;      // --clients auto:N: the coordinator picks
  std::string device = "auto";
  // --capacity: the most of the M models each hosted client trains a round
  // (capacity levels; HASA's cap), declared to the coordinator; 0: none.
  uint32_t capacity = 0;
  std::string name;               // default: shefl-client-<pid>
  std::string out_dir = ".";      // <out_dir>/<name>.jsonl
  std::string state_dir;          // default <out_dir>/state
  std::string metrics_listen;
  // Cores the daemon may use (<= 0: those of its affinity mask). It runs
  // threads / task_threads training tasks at once, each on task_threads
  // intra-op threads. One thread per task (the default) keeps results
  // independent of how clients are packed into daemons (docs/DESIGN.md);
  // more may change them by float rounding.
  int threads = 0;
  int task_threads = 1;
  double initial_backoff_s = 0.25;  // reconnect delay, doubling...
  double max_backoff_s = 30;        // ...up to this (common/core/backoff.h)
  double heartbeat_s = 30;          // heartbeat after this long without a
                                    // feed message; 0: never
  TlsOptions tls;                   // CA, own certificate, token, --insecure
  // --adversary MODE: this daemon lies (robustness experiments,
  // client/adversary.h); empty: honest.
  std::string adversary;
  // --dp-min-multiplier Z: the daemon's own floor on a secure session's
  // distributed-DP noise (common/secure/party_noise.h); 0: none.
  double dp_min_multiplier = 0;
  // --slowdown X: this daemon's training takes X times as long (speed
  // heterogeneity for experiments and tests); 1: as fast as it is.
  double slowdown = 1;
};

// Parses "0-24", "3", "0-4,10-14" into ascending unique ids.
absl::StatusOr<std::vector<int64_t>> ParseClientRanges(const std::string& s);

class Daemon {
 public:
  static absl::StatusOr<std::unique_ptr<Daemon>> Create(DaemonOptions o);
  ~Daemon();

  // Returns OK when the coordinator ends the run (or RequestStop()).
  absl::Status Run();
  void RequestStop() { stop_ = true; }

 private:
  enum class SessionEnd { kShutdown, kLost };

  explicit Daemon(DaemonOptions o);
  // Start-up (daemon.cc).
  absl::Status Connectivity();
  absl::Status StartMetrics();
  // The config comes with the first registration: data, shards, trainer.
  absl::Status Prepare(const std::string& config_yaml);
  // One session (daemon_session.cc).
  absl::StatusOr<SessionEnd> Session(v1::Coordinator::Stub& stub);
  absl::StatusOr<CoordinatorLink> Register(v1::Coordinator::Stub& stub);
  absl::Status AdoptClients(const v1::RegisterReply& reply);
  v1::TaskFeedRequest FeedRequest(const std::string& session_id) const;
  void BookFeedRequest(const v1::TaskFeedRequest& req);
  // Reads the feed to its end; true when the coordinator ended the run.
  bool ReadFeed(grpc::ClientReaderInterface<v1::FeedMessage>* reader,
                const CoordinatorLink& link);
  void AcceptTask(v1::Task task);
  void WorkLoop(const CoordinatorLink& link, int slot);
  void HeartbeatLoop(const CoordinatorLink& link, grpc::ClientContext* feed_ctx);
  void Heartbeat(const CoordinatorLink& link, grpc::ClientContext* feed_ctx);

  DaemonOptions o_;
  std::atomic<bool> stop_{false};
  std::string token_;  // read from --token-file at start
  std::shared_ptr<grpc::ChannelCredentials> creds_;
  grpc::ChannelArguments channel_args_;
  int workers_ = 1;  // tasks at once
  // train.stacking in force (set by Prepare): one worker takes a whole
  // round (TaskQueue::TakeRound) and trains it as one stack.
  bool stack_round_ = false;
  std::optional<Adversary> adversary_;  // --adversary; set by Create
  bool send_label_counts_ = false;  // method hasa: histograms with the report
  std::atomic<int64_t> known_round_{0};
  // When the feed last said something (steady clock, ns): the heartbeat
  // speaks only into a silence.
  std::atomic<int64_t> last_heard_ns_{0};

  std::unique_ptr<DaemonMetrics> metrics_;
  std::unique_ptr<MetricsServer> exposer_;
  std::unique_ptr<RoundBooks> books_;
  std::unique_ptr<ModelDownloader> downloader_;
  std::unique_ptr<TaskUploader> uploader_;
  std::unique_ptr<TaskQueue> queue_;
  std::unique_ptr<TaskTrainer> trainer_;  // set by Prepare
  // aggregation.secure: this daemon's parties (set by Prepare); or null.
  std::unique_ptr<SecureSessions> secure_;
};

}  // namespace shefl

#endif  // SHEFL_CLIENT_DAEMON_H_
