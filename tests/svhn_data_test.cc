// SVHN's cropped-digits .mat files: the test writes small MAT v5 files in
// the release's exact layout (128-byte header, miMATRIX variables X uint8
// [32,32,3,N] column-major and y [N,1] of 1..10, plain and inside
// miCOMPRESSED zlib streams) and reads them back through LoadDataset.
// LibTorch's headers (glog's CHECK) before Catch2's, which then wins.
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/core/config.h"
#include "common/data/data.h"
#include "common/data/data_svhn.h"
#include "common/fed/config_load.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

namespace fs = std::filesystem;

constexpr uint32_t kInt8 = 1, kUint8 = 2, kInt32 = 5, kUint32 = 6,
                   kDouble = 9, kMatrix = 14, kCompressed = 15;
constexpr uint32_t kDoubleClass = 6, kUint8Class = 9;

using testing::TempDir;

void Put32(std::string* s, uint32_t v) { s->append(reinterpret_cast<char*>(&v), 4); }

// A data element: 8-byte tag, data, zero padding to 8 bytes.
std::string Element(uint32_t type, const std::string& data) {
  std::string s;
  Put32(&s, type);
  Put32(&s, static_cast<uint32_t>(data.size()));
  s += data;
  s.resize((s.size() + 7) / 8 * 8, '\0');
  return s;
}

// A name of <= 4 characters in the small element format MATLAB writes.
std::string SmallName(const std::string& name) {
  std::string s;
  Put32(&s, (static_cast<uint32_t>(name.size()) << 16) | kInt8);
  std::string data = name;
  data.resize(4, '\0');
  return s + data;
}

std::string Matrix(const std::string& name, uint32_t mx_class,
                   const std::vector<int32_t>& dims, uint32_t data_type,
                   const std::string& real) {
  std::string flags, d;
  Put32(&flags, mx_class);
  Put32(&flags, 0);
  for (int32_t v : dims) Put32(&d, static_cast<uint32_t>(v));
  return Element(kMatrix, Element(kUint32, flags) + Element(kInt32, d) +
                              SmallName(name) + Element(data_type, real));
}

// miCOMPRESSED: the zlib stream of a whole element, not padded.
std::string Compressed(const std::string& element) {
  uLongf size = compressBound(element.size());
  std::string z(size, '\0');
  REQUIRE(compress(reinterpret_cast<Bytef*>(z.data()), &size,
                   reinterpret_cast<const Bytef*>(element.data()),
                   element.size()) == Z_OK);
  z.resize(size);
  std::string s;
  Put32(&s, kCompressed);
  Put32(&s, static_cast<uint32_t>(z.size()));
  return s + z;
}

std::string Header() {
  std::string text = "MATLAB 5.0 MAT-file, Platform: GLNXA64, Created on: "
                     "Mon Nov 23 12:00:00 2026";
  text.resize(116, ' ');
  std::string s = text + std::string(8, '\0');
  s += '\0';
  s += '\x01';  // version 0x0100, little-endian
  return s + "IM";
}

// MATLAB X(r, c, ch, i) of the test images.
uint8_t Pixel(int r, int c, int ch, int i) {
  return static_cast<uint8_t>((r * 7 + c * 3 + ch * 50 + i * 11) % 256);
}

std::string XData(int n) {
  std::string x(static_cast<size_t>(n) * 3072, '\0');
  for (int i = 0; i < n; ++i)
    for (int ch = 0; ch < 3; ++ch)
      for (int c = 0; c < 32; ++c)
        for (int r = 0; r < 32; ++r)
          x[i * 3072 + ch * 1024 + c * 32 + r] = static_cast<char>(Pixel(r, c, ch, i));
  return x;
}

std::string XVar(int n) {
  return Matrix("X", kUint8Class, {32, 32, 3, n}, kUint8, XData(n));
}

// y as MATLAB saves it: class double; `as_uint8` stores the values in
// uint8 data, as MATLAB does for small integers.
std::string YVar(const std::vector<double>& labels, bool as_uint8) {
  std::string data;
  for (double v : labels) {
    if (as_uint8) {
      data += static_cast<char>(static_cast<uint8_t>(v));
    } else {
      data.append(reinterpret_cast<const char*>(&v), 8);
    }
  }
  return Matrix("y", kDoubleClass, {static_cast<int32_t>(labels.size()), 1},
                as_uint8 ? kUint8 : kDouble, data);
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

const std::vector<double> kLabels = {10, 1, 5};  // 10 is the digit 0

void CheckImages(const Dataset& d) {
  REQUIRE(d.name == "svhn");
  CHECK(d.num_classes == 10);
  REQUIRE((d.x.sizes().vec() == std::vector<int64_t>{3, 3, 32, 32}));
  REQUIRE((d.y.sizes().vec() == std::vector<int64_t>{3}));
  auto y = LabelVector(d);
  REQUIRE(y.ok());
  CHECK((*y == std::vector<int64_t>{0, 1, 5}));
  const float mean[3] = {0.4377f, 0.4438f, 0.4728f};
  const float stdv[3] = {0.1980f, 0.2010f, 0.1970f};
  at::Tensor x = d.x.contiguous();
  const float* p = x.data_ptr<float>();
  int wrong = 0;
  for (int i = 0; i < 3; ++i)
    for (int ch = 0; ch < 3; ++ch)
      for (int r = 0; r < 32; ++r)
        for (int c = 0; c < 32; ++c) {
          const float want = (Pixel(r, c, ch, i) / 255.0f - mean[ch]) / stdv[ch];
          wrong += std::abs(p[((i * 3 + ch) * 32 + r) * 32 + c] - want) > 1e-5f;
        }
  CHECK(wrong == 0);
}

void CheckError(const absl::StatusOr<Dataset>& got, absl::StatusCode code,
                const std::string& path, const std::string& words) {
  REQUIRE_FALSE(got.ok());
  INFO(got.status().ToString());
  CHECK(got.status().code() == code);
  CHECK(got.status().message().find(path) != std::string::npos);
  CHECK(got.status().message().find(words) != std::string::npos);
}

TEST_CASE("svhn mat files read through LoadDataset plain and compressed") {
  TempDir dir;
  // train: plain elements, y stored as doubles; test: both variables in
  // miCOMPRESSED streams, y stored as uint8 (MATLAB's own choice).
  WriteFile(dir / "train_32x32.mat", Header() + XVar(3) + YVar(kLabels, false));
  WriteFile(dir / "test_32x32.mat", Header() + Compressed(XVar(3)) +
                                        Compressed(YVar(kLabels, true)));
  DataConfig config;
  config.dataset = "svhn";
  config.root = dir.path();
  auto train = LoadDataset(config, true, 1);
  REQUIRE(train.ok());
  CheckImages(*train);
  auto test = LoadDataset(config, false, 1);
  REQUIRE(test.ok());
  CheckImages(*test);
  CHECK(train->x.equal(test->x));
  CHECK((SampleShape(*train) == std::vector<int64_t>{3, 32, 32}));
  auto root = DefaultRoot("svhn");
  REQUIRE(root.ok());
  CHECK(*root == "/usr/share/datasets/svhn");
}

TEST_CASE("svhn config accepts the dataset name") {
  auto config = ParseConfig("data:\n  dataset: svhn\n", "svhn.yaml");
  REQUIRE(config.ok());
  CHECK(config->data.dataset == "svhn");
}

TEST_CASE("svhn refuses broken mat files naming the file") {
  TempDir dir;
  const std::string path = dir / "bad.mat";
  const std::string good = Header() + XVar(3) + YVar(kLabels, false);
  SECTION("truncated in X") {
    WriteFile(path, good.substr(0, 128 + 2000));
    CheckError(ReadSvhnMat(path), absl::StatusCode::kDataLoss, path, "truncated");
  }
  SECTION("truncated compressed stream") {
    const std::string z = Header() + Compressed(XVar(3));
    std::string cut = z;
    // Keep the tag's byte count but drop the stream's second half.
    cut.resize(128 + 8 + (z.size() - 136) / 2);
    uint32_t n = static_cast<uint32_t>(cut.size() - 136);
    std::memcpy(cut.data() + 132, &n, 4);
    WriteFile(path, cut);
    CheckError(ReadSvhnMat(path), absl::StatusCode::kDataLoss, path,
               "truncated or corrupt");
  }
  SECTION("wrong magic") {
    std::string bad = good;
    bad.replace(0, 6, "\x89HDF\r\n");
    WriteFile(path, bad);
    CheckError(ReadSvhnMat(path), absl::StatusCode::kInvalidArgument, path,
               "not a MATLAB level-5 MAT file");
  }
  SECTION("no endian indicator") {
    std::string bad = good;
    bad[126] = 'x';
    WriteFile(path, bad);
    CheckError(ReadSvhnMat(path), absl::StatusCode::kInvalidArgument, path,
               "endian indicator");
  }
  SECTION("v7.3 version word") {
    std::string bad = good;
    bad[125] = '\x02';
    WriteFile(path, bad);
    CheckError(ReadSvhnMat(path), absl::StatusCode::kInvalidArgument, path,
               "version 0x200");
  }
  SECTION("missing y") {
    WriteFile(path, Header() + Compressed(XVar(3)));
    CheckError(ReadSvhnMat(path), absl::StatusCode::kInvalidArgument, path,
               "no variable 'y'");
  }
  SECTION("missing X") {
    WriteFile(path, Header() + YVar(kLabels, true));
    CheckError(ReadSvhnMat(path), absl::StatusCode::kInvalidArgument, path,
               "no variable 'X'");
  }
  SECTION("N mismatch between X and y") {
    WriteFile(path, Header() + XVar(3) + YVar({1, 2}, true));
    CheckError(ReadSvhnMat(path), absl::StatusCode::kInvalidArgument, path,
               "y has dimensions [2,1], expected [3,1]");
  }
  SECTION("wrong X dims") {
    WriteFile(path, Header() +
                        Matrix("X", kUint8Class, {32, 32, 1, 3}, kUint8,
                               std::string(3 * 1024, '\0')) +
                        YVar(kLabels, true));
    CheckError(ReadSvhnMat(path), absl::StatusCode::kInvalidArgument, path,
               "X has dimensions [32,32,1,3]");
  }
  SECTION("X not uint8") {
    WriteFile(path, Header() +
                        Matrix("X", kDoubleClass, {32, 32, 3, 1}, kDouble,
                               std::string(3072 * 8, '\0')) +
                        YVar({1}, true));
    CheckError(ReadSvhnMat(path), absl::StatusCode::kInvalidArgument, path,
               "X must be uint8");
  }
  SECTION("label outside 1..10") {
    WriteFile(path, Header() + XVar(3) + YVar({1, 11, 2}, true));
    CheckError(ReadSvhnMat(path), absl::StatusCode::kInvalidArgument, path,
               "y(2) = 11");
  }
  SECTION("missing file") {
    CheckError(ReadSvhnMat(dir / "none.mat"), absl::StatusCode::kNotFound,
               dir / "none.mat", "cannot open");
  }
}

}  // namespace
}  // namespace shefl
