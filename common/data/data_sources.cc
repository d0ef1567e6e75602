#include "common/data/data_sources.h"

#include "absl/strings/str_cat.h"

namespace shefl {
namespace {

struct Source {
  const char* dataset;
  const char* files;
  const char* from;
};

constexpr Source kSources[] = {
    {"fmnist", "the four Fashion-MNIST IDX files (train-images-idx3-ubyte.gz, ...)",
     "Debian: sudo apt install dataset-fashion-mnist; or "
     "https://github.com/zalandoresearch/fashion-mnist"},
    {"mnist", "the four MNIST IDX files (train-images-idx3-ubyte.gz, ...)",
     "the MNIST database page of LeCun, Cortes and Burges"},
    {"cifar10", "CIFAR-10's binary version (data_batch_1.bin .. 5, test_batch.bin)",
     "cifar-10-binary.tar.gz from https://www.cs.toronto.edu/~kriz/cifar.html, "
     "unpacked"},
    {"cifar100", "CIFAR-100's binary version (train.bin, test.bin)",
     "cifar-100-binary.tar.gz from https://www.cs.toronto.edu/~kriz/cifar.html, "
     "unpacked"},
    {"svhn", "SVHN's cropped digits (train_32x32.mat, test_32x32.mat)",
     "http://ufldl.stanford.edu/housenumbers/ (format 2)"},
    {"agnews", "AG News as CSV (train.csv, test.csv)",
     "ag_news_csv.tar.gz of Zhang, Zhao and LeCun's text classification sets, "
     "unpacked"},
};

}  // namespace

std::string DataSourceHint(const std::string& dataset, const std::string& root) {
  for (const Source& s : kSources)
    if (dataset == s.dataset)
      return absl::StrCat("put ", s.files, " in ", root, " (", s.from,
                          "), or set data.root to the folder that holds them; "
                          "docs/RUNNING.md (\"Data sets\")");
  return "";
}

}  // namespace shefl
