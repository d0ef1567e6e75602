#include "common/data/data.h"

#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

namespace fs = std::filesystem;

using testing::TempDir;

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

void WriteGzip(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) ==
          static_cast<int>(bytes.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

std::string ReadRaw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void PutBigEndian(std::string* out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out->push_back(static_cast<char>(v >> s));
}

// An IDX file in the real layout: magic, dims, then the ubyte payload.
std::string Idx(uint32_t magic, const std::vector<uint32_t>& dims,
                const std::string& payload) {
  std::string out;
  PutBigEndian(&out, magic);
  for (uint32_t d : dims) PutBigEndian(&out, d);
  return out + payload;
}

// n 28x28 images with pixel (i, p) = (7*i + p) mod 256, labels i mod 10.
std::string ImagesPayload(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    for (int p = 0; p < 784; ++p) s.push_back(static_cast<char>((7 * i + p) % 256));
  }
  return s;
}
std::string LabelsPayload(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s.push_back(static_cast<char>(i % 10));
  return s;
}

bool Contains(const absl::Status& status, const std::string& text) {
  return std::string(status.message()).find(text) != std::string::npos;
}

}  // namespace

TEST_CASE("Fashion-MNIST from /usr/share/datasets reads in full") {
  const std::string root = "/usr/share/datasets/fashion-mnist";
  // scripts/setup.sh installs dataset-fashion-mnist; its absence is a
  // broken set-up, not a reason to skip.
  INFO("missing " << root << ": apt-get install dataset-fashion-mnist");
  REQUIRE(fs::exists(root));
  DataConfig config;  // dataset fmnist, root empty: the standard folder
  for (bool train : {true, false}) {
    auto ds = LoadDataset(config, train, 1);
    REQUIRE(ds.ok());
    const int64_t n = train ? 60000 : 10000;
    CHECK(ds->name == "fmnist");
    CHECK(ds->num_classes == 10);
    CHECK(ds->x.sizes() == at::IntArrayRef({n, 1, 28, 28}));
    CHECK(ds->x.scalar_type() == at::kFloat);
    CHECK(ds->y.scalar_type() == at::kLong);
    CHECK(SampleShape(*ds) == std::vector<int64_t>{1, 28, 28});
    auto labels = LabelVector(*ds);
    REQUIRE(labels.ok());
    REQUIRE(static_cast<int64_t>(labels->size()) == n);
    std::vector<int64_t> counts(10, 0);
    for (int64_t y : *labels) {
      REQUIRE(y >= 0);
      REQUIRE(y < 10);
      counts[y]++;
    }
    for (int64_t c : counts) CHECK(c == n / 10);  // FMNIST is balanced
    // Normalised: black is (0 - 0.2860)/0.3530, white (1 - 0.2860)/0.3530.
    CHECK(ds->x.min().item<float>() == Approx(-0.2860 / 0.3530).epsilon(1e-5));
    CHECK(ds->x.max().item<float>() == Approx((1 - 0.2860) / 0.3530).epsilon(1e-5));
  }
}

TEST_CASE("IDX gzip and plain files read identically") {
  TempDir dir;
  const std::string images = Idx(2051, {5, 28, 28}, ImagesPayload(5));
  const std::string labels = Idx(2049, {5}, LabelsPayload(5));
  WriteFile(dir / "i.idx", images);
  WriteFile(dir / "l.idx", labels);
  WriteGzip(dir / "i.idx.gz", images);
  WriteGzip(dir / "l.idx.gz", labels);
  auto plain = ReadIdx(dir / "i.idx", dir / "l.idx", 10, 0.1307f, 0.3081f, "m");
  auto gz = ReadIdx(dir / "i.idx.gz", dir / "l.idx.gz", 10, 0.1307f, 0.3081f,
                    "m");
  REQUIRE(plain.ok());
  REQUIRE(gz.ok());
  CHECK(plain->x.sizes() == at::IntArrayRef({5, 1, 28, 28}));
  CHECK(plain->x.equal(gz->x));
  CHECK(plain->y.equal(gz->y));
  for (int i = 0; i < 5; ++i) {
    CHECK(plain->y[i].item<int64_t>() == i);
    const int p = 3 * 28 + 4;  // row 3, column 4
    const float want = ((7 * i + p) % 256 / 255.0f - 0.1307f) / 0.3081f;
    CHECK(plain->x[i][0][3][4].item<float>() == Approx(want));
  }
}

TEST_CASE("LoadDataset finds MNIST files, .gz or not, under root") {
  TempDir dir;
  WriteGzip(dir / "train-images-idx3-ubyte.gz",
            Idx(2051, {20, 28, 28}, ImagesPayload(20)));
  WriteGzip(dir / "train-labels-idx1-ubyte.gz", Idx(2049, {20}, LabelsPayload(20)));
  WriteFile(dir / "t10k-images-idx3-ubyte", Idx(2051, {4, 28, 28}, ImagesPayload(4)));
  WriteFile(dir / "t10k-labels-idx1-ubyte", Idx(2049, {4}, LabelsPayload(4)));
  DataConfig config;
  config.dataset = "mnist";
  config.root = dir.path();
  auto train = LoadDataset(config, true, 1);
  auto test = LoadDataset(config, false, 1);
  REQUIRE(train.ok());
  REQUIRE(test.ok());
  CHECK(train->name == "mnist");
  CHECK(train->size() == 20);
  CHECK(test->size() == 4);
  // MNIST's own normalisation: pixel 0 of image 0 is 0.
  CHECK(train->x[0][0][0][0].item<float>() == Approx(-0.1307 / 0.3081));
  config.root = (fs::path(dir.path()) / "missing").string();
  auto missing = LoadDataset(config, true, 1);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
  CHECK(Contains(missing.status(), "train-images-idx3-ubyte"));
  // It names the data set and says where its files come from.
  CHECK(Contains(missing.status(), "data set 'mnist'"));
  CHECK(Contains(missing.status(), "set data.root"));
  CHECK(Contains(missing.status(), "docs/RUNNING.md (\"Data sets\")"));
  config.dataset = "cifar10";
  auto cifar = LoadDataset(config, true, 1);
  REQUIRE_FALSE(cifar.ok());
  CHECK(cifar.status().code() == absl::StatusCode::kNotFound);
  CHECK(Contains(cifar.status(), "cifar-10-binary.tar.gz"));
  CHECK(Contains(cifar.status(), config.root));
}

TEST_CASE("broken IDX files give errors that name the file") {
  TempDir dir;
  const std::string images = Idx(2051, {5, 28, 28}, ImagesPayload(5));
  const std::string labels = Idx(2049, {5}, LabelsPayload(5));
  WriteFile(dir / "labels", labels);

  SECTION("truncated plain file") {
    WriteFile(dir / "short", images.substr(0, images.size() - 100));
    auto ds = ReadIdx(dir / "short", dir / "labels", 10, 0.f, 1.f, "m");
    REQUIRE_FALSE(ds.ok());
    CHECK(Contains(ds.status(), dir / "short"));
    CHECK(Contains(ds.status(), "truncated"));
  }
  SECTION("truncated gzip stream") {
    WriteGzip(dir / "full.gz", images);
    const std::string gz = ReadRaw(dir / "full.gz");
    WriteFile(dir / "short.gz", gz.substr(0, gz.size() / 2));
    auto ds = ReadIdx(dir / "short.gz", dir / "labels", 10, 0.f, 1.f, "m");
    REQUIRE_FALSE(ds.ok());
    CHECK(Contains(ds.status(), dir / "short.gz"));
  }
  SECTION("truncated header") {
    WriteFile(dir / "tiny", images.substr(0, 10));
    auto ds = ReadIdx(dir / "tiny", dir / "labels", 10, 0.f, 1.f, "m");
    REQUIRE_FALSE(ds.ok());
    CHECK(Contains(ds.status(), dir / "tiny"));
  }
  SECTION("wrong magic: labels given as images") {
    auto ds = ReadIdx(dir / "labels", dir / "labels", 10, 0.f, 1.f, "m");
    REQUIRE_FALSE(ds.ok());
    CHECK(Contains(ds.status(), dir / "labels"));
    CHECK(Contains(ds.status(), "magic"));
    CHECK(Contains(ds.status(), "2049"));
  }
  SECTION("image and label counts differ") {
    WriteFile(dir / "images", images);
    WriteFile(dir / "four", Idx(2049, {4}, LabelsPayload(4)));
    auto ds = ReadIdx(dir / "images", dir / "four", 10, 0.f, 1.f, "m");
    REQUIRE_FALSE(ds.ok());
    CHECK(Contains(ds.status(), dir / "images"));
    CHECK(Contains(ds.status(), dir / "four"));
  }
  SECTION("label out of range") {
    WriteFile(dir / "images", images);
    WriteFile(dir / "big", Idx(2049, {5}, std::string(5, '\x0c')));
    auto ds = ReadIdx(dir / "images", dir / "big", 10, 0.f, 1.f, "m");
    REQUIRE_FALSE(ds.ok());
    CHECK(Contains(ds.status(), dir / "big"));
  }
  SECTION("missing file") {
    auto ds = ReadIdx(dir / "nope", dir / "labels", 10, 0.f, 1.f, "m");
    REQUIRE_FALSE(ds.ok());
    CHECK(ds.status().code() == absl::StatusCode::kNotFound);
    CHECK(Contains(ds.status(), dir / "nope"));
  }
}

namespace {

// A CIFAR record: label bytes, then channel c pixel p = (r + 3c + p) % 256.
std::string CifarRecord(const std::string& label_bytes, int r) {
  std::string s = label_bytes;
  for (int c = 0; c < 3; ++c) {
    for (int p = 0; p < 1024; ++p) s.push_back(static_cast<char>((r + 3 * c + p) % 256));
  }
  return s;
}

float CifarValue(int r, int c, int p) {
  const float mean[3] = {0.4914f, 0.4822f, 0.4465f};
  const float std[3] = {0.2470f, 0.2435f, 0.2616f};
  return ((r + 3 * c + p) % 256 / 255.0f - mean[c]) / std[c];
}

}  // namespace

TEST_CASE("CIFAR-10 binary batches read back labels and pixels") {
  TempDir dir;
  // Batch i holds records 3i..3i+2 with label (3i + j) % 10.
  for (int b = 1; b <= 5; ++b) {
    std::string batch;
    for (int j = 0; j < 3; ++j) {
      const int r = 3 * (b - 1) + j;
      batch += CifarRecord(std::string(1, static_cast<char>(r % 10)), r);
    }
    WriteFile(dir / ("data_batch_" + std::to_string(b) + ".bin"), batch);
  }
  WriteFile(dir / "test_batch.bin", CifarRecord("\x07", 99));
  DataConfig config;
  config.dataset = "cifar10";
  config.root = dir.path();
  auto train = LoadDataset(config, true, 1);
  REQUIRE(train.ok());
  CHECK(train->name == "cifar10");
  CHECK(train->num_classes == 10);
  CHECK(train->x.sizes() == at::IntArrayRef({15, 3, 32, 32}));
  for (int r = 0; r < 15; ++r) {
    CHECK(train->y[r].item<int64_t>() == r % 10);
    for (int c = 0; c < 3; ++c) {
      CHECK(train->x[r][c][5][7].item<float>() == Approx(CifarValue(r, c, 5 * 32 + 7)));
    }
  }
  auto test = LoadDataset(config, false, 1);
  REQUIRE(test.ok());
  CHECK(test->size() == 1);
  CHECK(test->y[0].item<int64_t>() == 7);
  CHECK(test->x[0][2][31][31].item<float>() == Approx(CifarValue(99, 2, 1023)));

  WriteFile(dir / "cut.bin", CifarRecord("\x01", 0).substr(0, 3000));
  auto cut = ReadCifar10({dir / "cut.bin"});
  REQUIRE_FALSE(cut.ok());
  CHECK(Contains(cut.status(), dir / "cut.bin"));
  WriteFile(dir / "label.bin", CifarRecord("\x0a", 0));
  auto bad_label = ReadCifar10({dir / "label.bin"});
  REQUIRE_FALSE(bad_label.ok());
  CHECK(Contains(bad_label.status(), dir / "label.bin"));
}

TEST_CASE("CIFAR-100 binary reads the fine label") {
  TempDir dir;
  std::string train;
  for (int r = 0; r < 4; ++r) {
    const char labels[2] = {static_cast<char>(r % 20), static_cast<char>(90 + r)};
    train += CifarRecord(std::string(labels, 2), r);
  }
  fs::create_directories(fs::path(dir.path()) / "cifar-100-binary");  // as unpacked
  WriteFile((fs::path(dir.path()) / "cifar-100-binary" / "train.bin").string(), train);
  DataConfig config;
  config.dataset = "cifar100";
  config.root = dir.path();
  auto ds = LoadDataset(config, true, 1);
  REQUIRE(ds.ok());
  CHECK(ds->num_classes == 100);
  CHECK(ds->x.sizes() == at::IntArrayRef({4, 3, 32, 32}));
  for (int r = 0; r < 4; ++r) {
    CHECK(ds->y[r].item<int64_t>() == 90 + r);
    CHECK(ds->x[r][1][0][0].item<float>() == Approx(CifarValue(r, 1, 0)));
  }
  // A CIFAR-10 file is not a whole number of CIFAR-100 records.
  WriteFile(dir / "ten.bin", CifarRecord("\x01", 0));
  auto wrong = ReadCifar100({dir / "ten.bin"});
  REQUIRE_FALSE(wrong.ok());
  CHECK(Contains(wrong.status(), dir / "ten.bin"));
}

TEST_CASE("CSV parsing handles quotes, commas, escaped quotes, newlines") {
  const std::string text =
      "\"3\",\"Wall St. Bears, \"\"Claw\"\" Back\",\"Short-sellers,\nwhine\"\r\n"
      "\r\n"
      "1,plain title,\"\"\n"
      "\"4\",\"a\",\"b\"";
  auto rows = ParseCsv(text, "mem.csv");
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 3);
  CHECK((*rows)[0] == std::vector<std::string>{
                          "3", "Wall St. Bears, \"Claw\" Back",
                          "Short-sellers,\nwhine"});
  CHECK((*rows)[1] == std::vector<std::string>{"1", "plain title", ""});
  CHECK((*rows)[2] == std::vector<std::string>{"4", "a", "b"});

  auto open = ParseCsv("1,\"never closed\n2,x,y\n", "mem.csv");
  REQUIRE_FALSE(open.ok());
  CHECK(Contains(open.status(), "mem.csv"));
  CHECK(Contains(open.status(), "line 1"));
  auto junk = ParseCsv("1,\"a\"b,c\n", "mem.csv");
  REQUIRE_FALSE(junk.ok());
}

TEST_CASE("tokens are lowercase alphanumeric words hashed into the vocab") {
  auto a = TokenizeText("Hello, WORLD! hello-world 42", 1000, 10);
  REQUIRE(a.size() == 5);
  CHECK(a[0] == a[2]);  // case folded
  CHECK(a[1] == a[3]);
  CHECK(a[0] != a[1]);
  for (int64_t id : a) {
    CHECK(id >= 1);
    CHECK(id < 1000);
  }
  CHECK(a[4] == 1 + static_cast<int64_t>(Fnv1a64("42") % 999));
  CHECK(Fnv1a64("") == 0xcbf29ce484222325ULL);  // FNV-1a offset basis
  CHECK(Fnv1a64("a") == 0xaf63dc4c8601ec8cULL);  // published test vector
  CHECK(TokenizeText("a b c d e", 1000, 3).size() == 3);
}

TEST_CASE("AG News CSV becomes padded token rows and labels 0-3") {
  TempDir dir;
  WriteFile(dir / "train.csv",
            "\"Class Index\",\"Title\",\"Description\"\n"
            "\"3\",\"Wall St. Bears Claw Back\",\"Short-sellers, \"\"ultra\"\" cynics\"\n"
            "\"1\",\"Peace\",\"talks, resumed\"\n"
            "\"4\",\"Chip\",\"\"\n");
  DataConfig config;
  config.dataset = "agnews";
  config.root = dir.path();
  config.text_vocab = 5000;
  config.text_max_len = 6;
  auto ds = LoadDataset(config, true, 1);
  REQUIRE(ds.ok());
  CHECK(ds->num_classes == 4);
  CHECK(ds->x.sizes() == at::IntArrayRef({3, 6}));
  CHECK(ds->x.scalar_type() == at::kLong);
  auto labels = LabelVector(*ds);
  REQUIRE(labels.ok());
  CHECK(*labels == std::vector<int64_t>{2, 0, 3});
  auto row0 = TokenizeText("Wall St. Bears Claw Back Short-sellers", 5000, 6);
  auto row1 = TokenizeText("Peace talks resumed", 5000, 6);
  for (int j = 0; j < 6; ++j) {
    CHECK(ds->x[0][j].item<int64_t>() == row0[j]);
    CHECK(ds->x[1][j].item<int64_t>() == (j < 3 ? row1[j] : 0));
  }
  CHECK(ds->x[2][0].item<int64_t>() == TokenizeText("chip", 5000, 1)[0]);
  CHECK(ds->x[2][1].item<int64_t>() == 0);

  WriteFile(dir / "bad.csv", "\"1\",\"a\",\"b\"\n\"5\",\"c\",\"d\"\n");
  auto bad = ReadAgNews(dir / "bad.csv", 100, 4);
  REQUIRE_FALSE(bad.ok());
  CHECK(Contains(bad.status(), dir / "bad.csv"));
  CHECK(Contains(bad.status(), "row 2"));
  WriteFile(dir / "short.csv", "\"1\",\"a\"\n");
  CHECK_FALSE(ReadAgNews(dir / "short.csv", 100, 4).ok());
  config.text_vocab = 1;
  auto vocab = LoadDataset(config, true, 1);
  REQUIRE_FALSE(vocab.ok());
  CHECK(Contains(vocab.status(), "data.text_vocab"));
}

TEST_CASE("synthetic data is deterministic from the seed and learnable") {
  DataConfig config;
  config.dataset = "synthetic";
  auto a = LoadDataset(config, true, 5);
  auto b = LoadDataset(config, true, 5);
  auto c = LoadDataset(config, true, 6);
  auto test = LoadDataset(config, false, 5);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(c.ok());
  REQUIRE(test.ok());
  CHECK(a->x.sizes() == at::IntArrayRef({2000, 20}));
  CHECK(test->x.sizes() == at::IntArrayRef({500, 20}));
  CHECK(a->num_classes == 4);
  CHECK(a->x.equal(b->x));
  CHECK(a->y.equal(b->y));
  CHECK_FALSE(a->x.equal(c->x));
  // Class means estimated on train classify test by nearest mean: train
  // and test share the means, and the classes are separable.
  auto ya = LabelVector(*a);
  auto yt = LabelVector(*test);
  REQUIRE(ya.ok());
  REQUIRE(yt.ok());
  std::vector<std::vector<double>> mean(4, std::vector<double>(20, 0.0));
  std::vector<int> count(4, 0);
  auto xa = a->x.accessor<float, 2>();
  for (int i = 0; i < 2000; ++i) {
    count[(*ya)[i]]++;
    for (int f = 0; f < 20; ++f) mean[(*ya)[i]][f] += xa[i][f];
  }
  for (int k = 0; k < 4; ++k) {
    CHECK(count[k] == 500);  // balanced
    for (auto& m : mean[k]) m /= count[k];
  }
  auto xt = test->x.accessor<float, 2>();
  int correct = 0;
  for (int i = 0; i < 500; ++i) {
    int best = 0;
    double best_d = 1e300;
    for (int k = 0; k < 4; ++k) {
      double d = 0;
      for (int f = 0; f < 20; ++f) d += std::pow(xt[i][f] - mean[k][f], 2);
      if (d < best_d) best_d = d, best = k;
    }
    correct += best == (*yt)[i];
  }
  INFO("nearest-mean accuracy " << correct / 500.0);
  CHECK(correct > 0.85 * 500);
  CHECK(correct < 500);  // not trivially separable

  config.synthetic_classes = 1;
  auto bad = LoadDataset(config, true, 5);
  REQUIRE_FALSE(bad.ok());
  CHECK(Contains(bad.status(), "data.synthetic_classes"));
}

TEST_CASE("unknown data set names are refused by name") {
  DataConfig config;
  config.dataset = "imagenet";
  auto ds = LoadDataset(config, true, 1);
  REQUIRE_FALSE(ds.ok());
  CHECK(ds.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(Contains(ds.status(), "imagenet"));
}

TEST_CASE("Subset takes rows in order and checks indices") {
  DataConfig config;
  config.dataset = "synthetic";
  config.synthetic_train = 10;
  auto ds = LoadDataset(config, true, 1);
  REQUIRE(ds.ok());
  CHECK(SampleShape(*ds) == std::vector<int64_t>{20});
  auto sub = Subset(*ds, {7, 2, 2});
  REQUIRE(sub.ok());
  CHECK(sub->size() == 3);
  CHECK(sub->num_classes == ds->num_classes);
  CHECK(sub->x[0].equal(ds->x[7]));
  CHECK(sub->x[2].equal(ds->x[2]));
  CHECK(sub->y[1].item<int64_t>() == ds->y[2].item<int64_t>());
  auto bad = Subset(*ds, {10});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
}

}  // namespace shefl
