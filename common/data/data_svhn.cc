// SVHN cropped digits (train_32x32.mat, test_32x32.mat of the original
// release): MATLAB level-5 MAT files holding X, uint8 [32,32,3,N] in
// MATLAB's column-major order, and y, [N,1] labels 1..10 where 10 is the
// digit 0. A small reader of the subset of MAT v5 those files use:
//
//   128-byte header: text, 8 bytes subsystem offset, version 0x0100 and
//   the endian indicator "IM" (little-endian; big-endian files are
//   refused). Then data elements, each an 8-byte tag (type, byte count)
//   or a 4-byte "small" tag (count in the upper 16 bits) with <= 4 bytes
//   of data; elements are padded to 8 bytes. miCOMPRESSED (15) holds a
//   zlib stream that inflates to one whole element; it is not padded.
//   miMATRIX (14): array flags (class, complex bit), dimensions, name,
//   real part. MATLAB stores a double array in the smallest integer type
//   that holds its values, so y's real part may be any numeric type.
#include "common/data/data_svhn.h"

#include <ATen/ops/empty.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/core/status_macros.h"
#include "common/data/data.h"

namespace shefl {
namespace {

enum : uint32_t {
  miINT8 = 1, miUINT8 = 2, miINT16 = 3, miUINT16 = 4, miINT32 = 5,
  miUINT32 = 6, miSINGLE = 7, miDOUBLE = 9, miINT64 = 12, miUINT64 = 13,
  miMATRIX = 14, miCOMPRESSED = 15,
};
constexpr uint32_t kUint8Class = 9;  // mxUINT8_CLASS
constexpr int64_t kPixels = 3 * 32 * 32;
// Per-channel mean and std of the SVHN training set (the values torchvision
// examples use), applied as (v/255 - mean)/std like the CIFAR reader.
constexpr float kMean[3] = {0.4377f, 0.4438f, 0.4728f};
constexpr float kStd[3] = {0.1980f, 0.2010f, 0.1970f};

uint32_t U32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// One data element: its type and the bytes of its data (a view into a
// buffer the caller keeps alive).
struct Element {
  uint32_t type = 0;
  std::string_view data;
};

// Reads the element at `*pos` of `bytes` and advances past it (and its
// padding). `what` names the file and place for errors.
absl::StatusOr<Element> NextElement(std::string_view bytes, size_t* pos,
                                    const std::string& what) {
  if (bytes.size() - *pos < 8) {
    return absl::DataLossError(absl::StrCat(
        what, ": truncated (", bytes.size() - *pos,
        " bytes left where an 8-byte data element tag should be)"));
  }
  const char* p = bytes.data() + *pos;
  const uint32_t first = U32(p);
  Element e;
  if ((first >> 16) != 0) {  // small data element
    e.type = first & 0xffff;
    const uint32_t n = first >> 16;
    if (n > 4) {
      return absl::DataLossError(
          absl::StrCat(what, ": small data element claims ", n, " bytes"));
    }
    e.data = bytes.substr(*pos + 4, n);
    *pos += 8;
    return e;
  }
  e.type = first;
  const uint64_t n = U32(p + 4);
  if (n > bytes.size() - *pos - 8) {
    return absl::DataLossError(absl::StrCat(
        what, ": truncated (data element of type ", e.type, " claims ", n,
        " bytes, ", bytes.size() - *pos - 8, " left)"));
  }
  e.data = bytes.substr(*pos + 8, n);
  const uint64_t padded = e.type == miCOMPRESSED ? n : (n + 7) / 8 * 8;
  *pos = std::min<uint64_t>(bytes.size(), *pos + 8 + padded);
  return e;
}

absl::StatusOr<std::string> Inflate(std::string_view in,
                                    const std::string& what) {
  z_stream z{};
  if (inflateInit(&z) != Z_OK) {
    return absl::InternalError(absl::StrCat(what, ": inflateInit failed"));
  }
  std::string out(std::max<size_t>(in.size() * 4, 1 << 16), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    if (z.total_out == out.size()) out.resize(out.size() * 2);
    z.next_out = reinterpret_cast<Bytef*>(out.data() + z.total_out);
    z.avail_out = static_cast<uInt>(
        std::min<size_t>(out.size() - z.total_out, 1u << 30));
    rc = inflate(&z, Z_NO_FLUSH);
    // Out of room: grow and go on. Out of input: the stream is truncated.
    if (rc == Z_BUF_ERROR && z.avail_out == 0) rc = Z_OK;
  }
  const size_t got = z.total_out;
  const std::string msg = z.msg ? z.msg : "";
  inflateEnd(&z);
  if (rc != Z_STREAM_END) {
    return absl::DataLossError(absl::StrCat(
        what, ": compressed variable is truncated or corrupt (zlib ", rc,
        msg.empty() ? "" : ": " + msg, ")"));
  }
  out.resize(got);
  return out;
}

// A numeric MATLAB array: class, dimensions, and its real part.
struct MatArray {
  std::string name;
  uint32_t mx_class = 0;
  std::vector<int64_t> dims;
  Element real;
  // The inflated bytes when the variable was compressed; a unique_ptr so
  // that `real` keeps pointing at them when the MatArray moves.
  std::unique_ptr<std::string> storage;
};

// Parses the miMATRIX content `m` (array flags, dims, name, real part).
absl::Status ParseMatrix(std::string_view m, const std::string& what,
                         MatArray* out) {
  size_t pos = 0;
  SHEFL_ASSIGN_OR_RETURN(auto flags, NextElement(m, &pos, what));
  if (flags.type != miUINT32 || flags.data.size() != 8) {
    return absl::DataLossError(absl::StrCat(what, ": bad array flags"));
  }
  const uint32_t f = U32(flags.data.data());
  out->mx_class = f & 0xff;
  const bool complex = (f & 0x800) != 0;
  SHEFL_ASSIGN_OR_RETURN(auto dims, NextElement(m, &pos, what));
  if (dims.type != miINT32 || dims.data.size() % 4 != 0) {
    return absl::DataLossError(absl::StrCat(what, ": bad dimensions"));
  }
  for (size_t i = 0; i < dims.data.size(); i += 4) {
    int32_t d;
    std::memcpy(&d, dims.data.data() + i, 4);
    out->dims.push_back(d);
  }
  SHEFL_ASSIGN_OR_RETURN(auto name, NextElement(m, &pos, what));
  out->name = std::string(name.data);
  if (complex) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": variable '", out->name, "' is complex; SVHN's are real"));
  }
  if (out->mx_class < 6 || out->mx_class > 15) {
    // cell, struct, object, char, sparse: nothing SVHN holds.
    out->real = Element{};
    return absl::OkStatus();
  }
  SHEFL_ASSIGN_OR_RETURN(auto real, NextElement(m, &pos, what));
  out->real = real;
  return absl::OkStatus();
}

// Every top-level variable of a MAT v5 file, by name.
absl::StatusOr<std::vector<MatArray>> ReadMatV5(const std::string& bytes,
                                                const std::string& path) {
  if (bytes.size() < 128 || bytes.compare(0, 6, "MATLAB") != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": not a MATLAB level-5 MAT file (no 'MATLAB' header text",
        bytes.size() < 128 ? ", shorter than the 128-byte header)" : ")"));
  }
  if (bytes.compare(126, 2, "MI") == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": big-endian MAT file, not supported"));
  }
  if (bytes.compare(126, 2, "IM") != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": not a MAT v5 file (no endian indicator at byte 126; a "
              "v7.3 HDF5 or v4 file?)"));
  }
  const unsigned version = static_cast<unsigned char>(bytes[124]) |
                           static_cast<unsigned char>(bytes[125]) << 8;
  if (version != 0x0100) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": MAT file version 0x", absl::Hex(version),
        ", not 0x0100 (level 5); save it with -v7 or -v6, not -v7.3"));
  }
  std::vector<MatArray> vars;
  std::string_view all(bytes);
  size_t pos = 128;
  while (pos < all.size()) {
    const std::string what = absl::StrCat(path, " (byte ", pos, ")");
    SHEFL_ASSIGN_OR_RETURN(auto e, NextElement(all, &pos, what));
    MatArray var;
    Element matrix = e;
    if (e.type == miCOMPRESSED) {
      SHEFL_ASSIGN_OR_RETURN(auto inflated, Inflate(e.data, what));
      var.storage = std::make_unique<std::string>(std::move(inflated));
      size_t inner = 0;
      SHEFL_ASSIGN_OR_RETURN(
          matrix, NextElement(*var.storage, &inner, what + " inflated"));
    }
    if (matrix.type != miMATRIX) continue;  // not a variable
    SHEFL_RETURN_IF_ERROR(ParseMatrix(matrix.data, what, &var));
    vars.push_back(std::move(var));
  }
  return vars;
}

const MatArray* Find(const std::vector<MatArray>& vars, const char* name) {
  for (const auto& v : vars)
    if (v.name == name) return &v;
  return nullptr;
}

template <typename T>
void Widen(std::string_view data, std::vector<double>* out) {
  const size_t n = data.size() / sizeof(T);
  out->resize(n);
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, data.data() + i * sizeof(T), sizeof(T));
    (*out)[i] = static_cast<double>(v);
  }
}

// The values of a numeric real part as doubles; false for other types.
bool NumericValues(const Element& e, std::vector<double>* out) {
  switch (e.type) {
    case miINT8: Widen<int8_t>(e.data, out); return true;
    case miUINT8: Widen<uint8_t>(e.data, out); return true;
    case miINT16: Widen<int16_t>(e.data, out); return true;
    case miUINT16: Widen<uint16_t>(e.data, out); return true;
    case miINT32: Widen<int32_t>(e.data, out); return true;
    case miUINT32: Widen<uint32_t>(e.data, out); return true;
    case miSINGLE: Widen<float>(e.data, out); return true;
    case miDOUBLE: Widen<double>(e.data, out); return true;
    case miINT64: Widen<int64_t>(e.data, out); return true;
    case miUINT64: Widen<uint64_t>(e.data, out); return true;
    default: return false;
  }
}

std::string DimsText(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    absl::StrAppend(&s, i ? "," : "", dims[i]);
  return s + "]";
}

// X: uint8 [32,32,3,N] with N * 3072 bytes of uint8 data.
absl::StatusOr<int64_t> CheckX(const MatArray& x, const std::string& path) {
  const bool shape = x.dims.size() == 4 && x.dims[0] == 32 &&
                     x.dims[1] == 32 && x.dims[2] == 3 && x.dims[3] >= 1;
  if (!shape) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": X has dimensions ", DimsText(x.dims),
        ", expected [32,32,3,N]"));
  }
  if (x.mx_class != kUint8Class || x.real.type != miUINT8) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": X must be uint8 (class ", x.mx_class, ", data type ",
        x.real.type, "; expected class 9, type 2)"));
  }
  const int64_t n = x.dims[3];
  if (static_cast<int64_t>(x.real.data.size()) != n * kPixels) {
    return absl::DataLossError(absl::StrCat(
        path, ": X holds ", x.real.data.size(), " bytes, expected ",
        n * kPixels, " for ", n, " images"));
  }
  return n;
}

// y: [N,1] (or [1,N]) of integers 1..10; 10 becomes the digit 0.
absl::StatusOr<std::vector<int64_t>> CheckY(const MatArray& y, int64_t n,
                                            const std::string& path) {
  const bool shape = y.dims.size() == 2 &&
                     ((y.dims[0] == n && y.dims[1] == 1) ||
                      (y.dims[0] == 1 && y.dims[1] == n));
  if (!shape) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": y has dimensions ", DimsText(y.dims), ", expected [", n,
        ",1] to match X's N = ", n));
  }
  std::vector<double> values;
  if (!NumericValues(y.real, &values) ||
      static_cast<int64_t>(values.size()) != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": y is not a numeric array of ", n, " values (data type ",
        y.real.type, ", ", values.size(), " values)"));
  }
  std::vector<int64_t> labels(n);
  for (int64_t i = 0; i < n; ++i) {
    const double v = values[i];
    if (!(v >= 1 && v <= 10) || v != std::floor(v)) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": y(", i + 1, ") = ", v, ", expected an integer in 1..10"));
    }
    labels[i] = static_cast<int64_t>(v) % 10;
  }
  return labels;
}

}  // namespace

absl::StatusOr<Dataset> ReadSvhnMat(const std::string& path) {
  SHEFL_ASSIGN_OR_RETURN(auto bytes, ReadMaybeGzipFile(path));
  SHEFL_ASSIGN_OR_RETURN(auto vars, ReadMatV5(bytes, path));
  const MatArray* x = Find(vars, "X");
  const MatArray* y = Find(vars, "y");
  if (x == nullptr || y == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": no variable '", x == nullptr ? "X" : "y",
        "' (an SVHN cropped-digits file holds X and y)"));
  }
  SHEFL_ASSIGN_OR_RETURN(auto n, CheckX(*x, path));
  SHEFL_ASSIGN_OR_RETURN(auto labels, CheckY(*y, n, path));
  float table[3][256];
  for (int c = 0; c < 3; ++c)
    for (int v = 0; v < 256; ++v) table[c][v] = (v / 255.0f - kMean[c]) / kStd[c];
  try {
    Dataset out;
    out.name = "svhn";
    out.num_classes = 10;
    out.x = at::empty({n, 3, 32, 32}, at::TensorOptions().dtype(at::kFloat));
    out.y = at::empty({n}, at::TensorOptions().dtype(at::kLong));
    std::memcpy(out.y.data_ptr<int64_t>(), labels.data(), n * sizeof(int64_t));
    float* dst = out.x.data_ptr<float>();
    const auto* src = reinterpret_cast<const unsigned char*>(x->real.data.data());
    // MATLAB X(r, c, ch, i) sits at r + 32c + 1024ch + 3072i; the tensor
    // wants [i][ch][r][c]: transpose each 32x32 plane.
    for (int64_t i = 0; i < n; ++i) {
      for (int ch = 0; ch < 3; ++ch) {
        const unsigned char* plane = src + i * kPixels + ch * 1024;
        float* out_plane = dst + i * kPixels + ch * 1024;
        for (int r = 0; r < 32; ++r)
          for (int c = 0; c < 32; ++c)
            out_plane[r * 32 + c] = table[ch][plane[c * 32 + r]];
      }
    }
    return out;
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("reading svhn: ", e.what()));
  }
}

}  // namespace shefl
