// Data set readers (svhn: data_svhn.h): each format becomes a Dataset.
//
//   fmnist, mnist   IDX files (gzip or plain): x float32 [N,1,28,28],
//                   (v/255 - mean)/std with FMNIST 0.2860/0.3530 and
//                   MNIST 0.1307/0.3081.
//   cifar10         binary version, data_batch_1..5.bin / test_batch.bin,
//                   records of 1 label byte + 3072 pixel bytes (R, G, B
//                   planes of 32x32): x float32 [N,3,32,32], normalised
//                   per channel, mean 0.4914,0.4822,0.4465 and std
//                   0.2470,0.2435,0.2616.
//   cifar100        binary version, train.bin / test.bin, records of coarse
//                   byte, fine byte, 3072 pixel bytes; the fine label is y.
//                   Same normalisation as cifar10.
//   agnews          train.csv / test.csv, rows "class","title","description"
//                   (RFC 4180 quoting), class 1-4 becomes label 0-3.
//                   x int64 [N, text_max_len]: hashed tokens, 0 pads.
//   synthetic       seeded Gaussian mixture, x float32 [N, F]; train and
//                   test share the class means drawn from the seed.
//
// Every function here returns a Status instead of throwing: LibTorch errors
// come back as InternalError, file problems name the file and what is wrong.
#ifndef SHEFL_COMMON_DATA_DATA_H_
#define SHEFL_COMMON_DATA_DATA_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/core/config.h"
#include "common/data/dataset.h"

namespace shefl {

// The train (or test) split of config.dataset, read from config.root or,
// when that is empty, from DefaultRoot(config.dataset). `seed` is used by
// the synthetic set only. Unknown names give InvalidArgument.
absl::StatusOr<Dataset> LoadDataset(const DataConfig& config, bool train,
                                    uint64_t seed);

// The standard folder of a data set: fmnist /usr/share/datasets/fashion-mnist
// (Debian's dataset-fashion-mnist), mnist /usr/share/datasets/mnist, cifar10
// /usr/share/datasets/cifar-10-batches-bin, cifar100
// /usr/share/datasets/cifar-100-binary, agnews /usr/share/datasets/ag_news_csv,
// synthetic "" (nothing to read).
absl::StatusOr<std::string> DefaultRoot(const std::string& dataset);

// The shape of one sample, x.sizes() without the batch dimension: {1,28,28},
// {3,32,32}, {L} for text, {F} for synthetic. Models size their inputs by it.
std::vector<int64_t> SampleShape(const Dataset& dataset);

// The labels as a plain vector, the form partition.h takes.
absl::StatusOr<std::vector<int64_t>> LabelVector(const Dataset& dataset);

// The rows `indices` (in that order) of a data set: a client's shard.
absl::StatusOr<Dataset> Subset(const Dataset& dataset,
                               const std::vector<int64_t>& indices);

// ---- Readers for one format, given explicit files (tests use these) ----

// An IDX image file (magic 2051, ubyte, [N, rows, cols]) and an IDX label
// file (magic 2049, [N]) of the same N; labels must be < num_classes.
absl::StatusOr<Dataset> ReadIdx(const std::string& images_path,
                                const std::string& labels_path,
                                int64_t num_classes, float mean, float std,
                                const std::string& name);

// CIFAR-10 batches (1 + 3072 bytes a record), concatenated in order.
absl::StatusOr<Dataset> ReadCifar10(const std::vector<std::string>& files);

// CIFAR-100 files (2 + 3072 bytes a record); y is the fine label.
absl::StatusOr<Dataset> ReadCifar100(const std::vector<std::string>& files);

// An AG News CSV file. vocab >= 2, max_len >= 1. A first row whose class
// field is not a number is taken as a header and skipped.
absl::StatusOr<Dataset> ReadAgNews(const std::string& path, int64_t vocab,
                                   int64_t max_len);

// The synthetic Gaussian mixture (config.synthetic_*), deterministic from
// `seed`: class means from one stream, train and test samples from two
// others, so the two splits differ but share the means.
absl::StatusOr<Dataset> MakeSynthetic(const DataConfig& config, bool train,
                                      uint64_t seed);

// ---- Building blocks ----

// The whole content of a file, gunzipped when it starts with the gzip magic
// 1f 8b (zlib's gzread passes plain files through). A truncated or corrupt
// gzip stream is DataLoss naming the file; a missing file is NotFound.
absl::StatusOr<std::string> ReadMaybeGzipFile(const std::string& path);

// RFC 4180 CSV: comma-separated fields, optionally quoted; inside quotes
// commas and newlines are literal and "" is one quote. Blank lines are
// skipped. `source` names the input in errors (with the line number).
absl::StatusOr<std::vector<std::vector<std::string>>> ParseCsv(
    std::string_view text, const std::string& source);

// FNV-1a, 64 bit: the stable hash behind token ids.
uint64_t Fnv1a64(std::string_view bytes);

// Token ids of `text`: maximal runs of ASCII letters and digits, lowercased,
// each mapped to 1 + Fnv1a64(word) % (vocab - 1), so that no vocabulary has
// to be shared between processes. At most max_len ids; no padding.
std::vector<int64_t> TokenizeText(std::string_view text, int64_t vocab,
                                  int64_t max_len);

}  // namespace shefl

#endif  // SHEFL_COMMON_DATA_DATA_H_
