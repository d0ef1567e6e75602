#include "server/run/model_store.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/core/durable_file.h"
#include "common/core/failpoint.h"
#include "common/core/fd_reserve.h"
#include "common/core/mutex.h"

namespace shefl {

ModelStore::ModelStore(std::vector<std::vector<float>> models) {
  for (auto& m : models)
    models_.push_back(std::make_shared<const std::vector<float>>(std::move(m)));
  versions_.assign(models_.size(), 0);
}

int64_t ModelStore::num_models() const {
  MutexLock lock(mu_);
  return static_cast<int64_t>(models_.size());
}

uint64_t ModelStore::dim() const {
  MutexLock lock(mu_);
  return models_.empty() ? 0 : models_[0]->size();
}

ModelSnapshot ModelStore::Get(int64_t model) const {
  MutexLock lock(mu_);
  return models_.at(model);
}

uint64_t ModelStore::Version(int64_t model) const {
  MutexLock lock(mu_);
  return versions_.at(model);
}

std::pair<ModelSnapshot, uint64_t> ModelStore::GetVersioned(
    int64_t model) const {
  MutexLock lock(mu_);
  return {models_.at(model), versions_.at(model)};
}

void ModelStore::Publish(int64_t model, std::vector<float> weights) {
  auto snap = std::make_shared<const std::vector<float>>(std::move(weights));
  MutexLock lock(mu_);
  if (keep_) kept_.at(model)[versions_.at(model)] = models_.at(model);
  models_.at(model) = std::move(snap);
  versions_.at(model)++;
}

void ModelStore::KeepFrom(int64_t model, uint64_t oldest) {
  MutexLock lock(mu_);
  if (!keep_) kept_.resize(models_.size());
  keep_ = true;
  auto& kept = kept_.at(model);
  kept.erase(kept.begin(), kept.lower_bound(oldest));
}

ModelSnapshot ModelStore::GetVersion(int64_t model, uint64_t version) const {
  MutexLock lock(mu_);
  if (versions_.at(model) == version) return models_.at(model);
  if (!keep_) return nullptr;
  auto it = kept_.at(model).find(version);
  return it == kept_.at(model).end() ? nullptr : it->second;
}

size_t ModelStore::kept_versions() const {
  MutexLock lock(mu_);
  size_t n = 0;
  for (const auto& kept : kept_) n += kept.size();
  return n;
}

std::string Sha256Hex(const void* data, size_t size) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(static_cast<const unsigned char*>(data), size, digest);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char b : digest) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

std::vector<std::string> ModelStore::Digests() const {
  std::vector<std::string> out;
  for (int64_t m = 0; m < num_models(); ++m) {
    ModelSnapshot s = Get(m);
    out.push_back(Sha256Hex(s->data(), s->size() * sizeof(float)));
  }
  return out;
}

namespace {

// Version 2 ends with the SHA-256 of everything before it; version 1
// (without) still loads, so older runs resume.
constexpr char kMagic[8] = {'S', 'H', 'E', 'F', 'L', 'C', 'K', '2'};
constexpr char kMagicV1[8] = {'S', 'H', 'E', 'F', 'L', 'C', 'K', '1'};
constexpr size_t kDigestBytes = 32;

// SHA-256 over the pieces written or read, in order.
class Digest {
 public:
  Digest() : ctx_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr); }
  ~Digest() { EVP_MD_CTX_free(ctx_); }
  Digest(const Digest&) = delete;
  Digest& operator=(const Digest&) = delete;
  void Add(const void* data, size_t size) { EVP_DigestUpdate(ctx_, data, size); }
  std::string Finish() {
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_DigestFinal_ex(ctx_, out, &n);
    return std::string(reinterpret_cast<const char*>(out), n);
  }

 private:
  EVP_MD_CTX* ctx_;
};

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::InternalError(
      absl::StrCat(what, " '", path, "': ", std::strerror(errno)));
}

absl::Status WriteAll(int fd, const void* data, size_t size,
                      const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Errno("cannot write", path);
    p += n;
    size -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}


}  // namespace

std::pair<std::vector<ModelSnapshot>, std::vector<uint64_t>>
ModelStore::Snapshot() const {
  MutexLock lock(mu_);
  return {models_, versions_};
}

absl::Status ModelStore::SaveCheckpoint(const std::string& path,
                                        int64_t round) const {
  auto [models, versions] = Snapshot();
  return SaveCheckpoint(path, round, models, versions);
}

absl::Status ModelStore::SaveCheckpoint(
    const std::string& path, int64_t round,
    const std::vector<ModelSnapshot>& models,
    const std::vector<uint64_t>& versions) {
  const std::string tmp = path + ".tmp";
  int fd = OpenWithReserve(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                           0644);
  if (fd < 0) return Errno("cannot create checkpoint", tmp);
  Failpoint("checkpoint.before_write");
  const uint64_t header[3] = {static_cast<uint64_t>(round), models.size(),
                              models.empty() ? 0 : models[0]->size()};
  Digest digest;
  auto put = [&](const void* data, size_t size) {
    digest.Add(data, size);
    return WriteAll(fd, data, size, tmp);
  };
  absl::Status st = put(kMagic, sizeof(kMagic));
  if (st.ok()) st = put(header, sizeof(header));
  if (st.ok()) st = put(versions.data(), versions.size() * sizeof(uint64_t));
  for (size_t m = 0; st.ok() && m < models.size(); ++m)
    st = put(models[m]->data(), models[m]->size() * sizeof(float));
  if (st.ok()) {
    const std::string sum = digest.Finish();
    st = WriteAll(fd, sum.data(), sum.size(), tmp);
  }
  if (st.ok()) Failpoint("checkpoint.after_write");
  if (st.ok() && ::fsync(fd) != 0) st = Errno("cannot fsync", tmp);
  ::close(fd);
  if (!st.ok()) return st;
  Failpoint("checkpoint.after_fsync");
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return Errno("cannot rename checkpoint to", path);
  Failpoint("checkpoint.after_rename");
  st = FsyncParentDir(path);
  if (st.ok()) Failpoint("checkpoint.after_dir_fsync");
  return st;
}

absl::StatusOr<std::pair<std::unique_ptr<ModelStore>, int64_t>> ModelStore::LoadCheckpoint(
    const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("no checkpoint at '", path, "'"));
  std::error_code ec;
  const uint64_t file_size = std::filesystem::file_size(path, ec);
  char magic[8];
  uint64_t header[3];
  if (ec || !in.read(magic, 8) ||
      (std::memcmp(magic, kMagic, 8) != 0 && std::memcmp(magic, kMagicV1, 8) != 0))
    return absl::DataLossError(absl::StrCat("'", path, "' is not a shefl checkpoint"));
  const bool checksummed = std::memcmp(magic, kMagic, 8) == 0;
  if (!in.read(reinterpret_cast<char*>(header), sizeof(header)) ||
      header[1] == 0 || header[1] > 4096 || header[2] > (1ULL << 34))
    return absl::DataLossError(absl::StrCat("'", path, "': bad header"));
  // The size the header implies, checked before anything is allocated.
  const uint64_t expected = 8 + sizeof(header) + header[1] * sizeof(uint64_t) +
                            header[1] * header[2] * sizeof(float) +
                            (checksummed ? kDigestBytes : 0);
  if (file_size != expected)
    return absl::DataLossError(absl::StrCat(
        "'", path, "': truncated or trailing bytes (", file_size,
        " bytes, its header says ", expected, ")"));
  Digest digest;
  digest.Add(magic, 8);
  digest.Add(header, sizeof(header));
  std::vector<uint64_t> versions(header[1]);
  in.read(reinterpret_cast<char*>(versions.data()), header[1] * sizeof(uint64_t));
  digest.Add(versions.data(), header[1] * sizeof(uint64_t));
  std::vector<std::vector<float>> models(header[1], std::vector<float>(header[2]));
  for (auto& m : models) {
    in.read(reinterpret_cast<char*>(m.data()), m.size() * sizeof(float));
    digest.Add(m.data(), m.size() * sizeof(float));
  }
  if (checksummed) {
    std::string sum(kDigestBytes, '\0');
    in.read(sum.data(), kDigestBytes);
    if (in && sum != digest.Finish())
      return absl::DataLossError(absl::StrCat(
          "'", path, "': checksum mismatch (the file is damaged)"));
  }
  if (!in || in.peek() != EOF)
    return absl::DataLossError(absl::StrCat("'", path, "': truncated or trailing bytes"));
  auto store = std::make_unique<ModelStore>(std::move(models));
  {
    MutexLock lock(store->mu_);  // not shared yet; the analysis asks
    store->versions_ = versions;
  }
  return std::make_pair(std::move(store), static_cast<int64_t>(header[0]));
}

}  // namespace shefl
