// shefl-coordinator --config FILE [--set key=value]... [--listen HOST:PORT]
//     [--metrics-listen HOST:PORT] [--out DIR] [--resume RUN_DIR | --continue]
//     [--threads N] [--eval-threads N] [--eval-nice D] [--metrics-linger-s S]
//     [--tls-cert F --tls-key F [--tls-client-ca F] | --insecure]
//     [--token-file F]
// shefl-coordinator --replay RUN_DIR
#include <string>

#include "common/core/flags.h"
#include "common/core/log.h"
#include "common/core/malloc_tuning.h"
#include "common/core/process_main.h"
#include "server/buffered_replay.h"
#include "server/coordinator.h"

namespace {

constexpr const char* kUsage =
    "usage: shefl-coordinator --config FILE [--set key=value]...\n"
    "         [--listen HOST:PORT] [--metrics-listen HOST:PORT] [--out DIR]\n"
    "         [--resume RUN_DIR | --continue] [--threads N] [--metrics-linger-s S]\n"
    "         [--eval-threads N] [--eval-nice D]\n"
    "         (--tls-cert FILE --tls-key FILE [--tls-client-ca FILE] | --insecure)\n"
    "         [--token-file FILE] [--health-listen HOST:PORT]\n"
    "       shefl-coordinator --replay RUN_DIR\n"
    "  --replay: rebuild a buffered run's models from its buffer_log.jsonl\n"
    "            and uploads/ (buffered.record_uploads) and check them\n"
    "            against its summary.json\n"
    "  TLS is required unless --insecure; `shefl certs` makes the files.\n"
    "  --tls-client-ca: mutual TLS, daemons need a certificate of that CA.\n"
    "  --token-file: daemons must present this token to register.\n"
    "  --listen defaults to 127.0.0.1:50051; use 0.0.0.0:PORT to serve a lab.\n"
    "  --out: a folder that holds a run is refused (resume it with --resume);\n"
    "  --continue: resume it when it holds a run of this config (and --set),\n"
    "              refuse naming what changed when it holds another's (for\n"
    "              services that restart)\n"
    "  --metrics-linger-s: after the run, keep serving /metrics S seconds so\n"
    "                      Prometheus scrapes the final values (SIGTERM ends it)\n"
    "  --eval-threads: an evaluation runs on one thread beside the next\n"
    "                  round's training, on N (default 1) while the round\n"
    "                  loop waits for it (the last round); each thread has\n"
    "                  --threads torch threads; the figures do not depend on N\n"
    "  --eval-nice: run those threads D nice levels lower (0-19, default 0)\n"
    "  --health-listen: a plaintext port serving only the gRPC health\n"
    "                   service (probes that cannot do TLS, e.g. Kubernetes')\n";

}  // namespace

int main(int argc, char** argv) {
  shefl::CoordinatorOptions o;
  std::string replay;
  const shefl::FlagSetters flags = {
      {"--config", shefl::SetString(&o.config_path)},
      {"--set", shefl::AppendString(&o.overrides)},
      {"--listen", shefl::SetString(&o.listen)},
      {"--metrics-listen", shefl::SetString(&o.metrics_listen)},
      {"--health-listen", shefl::SetString(&o.health_listen)},
      {"--out", shefl::SetString(&o.out_dir)},
      {"--resume", shefl::SetString(&o.resume_dir)},
      {"--threads", shefl::SetInt("--threads", &o.threads)},
      {"--eval-threads", shefl::SetInt("--eval-threads", &o.eval_threads)},
      {"--eval-nice", shefl::SetInt("--eval-nice", &o.eval_nice)},
      {"--metrics-linger-s",
       shefl::SetSeconds("--metrics-linger-s", &o.metrics_linger_s)},
      {"--tls-cert", shefl::SetString(&o.tls.cert_file)},
      {"--tls-key", shefl::SetString(&o.tls.key_file)},
      {"--tls-client-ca", shefl::SetString(&o.tls.ca_file)},
      {"--token-file", shefl::SetString(&o.tls.token_file)},
      {"--replay", shefl::SetString(&replay)},
  };
  auto run = [&]() -> absl::Status {
    if (!replay.empty()) return shefl::ReplayAndCompare(replay);
    if (o.config_path.empty() && o.resume_dir.empty())
      return absl::InvalidArgumentError("--config or --resume is required");
    shefl::LogLine("shefl-coordinator", shefl::TuneMallocForTensors());
    return shefl::RunStoppable(shefl::Coordinator::Create(o));
  };
  return shefl::RunMain(argc, argv, "shefl-coordinator", kUsage, flags, run,
                        shefl::StopOnSignal,
                        {{"--insecure", &o.tls.insecure},
                         {"--continue", &o.continue_run}});
}
