// The auth matrix (docs/DESIGN.md, "Trust and faults"): every RPC of
// proto/shefl.proto against every way a peer can be wrong, on one real
// coordinator in this process with mutual TLS and a token, over real
// sockets on 127.0.0.1, with PKIs made by the real `shefl certs`. Each
// hostile call names real work (the session, clients and model task of a
// legitimate daemon A in an open round), so that only the check under test
// stands between it and success; every one must be refused with its code
// and leave the models, the registry, the ledger and rounds.jsonl as they
// were. The matrix is printed on lines that start with "auth-matrix:".
#include "tests/coordinator_harness.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <sstream>

#include "absl/strings/ascii.h"
#include "common/net/accounting.h"
#include "tests/pki_support.h"

namespace shefl {
namespace {

using testing::DialAs;
using testing::ReadFile;
using testing::TempDir;
using testing::WaitUntil;

// A is client-0 of the PKI, B client-1; client-2 has a valid certificate
// but never got the token.
constexpr int kCertA = 0, kCertB = 1, kCertStranger = 2;
// Client 7 is hosted by nobody (the run starts with 7 of 8 connected), so
// that at Register the token is the only thing a stranger lacks.
const std::vector<int64_t> kClientsA = {0, 1, 2, 3}, kClientsB = {4, 5, 6};
constexpr int64_t kFreeClient = 7;

// A refused call comes back at once; an accepted TaskFeed would stream
// until this, so an RPC that should have been refused shows as
// DEADLINE_EXCEEDED instead of hanging the test.
void Limit(grpc::ClientContext& ctx) {
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
}

// A real coordinator: mutual TLS with client certificates of `pki`'s CA
// and the token; rounds that outlast the test, so that nothing but the
// calls of the test can change its state.
struct MtlsCoordinator {
  std::unique_ptr<Coordinator> coordinator;
  std::thread runner;

  MtlsCoordinator(const TempDir& dir, const std::string& pki) {
    testing::WriteFile(dir / "c.yaml",
                       testing::SyntheticConfig(
                           "round_deadline_s: 600\n"
                           "clients:\n  min_connected: 7\n"
                           "  start_timeout_s: 0\n"));
    CoordinatorOptions o = MtlsOptions(dir / "c.yaml", dir / "out", pki);
    auto c = Coordinator::Create(o);
    INFO(c.status());
    REQUIRE(c.ok());
    coordinator = std::move(*c);
    runner = std::thread([this] { (void)coordinator->Run(); });
  }
  ~MtlsCoordinator() {
    coordinator->RequestStop();
    runner.join();
  }
  std::string target() const {
    return "127.0.0.1:" + std::to_string(coordinator->listening_port());
  }
  CoordinatorState& state() { return coordinator->state(); }
};

std::unique_ptr<v1::Coordinator::Stub> Dial(const std::string& target,
                                            const DialAs& d) {
  auto stub = testing::DialCoordinator(target, d);
  INFO(stub.status());
  REQUIRE(stub.ok());
  return std::move(*stub);
}

// What a call asks for. Each RPC reads the fields it has: Register the
// token, name and `hosts`; TaskFeed the session and `reports` (shard
// sizes); DownloadModel and UploadDelta the session and the model task;
// Heartbeat the session.
struct Claim {
  std::string session, token, name;
  std::vector<int64_t> hosts, reports;
  v1::Task task;         // round and client
  v1::ModelTask model;   // model, version and budget k
  uint64_t dim = 0;
};

// After Register a daemon sends its token as call metadata with every call
// (common/net/call_metadata.h); a claim without one sends none.
void AddToken(grpc::ClientContext& ctx, const Claim& c) {
  if (!c.token.empty()) ctx.AddMetadata(kTokenMetadata, c.token);
}

grpc::Status CallRegister(v1::Coordinator::Stub& stub, const Claim& c) {
  v1::RegisterRequest req;
  req.set_daemon_name(c.name);
  req.set_token(c.token);
  for (int64_t id : c.hosts) req.add_clients()->set_client_id(id);
  v1::RegisterReply reply;
  grpc::ClientContext ctx;
  Limit(ctx);
  return stub.Register(&ctx, req, &reply);
}

grpc::Status CallFeed(v1::Coordinator::Stub& stub, const Claim& c) {
  v1::TaskFeedRequest req;
  req.set_session_id(c.session);
  for (int64_t id : c.reports) {
    v1::LogicalClient* lc = req.add_clients();
    lc->set_client_id(id);
    lc->set_num_samples(100);
  }
  grpc::ClientContext ctx;
  Limit(ctx);
  AddToken(ctx, c);
  auto reader = stub.TaskFeed(&ctx, req);
  v1::FeedMessage m;
  while (reader->Read(&m)) {
  }
  return reader->Finish();
}

grpc::Status CallDownload(v1::Coordinator::Stub& stub, const Claim& c) {
  v1::DownloadRequest req;
  req.set_session_id(c.session);
  req.set_round(c.task.round());
  req.set_client_id(c.task.client_id());
  req.set_model_id(c.model.model_id());
  req.set_model_version(c.model.model_version());
  grpc::ClientContext ctx;
  Limit(ctx);
  AddToken(ctx, c);
  auto reader = stub.DownloadModel(&ctx, req);
  v1::ModelChunk chunk;
  while (reader->Read(&chunk)) {
  }
  return reader->Finish();
}

// A well-formed update of k zeros: accepted, it would count in the round
// (a zero moves no weight, the accepted count and the ledger show it).
grpc::Status CallUpload(v1::Coordinator::Stub& stub, const Claim& c) {
  SparseDelta zero = Delta(c.dim, c.model.k());
  for (float& v : zero.values) v = 0;
  const std::string blob = *EncodeSparseDelta(zero, ValueType::kFp32);
  grpc::ClientContext ctx;
  Limit(ctx);
  AddToken(ctx, c);
  v1::UploadReply reply;
  auto w = stub.UploadDelta(&ctx, &reply);
  for (const auto& chunk : MakeUploadChunks(
           HeaderFor(c.session, c.task, c.model, blob.size()), blob))
    if (!w->Write(chunk)) break;
  w->WritesDone();
  return w->Finish();
}

grpc::Status CallHeartbeat(v1::Coordinator::Stub& stub, const Claim& c) {
  v1::HeartbeatRequest req;
  req.set_session_id(c.session);
  v1::HeartbeatReply reply;
  grpc::ClientContext ctx;
  Limit(ctx);
  AddToken(ctx, c);
  return stub.Heartbeat(&ctx, req, &reply);
}

struct Rpc {
  const char* name;
  std::function<grpc::Status(v1::Coordinator::Stub&, const Claim&)> call;
  bool names_client;  // Heartbeat names none: "someone else's client" is n/a
};

const std::vector<Rpc>& Rpcs() {
  static const std::vector<Rpc> rpcs = {
      {"Register", CallRegister, true},
      {"TaskFeed", CallFeed, true},
      {"DownloadModel", CallDownload, true},
      {"UploadDelta", CallUpload, true},
      {"Heartbeat", CallHeartbeat, false}};
  return rpcs;
}

// A legitimate daemon: its certificate, its session, its open feed.
struct Daemon {
  std::string name;
  std::vector<int64_t> clients;
  std::unique_ptr<v1::Coordinator::Stub> stub;
  std::string session;
  grpc::ClientContext feed_ctx;
  std::unique_ptr<grpc::ClientReader<v1::FeedMessage>> feed;

  Daemon(std::string n, std::vector<int64_t> ids, const std::string& target,
         const DialAs& cert, const std::string& token)
      : name(std::move(n)), clients(std::move(ids)), stub(Dial(target, cert)) {
    this->token = token;
    v1::RegisterRequest req;
    req.set_daemon_name(name);
    req.set_token(token);
    for (int64_t id : clients) req.add_clients()->set_client_id(id);
    v1::RegisterReply reply;
    grpc::ClientContext ctx;
    Limit(ctx);
    const grpc::Status st = stub->Register(&ctx, req, &reply);
    INFO(name << ": " << st.error_message());
    REQUIRE(st.ok());
    session = reply.session_id();
    v1::TaskFeedRequest f;
    f.set_session_id(session);
    feed_ctx.AddMetadata(kTokenMetadata, token);
    feed = stub->TaskFeed(&feed_ctx, f);
  }
  ~Daemon() { feed_ctx.TryCancel(); }
  std::string token;

  // The tasks of round `round` for this daemon's clients, as many as the
  // coordinator holds open for them (it pushed them when the round opened).
  std::vector<v1::Task> Tasks(CoordinatorState& s, int64_t round) {
    REQUIRE(WaitUntil(
        [&] { return s.open_round() && s.open_round()->round() == round; },
        60));
    size_t n = 0;
    for (const auto& [client, msg] : s.open_tasks())
      n += std::count(clients.begin(), clients.end(), client);
    std::vector<v1::Task> tasks;
    v1::FeedMessage m;
    while (tasks.size() < n && feed->Read(&m))
      if (m.has_task() && m.task().round() == uint64_t(round))
        tasks.push_back(m.task());
    REQUIRE(tasks.size() == n);
    return tasks;
  }

  // What this daemon itself would send for `task`'s model `mt`.
  Claim Own(const v1::Task& task, const v1::ModelTask& mt,
            const std::string& token, uint64_t dim) const {
    return Claim{session, token, name, clients, {}, task, mt, dim};
  }

  // Uploads a zero update for every model of `tasks`; all must be accepted.
  void UploadZeros(const std::vector<v1::Task>& tasks, uint64_t dim) {
    for (const auto& t : tasks)
      for (const auto& mt : t.models()) {
        const grpc::Status st = CallUpload(*stub, Own(t, mt, token, dim));
        INFO(name << " client " << t.client_id() << ": " << st.error_message());
        REQUIRE(st.ok());
      }
  }
};

// The state a refused call must not touch.
struct Books {
  std::vector<std::string> digests;
  std::vector<uint64_t> versions;
  std::string registry, ledger, rounds;
  int64_t accepted = -1;
  bool operator==(const Books& o) const {
    return digests == o.digests && versions == o.versions &&
           registry == o.registry && ledger == o.ledger &&
           rounds == o.rounds && accepted == o.accepted;
  }
};

std::string DescribeRegistry(const ClientRegistry& r, int64_t num_clients) {
  std::ostringstream out;
  for (const auto& s : r.Sessions()) {
    out << s->name << " " << s->session_id << " " << s->identity << " [";
    for (int64_t c : s->clients) out << c << " ";
    out << "]\n";
  }
  for (int64_t c = 0; c < num_clients; ++c)
    out << c << (r.IsConnected(c) ? " connected " : " not connected ");
  return out.str();
}

Books Snapshot(MtlsCoordinator& c, const std::string& rounds_path) {
  CoordinatorState& s = c.state();
  Books b;
  b.digests = s.store->Digests();
  for (int64_t m = 0; m < s.store->num_models(); ++m)
    b.versions.push_back(s.store->Version(m));
  b.registry = DescribeRegistry(s.registry, s.config.clients.num_clients);
  b.ledger = ToJson(s.ledger.Total()).dump();
  b.rounds = std::filesystem::exists(rounds_path) ? ReadFile(rounds_path) : "";
  auto open = s.open_round();
  b.accepted = open ? open->accepted() : -1;
  return b;
}

// The ledger once a feed write that returned to the coordinator before its
// reader saw the message has been booked: unchanged over 300 ms with no
// call in flight (nothing else books while the round waits).
void WaitLedgerSettled(CoordinatorState& s) {
  std::string last = ToJson(s.ledger.Total()).dump();
  for (int i = 0; i < 50; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const std::string now = ToJson(s.ledger.Total()).dump();
    if (now == last) return;
    last = now;
  }
  FAIL("the ledger kept changing with no call in flight");
}

const char* CodeName(grpc::StatusCode c) {
  switch (c) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::UNKNOWN: return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED: return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS: return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    default: return "?";
  }
}

// One column of the matrix: how the peer dials, what it claims (several
// attempts where the condition has several forms), what it must get.
struct Column {
  std::string label;
  DialAs dial;
  std::vector<Claim> claims;
  grpc::StatusCode want;
  bool about_a_client = false;  // n/a for an RPC that names no client
};

// Runs every claim of `col` through `rpc` on a fresh channel; the cell is
// the code they all got, or the codes joined by '/' when they differ.
std::string RunCell(const std::string& target, const Rpc& rpc,
                    const Column& col) {
  auto stub = Dial(target, col.dial);
  std::string cell;
  for (const Claim& claim : col.claims) {
    const grpc::Status st = rpc.call(*stub, claim);
    INFO(rpc.name << " x " << col.label << ": " << st.error_message());
    CHECK(st.error_code() == col.want);
    const std::string code = CodeName(st.error_code());
    if (cell.empty()) cell = code;
    else if (cell.find(code) == std::string::npos) cell += "/" + code;
  }
  return cell;
}

// The PKIs of the test: `pki` (the coordinator's, client-0..2), `other`
// (another CA), `expired` (an expired client-0 of pki's CA), all made by
// the real `shefl certs` and the library it uses.
struct Pkis {
  std::string pki, other, expired, token;
  explicit Pkis(const TempDir& dir)
      : pki(dir / "pki"), other(dir / "other"), expired(dir / "expired") {
    REQUIRE(testing::MakeCertsWithCli(pki, 3).ok());
    REQUIRE(testing::MakeCertsWithCli(other, 1).ok());
    REQUIRE(testing::MakeExpiredClient(pki, expired).ok());
    token = std::string(absl::StripAsciiWhitespace(ReadFile(pki + "/token")));
  }
  DialAs Cert(int i) const { return testing::ClientOf(pki, i); }
};

// The handshake refuses these peers whatever they claim; they hold A's
// stolen session id and the token, so nothing else would stop them.
void AddTransportColumns(const Pkis& p, const Claim& as_a,
                         std::vector<Column>* cols) {
  for (const auto& [label, d] :
       testing::HandshakeFailures(p.Cert(kCertA), p.other, p.expired))
    cols->push_back({label, d, {as_a}, grpc::StatusCode::UNAVAILABLE});
}

// No or a wrong token, from a peer whose certificate is valid. Register
// reads the token in its request, every later RPC in its call metadata
// before anything else; the peer also lacks a session. The peer uses what its
// refused Register left it (an empty session id) and a guessed one; both name
// A's client and model task.
Column TokenColumn(const Pkis& p, const Claim& as_a) {
  Claim none = as_a, wrong = as_a;
  none.token = "";
  wrong.token = p.token;
  wrong.token.back() = wrong.token.back() == '0' ? '1' : '0';
  none.name = wrong.name = "stranger";
  none.hosts = wrong.hosts = none.reports = wrong.reports = {kFreeClient};
  none.session = "";
  wrong.session = std::string(32, '0');
  return {"no/wrong token", p.Cert(kCertStranger), {none, wrong},
          grpc::StatusCode::UNAUTHENTICATED};
}

// B, legitimate itself, with A's session id, or with its own session
// naming A's client. Register has no session: its form of the first is B
// taking A's daemon name (which would replace A's session), of the second
// B's name hosting A's client; TaskFeed's second names A's client in a
// shard-size report.
void AddIdentityColumns(const Pkis& p, const Claim& as_a, const Daemon& b,
                        std::vector<Column>* cols) {
  Claim a_session = as_a;
  a_session.hosts = kClientsB;
  cols->push_back({"A's session", p.Cert(kCertB), {a_session},
                   grpc::StatusCode::PERMISSION_DENIED});
  Claim a_client = as_a;
  a_client.session = b.session;
  a_client.name = b.name;
  a_client.hosts = a_client.reports = {as_a.task.client_id()};
  cols->push_back({"A's client", p.Cert(kCertB), {a_client},
                   grpc::StatusCode::PERMISSION_DENIED, true});
}

// Rows by RPC name, one cell per column.
using Matrix = std::map<std::string, std::vector<std::string>>;

Matrix RunMatrix(const std::string& target, const std::vector<Column>& cols) {
  Matrix rows;
  for (const Rpc& rpc : Rpcs())
    for (const Column& col : cols)
      rows[rpc.name].push_back(col.about_a_client && !rpc.names_client
                                   ? "n/a"
                                   : RunCell(target, rpc, col));
  return rows;
}

// A itself, with the claims the hostile peers copied, gets through: each
// refusal above was the condition's doing. TaskFeed is A's open feed,
// which delivered its tasks; Register goes last, as it replaces A's
// session.
void RunControl(Daemon& a, const Claim& as_a, Matrix* rows) {
  (*rows)["TaskFeed"].push_back("(open feed)");
  for (const char* name : {"Heartbeat", "DownloadModel", "UploadDelta",
                           "Register"})
    for (const Rpc& rpc : Rpcs())
      if (std::string(rpc.name) == name) {
        const grpc::Status st = rpc.call(*a.stub, as_a);
        INFO(name << " by A: " << st.error_message());
        CHECK(st.ok());
        (*rows)[name].push_back(CodeName(st.error_code()));
      }
}

void PrintRow(const std::string& head, const std::vector<std::string>& cells) {
  std::printf("auth-matrix: %-15s", head.c_str());
  for (const std::string& c : cells) std::printf(" %-18s", c.c_str());
  std::printf("\n");
}

void PrintMatrix(const std::vector<Column>& cols, const Matrix& rows) {
  std::vector<std::string> head, want;
  for (const Column& col : cols) {
    head.push_back(col.label);
    want.push_back(CodeName(col.want));
  }
  head.push_back("A (control)");
  want.push_back("OK");
  PrintRow("RPC", head);
  for (const Rpc& rpc : Rpcs()) PrintRow(rpc.name, rows.at(rpc.name));
  PrintRow("(expected)", want);
  std::fflush(stdout);
}

void CheckUnchanged(const Books& before, const Books& after) {
  CHECK(after.digests == before.digests);
  CHECK(after.versions == before.versions);
  CHECK(after.registry == before.registry);
  CHECK(after.ledger == before.ledger);
  CHECK(after.rounds == before.rounds);
  CHECK(after.accepted == before.accepted);
}

TEST_CASE("every RPC refuses every kind of wrong peer and changes nothing",
          "[auth][tls]") {
  TempDir dir;
  const Pkis p(dir);
  MtlsCoordinator c(dir, p.pki);
  CoordinatorState& s = c.state();
  const uint64_t dim = s.store->dim();
  Daemon a("daemon-a", kClientsA, c.target(), p.Cert(kCertA), p.token);
  Daemon b("daemon-b", kClientsB, c.target(), p.Cert(kCertB), p.token);
  // Round 1 runs to its end, so that rounds.jsonl and the model versions
  // hold something a stray update or aggregation would change; the matrix
  // runs in round 2, which waits (600 s deadline) for the daemons.
  a.UploadZeros(a.Tasks(s, 1), dim);
  b.UploadZeros(b.Tasks(s, 1), dim);
  const std::vector<v1::Task> tasks_a = a.Tasks(s, 2);
  b.Tasks(s, 2);
  REQUIRE(!tasks_a.empty());
  // The claim that A itself would make: the hostile calls change as
  // little of it as their condition needs.
  const Claim as_a = a.Own(tasks_a[0], tasks_a[0].models(0), p.token, dim);
  WaitLedgerSettled(s);
  const std::string rounds_path = dir / "out/rounds.jsonl";
  // Round 1's line follows its evaluation, which runs beside round 2.
  REQUIRE(testing::WaitUntil(
      [&] { return testing::ReadJsonl(rounds_path).size() == 1; }, 60));
  const Books before = Snapshot(c, rounds_path);
  REQUIRE(before.rounds != "");

  std::vector<Column> cols;
  AddTransportColumns(p, as_a, &cols);
  const Column token = TokenColumn(p, as_a);
  cols.push_back(token);
  AddIdentityColumns(p, as_a, b, &cols);
  Matrix rows = RunMatrix(c.target(), cols);
  WaitLedgerSettled(s);
  CheckUnchanged(before, Snapshot(c, rounds_path));

  RunControl(a, as_a, &rows);
  // The stranger lacked only the token: with it, it may take client 7.
  Claim with_token = token.claims[0];
  with_token.token = p.token;
  auto stranger = Dial(c.target(), p.Cert(kCertStranger));
  CHECK(CallRegister(*stranger, with_token).ok());
  PrintMatrix(cols, rows);
}

}  // namespace
}  // namespace shefl
