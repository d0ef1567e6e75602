#include "cli/ports.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace shefl {
namespace {

sockaddr_in Loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return addr;
}

// Binds a fresh socket to 127.0.0.1:0 and reports the port the kernel chose.
absl::StatusOr<int> BindEphemeral(int* fd_out) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", strerror(errno)));
  *fd_out = fd;
  sockaddr_in addr = Loopback(0);
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return absl::InternalError(
        absl::StrCat("binding 127.0.0.1:0: ", strerror(errno)));
  }
  return static_cast<int>(ntohs(addr.sin_port));
}

}  // namespace

absl::StatusOr<std::vector<int>> PickFreePorts(int count) {
  std::vector<int> fds;
  std::vector<int> ports;
  absl::Status status;
  for (int i = 0; i < count; ++i) {
    int fd = -1;
    absl::StatusOr<int> port = BindEphemeral(&fd);
    if (fd >= 0) fds.push_back(fd);
    if (!port.ok()) {
      status = port.status();
      break;
    }
    ports.push_back(*port);
  }
  for (int fd : fds) close(fd);
  if (!status.ok()) return status;
  return ports;
}

bool PortAcceptsConnection(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr = Loopback(port);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

}  // namespace shefl
