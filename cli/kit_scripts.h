// The text of a start kit's start.sh and README.txt (`shefl certs --kits`,
// cli/start_kits.h). start.sh is POSIX sh: it finds its files beside itself,
// its binary in $SHEFL_BIN or on PATH, and passes its arguments on.
// Pure functions; thread-safe.
#ifndef SHEFL_CLI_KIT_SCRIPTS_H_
#define SHEFL_CLI_KIT_SCRIPTS_H_

#include <string>

namespace shefl {

// What a kit's text depends on.
struct KitText {
  std::string name;         // "coordinator" or "client-<i>"
  std::string folder;       // where it was written (DIR/kits/<name>)
  std::string host;         // the coordinator's host the daemons dial
  std::string coordinator;  // HOST:PORT the daemons dial
  std::string listen;       // the coordinator's default --listen
  bool has_config = false;  // coordinator: config.yaml is in the kit
  std::string clients;      // daemon: its --clients RANGES; empty: not baked
};

std::string CoordinatorStartScript(const KitText& k);
std::string DaemonStartScript(const KitText& k);
// Three lines: what the kit is, what to copy where, how to start it.
std::string KitReadme(const KitText& k);

}  // namespace shefl

#endif  // SHEFL_CLI_KIT_SCRIPTS_H_
