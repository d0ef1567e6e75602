#include "server/run/model_store.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

ModelStore TwoModels() {
  return ModelStore({{1.0f, 2.0f, 3.0f}, {-1.0f, 0.5f, 0.25f}});
}

TEST_CASE("a checkpoint round-trips models, versions and the round") {
  testing::TempDir dir;
  ModelStore store = TwoModels();
  store.Publish(1, {9.0f, 8.0f, 7.0f});
  REQUIRE(store.SaveCheckpoint(dir / "ck", 12).ok());
  CHECK_FALSE(std::filesystem::exists(dir / "ck.tmp"));  // renamed into place
  auto loaded = ModelStore::LoadCheckpoint(dir / "ck");
  REQUIRE(loaded.ok());
  CHECK(loaded->second == 12);
  const ModelStore& back = *loaded->first;
  CHECK(back.Digests() == store.Digests());
  CHECK(back.Version(0) == 0);
  CHECK(back.Version(1) == 1);
  CHECK(*back.Get(1) == std::vector<float>{9.0f, 8.0f, 7.0f});
}

TEST_CASE("a damaged checkpoint is refused with the reason") {
  testing::TempDir dir;
  REQUIRE(TwoModels().SaveCheckpoint(dir / "ck", 3).ok());
  const std::string bytes = testing::ReadFile(dir / "ck");
  auto load_with = [&](const std::string& content) {
    testing::WriteFile(dir / "bad", content);
    auto r = ModelStore::LoadCheckpoint(dir / "bad");
    REQUIRE_FALSE(r.ok());
    return std::string(r.status().message());
  };
  CHECK_THAT(load_with(bytes.substr(0, bytes.size() - 2)),
             Catch::Contains("truncated"));
  CHECK_THAT(load_with(bytes + "x"), Catch::Contains("trailing"));
  CHECK_THAT(load_with("NOTSHEFL" + bytes.substr(8)),
             Catch::Contains("not a shefl checkpoint"));
  // One flipped bit in a weight: the checksum catches it.
  std::string flipped = bytes;
  flipped[bytes.size() - 40] ^= 1;
  CHECK_THAT(load_with(flipped), Catch::Contains("checksum"));
  // A header claiming 2^34 weights a model is refused by the file's size,
  // before anything is allocated.
  std::string huge = bytes;
  const uint64_t d = uint64_t{1} << 34;
  std::memcpy(&huge[8 + 16], &d, 8);
  CHECK_THAT(load_with(huge), Catch::Contains("its header says"));
  auto missing = ModelStore::LoadCheckpoint(dir / "nothing");
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
}

TEST_CASE("a snapshot taken before a publish keeps its weights") {
  ModelStore store = TwoModels();
  auto [before, version] = store.GetVersioned(0);
  store.Publish(0, {0.0f, 0.0f, 0.0f});
  CHECK(*before == std::vector<float>{1.0f, 2.0f, 3.0f});
  CHECK(version == 0);
  CHECK(store.Version(0) == 1);
  CHECK(Sha256Hex("abc", 3) ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

}  // namespace
}  // namespace shefl
