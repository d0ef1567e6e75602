// A ResNet-18 (11.2M parameters, 45 MB) through the real runtime with
// gRPC's default 4 MiB message limit: the model goes down and a dense
// delta comes back up in 1 MiB chunks. CIFAR-10 files are written here in
// the real binary format (1 label byte + 3072 pixel bytes per record).
#include <filesystem>
#include <fstream>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

void WriteCifarBatch(const std::string& path, int records, int seed) {
  std::ofstream out(path, std::ios::binary);
  for (int r = 0; r < records; ++r) {
    out.put(static_cast<char>((r + seed) % 10));
    for (int p = 0; p < 3072; ++p)
      out.put(static_cast<char>((p * 7 + r * 13 + seed) % 256));
  }
}

TEST_CASE("a ResNet-18 passes both ways in chunks under the 4 MiB limit") {
  TempDir dir;
  std::filesystem::create_directories(dir / "cifar");
  for (int i = 1; i <= 5; ++i)
    WriteCifarBatch(dir / ("cifar/data_batch_" + std::to_string(i) + ".bin"),
                    4, i);
  WriteCifarBatch(dir / "cifar/test_batch.bin", 8, 9);
  WriteFile(dir / "c.yaml", "name: resnet\nmethod: fedavg\nrounds: 1\n"
                            "data: {dataset: cifar10, root: " + dir / "cifar" +
                                "}\n"
                            "partition: {scheme: iid}\n"
                            "model: {name: resnet18}\n"
                            "clients: {num_clients: 2, num_hpc: 0, "
                            "per_round_hpc: 0, per_round_lpc: 2}\n"
                            "train: {local_steps: 1, batch_size: 4}\n"
                            "compression: {density: 1.0}\n");
  auto r = RunProcess({BinDir() + "/shefl", "run", dir / "c.yaml", "--daemons",
                       "1", "--out", dir / "run"},
                      400);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto rounds = ReadJsonl(dir / "run/rounds.jsonl");
  REQUIRE(rounds.size() == 1u);
  CHECK(rounds[0]["updates_accepted"] == 2);
  CHECK(rounds[0]["updates_rejected"] == 0);
  // Each client downloaded the whole model and sent a (near-)dense delta.
  const uint64_t model_bytes = 11173962ull * 4;
  for (const auto& [client, b] : rounds[0]["bytes_by_client"].items()) {
    CHECK(b["payload_down"].get<uint64_t>() > model_bytes);
    CHECK(b["payload_up"].get<uint64_t>() > model_bytes / 2);
  }
}

}  // namespace
}  // namespace shefl
