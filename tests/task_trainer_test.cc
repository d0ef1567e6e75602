// The daemon's work items through TaskTrainer::Run
// (client/task_trainer.h): the model version, local training on a tiny
// shard (the synthetic data set, an MLP), the upload and the books,
// against a recording stand-in for the coordinator
// (tests/fake_coordinator.h, in-process gRPC) reached through the real
// ModelDownloader and TaskUploader. What each upload says and carries,
// the residual the coordinator's answer settles, an item that fails at
// any step costing only itself (one by one and stacked), an item of a
// round already over, and the secure path, where a trained delta goes to
// the round's session instead of an upload.
// LibTorch's headers come before Catch (see tests/coordinator_harness.h).
#include "client/task_trainer.h"

#include <ATen/ATen.h>
#include <c10/core/Device.h>

#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "client/daemon_metrics.h"
#include "client/local_trainer.h"
#include "client/model_download.h"
#include "client/round_books.h"
#include "client/secure_sessions.h"
#include "client/task_queue.h"
#include "client/task_uploader.h"
#include "common/fed/config_load.h"
#include "common/sparse/codec.h"
#include "common/sparse/index_set_codec.h"
#include "tests/fake_coordinator.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using testing::FakeCoordinator;
using testing::RecordedUpload;

struct ModelSpec {
  uint32_t model;
  uint64_t version;
  uint64_t k;
};

std::shared_ptr<const v1::Task> MakeTask(uint64_t round, uint32_t client,
                                         const std::vector<ModelSpec>& models) {
  auto t = std::make_shared<v1::Task>();
  t->set_round(round);
  t->set_client_id(client);
  for (const ModelSpec& m : models) {
    v1::ModelTask* mt = t->add_models();
    mt->set_model_id(m.model);
    mt->set_model_version(m.version);
    mt->set_k(m.k);
  }
  t->mutable_train()->set_lr(0.05);
  t->mutable_train()->set_local_epochs(1);
  t->mutable_train()->set_batch_size(32);
  t->set_deadline_unix_ms(
      std::chrono::duration_cast<std::chrono::milliseconds>(
          (std::chrono::system_clock::now() + std::chrono::minutes(2))
              .time_since_epoch())
          .count());
  return t;
}

// One item per model of `task`, sharing a progress of one item more: the
// test's own Finish of it then tells how the trainer's went.
std::vector<WorkItem> Items(const std::shared_ptr<const v1::Task>& task,
                            std::shared_ptr<TaskProgress>* progress) {
  *progress = std::make_shared<TaskProgress>(task->models_size() + 1);
  std::vector<WorkItem> out;
  for (int i = 0; i < task->models_size(); ++i)
    out.push_back({task, i, 1.0, *progress});
  return out;
}

// What the trainer reported of a task's items: how many sent (nullopt
// when it did not finish each of them exactly once).
std::optional<int> Sent(const std::shared_ptr<TaskProgress>& progress) {
  auto s = progress->Finish(false, 0);
  if (!s) return std::nullopt;
  return s->sent;
}

// A daemon of clients 0 and 5 of the synthetic config (3 models), its
// trainer over the real downloader and uploader, and the stand-in
// coordinator serving every model but `missing`.
struct Bench {
  FakeCoordinator fake;
  CoordinatorLink link = fake.link();
  DaemonMetrics metrics{"task_trainer_test"};
  testing::TempDir dir;
  RoundBooks books{dir / "d.jsonl", "d", metrics.bytes(), metrics.download_bytes()};
  ModelDownloader downloader{&books};
  TaskUploader uploader{&books};
  TaskQueue queue{TaskQueue::Listener{}};
  std::unique_ptr<SecureSessions> secure;
  std::unique_ptr<TaskTrainer> trainer;
  int64_t dim = 0;

  explicit Bench(const std::vector<std::string>& sets, int missing = -1) {
    auto config = ParseConfigWithOverrides(testing::SyntheticConfig(), "t.yaml", sets);
    INFO(config.status());
    REQUIRE(config.ok());
    auto local = LocalTrainer::Create(*config, {0, 5}, c10::Device(c10::kCPU));
    INFO(local.status());
    REQUIRE(local.ok());
    dim = (*local)->dim();
    for (uint32_t m = 0; m < 3; ++m) {
      if (static_cast<int>(m) == missing) continue;
      std::vector<float> w(dim);
      for (int64_t i = 0; i < dim; ++i)
        w[i] = 0.1f * std::sin(0.37f * static_cast<float>(i) + static_cast<float>(m));
      fake.SetModel(m, std::move(w));
    }
    if (config->aggregation.secure != "off") {
      SecureSessions::Parts sp;
      sp.name = "task_trainer_test";
      sp.books = &books;
      sp.residuals = (*local)->residuals();
      sp.dim = static_cast<uint64_t>(dim);
      sp.seed = config->seed;
      sp.masked = false;
      secure = std::make_unique<SecureSessions>(std::move(sp));
    }
    TaskTrainer::Parts parts;
    parts.name = "task_trainer_test";
    parts.local = std::move(*local);
    parts.queue = &queue;
    parts.books = &books;
    parts.downloader = &downloader;
    parts.uploader = &uploader;
    parts.secure = secure.get();
    parts.train_seconds = metrics.train_seconds();
    parts.resident_memory = metrics.resident_memory();
    trainer = std::make_unique<TaskTrainer>(std::move(parts));
  }

  void Run(const std::vector<WorkItem>& batch) {
    for (const WorkItem& w : batch) trainer->Expect(*w.task);
    trainer->Run(link, batch, 0);
  }
  uint64_t Samples(int64_t client) const { return trainer->local().NumSamples(client); }
  // The round's line of the books.
  nlohmann::json Line(int64_t round) {
    books.WriteRoundLine(round);
    auto lines = testing::ReadJsonl(dir / "d.jsonl");
    REQUIRE_FALSE(lines.empty());
    return lines.back();
  }
};

std::set<std::pair<uint32_t, uint32_t>> ClientModels(
    const std::vector<RecordedUpload>& ups) {
  std::set<std::pair<uint32_t, uint32_t>> out;
  for (const RecordedUpload& u : ups)
    out.insert({u.header.client_id(), u.header.model_id()});
  return out;
}

TEST_CASE("each item's upload names its round, client, model and version and carries its k") {
  Bench b({});
  std::shared_ptr<TaskProgress> p0, p5;
  const auto t0 = MakeTask(3, 0, {{0, 7, 20}, {2, 4, 30}});
  const auto t5 = MakeTask(3, 5, {{0, 7, 25}});
  std::vector<WorkItem> batch = Items(t0, &p0);
  for (const WorkItem& w : Items(t5, &p5)) batch.push_back(w);
  b.Run(batch);

  // Model 0 version 7 is fetched once, for client 0 and on behalf of 5.
  const std::vector<v1::DownloadRequest> downloads = b.fake.downloads();
  REQUIRE(downloads.size() == 2);
  std::map<uint32_t, v1::DownloadRequest> by_model;
  for (const auto& d : downloads) by_model[d.model_id()] = d;
  REQUIRE(by_model.count(0) == 1);
  CHECK(by_model[0].round() == 3);
  CHECK(by_model[0].model_version() == 7);
  CHECK(by_model[0].session_id() == FakeCoordinator::kSessionId);
  CHECK(by_model[0].client_id() == 0);
  REQUIRE(by_model[0].also_for_clients_size() == 1);
  CHECK(by_model[0].also_for_clients(0) == 5);
  CHECK(by_model[2].model_version() == 4);

  const std::vector<RecordedUpload> ups = b.fake.uploads();
  REQUIRE(ups.size() == 3);
  double loss0 = 0;
  for (const RecordedUpload& u : ups) {
    const v1::UploadHeader& h = u.header;
    INFO("client " << h.client_id() << " model " << h.model_id());
    const auto& task = h.client_id() == 0 ? t0 : t5;
    const v1::ModelTask* mt = nullptr;
    for (const v1::ModelTask& m : task->models())
      if (m.model_id() == h.model_id()) mt = &m;
    REQUIRE(mt != nullptr);
    CHECK(h.session_id() == FakeCoordinator::kSessionId);
    CHECK(h.round() == 3);
    CHECK(h.model_version() == mt->model_version());
    CHECK(h.num_samples() == b.Samples(h.client_id()));
    CHECK(h.encoded_size() == u.encoded.size());
    CHECK(std::isfinite(h.train_loss()));
    CHECK(h.train_loss() > 0);
    if (h.client_id() == 0) loss0 += h.train_loss();
    auto delta = DecodeSparseDelta(u.encoded, static_cast<uint64_t>(b.dim), mt->k());
    REQUIRE(delta.ok());
    CHECK(delta->nnz() == mt->k());
  }
  CHECK(ClientModels(ups) ==
        std::set<std::pair<uint32_t, uint32_t>>{{0, 0}, {0, 2}, {5, 0}});

  // Both of client 0's items and client 5's are reported sent, with their
  // mean loss; the round's books hold their samples.
  const std::optional<TaskProgress::Summary> s0 = p0->Finish(false, 0);
  REQUIRE(s0.has_value());
  CHECK(s0->sent == 2);
  CHECK(s0->mean_loss == Approx(loss0 / 2));
  CHECK(Sent(p5) == 1);
  const nlohmann::json line = b.Line(3);
  CHECK(line["train_samples"] == 2 * b.Samples(0) + b.Samples(5));
  CHECK(line["bytes_up"].get<uint64_t>() > 0);
  CHECK(line["download_bytes_physical"].get<uint64_t>() > 0);
}

TEST_CASE("the coordinator's answer to an upload settles the item's residual") {
  Bench b({"compression.error_feedback=true"});
  ResidualBook* residuals = b.trainer->local().residuals();
  REQUIRE(residuals != nullptr);
  std::shared_ptr<TaskProgress> p;

  // Round 3, accepted: its residual is in force.
  b.Run(Items(MakeTask(3, 0, {{1, 3, 10}}), &p));
  CHECK(Sent(p) == 1);
  const at::Tensor r3 = residuals->Newest(0, 1);
  REQUIRE(r3.defined());
  CHECK(r3.numel() == b.dim);
  CHECK(r3.abs().max().item<float>() > 0);

  // Round 4, refused: round 3's is back in force.
  b.fake.AnswerUploads([](const v1::UploadHeader& h) {
    return h.round() == 4
               ? grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "refused")
               : grpc::Status::OK;
  });
  b.Run(Items(MakeTask(4, 0, {{1, 4, 10}}), &p));
  CHECK(b.fake.uploads().size() == 2);
  CHECK(Sent(p) == 0);
  CHECK(at::equal(residuals->Newest(0, 1), r3));

  // Round 5, no answer (the coordinator went away): the new residual
  // stays in force, as the coordinator may have taken the update.
  b.fake.AnswerUploads([](const v1::UploadHeader&) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "gone");
  });
  b.Run(Items(MakeTask(5, 0, {{1, 5, 10}}), &p));
  CHECK(b.fake.uploads().size() == 3);
  CHECK(Sent(p) == 0);
  REQUIRE(residuals->Newest(0, 1).defined());
  CHECK_FALSE(at::equal(residuals->Newest(0, 1), r3));
}

TEST_CASE("an item that fails costs only itself") {
  const std::string stacking = GENERATE(std::string("off"), std::string("on"));
  INFO("train.stacking " << stacking);
  // Model 1 is not served; uploads of model 2 are refused.
  Bench b({"compression.error_feedback=true", "train.stacking=" + stacking},
          /*missing=*/1);
  CHECK(b.trainer->local().stacks() == (stacking == "on"));
  b.fake.AnswerUploads([](const v1::UploadHeader& h) {
    return h.model_id() == 2
               ? grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "refused")
               : grpc::Status::OK;
  });
  // Client 0: models 0 (fine), 1 (no download) and 2 (refused). Client 3
  // is not hosted here: its training fails. Client 5: fine.
  std::shared_ptr<TaskProgress> p0, p3, p5;
  std::vector<WorkItem> batch = Items(MakeTask(3, 0, {{0, 1, 8}, {1, 1, 8}, {2, 1, 8}}), &p0);
  for (const WorkItem& w : Items(MakeTask(3, 3, {{0, 1, 8}}), &p3)) batch.push_back(w);
  for (const WorkItem& w : Items(MakeTask(3, 5, {{0, 1, 8}}), &p5)) batch.push_back(w);
  b.Run(batch);

  CHECK(ClientModels(b.fake.uploads()) ==
        std::set<std::pair<uint32_t, uint32_t>>{{0, 0}, {0, 2}, {5, 0}});
  CHECK(Sent(p0) == 1);
  CHECK(Sent(p3) == 0);
  CHECK(Sent(p5) == 1);
  // Trained: client 0's models 0 and 2, client 5's model 0.
  CHECK(b.Line(3)["train_samples"] == 2 * b.Samples(0) + b.Samples(5));
  // The refused upload's residual is gone; the accepted ones' kept.
  ResidualBook* residuals = b.trainer->local().residuals();
  CHECK(residuals->Newest(0, 0).defined());
  CHECK(residuals->Newest(5, 0).defined());
  CHECK_FALSE(residuals->Newest(0, 2).defined());
  CHECK_FALSE(residuals->Newest(0, 1).defined());
}

TEST_CASE("an item of a round already over is dropped unrun") {
  Bench b({});
  b.queue.PushRoundEnd(3);
  std::shared_ptr<TaskProgress> over, next;
  std::vector<WorkItem> batch = Items(MakeTask(3, 0, {{0, 1, 8}}), &over);
  for (const WorkItem& w : Items(MakeTask(4, 5, {{0, 2, 8}}), &next)) batch.push_back(w);
  b.Run(batch);

  // Round 3's item asked for nothing and sent nothing; round 4's went on.
  const std::vector<v1::DownloadRequest> downloads = b.fake.downloads();
  REQUIRE(downloads.size() == 1);
  CHECK(downloads[0].round() == 4);
  REQUIRE(b.fake.uploads().size() == 1);
  CHECK(b.fake.uploads()[0].header.round() == 4);
  CHECK(Sent(over) == 0);
  CHECK(Sent(next) == 1);
  CHECK(b.Line(3)["train_samples"] == 0);
}

TEST_CASE("under secure aggregation a trained delta goes to the round's session, not an upload") {
  Bench b({"aggregation.secure=clear_support"});
  REQUIRE(b.secure != nullptr);
  // Party 0: its client 0 (weight 1) and client 3 (weight 0.5), which is
  // not hosted here and fails: the input holds client 0's words alone.
  const std::vector<uint32_t> support = {2, 5, 11, 17};
  v1::FeedMessage setup;
  v1::SecureSetup* s = setup.mutable_secure_setup();
  s->set_round(3);
  s->set_model_id(0);
  s->set_party(0);
  auto bytes = EncodeIndexSet(static_cast<uint64_t>(b.dim), support);
  REQUIRE(bytes.ok());
  s->set_support(*bytes);
  s->set_scale_bits(24);
  s->set_clip(1.0);
  for (const auto& [client, w] : std::map<uint32_t, double>{{0, 1.0}, {3, 0.5}}) {
    v1::SecureWeight* sw = s->add_weights();
    sw->set_client_id(client);
    sw->set_weight(w);
  }
  b.secure->OnFeed(b.link, setup);
  CHECK(b.fake.secure_calls().empty());

  std::shared_ptr<TaskProgress> p0, p3;
  std::vector<WorkItem> batch = Items(MakeTask(3, 0, {{0, 1, 8}}), &p0);
  for (const WorkItem& w : Items(MakeTask(3, 3, {{0, 1, 8}}), &p3)) batch.push_back(w);
  b.Run(batch);

  CHECK(b.fake.uploads().empty());
  const std::vector<v1::SecureCall> calls = b.fake.secure_calls();
  REQUIRE(calls.size() == 1);
  REQUIRE(calls[0].has_input());
  CHECK(calls[0].party() == 0);
  CHECK(calls[0].round() == 3);
  CHECK(calls[0].input().weight() == 1.0);
  CHECK(calls[0].input().words().size() == 4 * support.size());
  CHECK(Sent(p0) == 1);
  CHECK(Sent(p3) == 0);
  // Client 0's residual (what its words did not carry) is kept: the
  // input was accepted.
  const at::Tensor r = b.trainer->local().residuals()->Newest(0, 0);
  REQUIRE(r.defined());
  CHECK(r.numel() == b.dim);
  CHECK(r.abs().max().item<float>() > 0);
}

}  // namespace
}  // namespace shefl
