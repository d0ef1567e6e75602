// IDX files, the MNIST / Fashion-MNIST format: a big-endian header
// (magic, then one uint32 per dimension) followed by raw ubyte data.
#include <ATen/ops/empty.h>

#include <cstring>
#include <exception>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/core/status_macros.h"
#include "common/data/data.h"

namespace shefl {
namespace {

constexpr uint32_t kIdxImagesMagic = 2051;  // 0x00000803: ubyte, 3 dims
constexpr uint32_t kIdxLabelsMagic = 2049;  // 0x00000801: ubyte, 1 dim

uint32_t BigEndian32(const std::string& bytes, size_t offset) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data()) + offset;
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) |
         (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// Checks the magic and returns the dimensions; `what` is "image" or
// "label" for messages.
absl::StatusOr<std::vector<int64_t>> IdxHeader(const std::string& path,
                                               const std::string& bytes,
                                               uint32_t magic, int dims,
                                               const std::string& what) {
  const size_t header = 4 + 4 * static_cast<size_t>(dims);
  if (bytes.size() >= 4 && BigEndian32(bytes, 0) != magic) {
    const uint32_t got = BigEndian32(bytes, 0);
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: bad IDX magic number %u (0x%08x), expected %u for an IDX %s file", path, got,
        got, magic, what));
  }
  if (bytes.size() < header) {
    return absl::DataLossError(absl::StrCat(
        path, ": truncated IDX header: ", bytes.size(), " bytes, need ",
        header));
  }
  std::vector<int64_t> shape;
  for (int d = 0; d < dims; ++d) shape.push_back(BigEndian32(bytes, 4 + 4 * d));
  // Saturating product: a corrupt header must not wrap around.
  constexpr int64_t kHuge = int64_t{1} << 62;
  int64_t payload = 1;
  for (int64_t s : shape) {
    payload = (s != 0 && payload > kHuge / s) ? kHuge : payload * s;
  }
  const int64_t have = static_cast<int64_t>(bytes.size() - header);
  if (have < payload) {
    return absl::DataLossError(absl::StrCat(
        path, ": truncated: the IDX header promises ", payload, " bytes of ",
        what, " data, the file holds ", have));
  }
  return shape;
}

}  // namespace

absl::StatusOr<Dataset> ReadIdx(const std::string& images_path,
                                const std::string& labels_path,
                                int64_t num_classes, float mean, float std,
                                const std::string& name) {
  SHEFL_ASSIGN_OR_RETURN(auto images, ReadMaybeGzipFile(images_path));
  SHEFL_ASSIGN_OR_RETURN(auto labels, ReadMaybeGzipFile(labels_path));
  SHEFL_ASSIGN_OR_RETURN(
      auto ishape, IdxHeader(images_path, images, kIdxImagesMagic, 3, "image"));
  SHEFL_ASSIGN_OR_RETURN(
      auto lshape, IdxHeader(labels_path, labels, kIdxLabelsMagic, 1, "label"));
  const int64_t n = ishape[0], rows = ishape[1], cols = ishape[2];
  if (lshape[0] != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        images_path, " holds ", n, " images but ", labels_path, " holds ",
        lshape[0], " labels"));
  }
  const auto* lab = reinterpret_cast<const unsigned char*>(labels.data()) + 8;
  for (int64_t i = 0; i < n; ++i) {
    if (lab[i] >= num_classes) {
      return absl::InvalidArgumentError(
          absl::StrCat(labels_path, ": label ", int{lab[i]}, " of item ", i,
                       " is not below ", num_classes));
    }
  }
  float table[256];  // every byte value, normalised once
  for (int v = 0; v < 256; ++v) table[v] = (v / 255.0f - mean) / std;
  const auto* pix = reinterpret_cast<const unsigned char*>(images.data()) + 16;
  try {
    Dataset out;
    out.name = name;
    out.num_classes = num_classes;
    out.x = at::empty({n, 1, rows, cols}, at::TensorOptions().dtype(at::kFloat));
    out.y = at::empty({n}, at::TensorOptions().dtype(at::kLong));
    float* x = out.x.data_ptr<float>();
    for (int64_t i = 0; i < n * rows * cols; ++i) x[i] = table[pix[i]];
    int64_t* y = out.y.data_ptr<int64_t>();
    for (int64_t i = 0; i < n; ++i) y[i] = lab[i];
    return out;
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("reading ", images_path, ": ",
                                            e.what()));
  }
}

}  // namespace shefl
