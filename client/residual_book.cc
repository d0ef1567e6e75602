#include "client/residual_book.h"

#include <ATen/ATen.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/core/durable_file.h"
#include "common/core/mutex.h"

namespace shefl {

namespace {

constexpr char kMagic[8] = {'S', 'H', 'E', 'F', 'L', 'E', 'F', '1'};
struct FileHeader {
  uint64_t fingerprint;
  int64_t round;
  uint64_t numel;
};

std::string Serialize(uint64_t fingerprint, int64_t round, const at::Tensor& r) {
  const at::Tensor cpu = r.to(at::kCPU, at::kFloat).contiguous();
  const FileHeader h{fingerprint, round, static_cast<uint64_t>(cpu.numel())};
  std::string out(kMagic, sizeof(kMagic));
  out.append(reinterpret_cast<const char*>(&h), sizeof(h));
  out.append(reinterpret_cast<const char*>(cpu.data_ptr<float>()),
             cpu.numel() * sizeof(float));
  return out;
}

// A file's residual when it is whole and of `fingerprint`.
bool Parse(const std::string& bytes, uint64_t fingerprint, int64_t* round,
           at::Tensor* residual) {
  FileHeader h;
  if (bytes.size() < sizeof(kMagic) + sizeof(h) ||
      std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    return false;
  std::memcpy(&h, bytes.data() + sizeof(kMagic), sizeof(h));
  const size_t body = bytes.size() - sizeof(kMagic) - sizeof(h);
  if (h.fingerprint != fingerprint || h.numel != body / sizeof(float) ||
      body % sizeof(float) != 0)
    return false;
  *round = h.round;
  *residual = at::empty({static_cast<int64_t>(h.numel)}, at::kFloat);
  std::memcpy(residual->data_ptr<float>(),
              bytes.data() + sizeof(kMagic) + sizeof(h), body);
  return true;
}

}  // namespace

uint64_t Fingerprint(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string ResidualBook::PathOf(const Key& key, int64_t round) const {
  return absl::StrCat(dir_, "/c", key.first, "-m", key.second, "-r", round,
                      ".ef");
}

void ResidualBook::RemoveFile(const Key& key, int64_t round) {
  auto it = files_.find(key);
  if (it == files_.end() || it->second.erase(round) == 0) return;
  ::unlink(PathOf(key, round).c_str());
  if (it->second.empty()) files_.erase(it);
}

absl::Status ResidualBook::Load(int* loaded, const std::set<int64_t>& clients) {
  *loaded = 0;
  if (dir_.empty()) return absl::OkStatus();
  if (::mkdir(dir_.c_str(), 0755) != 0 && errno != EEXIST)
    return absl::InternalError(absl::StrCat(
        "cannot create the residual folder ", dir_, ": ", std::strerror(errno)));
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir_.c_str()), ::closedir);
  if (!d)
    return absl::InternalError(absl::StrCat("cannot read ", dir_, ": ",
                                            std::strerror(errno)));
  MutexLock lock(mu_);
  while (const dirent* e = ::readdir(d.get())) {
    long long client = 0, model = 0, named_round = 0;
    int used = 0;
    if (std::sscanf(e->d_name, "c%lld-m%lld-r%lld.ef%n", &client, &model,
                    &named_round, &used) != 3 ||
        e->d_name[used] != '\0')
      continue;  // a temporary file or someone else's
    if (!clients.empty() && !clients.count(client)) continue;
    std::ifstream in(absl::StrCat(dir_, "/", e->d_name), std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    int64_t round = 0;
    at::Tensor residual;
    if (!Parse(bytes.str(), fingerprint_, &round, &residual) ||
        round != named_round)
      continue;
    book_[{client, model}][round] = residual;
    files_[{client, model}].insert(round);
  }
  *loaded = static_cast<int>(book_.size());
  return absl::OkStatus();
}

at::Tensor ResidualBook::InForce(int64_t client, int64_t model, int64_t round) {
  MutexLock lock(mu_);
  const Key key{client, model};
  // A round handed out again: what its first run and the rounds after it
  // left is void, in memory and on disk.
  if (auto f = files_.find(key); f != files_.end()) {
    const std::vector<int64_t> later(f->second.lower_bound(round),
                                     f->second.end());
    for (int64_t r : later) RemoveFile(key, r);
  }
  auto it = book_.find(key);
  if (it == book_.end()) return at::Tensor();
  auto& rounds = it->second;
  rounds.erase(rounds.lower_bound(round), rounds.end());
  if (rounds.empty()) {
    book_.erase(it);
    return at::Tensor();
  }
  // The newest is in force. The one before it is kept too: the coordinator
  // checkpoints a round while the next one runs, so after a crash it may
  // hand out again the round before the newest task's (never further back).
  while (rounds.size() > 2) rounds.erase(rounds.begin());
  return rounds.rbegin()->second;
}

absl::Status ResidualBook::Stage(int64_t client, int64_t model, int64_t round,
                                 at::Tensor residual) {
  const Key key{client, model};
  // Written outside the lock: one task at a time stages a pair.
  if (!dir_.empty()) {
    if (auto st = WriteFileDurably(PathOf(key, round),
                                   Serialize(fingerprint_, round, residual));
        !st.ok())
      return absl::Status(st.code(),
                          absl::StrCat("cannot keep the error-feedback residual "
                                       "of client ", client, " model ", model,
                                       ": ", st.message()));
  }
  MutexLock lock(mu_);
  book_[key][round] = std::move(residual);
  if (dir_.empty()) return absl::OkStatus();
  std::set<int64_t>& on_disk = files_[key];
  on_disk.insert(round);
  // Three rounds: the newest two may be handed out again (see InForce),
  // and the rerun needs the one before them.
  while (on_disk.size() > 3) RemoveFile(key, *on_disk.begin());
  return absl::OkStatus();
}

absl::Status ResidualBook::Commit(int64_t client, int64_t model,
                                  int64_t round) {
  MutexLock lock(mu_);
  auto it = book_.find({client, model});
  if (it == book_.end() || !it->second.count(round))
    return absl::NotFoundError(absl::StrCat("no residual of client ", client,
                                            " model ", model, " round ", round,
                                            " to commit"));
  return absl::OkStatus();
}

void ResidualBook::Discard(int64_t client, int64_t model, int64_t round) {
  MutexLock lock(mu_);
  const Key key{client, model};
  RemoveFile(key, round);
  auto it = book_.find(key);
  if (it == book_.end()) return;
  it->second.erase(round);
  if (it->second.empty()) book_.erase(it);
}

at::Tensor ResidualBook::Newest(int64_t client, int64_t model) const {
  MutexLock lock(mu_);
  auto it = book_.find({client, model});
  return it == book_.end() ? at::Tensor() : it->second.rbegin()->second;
}

size_t ResidualBook::size() const {
  MutexLock lock(mu_);
  return book_.size();
}

}  // namespace shefl
