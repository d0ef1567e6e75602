// Distributed differential privacy in whole runs (privacy.mode
// distributed: server/source/distributed_privacy.h, the parties' noise in
// common/secure/party_noise.h), a real coordinator and real daemons:
//  - a zero update publishes the survivors' noise alone, on C_t only, with
//    the variance n mu 2^-2f c_max^2 the plan gives, mu = (z D2)^2 / t;
//  - each round's epsilon is the Skellam accountant's at B = S 2^f,
//    `shefl privacy` prints the same, and privacy.target_epsilon stops the
//    run before the round that would pass it;
//  - a party adding garbage to its masked input, inside a noised session,
//    still makes a corrupt sum that reaches no model;
//  - a daemon whose own floor (--dp-min-multiplier) is above the sessions'
//    noise sends no input, and the other four finish each session;
//  - a resumed run's accountant goes on from its checkpoint, beside the
//    secure sums' own state, and a checkpoint whose privacy state is gone
//    or damaged does not resume.
#include <signal.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "common/privacy/rdp_accountant.h"
#include "common/privacy/round_rdp.h"
#include "server/run/model_store.h"
#include "tests/local_processes.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

// Five HPCs, all in every round, two members, secure sums: each model's
// session has a party per daemon (one client each), t = 4.
std::string Config() {
  return SyntheticConfig(R"(aggregation:
  secure: common_support
privacy:
  mode: distributed
  noise_multiplier: 1.5
  clip: 0.4
)");
}

// The five-daemon sets, `extra` after the defaults (the last --set of a
// key wins), each behind --set.
std::vector<std::string> SetFlags(const std::vector<std::string>& extra) {
  std::vector<std::string> sets = {"clients.num_clients=5", "clients.num_hpc=5",
                                   "clients.per_round_hpc=5", "clients.per_round_lpc=0",
                                   "model.num_models=2", "secure.min_parties=3",
                                   "round_deadline_s=120"};
  sets.insert(sets.end(), extra.begin(), extra.end());
  std::vector<std::string> flags;
  for (const std::string& kv : sets) flags.insert(flags.end(), {"--set", kv});
  return flags;
}

// `shefl run` of five daemons.
std::vector<std::string> Run(const TempDir& dir, const std::string& out,
                             const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {BinDir() + "/shefl", "run", dir / "c.yaml",
                                   "--daemons", "5", "--threads", "1",
                                   "--out", out};
  const std::vector<std::string> sets = SetFlags(extra);
  argv.insert(argv.end(), sets.begin(), sets.end());
  return argv;
}

std::vector<std::vector<float>> Models(const std::string& run) {
  auto loaded = ModelStore::LoadCheckpoint(run + "/checkpoints/latest.ckpt");
  REQUIRE(loaded.ok());
  std::vector<std::vector<float>> out;
  for (int64_t m = 0; m < 2; ++m) out.push_back(*loaded->first->Get(m));
  return out;
}

TEST_CASE("distributed DP publishes a zero update's noise alone, on C_t, with the plan's variance") {
  TempDir dir;
  WriteFile(dir / "c.yaml", Config());
  const std::vector<std::string> zero = {"rounds=1", "train.lr=1e-12",
                                         "privacy.noise_seed=9"};
  std::vector<std::string> off = zero;
  off.push_back("privacy.mode=off");
  auto plain = RunProcess(Run(dir, dir / "plain", off), 300);
  INFO(plain.output);
  REQUIRE(plain.exit_code == 0);
  auto noised = RunProcess(Run(dir, dir / "noised", zero), 300);
  INFO(noised.output);
  REQUIRE(noised.exit_code == 0);
  const auto lines = ReadJsonl(dir / "noised/rounds.jsonl");
  REQUIRE(lines.size() == 1u);
  const auto a = Models(dir / "plain"), b = Models(dir / "noised");
  for (size_t m = 0; m < 2; ++m) {
    const auto& s = lines[0]["secure"][std::to_string(m)];
    INFO(s.dump());
    REQUIRE(s["outcome"] == "finished");
    const double n = s["survivors"].get<double>(), t = s["threshold"].get<double>();
    const double k = s["words"].get<double>();
    CHECK(n == 5);
    CHECK(t == 4);
    // D2 = S 2^24 + sqrt(M K); each survivor adds (z D2)^2 / t; the sum is
    // read over 2^24 and weighed by c_max = 1/5 (five equal HPCs).
    const double d2 = 0.4 * std::ldexp(1.0, 24) + std::sqrt(2 * k);
    const double variance = n * std::pow(1.5 * d2, 2) / t * std::pow(std::ldexp(1.0, -24) / 5, 2);
    double sq = 0;
    size_t moved = 0;
    for (size_t j = 0; j < a[m].size(); ++j) {
      const double diff = b[m][j] - a[m][j];
      if (diff != 0) ++moved;
      sq += diff * diff;
    }
    INFO("model " << m << " K " << k << " moved " << moved << " mean square "
                  << sq / k << " against " << variance);
    CHECK(moved <= static_cast<size_t>(k));
    CHECK(moved > static_cast<size_t>(0.99 * k));
    CHECK(std::fabs(sq / k / variance - 1) < 5 * std::sqrt(2.0 / k) + 1e-3);
  }
}

TEST_CASE("distributed DP's epsilon is the Skellam accountant's, and the target stops the run") {
  TempDir dir;
  WriteFile(dir / "c.yaml", Config());
  ExperimentConfig c;
  c.privacy.mode = "distributed";
  c.privacy.clip = 0.4;
  const double delta = std::pow(5.0, -1.1);
  // Every client every round: q = 1.
  std::vector<double> eps;
  for (int r = 1; r <= 3; ++r) eps.push_back(RoundSpent(c, 1.5, 1.0, r, delta).epsilon);
  const double target = (eps[1] + eps[2]) / 2;  // round 3 would pass it
  auto run = RunProcess(
      Run(dir, dir / "run", {"rounds=3", "privacy.target_epsilon=" + std::to_string(target)}),
      300);
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const auto lines = ReadJsonl(dir / "run/rounds.jsonl");
  REQUIRE(lines.size() == 2u);
  for (size_t i = 0; i < lines.size(); ++i) {
    INFO(lines[i].dump());
    CHECK(lines[i]["epsilon"].get<double>() == Approx(eps[i]).epsilon(1e-9));
    CHECK(lines[i]["privacy"]["clip"] == 0.4);
    for (const char* m : {"0", "1"}) CHECK(lines[i]["secure"][m]["outcome"] == "finished");
  }
  const auto summary = nlohmann::json::parse(ReadFile(dir / "run/summary.json"));
  CHECK(summary["privacy"]["mode"] == "distributed");
  CHECK_THAT(summary["privacy"]["stopped"].get<std::string>(),
             Catch::Contains("privacy.target_epsilon"));
  auto plan = RunProcess({BinDir() + "/shefl", "privacy", dir / "c.yaml", "--set",
                          "rounds=3", "--set", "clients.num_clients=5", "--set",
                          "clients.num_hpc=5", "--set", "clients.per_round_hpc=5",
                          "--set", "clients.per_round_lpc=0", "--set",
                          "privacy.target_epsilon=" + std::to_string(target)},
                         60);
  INFO(plan.output);
  REQUIRE(plan.exit_code == 0);
  CHECK_THAT(plan.output, Catch::Contains("privacy.mode distributed"));
  CHECK_THAT(plan.output,
             Catch::Contains(absl::StrFormat("after round 2: epsilon %.4f", eps[1])));
  CHECK_THAT(plan.output, Catch::Contains("stops the run after round 2 of 3"));
}

// A hand-started coordinator's flags for dir/c.yaml, results in dir/run.
std::vector<std::string> ConfigHead(const TempDir& dir,
                                    const std::vector<std::string>& extra) {
  std::vector<std::string> head = {"--config", dir / "c.yaml", "--out", dir / "run"};
  const std::vector<std::string> sets = SetFlags(extra);
  head.insert(head.end(), sets.begin(), sets.end());
  return head;
}

// A coordinator with `head` (its config or resume flags) and five daemons
// of one client each, `flags` on the last; the coordinator's exit status.
int Federate(const TempDir& dir, std::vector<std::string> head,
             const std::string& log,
             const std::vector<std::string>& last_flags = {}) {
  const int port = FreePort();
  head.insert(head.begin(), BinDir() + "/shefl-coordinator");
  head.insert(head.end(), {"--listen", "127.0.0.1:" + std::to_string(port),
                           "--threads", "1", "--insecure"});
  const int coordinator = Spawn(head, dir / (log + "-c.log"));
  std::vector<int> pids;
  for (int i = 0; i < 5; ++i)
    pids.push_back(Spawn(DaemonArgv(dir, port, "d" + std::to_string(i),
                                    std::to_string(i),
                                    i == 4 ? last_flags : std::vector<std::string>{}),
                         dir / (log + "-d" + std::to_string(i) + ".log")));
  const int rc = WaitFor(coordinator, 300);
  for (int pid : pids) ::kill(-pid, SIGKILL);
  return rc;
}

TEST_CASE("distributed DP: a party adding garbage inside a noised session makes a corrupt sum that reaches no model") {
  TempDir dir;
  WriteFile(dir / "c.yaml", Config());
  const int rc =
      Federate(dir, ConfigHead(dir, {"rounds=1"}), "garbage", {"--adversary", "garbage"});
  INFO(ReadFile(dir / "garbage-c.log"));
  REQUIRE(rc == 0);
  const auto lines = ReadJsonl(dir / "run/rounds.jsonl");
  REQUIRE(lines.size() == 1u);
  for (const char* m : {"0", "1"}) {
    const auto& s = lines[0]["secure"][m];
    INFO(s.dump());
    CHECK(s["outcome"] == "corrupt");
    CHECK_THAT(s["why"].get<std::string>(), Catch::Contains("honest range"));
  }
  CHECK(lines[0]["max_abs_weight"].get<double>() < 10);
}

TEST_CASE("distributed DP: a daemon whose floor is above the sessions' noise sends nothing, and the rest finish") {
  TempDir dir;
  WriteFile(dir / "c.yaml", Config());
  // The refusing party's input never comes: the sessions close at the
  // round's deadline with the other four.
  const std::vector<std::string> head = ConfigHead(dir, {"rounds=1", "round_deadline_s=20"});
  // Each session's noise is sqrt(t mu) = z D2, a client's move w S/sqrt(2)
  // 2^f: a multiplier of about 1.5 sqrt(2) = 2.12.
  const int rc = Federate(dir, head, "floor", {"--dp-min-multiplier", "2.5"});
  INFO(ReadFile(dir / "floor-c.log"));
  REQUIRE(rc == 0);
  const auto lines = ReadJsonl(dir / "run/rounds.jsonl");
  REQUIRE(lines.size() == 1u);
  for (const char* m : {"0", "1"}) {
    const auto& s = lines[0]["secure"][m];
    INFO(s.dump());
    CHECK(s["outcome"] == "finished");
    CHECK(s["survivors"] == 4);
  }
  CHECK_THAT(ReadFile(dir / "floor-d4.log"),
             Catch::Contains("below --dp-min-multiplier 2.5"));
}

TEST_CASE("distributed DP: a resumed run's accountant goes on from its checkpoint, and one without it does not resume") {
  TempDir dir;
  WriteFile(dir / "c.yaml", Config());
  const std::string run = dir / "run";
  {
    const int rc = Federate(dir, ConfigHead(dir, {"rounds=2"}), "first");
    INFO(ReadFile(dir / "first-c.log"));
    REQUIRE(rc == 0);
  }
  for (const char* damage : {"gone", "cut"}) {
    const std::string copy = dir / (std::string("copy-") + damage);
    std::filesystem::copy(run, copy, std::filesystem::copy_options::recursive);
    const std::string state = copy + "/checkpoints/source-2.bin";
    if (std::string(damage) == "gone") {
      REQUIRE(std::filesystem::remove(state));
    } else {
      const std::string bytes = ReadFile(state);
      WriteFile(state, bytes.substr(0, 40));
    }
    auto refused = RunProcess({BinDir() + "/shefl-coordinator", "--resume", copy,
                               "--listen", "127.0.0.1:" + std::to_string(FreePort()),
                               "--insecure", "--set", "rounds=3"},
                              60);
    INFO(damage << ": " << refused.output);
    CHECK(refused.exit_code != 0);
    CHECK_THAT(refused.output, Catch::Contains("privacy state"));
  }
  {
    const int rc = Federate(dir, {"--resume", run, "--set", "rounds=3"}, "second");
    INFO(ReadFile(dir / "second-c.log"));
    REQUIRE(rc == 0);
  }
  ExperimentConfig c;
  c.privacy.mode = "distributed";
  c.privacy.clip = 0.4;
  const auto lines = ReadJsonl(run + "/rounds.jsonl");
  REQUIRE(lines.size() == 3u);
  for (int r = 0; r < 3; ++r) {
    INFO(lines[r].dump());
    CHECK(lines[r]["epsilon"].get<double>() ==
          Approx(RoundSpent(c, 1.5, 1.0, r + 1, std::pow(5.0, -1.1)).epsilon).epsilon(1e-9));
    for (const char* m : {"0", "1"}) CHECK(lines[r]["secure"][m]["outcome"] == "finished");
  }
}

}  // namespace
}  // namespace shefl
