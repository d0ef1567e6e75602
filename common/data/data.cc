// LoadDataset's dispatch, the folder layouts of each data set, and the
// helpers the readers share. The readers themselves live in data_idx.cc,
// data_cifar.cc, data_svhn.cc, data_text.cc and data_synthetic.cc.
#include "common/data/data.h"

#include <ATen/ops/empty.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/core/status_macros.h"
#include "common/data/data_sources.h"
#include "common/data/data_svhn.h"

namespace shefl {
namespace {

namespace fs = std::filesystem;

// `dir/name.gz` if it exists, else `dir/name`; NotFound naming both.
absl::StatusOr<std::string> FindMaybeGz(const std::string& dir,
                                        const std::string& name) {
  std::error_code ec;
  const std::string gz = (fs::path(dir) / (name + ".gz")).string();
  if (fs::exists(gz, ec)) return gz;
  const std::string plain = (fs::path(dir) / name).string();
  if (fs::exists(plain, ec)) return plain;
  return absl::NotFoundError(
      absl::StrCat("neither ", gz, " nor ", plain, " exists"));
}

// The folder holding `marker`: root itself, or root/subdir as the archives
// unpack (cifar-10-batches-bin/, cifar-100-binary/).
std::string FolderWith(const std::string& root, const std::string& subdir,
                       const std::string& marker) {
  std::error_code ec;
  if (!fs::exists(fs::path(root) / marker, ec) &&
      fs::exists(fs::path(root) / subdir / marker, ec)) {
    return (fs::path(root) / subdir).string();
  }
  return root;
}

absl::StatusOr<Dataset> LoadMnistLike(const std::string& root, bool train,
                                      bool fashion) {
  const std::string prefix = train ? "train" : "t10k";
  SHEFL_ASSIGN_OR_RETURN(auto images,
                         FindMaybeGz(root, prefix + "-images-idx3-ubyte"));
  SHEFL_ASSIGN_OR_RETURN(auto labels,
                         FindMaybeGz(root, prefix + "-labels-idx1-ubyte"));
  if (fashion) return ReadIdx(images, labels, 10, 0.2860f, 0.3530f, "fmnist");
  return ReadIdx(images, labels, 10, 0.1307f, 0.3081f, "mnist");
}

absl::StatusOr<Dataset> LoadCifar(const std::string& root, bool train,
                                  bool hundred) {
  if (hundred) {
    const std::string dir = FolderWith(root, "cifar-100-binary", "train.bin");
    return ReadCifar100({(fs::path(dir) / (train ? "train.bin" : "test.bin"))
                             .string()});
  }
  const std::string dir =
      FolderWith(root, "cifar-10-batches-bin", "data_batch_1.bin");
  std::vector<std::string> files;
  if (train) {
    for (int i = 1; i <= 5; ++i) {
      files.push_back(
          (fs::path(dir) / absl::StrCat("data_batch_", i, ".bin")).string());
    }
  } else {
    files.push_back((fs::path(dir) / "test_batch.bin").string());
  }
  return ReadCifar10(files);
}

absl::Status CheckTextConfig(const DataConfig& config) {
  if (config.text_vocab < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data.text_vocab must be >= 2, got ", config.text_vocab));
  }
  if (config.text_max_len < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data.text_max_len must be >= 1, got ", config.text_max_len));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> DefaultRoot(const std::string& dataset) {
  if (dataset == "fmnist") return std::string("/usr/share/datasets/fashion-mnist");
  if (dataset == "mnist") return std::string("/usr/share/datasets/mnist");
  if (dataset == "cifar10") {
    return std::string("/usr/share/datasets/cifar-10-batches-bin");
  }
  if (dataset == "cifar100") {
    return std::string("/usr/share/datasets/cifar-100-binary");
  }
  if (dataset == "svhn") return std::string("/usr/share/datasets/svhn");
  if (dataset == "agnews") return std::string("/usr/share/datasets/ag_news_csv");
  if (dataset == "synthetic") return std::string();
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown data.dataset '", dataset,
      "' (fmnist | mnist | cifar10 | cifar100 | svhn | agnews | synthetic)"));
}

namespace {

absl::StatusOr<Dataset> LoadFrom(const DataConfig& config,
                                 const std::string& root, bool train,
                                 uint64_t seed) {
  const std::string& name = config.dataset;
  if (name == "fmnist" || name == "mnist") {
    return LoadMnistLike(root, train, name == "fmnist");
  }
  if (name == "cifar10" || name == "cifar100") {
    return LoadCifar(root, train, name == "cifar100");
  }
  if (name == "svhn") {
    return ReadSvhnMat(
        (fs::path(root) / (train ? "train_32x32.mat" : "test_32x32.mat"))
            .string());
  }
  if (name == "agnews") {
    SHEFL_RETURN_IF_ERROR(CheckTextConfig(config));
    return ReadAgNews(
        (fs::path(root) / (train ? "train.csv" : "test.csv")).string(),
        config.text_vocab, config.text_max_len);
  }
  return MakeSynthetic(config, train, seed);
}

}  // namespace

absl::StatusOr<Dataset> LoadDataset(const DataConfig& config, bool train,
                                    uint64_t seed) {
  SHEFL_ASSIGN_OR_RETURN(auto standard, DefaultRoot(config.dataset));
  const std::string root = config.root.empty() ? standard : config.root;
  auto loaded = LoadFrom(config, root, train, seed);
  // A missing file: say which data set, and where its files come from.
  if (!loaded.ok() && absl::IsNotFound(loaded.status()))
    return absl::NotFoundError(absl::StrCat(
        "data set '", config.dataset, "': ", loaded.status().message(), "; ",
        DataSourceHint(config.dataset, root)));
  return loaded;
}

std::vector<int64_t> SampleShape(const Dataset& dataset) {
  if (!dataset.x.defined() || dataset.x.dim() < 1) return {};
  auto sizes = dataset.x.sizes();
  return std::vector<int64_t>(sizes.begin() + 1, sizes.end());
}

absl::StatusOr<std::vector<int64_t>> LabelVector(const Dataset& dataset) {
  if (!dataset.y.defined()) return std::vector<int64_t>();
  try {
    at::Tensor y = dataset.y.to(at::kCPU, at::kLong).contiguous();
    const int64_t* p = y.data_ptr<int64_t>();
    return std::vector<int64_t>(p, p + y.numel());
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("LabelVector: ", e.what()));
  }
}

absl::StatusOr<Dataset> Subset(const Dataset& dataset,
                               const std::vector<int64_t>& indices) {
  const int64_t n = dataset.size();
  for (int64_t i : indices) {
    if (i < 0 || i >= n) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Subset of ", dataset.name, ": index ", i, " outside [0, ", n, ")"));
    }
  }
  try {
    const int64_t k = static_cast<int64_t>(indices.size());
    at::Tensor idx = at::empty({k}, at::TensorOptions().dtype(at::kLong));
    if (k > 0) {
      std::memcpy(idx.data_ptr<int64_t>(), indices.data(), k * sizeof(int64_t));
    }
    Dataset out;
    out.name = dataset.name;
    out.num_classes = dataset.num_classes;
    out.x = dataset.x.index_select(0, idx.to(dataset.x.device()));
    out.y = dataset.y.index_select(0, idx.to(dataset.y.device()));
    return out;
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("Subset: ", e.what()));
  }
}

absl::StatusOr<std::string> ReadMaybeGzipFile(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  gzbuffer(f, 1 << 20);
  std::string out;
  std::vector<char> chunk(1 << 20);
  int got;
  while ((got = gzread(f, chunk.data(), static_cast<unsigned>(chunk.size()))) >
         0) {
    out.append(chunk.data(), got);
  }
  int code = Z_OK;
  const char* message = gzerror(f, &code);
  const bool plain = gzdirect(f) == 1;
  std::string detail = message ? message : "";
  if (detail.rfind(path + ": ", 0) == 0) detail.erase(0, path.size() + 2);
  gzclose(f);
  if (got < 0 || (!plain && code == Z_BUF_ERROR)) {
    return absl::DataLossError(absl::StrCat(
        path, ": gzip data is truncated or corrupt (", detail, ")"));
  }
  return out;
}

}  // namespace shefl
