#include "cli/certs_command.h"

#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/net/certs.h"

namespace shefl {

std::string CertsUsage() {
  return "usage: shefl certs --out DIR --hosts a,b,c [--clients N] [--days D]\n"
         "                   [--force]\n"
         "\n"
         "  --out DIR      where to write ca.pem/.key, server.pem/.key,\n"
         "                 client-<i>.pem/.key, token (shared), client-<i>.token\n"
         "                 (one per daemon) and tokens (their list)\n"
         "  --hosts LIST   names and addresses the coordinator is reached by\n"
         "                 (localhost and 127.0.0.1 are always included)\n"
         "  --clients N    client certificates, one per daemon (default 2)\n"
         "  --days D       validity (default 365)\n"
         "  --force        replace an existing CA (locks out its daemons)\n";
}

namespace {

absl::Status ParseFlag(const std::string& flag, const std::string& value,
                       PkiOptions& o) {
  int n = 0;
  if (flag == "--out") {
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
                          ? ParseFlag(flag, args[++i], o)
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
  absl::Status st = MakeDevPki(o, [](const std::string& path) {
    std::cout << "wrote " << path << "\n";
  });
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
