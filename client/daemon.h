// shefl-client: one daemon hosting one or many logical clients. It dials
// the coordinator, registers, holds the task feed open, and for each task
// downloads the assigned models, trains them (client/local_trainer.h) and
// streams the compressed deltas back. It reconnects with exponential
// backoff and jitter when the coordinator goes away and exits when the
// coordinator says the run is over.
// Thread-safe: its feed, heartbeat and task threads share state under mu_
// (each guarded field says so, checked by clang).
#ifndef SHEFL_CLIENT_DAEMON_H_
#define SHEFL_CLIENT_DAEMON_H_

#include <atomic>
#include <chrono>
#include <map>
#include <condition_variable>
#include <deque>
#include <memory>
#include <optional>
#include <mutex>
#include <string>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "absl/status/statusor.h"
#include "common/net/metrics_server.h"
#include "client/adversary.h"
#include "client/local_trainer.h"
#include "client/model_cache.h"
#include "common/net/accounting.h"
#include "common/net/tls.h"
#include "shefl.grpc.pb.h"
#include "common/core/mutex.h"

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
  // independent of how clients are packed into daemons (DESIGN.md
  // section 1); more may change them by float rounding.
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
  // What /healthz and shefl_client_state{state} say.
  enum class State { kDisconnected, kIdle, kTraining };
  void SetState(State s);
  static const char* StateName(State s);
  // What the members of one task share: the per-task log line is written
  // by the member that finishes last.
  struct TaskProgress {
    std::chrono::steady_clock::time_point start;
    int remaining = 0;  // guarded by mu_
    int sent = 0;       // guarded by mu_
    double loss = 0;    // guarded by mu_
  };
  // One model of a task (an HPC's members are separate items, so they
  // train side by side), or the end of a round (task unset).
  struct Work {
    std::shared_ptr<const v1::Task> task;
    int model_index = 0;
    double expected_work = 0;  // samples x epochs: longest first
    std::shared_ptr<TaskProgress> progress;
    bool round_end = false;
    int64_t round = 0;
  };

  explicit Daemon(DaemonOptions o);
  absl::StatusOr<SessionEnd> Session(v1::Coordinator::Stub& stub);
  absl::Status Prepare(const std::string& config_yaml);
  void WorkLoop(v1::Coordinator::Stub* stub, int slot);
  void EnqueueTask(v1::Task task);
  // Writes the lines of ended rounds whose items are all done. Caller holds mu_.
  void FlushRoundEndsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int InFlightUpToLocked(int64_t round) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RunModel(v1::Coordinator::Stub& stub, const Work& w, int slot);
  void FinishItem(const Work& w, bool sent, double loss);
  void HeartbeatLoop(v1::Coordinator::Stub* stub, grpc::ClientContext* feed_ctx);
  absl::StatusOr<ModelCache::Weights> Download(
      v1::Coordinator::Stub& stub, const v1::Task& task,
      const v1::ModelTask& mt, const std::vector<int64_t>& also_for);
  absl::Status Upload(v1::Coordinator::Stub& stub, const v1::Task& task,
                      const v1::ModelTask& mt, const TrainedUpdate& u);
  void SettleResidual(const v1::Task& task, const v1::ModelTask& mt,
                      const absl::Status& sent);
  void Book(int64_t round, int64_t client, int64_t model, Direction dir,
            Traffic kind, uint64_t bytes);
  void WriteRoundLine(int64_t round) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);  // caller holds mu_
  void BookFeedRequest(const v1::TaskFeedRequest& req);
  // The token as call metadata (common/net/call_metadata.h), on every
  // call after Register.
  void AddCallMetadata(grpc::ClientContext* ctx) const;
  // A model transfer: the bytes it counts for the clients it served, and
  // the bytes that crossed the wire (requests up, chunks down).
  struct DownloadBytes {
    uint64_t logical_up = 0, logical_down = 0;
    uint64_t physical_up = 0, physical_down = 0;
  };
  void BookDownload(int64_t round, const DownloadBytes& b);
  void Enqueue(Work w);

  DaemonOptions o_;
  std::atomic<bool> stop_{false};
  std::string session_id_;
  std::string token_;  // read from --token-file at start
  std::shared_ptr<grpc::ChannelCredentials> creds_;
  grpc::ChannelArguments channel_args_;
  std::atomic<int64_t> known_round_{0};
  std::atomic<int64_t> closed_round_{0};
  std::unique_ptr<LocalTrainer> trainer_;
  bool send_label_counts_ = false;  // method hasa: histograms with the report
  std::optional<Adversary> adversary_;  // --adversary; set by Create
  ByteLedger ledger_;
  ModelCache models_;  // each model version fetched once for all clients

  Mutex mu_;
  std::condition_variable_any cv_;
  std::deque<Work> work_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, int> in_flight_ ABSL_GUARDED_BY(mu_);  // round -> items
  // Rounds whose lines are not yet written.
  std::deque<int64_t> ended_rounds_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, double> train_seconds_ ABSL_GUARDED_BY(mu_);  // by round
  // Samples trained on (shard size x passes over it), by round: the work
  // done, to compare rounds that sampled different clients.
  std::map<int64_t, uint64_t> train_samples_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, DownloadBytes> downloads_ ABSL_GUARDED_BY(mu_);  // by round
  int workers_ = 1;                         // tasks at once
  bool session_over_ ABSL_GUARDED_BY(mu_) = false;
  // When the feed last said something (steady clock, ns): the heartbeat
  // speaks only into a silence.
  std::atomic<int64_t> last_heard_ns_{0};
  // When the feed last brought a task (steady clock, ns): a round's tasks
  // come in one burst, and a fetch waits for its end so that it covers
  // every client of this daemon that needs the version.
  std::atomic<int64_t> last_task_ns_{0};
  void AwaitTaskBurst() const;

  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<MetricsServer> exposer_;
  prometheus::Histogram* train_histogram_ = nullptr;
  prometheus::Family<prometheus::Counter>* bytes_ = nullptr;
  prometheus::Family<prometheus::Counter>* download_bytes_ = nullptr;
  prometheus::Gauge* rss_ = nullptr;
  prometheus::Family<prometheus::Gauge>* state_gauges_ = nullptr;
  std::atomic<State> state_{State::kDisconnected};
};

}  // namespace shefl

#endif  // SHEFL_CLIENT_DAEMON_H_
