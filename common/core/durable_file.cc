#include "common/core/durable_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/core/fd_reserve.h"

namespace shefl {

namespace {

absl::Status SysError(const std::string& what, const std::string& path) {
  return absl::InternalError(
      absl::StrCat(what, " '", path, "': ", std::strerror(errno)));
}

absl::Status WriteAll(int fd, const std::string& data,
                      const std::string& path) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return SysError("cannot write", path);
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status FsyncParentDir(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int fd =
      OpenWithReserve(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return SysError("cannot open directory", dir);
  const int rc = ::fsync(fd);
  const int saved = errno;
  ::close(fd);
  errno = saved;
  if (rc != 0) return SysError("cannot fsync directory", dir);
  return absl::OkStatus();
}

absl::Status AppendDurably(const std::string& path, const std::string& text) {
  const bool existed = ::access(path.c_str(), F_OK) == 0;
  const int fd =
      OpenWithReserve(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
                      0644);
  if (fd < 0) return SysError("cannot open", path);
  absl::Status st = WriteAll(fd, text, path);
  if (st.ok() && ::fsync(fd) != 0) st = SysError("cannot fsync", path);
  if (::close(fd) != 0 && st.ok()) st = SysError("cannot close", path);
  if (st.ok() && !existed) st = FsyncParentDir(path);
  return st;
}

absl::Status WriteFileDurably(const std::string& path,
                              const std::string& contents, mode_t mode) {
  const std::string tmp = path + ".tmp";
  // A fresh file, never through a link: a tmp left by a crash is removed
  // (unlink removes a link, not what it points at), and if anything
  // appears there again before the open, the open fails rather than
  // writing (a key, say) where someone else chose.
  ::unlink(tmp.c_str());
  const int fd = OpenWithReserve(tmp.c_str(),
                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                        mode);
  if (fd < 0) return SysError("cannot create", tmp);
  absl::Status st = WriteAll(fd, contents, tmp);
  // open() applies the umask; a key file must be exactly `mode`.
  if (st.ok() && ::fchmod(fd, mode) != 0) st = SysError("cannot chmod", tmp);
  if (st.ok() && ::fsync(fd) != 0) st = SysError("cannot fsync", tmp);
  if (::close(fd) != 0 && st.ok()) st = SysError("cannot close", tmp);
  if (st.ok() && std::rename(tmp.c_str(), path.c_str()) != 0)
    st = SysError("cannot rename over", path);
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  return FsyncParentDir(path);
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace shefl
