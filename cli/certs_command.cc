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
#include "common/net/certs.h"

namespace shefl {

std::string CertsUsage() {
  return "usage: shefl certs --out DIR --hosts a,b,c [--clients N] [--days D]\n"
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
         "  --force        replace an existing CA (locks out its daemons)\n";
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

absl::Status ParseFlag(const std::string& flag, const std::string& value,
                       PkiOptions& o, Owner& owner) {
  int n = 0;
  if (flag == "--owner") {
    return ParseOwner(value, owner);
  } else if (flag == "--out") {
    o.out_dir = value;
  } else if (flag == "--hosts") {
    o.hosts = absl::StrSplit(value, ',', absl::SkipWhitespace());
    if (o.hosts.empty())
      return absl::InvalidArgumentError("--hosts needs at least one host");
  } else if (flag == "--clients" || flag == "--days") {
    const bool days = flag == "--days";
    const int lo = days ? 1 : 0, hi = days ? 36500 : 1000;
    if (!absl::SimpleAtoi(value, &n) || n < lo || n > hi)
      return absl::InvalidArgumentError(absl::StrCat(
          flag, " '", value, "': expected a whole number from ", lo, " to ",
          hi));
    if (flag == "--clients") o.clients = n;
    else o.not_after_s = int64_t{n} * 86400;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown flag ", flag));
  }
  return absl::OkStatus();
}

}  // namespace

int CertsCommand(const std::vector<std::string>& args) {
  PkiOptions o;
  Owner owner;
  bool hosts_given = false;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (flag == "--help" || flag == "-h") {
      std::cout << CertsUsage();
      return 0;
    }
    if (flag == "--force") {
      o.force = true;
      continue;
    }
    absl::Status st = i + 1 < args.size()
                          ? ParseFlag(flag, args[++i], o, owner)
                          : absl::InvalidArgumentError(flag + " needs a value");
    hosts_given = hosts_given || flag == "--hosts";
    if (!st.ok()) {
      std::cerr << "shefl certs: " << st.message() << "\n\n" << CertsUsage();
      return 2;
    }
  }
  if (o.out_dir.empty() || !hosts_given) {
    std::cerr << "shefl certs: " << (o.out_dir.empty() ? "--out" : "--hosts")
              << " is required\n\n" << CertsUsage();
    return 2;
  }
  // What was made goes to stdout (it is the command's result); errors to
  // stderr.
  if (owner.set && ::geteuid() != 0 && owner.uid != ::geteuid()) {
    // Refused before anything is written, so a rerun needs no --force.
    std::cerr << "shefl certs: --owner " << owner.uid << ": giving files to another user "
              << "needs root: run it with sudo\n";
    return 1;
  }
  std::vector<std::string> written;
  absl::Status st = MakeDevPki(o, [&written](const std::string& path) {
    std::cout << "wrote " << path << "\n";
    written.push_back(path);
  });
  if (st.ok() && owner.set) st = ChownForService(written, owner);
  if (!st.ok()) {
    std::cerr << "shefl certs: " << st.message() << "\n";
    // A host the library will not put in a certificate is a usage error.
    return st.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  const std::string& d = o.out_dir;
  std::cout << "use: shefl-coordinator --tls-cert " << d
            << "/server.pem --tls-key " << d << "/server.key [--tls-client-ca "
            << d << "/ca.pem] --token-file " << d << "/token\n"
            << "     shefl-client --tls-ca " << d << "/ca.pem [--tls-cert " << d
            << "/client-<i>.pem --tls-key " << d
            << "/client-<i>.key] --token-file " << d << "/token\n"
            << "     ([...]: mutual TLS; keep ca.key off the machines)\n"
            << "     one token per daemon: the coordinator's --token-file "
            << d << "/tokens, daemon i's " << d << "/client-<i>.token\n";
  return 0;
}

}  // namespace shefl
