// What a coordinator is started with: its flags (shefl-coordinator
// --help), before the config is read. A plain struct: thread-compatible.
#ifndef SHEFL_SERVER_RUN_COORDINATOR_OPTIONS_H_
#define SHEFL_SERVER_RUN_COORDINATOR_OPTIONS_H_

#include <string>
#include <vector>

#include "common/net/tls.h"

namespace shefl {

struct CoordinatorOptions {
  std::string config_path;
  std::vector<std::string> overrides;  // --set key=value
  std::string listen = "127.0.0.1:50051";
  std::string metrics_listen;
  // A plaintext port serving only the gRPC health service, for probes
  // that cannot speak TLS (Kubernetes' native gRPC probes). Empty: none.
  std::string health_listen;
  std::string out_dir;     // overrides config out_dir
  std::string resume_dir;  // continue this run from its checkpoint
  // With config_path: resume the results folder's run when it has this
  // config, refuse when it has another (server/run/run_folder.h).
  bool continue_run = false;
  int threads = 0;         // torch threads for evaluation; 0: all cores
  // Evaluation's batches on this many threads (each with `threads` torch
  // threads) at this much lower priority: common/learn/eval_batches.h.
  int eval_threads = 1;
  int eval_nice = 0;
  // After the run, keep serving /metrics this long (SIGTERM ends it), so a
  // scraper sees the final values.
  double metrics_linger_s = 0;
  // TLS certificate and key, client CA (mutual TLS), token, --insecure.
  TlsOptions tls;
  // Calls open at once per peer host and per identity
  // (server/rpc/call_limits.h); 0: the defaults. Tests lower them.
  int max_calls_per_host = 0;
  int max_calls_per_identity = 0;
};

}  // namespace shefl

#endif  // SHEFL_SERVER_RUN_COORDINATOR_OPTIONS_H_
