// Secure aggregation in whole runs (aggregation.secure; docs/DESIGN.md,
// "Secure aggregation"), with a real coordinator and real daemons on
// 127.0.0.1: a masked run's models equal those of a clear_support run of
// the same support, clipping and rounding bit for bit, whatever the
// packing of clients into daemons; the books hold every secure message,
// the masked inputs at the size the design gives (4K bytes and the
// framing), and both ends agree; 30% of the daemons killed -9 mid-round
// leave every round closed with the survivors' sum; one more than n - t
// gone abandons the model's round and the models do not move; a party
// adding garbage to its masked input spoils only sums that are refused,
// and is benched and named.
#include <signal.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/net/accounting.h"
#include "shefl.pb.h"
#include "tests/local_processes.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

// The synthetic config with every client an HPC in every round (so each
// model has a party per daemon), two members and secure aggregation on.
std::string SecureConfig() {
  return SyntheticConfig("aggregation:\n  secure: common_support\n");
}

std::vector<std::string> Clients(int n, std::vector<std::string> sets) {
  const std::string c = std::to_string(n);
  for (const std::string& s : std::vector<std::string>{
           "clients.num_clients=" + c, "clients.num_hpc=" + c,
           "clients.per_round_hpc=" + c, "clients.per_round_lpc=0",
           "model.num_models=2", "round_deadline_s=120"})
    sets.push_back(s);
  return sets;
}

// `shefl run` of dir/c.yaml with `daemons` daemons; the results folder.
std::string Run(const TempDir& dir, const std::string& name, int daemons,
                const std::vector<std::string>& sets) {
  std::vector<std::string> argv = {BinDir() + "/shefl", "run", dir / "c.yaml",
                                   "--daemons", std::to_string(daemons),
                                   "--threads", "1", "--out", dir / name};
  for (const std::string& s : sets) argv.insert(argv.end(), {"--set", s});
  auto r = RunProcess(argv, 300);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return dir / name;
}

nlohmann::json Summary(const std::string& run) {
  return nlohmann::json::parse(ReadFile(run + "/summary.json"));
}

// Every byte up of a books line, and every byte down to its clients (a
// daemon's own down traffic also holds the round's end, which the
// coordinator books after writing the round's line).
std::pair<uint64_t, uint64_t> LineBytes(const nlohmann::json& line) {
  const auto& d = line["daemon_bytes"];
  uint64_t up = d["payload_up"].get<uint64_t>() + d["control_up"].get<uint64_t>();
  uint64_t down = 0;
  for (const auto& [client, c] : line["bytes_by_client"].items()) {
    up += c["payload_up"].get<uint64_t>() + c["control_up"].get<uint64_t>();
    down += c["payload_down"].get<uint64_t>() + c["control_down"].get<uint64_t>();
  }
  return {up, down};
}

// The masked input of `party` for `model` in `round`: K words.
uint64_t InputCallBytes(int64_t round, uint32_t model, uint32_t party,
                        uint64_t words, const std::string& session_id) {
  v1::SecureCall call;
  call.set_session_id(session_id);
  call.set_round(round);
  call.set_model_id(model);
  call.set_party(party);
  call.mutable_input()->set_weight(1.0);
  call.mutable_input()->set_words(std::string(4 * words, '\0'));
  return WireSize(call);
}

TEST_CASE("secure: masked models equal clear_support ones whatever the packing, "
          "and the books hold every stage") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SecureConfig());
  const std::string masked = Run(dir, "masked", 6, Clients(6, {}));
  const std::string clear =
      Run(dir, "clear", 3,
          Clients(6, {"aggregation.secure=clear_support", "secure.min_parties=3"}));
  const std::string plain =
      Run(dir, "plain", 6, Clients(6, {"aggregation.secure=off"}));
  INFO(Summary(masked).dump());
  CHECK(Summary(masked)["model_sha256"] == Summary(clear)["model_sha256"]);
  // The support is not the clients' own top-k: another model.
  CHECK(Summary(masked)["model_sha256"] != Summary(plain)["model_sha256"]);

  const auto rounds = ReadJsonl(masked + "/rounds.jsonl");
  REQUIRE(rounds.size() == 3);
  for (const auto& line : rounds) {
    INFO(line.dump());
    const int64_t round = line["round"].get<int64_t>();
    uint64_t inputs = 0;
    for (uint32_t m = 0; m < 2; ++m) {
      const auto& s = line["secure"][std::to_string(m)];
      CHECK(s["outcome"] == "finished");
      CHECK(s["survivors"] == 6);
      CHECK(s["dropped"] == 0);
      const uint64_t words = s["words"].get<uint64_t>();
      CHECK(words == 4441);  // K = k = 10% of d = 44,404
      // A session id is 32 hex digits; each party's input is 4K bytes and
      // its framing.
      for (uint32_t party = 0; party < 6; ++party)
        inputs += InputCallBytes(round, m, party, words, std::string(32, 'a'));
    }
    const auto& b = line["secure_bytes"];
    CHECK(b["masked_input"]["up"].get<uint64_t>() == inputs);
    CHECK(b["masked_input"]["down"].get<uint64_t>() == 12 * 7);  // accepted
    CHECK(b["setup"]["up"].get<uint64_t>() > 0);
    CHECK(b["setup"]["down"].get<uint64_t>() > 0);
    CHECK(b["unmask"]["up"].get<uint64_t>() > 0);
    // Nothing went as a plain upload: the payload up is the inputs.
    uint64_t payload_up = 0;
    for (const auto& [client, c] : line["bytes_by_client"].items())
      payload_up += c["payload_up"].get<uint64_t>();
    CHECK(payload_up == inputs);
  }
  // Both ends' books agree, every secure message included.
  uint64_t d_up = 0, d_down = 0, r_up = 0, r_down = 0;
  for (int d = 0; d < 6; ++d)
    for (const auto& line :
         ReadJsonl(masked + "/daemons/daemon-" + std::to_string(d) + ".jsonl")) {
      auto [up, down] = LineBytes(line);
      d_up += up, d_down += down;
    }
  for (const auto& line : rounds) {
    auto [up, down] = LineBytes(line);
    r_up += up, r_down += down;
  }
  CHECK(d_up == r_up);
  CHECK(d_down == r_down);
}

TEST_CASE("secure: with a vote, masked equals clear_support, each input is "
          "K + V words, and the vote moves the support") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SecureConfig());
  const std::vector<std::string> vote = {"secure.support=layout", "secure.vote=true",
                                         "secure.min_parties=3"};
  std::vector<std::string> clear_vote = vote;
  clear_vote.push_back("aggregation.secure=clear_support");
  const std::string masked = Run(dir, "masked", 6, Clients(6, vote));
  const std::string clear = Run(dir, "clear", 3, Clients(6, clear_vote));
  const std::string layout =
      Run(dir, "layout", 6, Clients(6, {"secure.support=layout", "secure.min_parties=3"}));
  INFO(Summary(masked).dump());
  CHECK(Summary(masked)["model_sha256"] == Summary(clear)["model_sha256"]);
  // Round 1 has no vote yet (the same support as the layout run); from
  // round 2 the vote chooses V, and the models part.
  CHECK(Summary(masked)["model_sha256"] != Summary(layout)["model_sha256"]);
  for (const auto& line : ReadJsonl(masked + "/rounds.jsonl")) {
    INFO(line.dump());
    for (const char* m : {"0", "1"}) {
      CHECK(line["secure"][m]["outcome"] == "finished");
      // K = 4,441 and the vote: the mlp's 200 x 200 hidden weight, its
      // only tensor above secure.whole_max, 200 rows + 200 columns.
      CHECK(line["secure"][m]["words"] == 4441 + 400);
    }
  }
}

TEST_CASE("secure: 16-bit words: masked equals clear_support, and each "
          "input's values go up in 2 bytes") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SecureConfig());
  // 6 clients: 6 ceil(2^12) < 2^15.
  const std::vector<std::string> narrow = {"secure.word_bits=16", "secure.scale_bits=12"};
  std::vector<std::string> clear = narrow;
  clear.insert(clear.end(), {"aggregation.secure=clear_support", "secure.min_parties=3"});
  const std::string masked = Run(dir, "masked", 6, Clients(6, narrow));
  const std::string clear_run = Run(dir, "clear", 3, Clients(6, clear));
  CHECK(Summary(masked)["model_sha256"] == Summary(clear_run)["model_sha256"]);
  for (const auto& line : ReadJsonl(masked + "/rounds.jsonl")) {
    INFO(line.dump());
    uint64_t inputs = 0;
    for (uint32_t m = 0; m < 2; ++m) {
      CHECK(line["secure"][std::to_string(m)]["outcome"] == "finished");
      // 2 bytes a value word: the bytes of 4441 / 2 32-bit words.
      for (uint32_t party = 0; party < 6; ++party) {
        v1::SecureCall call;
        call.set_session_id(std::string(32, 'a'));
        call.set_round(line["round"].get<int64_t>());
        call.set_model_id(m);
        call.set_party(party);
        call.mutable_input()->set_weight(1.0);
        call.mutable_input()->set_words(std::string(2 * 4441, '\0'));
        inputs += WireSize(call);
      }
    }
    CHECK(line["secure_bytes"]["masked_input"]["up"].get<uint64_t>() == inputs);
  }
}

TEST_CASE("secure: the oracle support keeps the top K of each clear sum, "
          "and says how much of its energy that is") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SecureConfig());
  const std::string oracle =
      Run(dir, "oracle", 6,
          Clients(6, {"aggregation.secure=clear_support", "secure.min_parties=3",
                      "secure.support=oracle"}));
  const std::string clear =
      Run(dir, "clear", 6,
          Clients(6, {"aggregation.secure=clear_support", "secure.min_parties=3"}));
  CHECK(Summary(oracle)["model_sha256"] != Summary(clear)["model_sha256"]);
  for (const auto& line : ReadJsonl(oracle + "/rounds.jsonl")) {
    INFO(line.dump());
    for (const char* m : {"0", "1"}) {
      const auto& s = line["secure"][m];
      CHECK(s["outcome"] == "finished");
      CHECK(s["words"] == 44404);  // every coordinate, in the clear
      const double energy = s["energy"].get<double>();
      // K = 10% of d holds a share of the energy above 10% (the largest
      // coordinates) and below all of it.
      CHECK(energy > 0.1);
      CHECK(energy < 1.0);
    }
  }
}

// Starts a coordinator and `n` daemons of one client each (daemon i hosts
// client i; the last one also gets `last_daemon_flags`).
struct Federation {
  Federation(const TempDir& dir, int n, const std::vector<std::string>& sets,
             const std::vector<std::string>& coordinator_flags = {},
             const std::vector<std::string>& last_daemon_flags = {}) {
    port = FreePort();
    std::vector<std::string> argv = CoordinatorArgv(dir, port, sets);
    argv.insert(argv.end(), coordinator_flags.begin(), coordinator_flags.end());
    coordinator = Spawn(argv, dir / "c.log");
    for (int i = 0; i < n; ++i) {
      std::vector<std::string> d =
          DaemonArgv(dir, port, "d" + std::to_string(i), std::to_string(i));
      if (i == n - 1) d.insert(d.end(), last_daemon_flags.begin(), last_daemon_flags.end());
      daemons.push_back(Spawn(d, dir / ("d" + std::to_string(i) + ".log")));
    }
  }
  ~Federation() {
    for (int pid : daemons) ::kill(-pid, SIGKILL);
    ::kill(-coordinator, SIGKILL);
  }
  void Kill(int i) {
    ::kill(-daemons[i], SIGKILL);
    WaitFor(daemons[i], 10);
  }
  int port = 0, coordinator = 0;
  std::vector<int> daemons;
};

TEST_CASE("secure: 30% of the daemons killed -9 mid-round, every round closes "
          "with the survivors' sum") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SecureConfig());
  Federation f(dir, 10,
               Clients(10, {"rounds=4", "train.local_steps=400",
                            "clients.lost_after_s=2", "clients.min_connected=7",
                            "secure.stage_timeout_s=20"}));
  REQUIRE(WaitUntil([&] { return ReadJsonl(dir / "run/rounds.jsonl").size() >= 1; },
                    240));
  // Round 2 is open: its parties are advertising, sharing or training.
  for (int i : {2, 5, 8}) f.Kill(i);
  INFO(ReadFile(dir / "c.log"));
  REQUIRE(WaitFor(f.coordinator, 300) == 0);
  const auto rounds = ReadJsonl(dir / "run/rounds.jsonl");
  REQUIRE(rounds.size() == 4);
  for (const auto& line : rounds) {
    INFO(line.dump());
    for (const char* m : {"0", "1"}) {
      const auto& s = line["secure"][m];
      CHECK(s["outcome"] == "finished");
      // t = floor(2n/3) + 1 of n = 10 is 7: the 7 survivors suffice.
      CHECK(s["survivors"].get<int>() >= 7);
    }
    // A round after the loss has only the survivors' clients in it.
    if (line["round"].get<int>() >= 3)
      CHECK(line["secure"]["0"]["survivors"] == 7);
  }
  CHECK(rounds[1]["secure"]["0"]["clients"].get<int>() <= 10);
  CHECK(Summary(dir / "run")["rounds"] == 4);
}

TEST_CASE("secure: one more than n - t gone abandons the round, and the models "
          "do not move") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SecureConfig());
  Federation f(dir, 6,
               Clients(6, {"rounds=4", "train.local_steps=400",
                           "clients.lost_after_s=2", "clients.min_connected=4",
                           "secure.threshold=5", "secure.min_parties=3",
                           "secure.stage_timeout_s=20"}));
  REQUIRE(WaitUntil([&] { return ReadJsonl(dir / "run/rounds.jsonl").size() >= 1; },
                    240));
  f.Kill(1);
  f.Kill(4);
  INFO(ReadFile(dir / "c.log"));
  REQUIRE(WaitFor(f.coordinator, 300) == 0);
  const auto rounds = ReadJsonl(dir / "run/rounds.jsonl");
  REQUIRE(rounds.size() == 4);
  CHECK(rounds[0]["secure"]["0"]["outcome"] == "finished");
  // From the round of the loss on, 4 parties are left, fewer than t = 5:
  // every session abandoned, nothing unmasked, the models as they were.
  for (size_t i = 1; i < rounds.size(); ++i) {
    INFO(rounds[i].dump());
    for (const char* m : {"0", "1"})
      CHECK(rounds[i]["secure"][m]["outcome"] == "abandoned");
    CHECK(rounds[i]["ensemble_accuracy"] == rounds[0]["ensemble_accuracy"]);
  }
  CHECK_THAT(ReadFile(dir / "c.log"), Catch::Contains("nothing is unmasked"));
}

TEST_CASE("secure: a party adding garbage to its masked input: its sums are "
          "corrupt and reach no model, and it is benched and named") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SecureConfig());
  // Ten daemons, two HPCs and eight LPCs: each model's session holds both
  // HPCs and some LPCs, so the cohort draws the liar (d9, an LPC) apart
  // from the honest parties.
  Federation f(dir, 10,
               {"rounds=8", "clients.num_clients=10", "clients.num_hpc=2",
                "clients.per_round_hpc=2", "clients.per_round_lpc=6",
                "model.num_models=2", "secure.min_parties=3",
                "round_deadline_s=120"},
               {}, {"--adversary", "garbage"});
  const int rc = WaitFor(f.coordinator, 400);
  INFO(ReadFile(dir / "c.log"));
  REQUIRE(rc == 0);
  const auto rounds = ReadJsonl(dir / "run/rounds.jsonl");
  REQUIRE(rounds.size() == 8);
  int corrupt = 0, benched_round = 0;
  for (const auto& line : rounds) {
    INFO(line.dump());
    const int r = line["round"].get<int>();
    for (const char* m : {"0", "1"}) {
      const auto& s = line["secure"][m];
      if (s["outcome"] == "corrupt") {
        ++corrupt;
        CHECK_THAT(s["why"].get<std::string>(), Catch::Contains("honest range"));
        CHECK(benched_round == 0);  // none after the bench
      }
    }
    // No corrupt word ever reached a model: weights stay small.
    CHECK(line["max_abs_weight"].get<double>() < 10);
    if (line.contains("secure_benched")) {
      CHECK(line["secure_benched"] == nlohmann::json::array({"d9"}));
      benched_round = r;
    }
  }
  CHECK(corrupt >= 1);
  CHECK(benched_round >= 1);
  CHECK(benched_round <= 5);
  const auto benched = Summary(dir / "run")["secure_benched"];
  REQUIRE(benched.size() == 1);  // no honest daemon
  CHECK(benched[0]["daemon"] == "d9");
  CHECK(benched[0]["round"] == benched_round);
  CHECK(rounds.back()["ensemble_accuracy"].get<double>() > 0.4);
}

// The coordinator's /metrics once its rounds are done: it lingers there.
std::map<std::string, double> FinalMetrics(const TempDir& dir, int metrics_port) {
  REQUIRE(WaitUntil([&] { return std::filesystem::exists(dir / "run/summary.json"); },
                    300));
  return ParseMetrics(HttpGet(metrics_port, "/metrics"));
}

TEST_CASE("secure: /metrics counts a secure run's updates and sessions as "
          "rounds.jsonl does, not_run included") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SecureConfig());
  const int metrics = FreePort();
  const std::vector<std::string> linger = {
      "--metrics-listen", "127.0.0.1:" + std::to_string(metrics),
      "--metrics-linger-s", "60"};
  {
    Federation f(dir, 5, Clients(5, {"rounds=2"}), linger);
    const auto m = FinalMetrics(dir, metrics);
    const auto rounds = ReadJsonl(dir / "run/rounds.jsonl");
    REQUIRE(rounds.size() == 2);
    double accepted = 0;
    for (const auto& line : rounds) accepted += line["updates_accepted"].get<double>();
    CHECK(accepted == 2 * 2 * 5);  // rounds x models x clients
    CHECK(m.at("shefl_updates_total{result=\"accepted\"}") == accepted);
    CHECK(m.at("shefl_secure_sessions_total{outcome=\"finished\"}") == 4);
    // The last round's uploads, counted when its sums were unmasked.
    CHECK(m.at("shefl_round_uploads_received") == 2 * 5);
  }
  TempDir dir2;
  WriteFile(dir2 / "c.yaml", SecureConfig());
  {
    // Five daemons, six needed: no model is aggregated, and it shows.
    Federation f(dir2, 5, Clients(5, {"rounds=2", "secure.min_parties=6"}), linger);
    const auto m = FinalMetrics(dir2, metrics);
    for (const auto& line : ReadJsonl(dir2 / "run/rounds.jsonl"))
      CHECK(line["secure"]["0"]["outcome"] == "not_run");
    CHECK(m.at("shefl_secure_sessions_total{outcome=\"not_run\"}") == 4);
    const std::string accepted = "shefl_updates_total{result=\"accepted\"}";
    CHECK((m.count(accepted) == 0 ? 0.0 : m.at(accepted)) == 0);
  }
}

}  // namespace
}  // namespace shefl
