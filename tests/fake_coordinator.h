// A recording stand-in for the coordinator's gRPC service, for unit tests
// of the daemon's pieces (client/): it is served in the test's process
// and reached over an in-process channel (no socket, no port), so a real
// CoordinatorLink and its stub talk to it as to the coordinator. It keeps
// every Secure call, download request and upload (its header and its
// encoded delta put back together), serves the model weights it is given,
// and answers each call as the test says (OK unless told otherwise).
// Thread-safe: the handlers run on gRPC's threads, under one mutex.
#ifndef SHEFL_TESTS_FAKE_COORDINATOR_H_
#define SHEFL_TESTS_FAKE_COORDINATOR_H_

#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <grpcpp/support/channel_arguments.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "client/coordinator_link.h"
#include "shefl.grpc.pb.h"

namespace shefl::testing {

struct RecordedUpload {
  v1::UploadHeader header;
  std::string encoded;  // the chunks' data, in order
};

class FakeCoordinator final : public v1::Coordinator::Service {
 public:
  using SecureAnswer = std::function<grpc::Status(const v1::SecureCall&)>;
  using UploadAnswer = std::function<grpc::Status(const v1::UploadHeader&)>;

  FakeCoordinator() {
    grpc::ServerBuilder builder;
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
    stub_ = v1::Coordinator::NewStub(
        server_->InProcessChannel(grpc::ChannelArguments()));
  }
  ~FakeCoordinator() override { server_->Shutdown(); }

  // What a daemon session would hold after registering here.
  CoordinatorLink link() const { return {stub_.get(), kSessionId, ""}; }
  static constexpr const char* kSessionId = "fake-session";

  // The weights DownloadModel serves for `model` (any version); a model
  // without any is refused NOT_FOUND.
  void SetModel(uint32_t model, std::vector<float> weights) {
    std::lock_guard<std::mutex> lock(mu_);
    models_[model] = std::move(weights);
  }
  void AnswerSecure(SecureAnswer answer) {
    std::lock_guard<std::mutex> lock(mu_);
    secure_answer_ = std::move(answer);
  }
  void AnswerUploads(UploadAnswer answer) {
    std::lock_guard<std::mutex> lock(mu_);
    upload_answer_ = std::move(answer);
  }

  std::vector<v1::SecureCall> secure_calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return secure_calls_;
  }
  std::vector<v1::DownloadRequest> downloads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return downloads_;
  }
  std::vector<RecordedUpload> uploads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return uploads_;
  }
  void Forget() {
    std::lock_guard<std::mutex> lock(mu_);
    secure_calls_.clear();
    downloads_.clear();
    uploads_.clear();
  }

  grpc::Status Secure(grpc::ServerContext*, const v1::SecureCall* call,
                      v1::SecureReply* reply) override {
    std::lock_guard<std::mutex> lock(mu_);
    secure_calls_.push_back(*call);
    grpc::Status st = secure_answer_ ? secure_answer_(*call) : grpc::Status::OK;
    reply->set_accepted(st.ok());
    return st;
  }

  grpc::Status DownloadModel(grpc::ServerContext*,
                             const v1::DownloadRequest* req,
                             grpc::ServerWriter<v1::ModelChunk>* writer) override {
    std::vector<float> weights;
    {
      std::lock_guard<std::mutex> lock(mu_);
      downloads_.push_back(*req);
      auto it = models_.find(req->model_id());
      if (it == models_.end())
        return grpc::Status(grpc::StatusCode::NOT_FOUND, "no such model here");
      weights = it->second;
    }
    constexpr size_t kFloatsPerMessage = 1 << 16;
    for (size_t at = 0; at < weights.size(); at += kFloatsPerMessage) {
      const size_t n = std::min(kFloatsPerMessage, weights.size() - at);
      v1::ModelChunk chunk;
      chunk.set_offset(at);
      chunk.set_total(weights.size());
      chunk.set_data(std::string(reinterpret_cast<const char*>(&weights[at]),
                                 n * sizeof(float)));
      writer->Write(chunk);
    }
    return grpc::Status::OK;
  }

  grpc::Status UploadDelta(grpc::ServerContext*,
                           grpc::ServerReader<v1::DeltaChunk>* reader,
                           v1::UploadReply* reply) override {
    RecordedUpload up;
    v1::DeltaChunk chunk;
    bool first = true;
    while (reader->Read(&chunk)) {
      if (first) up.header = chunk.header();
      first = false;
      up.encoded += chunk.data();
    }
    std::lock_guard<std::mutex> lock(mu_);
    uploads_.push_back(up);
    grpc::Status st = upload_answer_ ? upload_answer_(up.header) : grpc::Status::OK;
    reply->set_accepted(st.ok());
    if (!st.ok()) reply->set_reason(st.error_message());
    return st;
  }

 private:
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Coordinator::Stub> stub_;
  mutable std::mutex mu_;
  std::map<uint32_t, std::vector<float>> models_;
  SecureAnswer secure_answer_;
  UploadAnswer upload_answer_;
  std::vector<v1::SecureCall> secure_calls_;
  std::vector<v1::DownloadRequest> downloads_;
  std::vector<RecordedUpload> uploads_;
};

}  // namespace shefl::testing

#endif  // SHEFL_TESTS_FAKE_COORDINATOR_H_
