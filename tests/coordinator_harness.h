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

#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/fed/schedule.h"
#include "common/net/call_metadata.h"
#include "common/net/wire.h"
#include "common/sparse/codec.h"
#include "server/coordinator.h"
#include "shefl.grpc.pb.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {

// Options of an in-process coordinator on 127.0.0.1:0 with TLS, mutual
// TLS and a token, from a PKI folder made by `shefl certs`.
inline CoordinatorOptions MtlsOptions(const std::string& config_path,
                                      const std::string& out_dir,
                                      const std::string& pki) {
  CoordinatorOptions o;
  o.config_path = config_path;
  o.listen = "127.0.0.1:0";
  o.out_dir = out_dir;
  o.threads = 1;
  o.tls.cert_file = pki + "/server.pem";
  o.tls.key_file = pki + "/server.key";
  o.tls.ca_file = pki + "/ca.pem";
  o.tls.token_file = pki + "/token";
  return o;
}

// A coordinator of `o` running in this process until the object goes.
struct RunningCoordinator {
  std::unique_ptr<Coordinator> coordinator;
  std::thread runner;
  explicit RunningCoordinator(const CoordinatorOptions& o) {
    auto c = Coordinator::Create(o);
    INFO(c.status());
    REQUIRE(c.ok());
    coordinator = std::move(*c);
    runner = std::thread([this] { (void)coordinator->Run(); });
  }
  ~RunningCoordinator() {
    coordinator->RequestStop();
    runner.join();
  }
  std::string target() const {
    return "127.0.0.1:" + std::to_string(coordinator->listening_port());
  }
};

// Plaintext options on 127.0.0.1:0 for config `config_path`, results in
// `out_dir`, with `token_file` (empty: no token).
inline CoordinatorOptions PlainOptions(const std::string& config_path,
                                       const std::string& out_dir,
                                       const std::string& token_file = "") {
  CoordinatorOptions o;
  o.config_path = config_path;
  o.listen = "127.0.0.1:0";
  o.out_dir = out_dir;
  o.threads = 1;
  o.tls.insecure = true;
  o.tls.token_file = token_file;
  return o;
}

struct HarnessOptions {
  std::string token;     // the deployment's token; empty: none asked
  int last_client = 7;   // the harness registers clients 0..last_client
};

struct Harness {
  testing::TempDir dir;
  std::unique_ptr<Coordinator> coordinator;
  std::thread runner;
  absl::Status run_status;
  std::unique_ptr<v1::Coordinator::Stub> stub;
  std::string session;
  std::string token;  // sent as call metadata after Register, as a daemon does
  grpc::ClientContext feed_ctx;
  std::unique_ptr<grpc::ClientReader<v1::FeedMessage>> feed;

  explicit Harness(const std::string& extra, const HarnessOptions& ho = {}) {
    testing::WriteFile(dir / "c.yaml", testing::SyntheticConfig(extra));
    CoordinatorOptions o;
    o.config_path = dir / "c.yaml";
    o.listen = "127.0.0.1:0";
    o.out_dir = dir / "out";
    o.threads = 1;
    o.tls.insecure = true;
    if (!ho.token.empty()) {
      testing::WriteFile(dir / "token", ho.token + "\n");
      o.tls.token_file = dir / "token";
    }
    auto c = Coordinator::Create(o);
    REQUIRE(c.ok());
    coordinator = std::move(*c);
    runner = std::thread([this] { run_status = coordinator->Run(); });
    stub = v1::Coordinator::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(coordinator->listening_port()),
        grpc::InsecureChannelCredentials()));
    v1::RegisterRequest req;
    req.set_daemon_name("test-daemon");
    req.set_token(ho.token);
    for (int i = 0; i <= ho.last_client; ++i) req.add_clients()->set_client_id(i);
    v1::RegisterReply reply;
    grpc::ClientContext ctx;
    REQUIRE(stub->Register(&ctx, req, &reply).ok());
    session = reply.session_id();
    v1::TaskFeedRequest f;
    f.set_session_id(session);
    token = ho.token;
    if (!token.empty()) feed_ctx.AddMetadata(kTokenMetadata, token);
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
    if (!token.empty()) ctx.AddMetadata(kTokenMetadata, token);
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
  std::vector<float> Weights(int64_t model) {
    return *coordinator->state().store->Get(model);
  }
  bool IsHpc(int64_t client) {
    const ExperimentConfig& c = coordinator->state().config;
    return ClientTier(c.clients, client) == Tier::kHpc;
  }

  // Uploads a zero-valued delta (k entries) for every (client, model) pair
  // of `tasks` not in `skip`, so that the round completes as soon as the
  // test is done with it instead of at its deadline. A zero update counts
  // in its group's mean (as any update does) but moves no weight.
  // Returns the number uploaded; every one must be accepted.
  int UploadZeros(const std::vector<v1::Task>& tasks,
                  const std::set<std::pair<int64_t, int64_t>>& skip = {});
};

// Registers a daemon `name` hosting clients first..last with `token`.
inline grpc::Status RegisterAs(v1::Coordinator::Stub& stub,
                               const std::string& name,
                               const std::string& token, int first, int last,
                               std::string* session = nullptr) {
  v1::RegisterRequest req;
  req.set_daemon_name(name);
  req.set_token(token);
  for (int i = first; i <= last; ++i) req.add_clients()->set_client_id(i);
  v1::RegisterReply reply;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  grpc::Status st = stub.Register(&ctx, req, &reply);
  if (session) *session = reply.session_id();
  return st;
}

// What one accepted update was, for the expected aggregate.
struct SentUpdate {
  bool hpc = false;
  SparseDelta delta;
};

// The workload-aware rule (docs/DESIGN.md, "Aggregation") with p_i = 1 and
// eta_g = 1, worked out here in double: w + beta * D_H + (1 - beta) * D_L,
// beta = `hpc_share`, 1 without LPC updates and 0 without HPC updates.
inline std::vector<float> WorkloadAware(const std::vector<float>& w,
                                        const std::vector<SentUpdate>& sent,
                                        double hpc_share = 0.5) {
  int n[2] = {0, 0};
  for (const auto& u : sent) ++n[u.hpc ? 0 : 1];
  double beta = hpc_share;
  if (n[1] == 0) beta = 1;
  if (n[0] == 0) beta = 0;
  std::vector<double> step(w.size(), 0.0);
  for (const auto& u : sent) {
    const double c = u.hpc ? beta / n[0] : (1 - beta) / n[1];
    for (size_t i = 0; i < u.delta.nnz(); ++i)
      step[u.delta.indices[i]] += c * u.delta.values[i];
  }
  std::vector<float> out(w.size());
  for (size_t j = 0; j < w.size(); ++j)
    out[j] = static_cast<float>(w[j] + step[j]);
  return out;
}

// How many weights of `got` differ from `want` by more than a float's
// rounding (relative 1e-6, absolute 1e-7); -1 if the sizes differ.
inline long CountMismatches(const std::vector<float>& got,
                            const std::vector<float>& want) {
  if (got.size() != want.size()) return -1;
  long bad = 0;
  for (size_t j = 0; j < got.size(); ++j)
    bad += !(std::fabs(got[j] - want[j]) <= 1e-7 + 1e-6 * std::fabs(want[j]));
  return bad;
}

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

inline const v1::ModelTask* FindModel(const v1::Task& t, uint64_t model_id) {
  for (const auto& mt : t.models())
    if (mt.model_id() == model_id) return &mt;
  return nullptr;
}

inline int Harness::UploadZeros(
    const std::vector<v1::Task>& tasks,
    const std::set<std::pair<int64_t, int64_t>>& skip) {
  int sent = 0;
  for (const auto& t : tasks) {
    for (const auto& mt : t.models()) {
      if (skip.count({t.client_id(), static_cast<int64_t>(mt.model_id())}))
        continue;
      SparseDelta zero = Delta(dim(), mt.k());
      for (float& v : zero.values) v = 0;
      auto blob = *EncodeSparseDelta(zero, ValueType::kFp32);
      auto st = Upload(HeaderFor(session, t, mt, blob.size()), blob);
      INFO("zero update of client " << t.client_id() << " model "
           << mt.model_id() << ": " << st.error_message());
      REQUIRE(st.ok());
      ++sent;
    }
  }
  return sent;
}

}  // namespace shefl

#endif  // SHEFL_TESTS_COORDINATOR_HARNESS_H_
