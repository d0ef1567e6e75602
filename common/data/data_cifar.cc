// CIFAR-10 / CIFAR-100 binary version: fixed-size records of label
// byte(s) followed by 3072 pixel bytes, the R, G and B planes of a 32x32
// image in row-major order -- already the [3,32,32] layout of the tensor.
#include <ATen/ops/empty.h>

#include <exception>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/core/status_macros.h"
#include "common/data/data.h"

namespace shefl {
namespace {

constexpr int64_t kPixels = 3 * 32 * 32;
constexpr float kMean[3] = {0.4914f, 0.4822f, 0.4465f};
constexpr float kStd[3] = {0.2470f, 0.2435f, 0.2616f};

// The record layout of one of the two formats.
struct CifarFormat {
  const char* name;       // "cifar10" | "cifar100"
  int64_t label_bytes;    // 1 | 2 (coarse, fine)
  int64_t label_offset;   // which label byte is y: 0 | 1
  int64_t num_classes;    // 10 | 100
};

absl::StatusOr<std::string> ReadRecords(const std::string& path,
                                        const CifarFormat& format) {
  SHEFL_ASSIGN_OR_RETURN(auto bytes, ReadMaybeGzipFile(path));
  const int64_t record = format.label_bytes + kPixels;
  const int64_t size = static_cast<int64_t>(bytes.size());
  if (size == 0 || size % record != 0) {
    return absl::DataLossError(absl::StrCat(
        path, ": size ", size, " is not a positive multiple of the ", record,
        "-byte ", format.name, " record (truncated or not a ", format.name,
        " binary file?)"));
  }
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  for (int64_t r = 0; r < size / record; ++r) {
    const int64_t label = p[r * record + format.label_offset];
    if (label >= format.num_classes) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": record ", r, " has label ", label,
                       ", not below ", format.num_classes));
    }
  }
  return bytes;
}

absl::StatusOr<Dataset> ReadCifar(const std::vector<std::string>& files,
                                  const CifarFormat& format) {
  if (files.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(format.name, ": no files to read"));
  }
  std::vector<std::string> contents;
  int64_t n = 0;
  const int64_t record = format.label_bytes + kPixels;
  for (const auto& path : files) {
    SHEFL_ASSIGN_OR_RETURN(auto bytes, ReadRecords(path, format));
    n += static_cast<int64_t>(bytes.size()) / record;
    contents.push_back(std::move(bytes));
  }
  float table[3][256];
  for (int c = 0; c < 3; ++c) {
    for (int v = 0; v < 256; ++v) table[c][v] = (v / 255.0f - kMean[c]) / kStd[c];
  }
  try {
    Dataset out;
    out.name = format.name;
    out.num_classes = format.num_classes;
    out.x = at::empty({n, 3, 32, 32}, at::TensorOptions().dtype(at::kFloat));
    out.y = at::empty({n}, at::TensorOptions().dtype(at::kLong));
    float* x = out.x.data_ptr<float>();
    int64_t* y = out.y.data_ptr<int64_t>();
    for (const auto& bytes : contents) {
      const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
      for (int64_t r = 0; r < static_cast<int64_t>(bytes.size()) / record;
           ++r, ++y, x += kPixels) {
        const unsigned char* rec = p + r * record;
        *y = rec[format.label_offset];
        const unsigned char* pix = rec + format.label_bytes;
        for (int64_t i = 0; i < kPixels; ++i) x[i] = table[i / 1024][pix[i]];
      }
    }
    return out;
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("reading ", format.name, ": ", e.what()));
  }
}

}  // namespace

absl::StatusOr<Dataset> ReadCifar10(const std::vector<std::string>& files) {
  return ReadCifar(files, CifarFormat{"cifar10", 1, 0, 10});
}

absl::StatusOr<Dataset> ReadCifar100(const std::vector<std::string>& files) {
  return ReadCifar(files, CifarFormat{"cifar100", 2, 1, 100});
}

}  // namespace shefl
