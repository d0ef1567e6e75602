// Per-host start kits, as `shefl certs --kits` writes them beside the PKI
// (common/net/certs.h): DIR/kits/coordinator/ and DIR/kits/client-<i>/,
// each a folder to copy whole to one machine and start there with
// ./start.sh (cli/kit_scripts.h). A kit holds the CA certificate, its own
// certificate and key, and the tokens it must know: the coordinator the
// daemons' list (it checks them), a daemon its own token. Never ca.key,
// never another host's key or another daemon's token.
// Thread-compatible: plain values and functions.
#ifndef SHEFL_CLI_START_KITS_H_
#define SHEFL_CLI_START_KITS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shefl {

struct KitOptions {
  std::string pki_dir;  // where MakeDevPki wrote client-0 .. client-<daemons-1>
  std::string host;     // what the daemons dial: the first of --hosts
  int port = 50051;     // the coordinator's port
  int daemons = 2;
  std::string config_path;  // copied in as config.yaml; empty: none
  // Each daemon's --clients RANGES, client-0's first; empty: none baked
  // in (start.sh then asks for --clients).
  std::vector<std::string> daemon_clients;
  bool force = false;  // replace an existing kits folder
};

// DIR/kits.
std::string KitsDir(const std::string& pki_dir);

// AlreadyExists, naming the folder, when DIR/kits exists and !o.force:
// checked before anything is written, so a refused call changes nothing.
absl::Status CheckKitsFree(const KitOptions& o);

// The daemons' --clients: `given` (--daemon-clients, once per daemon),
// checked against the config's clients.num_clients when there is one
// (every client hosted once); else the config's clients dealt out in turn
// as `shefl run` does (cli/run_plan.h); else none. InvalidArgument errors
// name the flag.
absl::StatusOr<std::vector<std::string>> PlanDaemonClients(
    const std::vector<std::string>& given, int daemons,
    const std::string& config_path);

// Writes the kits (replacing DIR/kits when o.force): keys and tokens 0600,
// start.sh 0755, folders 0700. `on_file` gets each file written.
absl::Status WriteStartKits(
    const KitOptions& o,
    const std::function<void(const std::string&)>& on_file = nullptr);

}  // namespace shefl

#endif  // SHEFL_CLI_START_KITS_H_
