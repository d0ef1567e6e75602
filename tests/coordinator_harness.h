// A real Coordinator in the test's process, listening on 127.0.0.1, with
// the test as its only daemon over real gRPC: it registers clients 0-7,
// reads the tasks pushed on its feed and uploads what it chooses.
#ifndef SHEFL_TESTS_COORDINATOR_HARNESS_H_
#define SHEFL_TESTS_COORDINATOR_HARNESS_H_

// LibTorch brings glog, whose CHECK macro would replace Catch's if glog
// came second: a failing check would then abort the binary instead of
// being reported. So this header goes before <catch2/catch.hpp>.
#ifdef CATCH_VERSION_MAJOR
#error "include tests/coordinator_harness.h before <catch2/catch.hpp>"
#endif

#include <grpcpp/create_channel.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/codec.h"
#include "common/wire.h"
#include "server/coordinator.h"
#include "shefl.grpc.pb.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {

struct Harness {
  testing::TempDir dir;
  std::unique_ptr<Coordinator> coordinator;
  std::thread runner;
  absl::Status run_status;
  std::unique_ptr<v1::Coordinator::Stub> stub;
  std::string session;
  grpc::ClientContext feed_ctx;
  std::unique_ptr<grpc::ClientReader<v1::FeedMessage>> feed;

  explicit Harness(const std::string& extra) {
    testing::WriteFile(dir / "c.yaml", testing::SyntheticConfig(extra));
    CoordinatorOptions o;
    o.config_path = dir / "c.yaml";
    o.listen = "127.0.0.1:0";
    o.out_dir = dir / "out";
    o.threads = 1;
    auto c = Coordinator::Create(o);
    REQUIRE(c.ok());
    coordinator = std::move(*c);
    runner = std::thread([this] { run_status = coordinator->Run(); });
    stub = v1::Coordinator::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(coordinator->listening_port()),
        grpc::InsecureChannelCredentials()));
    v1::RegisterRequest req;
    req.set_daemon_name("test-daemon");
    for (int i = 0; i < 8; ++i) req.add_clients()->set_client_id(i);
    v1::RegisterReply reply;
    grpc::ClientContext ctx;
    REQUIRE(stub->Register(&ctx, req, &reply).ok());
    session = reply.session_id();
    v1::TaskFeedRequest f;
    f.set_session_id(session);
    feed = stub->TaskFeed(&feed_ctx, f);
  }
  ~Harness() {
    coordinator->RequestStop();
    feed_ctx.TryCancel();
    runner.join();
  }

  // The tasks of the next round (the cohort has `n` clients).
  std::vector<v1::Task> NextTasks(size_t n = 5) {
    std::vector<v1::Task> tasks;
    v1::FeedMessage m;
    while (tasks.size() < n && feed->Read(&m))
      if (m.has_task()) tasks.push_back(m.task());
    return tasks;
  }

  grpc::Status Upload(const v1::UploadHeader& h, const std::string& blob,
                      bool with_header = true) {
    grpc::ClientContext ctx;
    v1::UploadReply reply;
    auto w = stub->UploadDelta(&ctx, &reply);
    for (auto chunk : MakeUploadChunks(h, blob)) {
      if (!with_header) chunk.clear_header();
      if (!w->Write(chunk)) break;
    }
    w->WritesDone();
    return w->Finish();
  }

  uint64_t dim() { return coordinator->state().store->dim(); }
};

inline v1::UploadHeader HeaderFor(const std::string& session, const v1::Task& t,
                           const v1::ModelTask& mt, uint64_t size) {
  v1::UploadHeader h;
  h.set_session_id(session);
  h.set_round(t.round());
  h.set_client_id(t.client_id());
  h.set_model_id(mt.model_id());
  h.set_model_version(mt.model_version());
  h.set_encoded_size(size);
  h.set_num_samples(10);
  return h;
}

inline SparseDelta Delta(uint64_t dim, uint64_t k) {
  SparseDelta d;
  d.dim = dim;
  for (uint64_t i = 0; i < k; ++i) {
    d.indices.push_back(static_cast<uint32_t>(i * (dim / k)));
    d.values.push_back(0.001f * (i % 7));
  }
  return d;
}

inline const v1::Task* FindTask(const std::vector<v1::Task>& tasks, int num_models) {
  for (const auto& t : tasks)
    if (t.models_size() == num_models) return &t;
  return nullptr;
}

}  // namespace shefl

#endif  // SHEFL_TESTS_COORDINATOR_HARNESS_H_
