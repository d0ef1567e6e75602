// Central differential privacy in real runs (server/source/central_privacy.h):
// a zero update publishes the noise alone, with the variance the formula
// gives; privacy.target_epsilon stops the run before the round that would
// pass it, and that last round is evaluated; a resumed run's accountant
// goes on from its checkpoint (each line's epsilon is the accountant's
// for that many rounds, /metrics shows it, the adaptive clip goes on from
// where it was) and a run whose privacy state is gone does not resume; `shefl privacy` prints the same epsilons.
#include <signal.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "common/privacy/rdp_accountant.h"
#include "server/run/model_store.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

// The synthetic config's tiers: HPCs 2 of 4, LPCs 3 of 4 a round; N = 8.
constexpr double kQ[] = {0.5, 0.75};

// Epsilon after `rounds` rounds at z, the worst tier, composed round by
// round as the coordinator does.
double Epsilon(double z, int rounds, double delta) {
  double worst = 0;
  for (double q : kQ) {
    RdpAccountant a;
    const std::vector<double> step = SubsampledGaussianRdp(q, z, DefaultRdpOrders());
    for (int r = 0; r < rounds; ++r) a.Compose(step);
    worst = std::max(worst, a.Spent(delta).epsilon);
  }
  return worst;
}

const double kDelta = std::pow(8.0, -1.1);

std::vector<std::string> Run(const TempDir& dir, const std::string& out,
                             const std::vector<std::string>& sets) {
  std::vector<std::string> argv = {BinDir() + "/shefl", "run", dir / "c.yaml",
                                   "--daemons", "2", "--threads", "1",
                                   "--out", out};
  for (const std::string& kv : sets) argv.insert(argv.end(), {"--set", kv});
  return argv;
}

std::vector<std::vector<float>> Models(const std::string& run) {
  auto loaded = ModelStore::LoadCheckpoint(run + "/checkpoints/latest.ckpt");
  REQUIRE(loaded.ok());
  std::vector<std::vector<float>> out;
  for (int64_t m = 0; m < 3; ++m) out.push_back(*loaded->first->Get(m));
  return out;
}

TEST_CASE("central DP publishes a zero update's noise alone, with the formula's variance") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  const std::vector<std::string> common = {"rounds=1", "train.lr=1e-12",
                                           "aggregation.robust=false"};
  auto plain = RunProcess(Run(dir, dir / "plain", common), 300);
  INFO(plain.output);
  REQUIRE(plain.exit_code == 0);
  std::vector<std::string> sets = common;
  sets.insert(sets.end(), {"privacy.mode=central", "privacy.noise_multiplier=1.5",
                           "privacy.clip=0.4", "privacy.noise_seed=9"});
  auto noised = RunProcess(Run(dir, dir / "noised", sets), 300);
  INFO(noised.output);
  REQUIRE(noised.exit_code == 0);
  const auto lines = ReadJsonl(dir / "noised/rounds.jsonl");
  REQUIRE(lines.size() == 1u);
  const auto& stds = lines[0]["privacy"]["noise_std"];
  REQUIRE(stds.size() == 3u);
  const auto a = Models(dir / "plain"), b = Models(dir / "noised");
  for (size_t m = 0; m < 3; ++m) {
    const double sigma = stds[m].get<double>();
    // z S c_max: both HPCs and one LPC (latin, C_l = M) plan each model,
    // so c_max = (1 - beta) / 1 = 0.5 against beta / 2 = 0.25.
    CHECK(sigma == Approx(1.5 * 0.4 * 0.5));
    const size_t d = a[m].size();
    double sq = 0;
    for (size_t j = 0; j < d; ++j) sq += std::pow((b[m][j] - a[m][j]) / sigma, 2);
    INFO("model " << m << " d " << d << " mean square " << sq / d);
    CHECK(std::fabs(sq / d - 1) < 5 * std::sqrt(2.0 / d));
  }
  CHECK(lines[0]["epsilon"].get<double>() ==
        Approx(Epsilon(1.5, 1, kDelta)).epsilon(1e-9));
}

TEST_CASE("privacy.target_epsilon stops the run before the round that would pass it") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  const double target = (Epsilon(3, 2, kDelta) + Epsilon(3, 3, kDelta)) / 2;
  const std::vector<std::string> sets = {
      "rounds=5", "eval.every=5", "privacy.mode=central",
      "privacy.noise_multiplier=3", "privacy.target_epsilon=" + std::to_string(target)};
  auto run = RunProcess(Run(dir, dir / "r", sets), 300);
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const auto lines = ReadJsonl(dir / "r/rounds.jsonl");
  REQUIRE(lines.size() == 2u);
  for (int r = 0; r < 2; ++r)
    CHECK(lines[r]["epsilon"].get<double>() ==
          Approx(Epsilon(3, r + 1, kDelta)).epsilon(1e-9));
  CHECK(lines[1]["evaluated"] == true);  // the last round, though 2 % 5 != 0
  const nlohmann::json summary =
      nlohmann::json::parse(ReadFile(dir / "r/summary.json"));
  CHECK(summary["rounds"] == 2);
  CHECK(summary["epsilon"].get<double>() == lines[1]["epsilon"].get<double>());
  CHECK_THAT(summary["privacy"]["stopped"].get<std::string>(),
             Catch::Contains("privacy.target_epsilon") &&
                 Catch::Contains("stops after round 2"));
  // `shefl run`'s round lines and its last line say the epsilon too.
  CHECK_THAT(run.output,
             Catch::Contains(absl::StrFormat(
                 "epsilon %.3f", lines[0]["epsilon"].get<double>())) &&
                 Catch::Contains(absl::StrFormat(
                     "wall %.1f s  epsilon %.3f",
                     summary["wall_seconds"].get<double>(),
                     summary["epsilon"].get<double>())));
  // `shefl report` gives the run's epsilon its column.
  auto report = RunProcess({BinDir() + "/shefl", "report", dir / "r"}, 60);
  INFO(report.output);
  CHECK(report.exit_code == 0);
  CHECK_THAT(report.output,
             Catch::Contains("epsilon") &&
                 Catch::Contains(absl::StrFormat(
                     "%.3f", summary["epsilon"].get<double>())));
  // `shefl privacy` says the same without running.
  auto plan = RunProcess({BinDir() + "/shefl", "privacy", dir / "c.yaml",
                          "--set", "rounds=5", "--set", "privacy.noise_multiplier=3",
                          "--set", "privacy.target_epsilon=" + std::to_string(target),
                          "--target", "1"},
                         60);
  INFO(plan.output);
  REQUIRE(plan.exit_code == 0);
  CHECK_THAT(plan.output, Catch::Contains("stops the run after round 2 of 5") &&
                              Catch::Contains("q = 0.75") &&
                              Catch::Contains("--target 1: privacy.noise_multiplier"));
  auto bad = RunProcess({BinDir() + "/shefl", "privacy", dir / "c.yaml",
                         "--target", "zero"}, 60);
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.output, Catch::Contains("--target"));
}

// The coordinator and one daemon for all 8 clients, by hand, so that the
// coordinator's final /metrics can be read.
struct Pair {
  int coordinator, daemon, metrics;
};

Pair Start(const TempDir& dir, const std::string& run,
           const std::vector<std::string>& head, const std::string& log) {
  const int port = FreePort(), metrics = FreePort();
  const std::string addr = "127.0.0.1:" + std::to_string(port);
  std::vector<std::string> argv = {BinDir() + "/shefl-coordinator"};
  argv.insert(argv.end(), head.begin(), head.end());
  argv.insert(argv.end(), {"--listen", addr, "--metrics-listen",
                           "127.0.0.1:" + std::to_string(metrics), "--threads",
                           "1", "--insecure", "--metrics-linger-s", "120"});
  const int c = Spawn(argv, dir / (log + "-c.log"));
  const int d = Spawn({BinDir() + "/shefl-client", "--coordinator", addr,
                       "--clients", "0-7", "--name", "d0", "--out",
                       run + "/daemons", "--threads", "1", "--insecure"},
                      dir / (log + "-d.log"));
  return {c, d, metrics};
}

// Waits for the run to finish, checks /metrics against the last line's
// epsilon, and ends the coordinator's linger.
void Finish(const TempDir& dir, const Pair& p, const std::string& run,
            const std::string& log) {
  INFO(ReadFile(dir / (log + "-c.log")) << ReadFile(dir / (log + "-d.log")));
  CHECK(WaitFor(p.daemon, 300) == 0);
  std::map<std::string, double> m;
  REQUIRE(WaitUntil([&] {
    m = ParseMetrics(HttpGet(p.metrics, "/metrics"));
    return m.count("shefl_run_finished") && m["shefl_run_finished"] == 1;
  }, 120));
  const auto lines = ReadJsonl(run + "/rounds.jsonl");
  REQUIRE(!lines.empty());
  CHECK(m["shefl_privacy_epsilon"] ==
        Approx(lines.back()["epsilon"].get<double>()).epsilon(1e-9));
  CHECK(m["shefl_privacy_clip"] > 0);
  ::kill(p.coordinator, SIGTERM);
  CHECK(WaitFor(p.coordinator, 60) == 0);
}

TEST_CASE("a resumed run's accountant and adaptive clip go on from its checkpoint, and one without its privacy state does not resume") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  const std::string run = dir / "run";
  const Pair first = Start(dir, run, {"--config", dir / "c.yaml", "--out", run,
                                      "--set", "rounds=2", "--set",
                                      "privacy.mode=central", "--set",
                                      "privacy.noise_multiplier=2", "--set",
                                      "privacy.adaptive_clip=true", "--set",
                                      "privacy.count_noise=2"},
                           "first");
  Finish(dir, first, run, "first");
  // A copy without the privacy state is refused, naming what is missing.
  const std::string copy = dir / "copy";
  std::filesystem::copy(run, copy, std::filesystem::copy_options::recursive);
  REQUIRE(std::filesystem::remove(copy + "/checkpoints/source-2.bin"));
  auto refused = RunProcess({BinDir() + "/shefl-coordinator", "--resume", copy,
                             "--listen", "127.0.0.1:" + std::to_string(FreePort()),
                             "--insecure", "--set", "rounds=4"},
                            60);
  CHECK(refused.exit_code != 0);
  CHECK_THAT(refused.output, Catch::Contains("privacy state"));
  // The run itself goes on to round 4 from the accountant it saved.
  const Pair second = Start(dir, run, {"--resume", run, "--set", "rounds=4"},
                            "second");
  Finish(dir, second, run, "second");
  const auto lines = ReadJsonl(run + "/rounds.jsonl");
  REQUIRE(lines.size() == 4u);
  for (int r = 0; r < 4; ++r)
    CHECK(lines[r]["epsilon"].get<double>() ==
          Approx(Epsilon(2, r + 1, kDelta)).epsilon(1e-9));
  // Adaptive clipping: S moves by exp(-eta (share - gamma)) each round,
  // and the next round (the resumed one too) clips at what it moved to.
  CHECK(lines[0]["privacy"]["clip"].get<double>() == 1.0);
  for (int r = 0; r < 4; ++r) {
    const nlohmann::json& p = lines[r]["privacy"];
    CHECK(p["next_clip"].get<double>() ==
          Approx(p["clip"].get<double>() *
                 std::exp(-0.2 * (p["clip_share"].get<double>() - 0.5))));
    if (r > 0)
      CHECK(p["clip"].get<double>() ==
            lines[r - 1]["privacy"]["next_clip"].get<double>());
  }
  // The sum's noise is z_Delta S c_max: z_Delta = (1/4 - 1/16)^-1/2.
  CHECK(lines[3]["privacy"]["noise_std"][0].get<double>() ==
        Approx(std::pow(0.25 - 1.0 / 16, -0.5) *
               lines[3]["privacy"]["clip"].get<double>() * 0.5));
}

}  // namespace
}  // namespace shefl
