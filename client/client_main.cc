// shefl-client --coordinator HOST:PORT --clients 0-24 [--device auto]
//     [--name NAME] [--out DIR] [--metrics-listen HOST:PORT] [--threads N]
//     [--task-threads T]
//     [--max-backoff-s S] [--tls-ca F] [--tls-cert F --tls-key F]
//     [--tls-server-name NAME] [--token-file F] [--insecure]
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "client/daemon.h"
#include "common/core/flags.h"
#include "common/core/log.h"
#include "common/core/malloc_tuning.h"
#include "common/core/process_main.h"
#include "common/core/status_macros.h"

namespace {

constexpr const char* kUsage =
    "usage: shefl-client --coordinator HOST:PORT --clients RANGES\n"
    "         [--device auto|cpu|cuda|cuda:N] [--capacity N] [--name NAME]\n"
    "         [--out DIR]\n"
    "         [--state-dir DIR]\n"
    "         [--metrics-listen HOST:PORT] [--threads N] [--task-threads T]\n"
    "         [--max-backoff-s S] [--heartbeat-s S] [--adversary MODE]\n"
    "         [--dp-min-multiplier Z] [--slowdown X]\n"
    "         [--tls-ca FILE] [--tls-cert FILE --tls-key FILE]\n"
    "         [--tls-server-name NAME] [--token-file FILE] [--insecure]\n"
    "  RANGES: logical client ids, e.g. 0-24 or 0-4,10-14; auto:N lets the\n"
    "          coordinator pick N free ones (name: the host name), for\n"
    "          scaled containers\n"
    "  --threads: cores to use (default: all this process may run on); the\n"
    "             daemon trains N/T models at once, each on T intra-op\n"
    "             threads (--task-threads, default 1: results then do not\n"
    "             depend on N or on how clients are spread over daemons)\n"
    "  --state-dir: what survives a restart (error-feedback residuals, one\n"
    "               file per client, model and round); default OUT/state,\n"
    "               which the daemons writing to OUT share\n"
    "  TLS by default: --tls-ca is the CA of the coordinator's certificate\n"
    "  (default: the system's), --tls-cert/--tls-key this daemon's own for\n"
    "  mutual TLS; --token-file the registration token; --insecure: plaintext\n"
    "  --capacity N: each hosted client trains at most N of the M models a\n"
    "                round (capacity levels, HASA's cap); default 0: none\n"
    "  --heartbeat-s: heartbeat after this long without a word from the\n"
    "                 coordinator (default 30; 0: never)\n"
    "  --max-backoff-s: longest wait between reconnects (default 30; the\n"
    "                   wait starts at 0.25 s and doubles, with jitter)\n"
    "  --adversary MODE: robustness experiments only: this daemon lies\n"
    "                    (huge, flip, noise, shard, labels, stall,\n"
    "                    garbage;\n"
    "                    docs/SECURITY.md)\n"
    "  --dp-min-multiplier Z: distributed DP (docs/PRIVACY.md): send no\n"
    "                    secure input whose session's noise is below Z\n"
    "                    times what one client can move its sum (default\n"
    "                    0: take the coordinator's word)\n"
    "  --slowdown X: experiments: training takes X times as long (each\n"
    "                model waits (X - 1) x its training time; default 1)\n";

// A flag's number in [lo, hi], or an error naming the flag and the range.
std::function<absl::Status(const std::string&)> InRange(const std::string& flag, const std::string& what,
                          double lo, double hi, double* out) {
  return [=](const std::string& v) -> absl::Status {
    double x = 0;
    if (!absl::SimpleAtod(v, &x) || !(x >= lo) || x > hi)
      return absl::InvalidArgumentError(absl::StrCat(
          flag, " '", v, "': expected ", what, " from ", lo, " to ", hi));
    *out = x;
    return absl::OkStatus();
  };
}

}  // namespace

int main(int argc, char** argv) {
  shefl::DaemonOptions o;
  const shefl::FlagSetters flags = {
      {"--coordinator", shefl::SetString(&o.coordinator)},
      {"--clients",
       [&o](const std::string& v) -> absl::Status {
         if (v.rfind("auto:", 0) == 0) {
           int n = 0;
           if (!absl::SimpleAtoi(v.substr(5), &n) || n < 1 || n > 1000000)
             return absl::InvalidArgumentError(
                 "--clients '" + v + "': auto:N needs N from 1 to 1000000");
           o.auto_clients = static_cast<uint32_t>(n);
           return absl::OkStatus();
         }
         SHEFL_ASSIGN_OR_RETURN(o.clients, shefl::ParseClientRanges(v));
         return absl::OkStatus();
       }},
      {"--device", shefl::SetString(&o.device)},
      {"--capacity",
       [&o](const std::string& v) -> absl::Status {
         int n = 0;
         if (!absl::SimpleAtoi(v, &n) || n < 0 || n > 1024)
           return absl::InvalidArgumentError(
               "--capacity '" + v + "': expected 0 to 1024 models a round");
         o.capacity = static_cast<uint32_t>(n);
         return absl::OkStatus();
       }},
      {"--name", shefl::SetString(&o.name)},
      {"--out", shefl::SetString(&o.out_dir)},
      {"--state-dir", shefl::SetString(&o.state_dir)},
      {"--metrics-listen", shefl::SetString(&o.metrics_listen)},
      {"--threads", shefl::SetInt("--threads", &o.threads)},
      {"--task-threads", shefl::SetInt("--task-threads", &o.task_threads)},
      {"--max-backoff-s", shefl::SetSeconds("--max-backoff-s", &o.max_backoff_s)},
      {"--heartbeat-s", shefl::SetSeconds("--heartbeat-s", &o.heartbeat_s)},
      {"--adversary", shefl::SetString(&o.adversary)},
      {"--dp-min-multiplier",
       InRange("--dp-min-multiplier", "a multiplier", 0, 1e6, &o.dp_min_multiplier)},
      {"--slowdown", InRange("--slowdown", "a factor", 1, 1e4, &o.slowdown)},
      {"--tls-ca", shefl::SetString(&o.tls.ca_file)},
      {"--tls-cert", shefl::SetString(&o.tls.cert_file)},
      {"--tls-key", shefl::SetString(&o.tls.key_file)},
      {"--tls-server-name", shefl::SetString(&o.tls.server_name)},
      {"--token-file", shefl::SetString(&o.tls.token_file)},
  };
  auto run = [&]() -> absl::Status {
    shefl::LogLine("shefl-client", shefl::TuneMallocForTensors());
    return shefl::RunStoppable(shefl::Daemon::Create(o));
  };
  return shefl::RunMain(argc, argv, "shefl-client", kUsage, flags, run,
                        shefl::StopOnSignal, {{"--insecure", &o.tls.insecure}});
}
