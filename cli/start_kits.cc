#include "cli/start_kits.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/kit_scripts.h"
#include "cli/run_plan.h"
#include "common/core/durable_file.h"
#include "common/core/flags.h"
#include "common/core/status_macros.h"
#include "common/fed/config_load.h"

namespace shefl {

namespace fs = std::filesystem;

std::string KitsDir(const std::string& pki_dir) { return pki_dir + "/kits"; }

absl::Status CheckKitsFree(const KitOptions& o) {
  const std::string kits = KitsDir(o.pki_dir);
  std::error_code ec;
  const bool exists = fs::exists(kits, ec);
  if (ec)  // unknown is not "absent": we could be about to replace kits
    return absl::InternalError(
        absl::StrCat("cannot check '", kits, "': ", ec.message()));
  if (exists && !o.force)
    return absl::AlreadyExistsError(absl::StrCat(
        kits, " exists: its kits hold keys and tokens hosts may be using "
              "(use --force to replace it and the CA)"));
  return absl::OkStatus();
}

namespace {

absl::StatusOr<int64_t> ConfigClients(const std::string& config_path) {
  auto config = LoadConfig(config_path);
  if (!config.ok())
    return absl::InvalidArgumentError(
        absl::StrCat("--config ", config_path, ": ", config.status().message()));
  return config->clients.num_clients;
}

// Each daemon's ids, parsed, with no id given to two daemons and, when the
// config is known (num_clients >= 0), every one of its clients given once.
absl::Status CheckGiven(const std::vector<std::string>& given,
                        int64_t num_clients) {
  std::map<int64_t, size_t> host;  // client id -> daemon
  for (size_t d = 0; d < given.size(); ++d) {
    SHEFL_ASSIGN_OR_RETURN(auto ids,
                           ParseIdRanges("--daemon-clients", given[d]));
    for (int64_t id : ids) {
      if (num_clients >= 0 && id >= num_clients)
        return absl::InvalidArgumentError(absl::StrCat(
            "--daemon-clients '", given[d], "': client ", id,
            " is not below the config's clients.num_clients = ", num_clients));
      if (auto [it, fresh] = host.emplace(id, d); !fresh)
        return absl::InvalidArgumentError(absl::StrCat(
            "--daemon-clients: client ", id, " is given to client-", it->second,
            " and to client-", d));
    }
  }
  if (num_clients >= 0 && static_cast<int64_t>(host.size()) < num_clients) {
    int64_t first = 0;
    while (host.count(first)) ++first;
    return absl::InvalidArgumentError(absl::StrCat(
        "--daemon-clients leaves ", num_clients - static_cast<int64_t>(host.size()),
        " of the config's ", num_clients, " clients without a daemon (client ",
        first, " first); the coordinator would wait for them"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> PlanDaemonClients(
    const std::vector<std::string>& given, int daemons,
    const std::string& config_path) {
  int64_t num_clients = -1;  // unknown without a config
  if (!config_path.empty()) {
    SHEFL_ASSIGN_OR_RETURN(num_clients, ConfigClients(config_path));
  }
  if (!given.empty()) {
    if (static_cast<int>(given.size()) != daemons)
      return absl::InvalidArgumentError(absl::StrCat(
          "--daemon-clients: ", given.size(), " given for --clients ",
          daemons, ": give it once per daemon, client-0's first"));
    SHEFL_RETURN_IF_ERROR(CheckGiven(given, num_clients));
    return given;
  }
  if (num_clients < 0) return std::vector<std::string>(daemons);
  const std::vector<ClientSet> sets = SplitClients(num_clients, daemons);
  if (static_cast<int>(sets.size()) < daemons)
    return absl::InvalidArgumentError(absl::StrCat(
        "--clients ", daemons, ": more daemons than the config's ",
        num_clients, " clients (clients.num_clients)"));
  std::vector<std::string> specs;
  for (const ClientSet& s : sets) specs.push_back(s.Spec());
  return specs;
}

namespace {

absl::Status MakePrivateDir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  // Keys live here: only the owner may list or enter the folder.
  if (!ec)
    fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace, ec);
  if (ec)
    return absl::InternalError(
        absl::StrCat("cannot make '", dir, "' (0700): ", ec.message()));
  return absl::OkStatus();
}

// A file of a kit: `from` in the PKI folder (or, when `path`, any path),
// written as `name` with `mode`.
struct KitFile {
  std::string from, name;
  mode_t mode = 0644;
  bool path = false;
};

// One kit's folder: files from text or copied.
class KitWriter {
 public:
  KitWriter(std::string dir, std::string pki,
            std::function<void(const std::string&)> on_file)
      : dir_(std::move(dir)), pki_(std::move(pki)), on_file_(std::move(on_file)) {}

  absl::Status Write(const std::string& name, const std::string& text,
                     mode_t mode) {
    const std::string path = dir_ + "/" + name;
    SHEFL_RETURN_IF_ERROR(WriteFileDurably(path, text, mode));
    // The mode went through the umask; start.sh must stay executable and
    // a key private whatever it is.
    if (::chmod(path.c_str(), mode) != 0)
      return absl::InternalError(absl::StrCat("cannot chmod ", path));
    if (on_file_) on_file_(path);
    return absl::OkStatus();
  }
  // The folder, then `files` in order; stops at the first error.
  absl::Status Fill(const std::vector<KitFile>& files) {
    SHEFL_RETURN_IF_ERROR(MakePrivateDir(dir_));
    for (const KitFile& f : files) {
      SHEFL_ASSIGN_OR_RETURN(auto text,
                             ReadWholeFile(f.path ? f.from : pki_ + "/" + f.from));
      SHEFL_RETURN_IF_ERROR(Write(f.name, text, f.mode));
    }
    return absl::OkStatus();
  }

 private:
  std::string dir_, pki_;
  std::function<void(const std::string&)> on_file_;
};

bool IsIpv6(const std::string& host) {
  return host.find(':') != std::string::npos;
}

// "[v6]:port" for an IPv6 literal, as gRPC targets want it.
std::string HostPort(const std::string& host, int port) {
  return IsIpv6(host) ? absl::StrCat("[", host, "]:", port)
                      : absl::StrCat(host, ":", port);
}

// Every address of the coordinator's host: of the family the daemons dial.
std::string ListenAll(const std::string& host, int port) {
  return HostPort(IsIpv6(host) ? "::" : "0.0.0.0", port);
}

// What every kit's text says; the caller adds its own part (config, clients).
KitText Text(const KitOptions& o, const std::string& name) {
  KitText t;
  t.name = name;
  t.folder = KitsDir(o.pki_dir) + "/" + name;
  t.host = o.host;
  t.coordinator = HostPort(o.host, o.port);
  t.listen = ListenAll(o.host, o.port);
  return t;
}

absl::Status WriteCoordinatorKit(const KitOptions& o, KitWriter& w) {
  KitText t = Text(o, "coordinator");
  t.has_config = !o.config_path.empty();
  std::vector<KitFile> files = {{"ca.pem", "ca.pem"},
                                {"server.pem", "server.pem"},
                                {"server.key", "server.key", 0600},
                                {"tokens", "tokens", 0600}};
  if (t.has_config)
    files.push_back({o.config_path, "config.yaml", 0644, /*path=*/true});
  SHEFL_RETURN_IF_ERROR(w.Fill(files));
  SHEFL_RETURN_IF_ERROR(w.Write("start.sh", CoordinatorStartScript(t), 0755));
  return w.Write("README.txt", KitReadme(t), 0644);
}

absl::Status WriteDaemonKit(const KitOptions& o, int i, KitWriter& w) {
  const std::string name = absl::StrCat("client-", i);
  KitText t = Text(o, name);
  if (!o.daemon_clients.empty()) t.clients = o.daemon_clients[i];
  // Generic names inside: the folder says whose they are.
  SHEFL_RETURN_IF_ERROR(w.Fill({{"ca.pem", "ca.pem"},
                                {name + ".pem", "client.pem"},
                                {name + ".key", "client.key", 0600},
                                {name + ".token", "client.token", 0600}}));
  SHEFL_RETURN_IF_ERROR(w.Write("coordinator", t.coordinator + "\n", 0644));
  SHEFL_RETURN_IF_ERROR(w.Write("start.sh", DaemonStartScript(t), 0755));
  return w.Write("README.txt", KitReadme(t), 0644);
}

}  // namespace

absl::Status WriteStartKits(
    const KitOptions& o,
    const std::function<void(const std::string&)>& on_file) {
  const std::string kits = KitsDir(o.pki_dir);
  std::error_code ec;
  if (o.force) fs::remove_all(kits, ec);
  if (ec)
    return absl::InternalError(
        absl::StrCat("--force: cannot remove '", kits, "': ", ec.message()));
  SHEFL_RETURN_IF_ERROR(MakePrivateDir(kits));
  KitWriter coordinator(kits + "/coordinator", o.pki_dir, on_file);
  SHEFL_RETURN_IF_ERROR(WriteCoordinatorKit(o, coordinator));
  for (int i = 0; i < o.daemons; ++i) {
    KitWriter daemon(absl::StrCat(kits, "/client-", i), o.pki_dir, on_file);
    SHEFL_RETURN_IF_ERROR(WriteDaemonKit(o, i, daemon));
  }
  return absl::OkStatus();
}

}  // namespace shefl
