// Running one task: download each assigned model, train it, upload the
// compressed delta; and the per-round record of what the daemon counted.
#include <grpcpp/client_context.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/daemon.h"
#include "common/net/grpc_status.h"
#include "common/core/log.h"
#include "common/core/resources.h"
#include "common/net/wire.h"
#include "common/core/mutex.h"

namespace shefl {

namespace {

std::chrono::system_clock::time_point Deadline(const v1::Task& task) {
  return std::chrono::system_clock::time_point(
      std::chrono::milliseconds(task.deadline_unix_ms()));
}

TaskSettings SettingsOf(const v1::Task& task) {
  TaskSettings s;
  s.round = static_cast<int64_t>(task.round());
  s.lr = task.train().lr();
  s.local_epochs = task.train().local_epochs();
  s.local_steps = task.train().local_steps();
  s.batch_size = std::max<int64_t>(1, task.train().batch_size());
  s.prox_mu = task.train().prox_mu();
  return s;
}

}  // namespace

// One model of one task: the model version (fetched once for all clients
// of this daemon that need it), local training in `slot`, the upload.
void Daemon::RunModel(v1::Coordinator::Stub& stub, const Work& w, int slot) {
  const v1::Task& task = *w.task;
  const v1::ModelTask& mt = task.models(w.model_index);
  const int64_t client = task.client_id(), model = mt.model_id();
  auto fail = [&](absl::string_view what, const absl::Status& st) {
    LogLine(o_.name, absl::StrCat("client ", client, " model ", model, ": ",
                                  what, st.message()));
    FinishItem(w, false, 0);
  };
  if (static_cast<int64_t>(task.round()) <= closed_round_)
    return fail("skipped: ",
                absl::CancelledError(absl::StrCat("round ", task.round(),
                                                  " is over")));
  if (adversary_ && adversary_->Stalls())
    return fail("", absl::CancelledError("--adversary stall: not answered"));
  AwaitTaskBurst();
  auto global = models_.Get(
      model, mt.model_version(), client,
      [&](const std::vector<int64_t>& also_for) {
        return Download(stub, task, mt, also_for);
      });
  if (!global.ok()) return fail("download failed: ", global.status());
  auto update = trainer_->Train(slot, client, model, **global,
                                static_cast<int64_t>(mt.k()), SettingsOf(task));
  if (!update.ok()) return fail("", update.status());
  train_histogram_->Observe(update->train_seconds);
  {
    MutexLock lock(mu_);
    train_seconds_[task.round()] += update->train_seconds;
    const TaskSettings ts = SettingsOf(task);
    train_samples_[task.round()] +=
        ts.local_steps > 0
            ? static_cast<uint64_t>(ts.local_steps * ts.batch_size)
            : update->num_samples * static_cast<uint64_t>(std::max<int64_t>(1, ts.local_epochs));
  }
  const absl::Status sent = Upload(stub, task, mt, *update);
  SettleResidual(task, mt, sent);
  if (!sent.ok()) return fail("upload refused: ", sent);
  FinishItem(w, true, update->train_loss);
}

// The task's line, once its last model is done.
void Daemon::FinishItem(const Work& w, bool sent, double loss) {
  TaskProgress& p = *w.progress;
  std::string line;
  {
    MutexLock lock(mu_);
    p.sent += sent ? 1 : 0;
    p.loss += sent ? loss : 0;
    if (--p.remaining > 0) return;
    line = absl::StrFormat(
        "round %d client %d: %d/%d models sent, loss %.4f, %.1f s",
        w.task->round(), w.task->client_id(), p.sent, w.task->models_size(),
        p.sent ? p.loss / p.sent : 0.0,
        std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                      p.start)
            .count());
  }
  rss_->Set(static_cast<double>(ResidentBytes()));
  LogLine(o_.name, line);
}

// The coordinator's answer settles the error-feedback residual the upload
// left: accepted commits it; a refusal puts the earlier one back in force.
// When the answer never came (the connection or the coordinator went
// away) the residual stays in force: had the coordinator accepted it and
// gone on, it is right; had it not, it hands the round out again, which
// drops it (client/residual_book.h).
void Daemon::SettleResidual(const v1::Task& task, const v1::ModelTask& mt,
                            const absl::Status& sent) {
  switch (sent.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kAborted:
      return;
    default:
      break;
  }
  if (auto st = trainer_->Settle(task.client_id(), mt.model_id(),
                                 static_cast<int64_t>(task.round()), sent.ok());
      !st.ok())
    LogLine(o_.name, absl::StrCat("client ", task.client_id(), " model ",
                                  mt.model_id(), ": residual not kept: ",
                                  st.message()));
}

// Fetches the model for task.client_id() and `also_for` in one transfer.
// Each covered client's books get the download as if it had made its own
// (its own request, the same chunks: the logical bytes); the transfer
// itself is counted once as physical bytes.
absl::StatusOr<ModelCache::Weights> Daemon::Download(
    v1::Coordinator::Stub& stub, const v1::Task& task,
    const v1::ModelTask& mt, const std::vector<int64_t>& also_for) {
  const int64_t round = task.round(), client = task.client_id();
  const int64_t model = mt.model_id();
  v1::DownloadRequest req;
  req.set_session_id(session_id_);
  req.set_round(round);
  req.set_client_id(client);
  req.set_model_id(model);
  req.set_model_version(mt.model_version());
  v1::DownloadRequest alone = req;  // what each client's own would be
  for (int64_t c : also_for) req.add_also_for_clients(c);
  grpc::ClientContext ctx;
  AddCallMetadata(&ctx);
  ctx.set_deadline(Deadline(task));
  auto reader = stub.DownloadModel(&ctx, req);
  const uint64_t dim = static_cast<uint64_t>(trainer_->dim());
  std::vector<float> weights;
  v1::ModelChunk chunk;
  bool ok = true;
  uint64_t down = 0;
  while (reader->Read(&chunk)) {
    down += WireSize(chunk);
    const size_t n = chunk.data().size() / sizeof(float);
    // The coordinator's offsets and `total` are claims: the buffer never
    // grows past what this daemon's model holds.
    if (!ok || chunk.offset() != weights.size() ||
        chunk.data().size() % 4 != 0 || chunk.total() != dim ||
        weights.size() + n > dim) {
      ok = false;
      continue;  // keep reading so the stream and the books stay whole
    }
    if (weights.empty()) weights.reserve(dim);
    weights.resize(weights.size() + n);
    std::memcpy(weights.data() + weights.size() - n, chunk.data().data(),
                chunk.data().size());
  }
  // Booked only when the coordinator served it: a refused request is not
  // in its books either (it counts refusals apart).
  if (auto st = FromGrpc(reader->Finish()); !st.ok()) return st;
  DownloadBytes b;
  b.physical_up = WireSize(req);
  b.physical_down = down;
  std::vector<int64_t> covered = also_for;
  covered.push_back(client);
  for (int64_t c : covered) {
    alone.set_client_id(c);
    Book(round, c, model, Direction::kUp, Traffic::kControl, WireSize(alone));
    Book(round, c, model, Direction::kDown, Traffic::kPayload, down);
    b.logical_up += WireSize(alone);
    b.logical_down += down;
  }
  BookDownload(round, b);
  if (!ok || weights.size() != dim)
    return absl::DataLossError(absl::StrCat("model ", model, ": got ",
                                            weights.size(), " of ",
                                            trainer_->dim(), " weights"));
  return std::make_shared<const std::vector<float>>(std::move(weights));
}

absl::Status Daemon::Upload(v1::Coordinator::Stub& stub, const v1::Task& task,
                            const v1::ModelTask& mt, const TrainedUpdate& u) {
  const int64_t round = task.round(), client = task.client_id();
  const int64_t model = mt.model_id();
  v1::UploadHeader h;
  h.set_session_id(session_id_);
  h.set_round(round);
  h.set_client_id(client);
  h.set_model_id(model);
  h.set_model_version(mt.model_version());
  h.set_encoded_size(u.encoded.size());
  h.set_num_samples(u.num_samples);
  h.set_train_loss(u.train_loss);
  grpc::ClientContext ctx;
  AddCallMetadata(&ctx);
  ctx.set_deadline(Deadline(task));
  v1::UploadReply reply;
  auto writer = stub.UploadDelta(&ctx, &reply);
  uint64_t up = 0;
  for (const v1::DeltaChunk& chunk : MakeUploadChunks(h, u.encoded)) {
    if (!writer->Write(chunk)) break;
    up += WireSize(chunk);
  }
  writer->WritesDone();
  if (auto st = FromGrpc(writer->Finish()); !st.ok()) return st;
  Book(round, client, model, Direction::kUp, Traffic::kPayload, up);
  Book(round, client, model, Direction::kDown, Traffic::kControl,
       WireSize(reply));
  return absl::OkStatus();
}

void Daemon::BookDownload(int64_t round, const DownloadBytes& b) {
  {
    MutexLock lock(mu_);
    DownloadBytes& sum = downloads_[round];
    sum.logical_up += b.logical_up;
    sum.logical_down += b.logical_down;
    sum.physical_up += b.physical_up;
    sum.physical_down += b.physical_down;
  }
  download_bytes_->Add({{"kind", "logical"}})
      .Increment(static_cast<double>(b.logical_up + b.logical_down));
  download_bytes_->Add({{"kind", "physical"}})
      .Increment(static_cast<double>(b.physical_up + b.physical_down));
}

// Caller holds mu_.
void Daemon::WriteRoundLine(int64_t round) {
  nlohmann::json clients = nlohmann::json::object();
  ByteCounts daemon, total;
  for (const auto& [client, b] : ledger_.ByClient(round)) {
    total += b;
    if (client == kDaemonTraffic)
      daemon = b;
    else
      clients[std::to_string(client)] = ToJson(b);
  }
  const DownloadBytes dl = downloads_[round];
  nlohmann::json line = {{"round", round},
                         {"daemon", o_.name},
                         {"bytes_up", total.payload_up},
                         {"bytes_down", total.payload_down},
                         {"control_bytes", total.control()},
                         {"train_seconds", train_seconds_[round]},
                         {"train_samples", train_samples_[round]},
                         {"download_bytes_logical", dl.logical_up + dl.logical_down},
                         {"download_bytes_physical", dl.physical_up + dl.physical_down},
                         {"downloads",
                          {{"logical", {{"up", dl.logical_up}, {"down", dl.logical_down}}},
                           {"physical", {{"up", dl.physical_up}, {"down", dl.physical_down}}}}},
                         {"peak_rss_bytes", PeakRssBytes()},
                         {"bytes_by_client", clients},
                         {"daemon_bytes", ToJson(daemon)}};
  train_seconds_.erase(train_seconds_.begin(), train_seconds_.upper_bound(round));
  train_samples_.erase(train_samples_.begin(), train_samples_.upper_bound(round));
  downloads_.erase(downloads_.begin(), downloads_.upper_bound(round));
  std::ofstream out(o_.out_dir + "/" + o_.name + ".jsonl", std::ios::app);
  out << line.dump() << "\n";
}

}  // namespace shefl
