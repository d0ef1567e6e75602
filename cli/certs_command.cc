#include "cli/certs_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/command_preamble.h"
#include "cli/start_kits.h"
#include "common/core/status_macros.h"
#include "common/net/certs.h"

namespace shefl {

std::string CertsUsage() {
  return "usage: shefl certs --out DIR --hosts a,b,c [--clients N] [--days D]\n"
         "                   [--owner UID[:GID]] [--force]\n"
         "       shefl certs --kits --out DIR --hosts COORDINATOR[,...]\n"
         "                   [--clients N] [--port P] [--config FILE]\n"
         "                   [--daemon-clients RANGES]... [--days D]\n"
         "                   [--owner UID[:GID]] [--force]\n"
         "\n"
         "  --out DIR      where to write ca.pem/.key, server.pem/.key,\n"
         "                 client-<i>.pem/.key, token (shared), client-<i>.token\n"
         "                 (one per daemon) and tokens (their list)\n"
         "  --hosts LIST   names and addresses the coordinator is reached by\n"
         "                 (localhost and 127.0.0.1 are always included)\n"
         "  --clients N    client certificates, one per daemon (default 2)\n"
         "  --days D       validity (default 365)\n"
         "  --owner U[:G]  give every file but ca.key to the numeric user U\n"
         "                 (group G, default U): the user a container runs\n"
         "                 as (10001 in shefl's image); needs root\n"
         "  --force        replace an existing CA (locks out its daemons)\n"
         "                 and kits\n"
         "\n"
         "Start kits, one folder per machine to copy there whole (scp -rp)\n"
         "and start with ./start.sh (the binary on PATH, or SHEFL_BIN=its\n"
         "folder); a kit holds no other host's key, no other daemon's token:\n"
         "  --kits         also write DIR/kits/coordinator/ (server key,\n"
         "                 tokens, config.yaml; mutual TLS on 0.0.0.0:P) and\n"
         "                 DIR/kits/client-<i>/ (its key and token; dials\n"
         "                 the first of --hosts at P); README.txt in each\n"
         "  --port P       the coordinator's port (default 50051)\n"
         "  --config FILE  the experiment, copied into the coordinator's kit;\n"
         "                 its clients are dealt out to the daemons in turn\n"
         "  --daemon-clients RANGES\n"
         "                 a daemon's clients instead (0-49, 0-98/2), once\n"
         "                 per daemon, client-0's first; with neither, each\n"
         "                 start.sh asks for --clients\n";
}

namespace {

struct Owner {
  bool set = false;
  uid_t uid = 0;
  gid_t gid = 0;
};

absl::Status ParseOwner(const std::string& value, Owner& owner) {
  std::vector<std::string> parts = absl::StrSplit(value, ':');
  uint32_t uid = 0, gid = 0;
  if (parts.size() > 2 || !absl::SimpleAtoi(parts[0], &uid) ||
      !absl::SimpleAtoi(parts.size() == 2 ? parts[1] : parts[0], &gid))
    return absl::InvalidArgumentError(absl::StrCat(
        "--owner '", value, "': expected UID or UID:GID, numbers (e.g. 10001)"));
  owner = Owner{true, static_cast<uid_t>(uid), static_cast<gid_t>(gid)};
  return absl::OkStatus();
}

// Hands what a service reads (certificates, keys, tokens) to its user;
// ca.key stays the caller's.
absl::Status ChownForService(const std::vector<std::string>& paths, const Owner& owner) {
  for (const std::string& path : paths) {
    if (std::filesystem::path(path).filename() == "ca.key") continue;
    if (::chown(path.c_str(), owner.uid, owner.gid) != 0)
      return absl::PermissionDeniedError(absl::StrCat(
          "--owner ", owner.uid, ":", owner.gid, ": chown ", path, ": ", std::strerror(errno),
          errno == EPERM ? " (giving files away needs root: run it with sudo)" : ""));
  }
  return absl::OkStatus();
}

// Everything the command line says.
struct CertsArgs {
  PkiOptions pki;
  Owner owner;
  bool hosts_given = false;
  bool kits = false;
  KitOptions kit;
  std::string kit_flag;  // the first flag that only --kits takes
};

absl::Status ParseNumber(const std::string& flag, const std::string& value,
                         int lo, int hi, int& out) {
  if (!absl::SimpleAtoi(value, &out) || out < lo || out > hi)
    return absl::InvalidArgumentError(absl::StrCat(
        flag, " '", value, "': expected a whole number from ", lo, " to ", hi));
  return absl::OkStatus();
}

// The flags of the start kits; false: not one of them.
bool ParseKitFlag(const std::string& flag, const std::string& value,
                  CertsArgs& a, absl::Status& st) {
  if (flag == "--port") {
    st = ParseNumber(flag, value, 1, 65535, a.kit.port);
  } else if (flag == "--config") {
    a.kit.config_path = value;
  } else if (flag == "--daemon-clients") {
    a.kit.daemon_clients.push_back(value);
  } else {
    return false;
  }
  if (a.kit_flag.empty()) a.kit_flag = flag;
  return true;
}

absl::Status ParseFlag(const std::string& flag, const std::string& value,
                       CertsArgs& a) {
  PkiOptions& o = a.pki;
  int n = 0;
  if (absl::Status st; ParseKitFlag(flag, value, a, st)) return st;
  if (flag == "--owner") return ParseOwner(value, a.owner);
  if (flag == "--out") {
    o.out_dir = value;
  } else if (flag == "--hosts") {
    a.hosts_given = true;
    o.hosts = absl::StrSplit(value, ',', absl::SkipWhitespace());
    if (o.hosts.empty())
      return absl::InvalidArgumentError("--hosts needs at least one host");
  } else if (flag == "--clients") {
    SHEFL_RETURN_IF_ERROR(ParseNumber(flag, value, 0, 1000, n));
    o.clients = n;
  } else if (flag == "--days") {
    SHEFL_RETURN_IF_ERROR(ParseNumber(flag, value, 1, 36500, n));
    o.not_after_s = int64_t{n} * 86400;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown flag ", flag));
  }
  return absl::OkStatus();
}

// Reads args[1..]; a usage error names the flag.
absl::StatusOr<CertsArgs> Parse(const std::vector<std::string>& args) {
  CertsArgs a;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (flag == "--force" || flag == "--kits") {  // switches: no value
      if (flag == "--force") a.pki.force = true;
      else a.kits = true;
      continue;
    }
    SHEFL_ASSIGN_OR_RETURN(const std::string value, NextValue(args, i));
    SHEFL_RETURN_IF_ERROR(ParseFlag(flag, value, a));
  }
  if (a.pki.out_dir.empty() || !a.hosts_given)
    return absl::InvalidArgumentError(absl::StrCat(
        a.pki.out_dir.empty() ? "--out" : "--hosts", " is required"));
  if (!a.kits && !a.kit_flag.empty())
    return absl::InvalidArgumentError(
        absl::StrCat(a.kit_flag, " is for start kits: add --kits"));
  if (a.kits && a.pki.clients < 1)
    return absl::InvalidArgumentError(
        "--clients 0: --kits needs at least one daemon");
  return a;
}

// The kits' plan, checked before anything is written (so a refused call
// needs no --force to rerun).
absl::Status PlanKits(CertsArgs& a) {
  KitOptions& k = a.kit;
  k.pki_dir = a.pki.out_dir;
  k.host = a.pki.hosts.front();
  k.daemons = a.pki.clients;
  k.force = a.pki.force;
  SHEFL_ASSIGN_OR_RETURN(
      k.daemon_clients,
      PlanDaemonClients(k.daemon_clients, k.daemons, k.config_path));
  return CheckKitsFree(k);
}

// What a user runs next, with the files just written.
void PrintUse(const CertsArgs& a) {
  const std::string& d = a.pki.out_dir;
  if (a.kits) {
    std::cout << "use: copy " << KitsDir(d) << "/coordinator to " << a.kit.host
              << " and each " << KitsDir(d) << "/client-<i> to its daemon's\n"
              << "     machine (scp -rp), then run ./start.sh in each; "
              << "README.txt in each says how\n"
              << "     (keep ca.key off the machines)\n";
    return;
  }
  std::cout << "use: shefl-coordinator --tls-cert " << d
            << "/server.pem --tls-key " << d << "/server.key [--tls-client-ca "
            << d << "/ca.pem] --token-file " << d << "/token\n"
            << "     shefl-client --tls-ca " << d << "/ca.pem [--tls-cert " << d
            << "/client-<i>.pem --tls-key " << d
            << "/client-<i>.key] --token-file " << d << "/token\n"
            << "     ([...]: mutual TLS; keep ca.key off the machines)\n"
            << "     one token per daemon: the coordinator's --token-file "
            << d << "/tokens, daemon i's " << d << "/client-<i>.token\n";
}

// The PKI, then the kits, then the owner; every file written is printed.
absl::Status Write(const CertsArgs& a) {
  std::vector<std::string> written;
  auto note = [&written](const std::string& path) {
    std::cout << "wrote " << path << "\n";
    written.push_back(path);
  };
  absl::Status st = MakeDevPki(a.pki, note);
  if (st.ok() && a.kits) st = WriteStartKits(a.kit, note);
  if (!st.ok() || !a.owner.set) return st;
  // The kits' folders too (0700): the user must enter them to read its
  // files.
  if (a.kits) {
    written.push_back(KitsDir(a.pki.out_dir));
    std::error_code ec;  // a folder not listed stays ours: ChownForService
    for (const auto& kit :
         std::filesystem::directory_iterator(written.back(), ec))
      written.push_back(kit.path().string());
  }
  return ChownForService(written, a.owner);
}

// Makes the PKI (and kits) of `a`, naming each file; exit 1 when it
// cannot, 2 when a value does not fit (a usage error found late).
int Make(CertsArgs& a) {
  // What was made goes to stdout (it is the command's result); errors to
  // stderr.
  if (a.owner.set && ::geteuid() != 0 && a.owner.uid != ::geteuid()) {
    // Refused before anything is written, so a rerun needs no --force.
    std::cerr << "shefl certs: --owner " << a.owner.uid << ": giving files to "
              << "another user needs root: run it with sudo\n";
    return 1;
  }
  absl::Status st = a.kits ? PlanKits(a) : absl::OkStatus();
  if (st.ok()) st = Write(a);
  if (!st.ok()) {
    std::cerr << "shefl certs: " << st.message() << "\n";
    // A host the library will not put in a certificate, or a kit flag
    // whose value does not fit the config, is a usage error.
    return st.code() == absl::StatusCode::kInvalidArgument ? kUsageError : 1;
  }
  PrintUse(a);
  return 0;
}

}  // namespace

int CertsCommand(const std::vector<std::string>& args) {
  return RunCommand(args, "certs", CertsUsage(), Parse, Make);
}

}  // namespace shefl
