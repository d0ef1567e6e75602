// Writes the seeds that are encoder output rather than text: sparse deltas
// for the codec target (each value type, the form the encoder picks for
// several densities, each of the five index forms forced, the empty and
// the full delta) and framed upload streams for the upload target (valid ones cut
// in one and several chunks, and each way a stream can be refused).
// Usage: make_seeds CORPUS_DIR   (writes CORPUS_DIR/codec, CORPUS_DIR/upload)
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "common/sparse/codec.h"
#include "shefl.pb.h"

namespace shefl {
namespace {

SparseDelta Delta(uint64_t d, uint32_t step, uint32_t first) {
  SparseDelta delta;
  delta.dim = d;
  for (uint64_t i = first; i < d; i += step) {
    delta.indices.push_back(static_cast<uint32_t>(i));
    delta.values.push_back(0.01f * static_cast<float>(i % 17) - 0.07f);
  }
  return delta;
}

void Write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

bool WriteCodecSeeds(const std::string& dir) {
  const std::pair<const char*, SparseDelta> seeds[] = {
      {"sparse", Delta(1000, 97, 3)},    // varint gaps, 1 byte each
      {"rice", Delta(5000, 10, 4)},      // Golomb-Rice, b = 3
      {"dense", Delta(64, 2, 0)},        // density 0.5: bitmap
      {"adjacent", Delta(40, 1, 30)},    // bitmap (a run of adjacent ones)
      {"empty", Delta(300, 1, 300)},     // k = 0: varint gaps, no bytes
      {"wide", Delta(70000, 20000, 1)},  // 3-byte d; Elias-Fano (a tie)
      {"full", Delta(50, 1, 0)},         // k = d: dense, values only
  };
  for (const auto& [name, delta] : seeds) {
    for (auto type : {ValueType::kFp32, ValueType::kFp16, ValueType::kBf16}) {
      auto bytes = EncodeSparseDelta(delta, type);
      if (!bytes.ok()) return false;
      Write(dir + "/" + name + "-" + ValueTypeName(type), *bytes);
    }
  }
  // Every form of one set (and of a full one for dense), fp16, whether or
  // not the encoder would pick it: the decoder accepts each.
  const SparseDelta some = Delta(500, 7, 2);
  const SparseDelta all = Delta(24, 1, 0);
  for (auto format :
       {IndexFormat::kVarintGaps, IndexFormat::kBitmap,
        IndexFormat::kGolombRice, IndexFormat::kEliasFano,
        IndexFormat::kDense}) {
    std::string bytes;
    const SparseDelta& delta = format == IndexFormat::kDense ? all : some;
    if (!EncodeSparseDeltaAs(delta, ValueType::kFp16, format, &bytes).ok())
      return false;
    Write(dir + "/as-" + IndexFormatName(format), bytes);
  }
  return true;
}

// gRPC's framing of one message: uncompressed, 4-byte big-endian length.
std::string Frame(const v1::DeltaChunk& c) {
  const std::string body = c.SerializeAsString();
  std::string out(1, '\0');
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((body.size() >> shift) & 0xff));
  return out + body;
}

// An upload of `blob` declaring `declared` bytes, cut at `cuts`; `extra`
// chunks follow the last piece.
std::string Upload(const std::string& blob, uint64_t declared,
                   std::vector<size_t> cuts,
                   const std::vector<v1::DeltaChunk>& extra = {}) {
  v1::DeltaChunk first;
  v1::UploadHeader* h = first.mutable_header();
  h->set_session_id("0123456789abcdef0123456789abcdef");
  h->set_round(3);
  h->set_client_id(7);
  h->set_model_id(1);
  h->set_model_version(2);
  h->set_encoded_size(declared);
  h->set_num_samples(600);
  h->set_train_loss(0.5);
  cuts.push_back(blob.size());
  first.set_data(blob.substr(0, cuts[0]));
  std::string out = Frame(first);
  for (size_t i = 1; i < cuts.size(); ++i) {
    v1::DeltaChunk c;
    c.set_data(blob.substr(cuts[i - 1], cuts[i] - cuts[i - 1]));
    out += Frame(c);
  }
  for (const v1::DeltaChunk& c : extra) out += Frame(c);
  return out;
}

bool WriteUploadSeeds(const std::string& dir) {
  auto blob = EncodeSparseDelta(Delta(1000, 37, 5), ValueType::kFp16);
  if (!blob.ok()) return false;
  const std::string b = *blob;
  const size_t n = b.size();
  v1::DeltaChunk empty, again, more;
  again.mutable_header()->set_encoded_size(n);
  again.set_data("x");
  more.set_data("tail");
  Write(dir + "/one-chunk", Upload(b, n, {}));  // as MakeUploadChunks cuts
  Write(dir + "/three-chunks", Upload(b, n, {10, 40}));
  Write(dir + "/header-only", Upload(b, n, {0}));
  Write(dir + "/nothing-declared", Upload("", 0, {}));
  Write(dir + "/truncated", Upload(b, n + 3, {20}));
  Write(dir + "/past-size", Upload(b, n, {30}, {more}));
  Write(dir + "/first-too-long", Upload(b, n - 1, {}));
  Write(dir + "/header-repeated", Upload(b, n + 1, {30}, {again}));
  Write(dir + "/empty-chunk", Upload(b, n + 4, {30}, {empty, more}));
  Write(dir + "/huge-declared", Upload(b, uint64_t{1} << 40, {}));
  return true;
}

}  // namespace
}  // namespace shefl

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  if (!shefl::WriteCodecSeeds(dir + "/codec") ||
      !shefl::WriteUploadSeeds(dir + "/upload")) {
    std::fprintf(stderr, "make_seeds: encoding failed\n");
    return 1;
  }
  return 0;
}
