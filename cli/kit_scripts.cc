#include "cli/kit_scripts.h"

#include "absl/strings/str_cat.h"

namespace shefl {

namespace {

// The kit's folder, wherever it was copied to and whatever the caller's
// working folder: every path start.sh passes is under it.
constexpr char kKitDir[] =
    "set -eu\n"
    "kit=$(CDPATH='' cd -- \"$(dirname -- \"$0\")\" && pwd)\n";

// $SHEFL_BIN first (a build folder, an unpacked release), then PATH; when
// neither has the binary, say where we looked instead of exec's terse
// "not found".
std::string FindBinary(const std::string& binary) {
  return absl::StrCat(
      "if [ -n \"${SHEFL_BIN:-}\" ] && [ -x \"$SHEFL_BIN/", binary, "\" ]; then\n"
      "  bin=\"$SHEFL_BIN/", binary, "\"\n"
      "elif bin=$(command -v ", binary, "); then\n"
      "  [ -z \"${SHEFL_BIN:-}\" ] ||\n"
      "    echo \"start.sh: no ", binary, " in SHEFL_BIN=$SHEFL_BIN; using $bin\" >&2\n"
      "else\n"
      "  echo \"start.sh: ", binary, " is neither in SHEFL_BIN (${SHEFL_BIN:-not set})\" \\\n"
      "    \"nor on PATH: put it on PATH, or set SHEFL_BIN to the folder that\" \\\n"
      "    \"holds it (SHEFL_BIN=/path/to/build/bin ./start.sh)\" >&2\n"
      "  exit 127\n"
      "fi\n");
}

// A flag the kit could not bake in must come as an argument: refuse early,
// with the kit's own usage, rather than with the binary's generic one.
std::string RequireArgument(const std::string& flag, const std::string& usage) {
  return absl::StrCat(
      "given=no\n"
      "for arg in \"$@\"; do\n"
      "  case $arg in ", flag, "|", flag, "=*) given=yes ;; esac\n"
      "done\n"
      "if [ \"$given\" = no ]; then\n"
      "  echo \"usage: $0 ", usage, "\" >&2\n"
      "  exit 2\n"
      "fi\n");
}

}  // namespace

std::string CoordinatorStartScript(const KitText& k) {
  std::string s = absl::StrCat(
      "#!/bin/sh\n"
      "# Starts the coordinator of this start kit (`shefl certs --kits`):\n"
      "# mutual TLS with the kit's server certificate, daemons' certificates\n"
      "# of the kit's CA, and a token per daemon (tokens).\n"
      "# SHEFL_BIN: a folder holding shefl-coordinator (else PATH).\n"
      "# SHEFL_LISTEN: where to listen (default ", k.listen, ").\n"
      "# SHEFL_RUN_DIR: the results (default run/ in this kit); one that\n"
      "# holds a run is refused: ./start.sh --continue resumes it after a\n"
      "# crash or a stop.\n"
      "# Arguments are passed on (--metrics-listen 0.0.0.0:9100, --threads N).\n",
      kKitDir, FindBinary("shefl-coordinator"));
  if (!k.has_config)
    absl::StrAppend(&s, RequireArgument("--config", "--config FILE [FLAG...]"));
  absl::StrAppend(
      &s, "exec \"$bin\"", k.has_config ? " --config \"$kit/config.yaml\"" : "",
      " \\\n"
      "  --listen \"${SHEFL_LISTEN:-", k.listen, "}\"",
      " --out \"${SHEFL_RUN_DIR:-$kit/run}\" \\\n"
      "  --tls-cert \"$kit/server.pem\" --tls-key \"$kit/server.key\" \\\n"
      "  --tls-client-ca \"$kit/ca.pem\" --token-file \"$kit/tokens\" \"$@\"\n");
  return s;
}

std::string DaemonStartScript(const KitText& k) {
  std::string s = absl::StrCat(
      "#!/bin/sh\n"
      "# Starts daemon ", k.name, " of this start kit (`shefl certs --kits`):\n"
      "# it dials the coordinator in the file `coordinator` (HOST:PORT; an\n"
      "# address its certificate does not name needs --tls-server-name) with\n"
      "# this kit's certificate and token, and waits for it, reconnecting.\n"
      "# SHEFL_BIN: a folder holding shefl-client (else PATH).\n"
      "# SHEFL_OUT: its books (default out/ in this kit).\n"
      "# Arguments are passed on (--device cuda:0, --metrics-listen\n"
      "# 0.0.0.0:9101, --threads N).\n",
      kKitDir, FindBinary("shefl-client"));
  if (k.clients.empty())
    absl::StrAppend(&s, RequireArgument("--clients", "--clients RANGES [FLAG...]"));
  absl::StrAppend(
      &s, "coordinator=$(cat \"$kit/coordinator\")\n",
      "exec \"$bin\" --coordinator \"$coordinator\" --name ",
      k.name, k.clients.empty() ? "" : absl::StrCat(" --clients '", k.clients, "'"),
      " \\\n"
      "  --out \"${SHEFL_OUT:-$kit/out}\" --tls-ca \"$kit/ca.pem\" \\\n"
      "  --tls-cert \"$kit/client.pem\" --tls-key \"$kit/client.key\" \\\n"
      "  --token-file \"$kit/client.token\" \"$@\"\n");
  return s;
}

std::string KitReadme(const KitText& k) {
  // scp, like gRPC, wants an IPv6 literal in brackets.
  const std::string scp_host =
      k.host.find(':') == std::string::npos ? k.host : "[" + k.host + "]";
  if (k.name == "coordinator")
    return absl::StrCat(
        "shefl start kit 'coordinator': the coordinator's certificate and key, "
        "the CA, every daemon's token (tokens)",
        k.has_config ? ", the experiment (config.yaml)" : "", ".\n",
        "Copy this folder whole, modes kept, to ", k.host, " (scp -rp ",
        k.folder, " ", scp_host, ":); it holds secrets: keep it private.\n"
        "Start: ./start.sh", k.has_config ? "" : " --config FILE",
        " (shefl-coordinator on PATH, or SHEFL_BIN=its folder); it serves ",
        k.listen, " and writes run/.\n");
  return absl::StrCat(
      "shefl start kit '", k.name, "': one daemon, its own certificate, key "
      "and token, the CA, the coordinator's address (", k.coordinator, ")",
      k.clients.empty() ? "" : absl::StrCat(", clients ", k.clients), ".\n",
      "Copy this folder whole, modes kept, to the machine that runs this "
      "daemon (scp -rp ", k.folder, " HOST:); it holds secrets: keep it "
      "private.\n"
      "Start: ./start.sh", k.clients.empty() ? " --clients RANGES" : "",
      " [--device cuda:0] (shefl-client on PATH, or SHEFL_BIN=its folder); "
      "it waits for the coordinator.\n");
}

}  // namespace shefl
