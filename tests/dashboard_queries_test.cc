// deploy/grafana's dashboard against real parts: a real run (coordinator
// and two daemons on 127.0.0.1), Debian's prometheus scraping them with
// deploy/prometheus's recording rules, and every PromQL expression of the
// dashboard (template variables filled) sent to Prometheus's HTTP API: each
// must succeed and return at least one series.
#include <signal.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <regex>

#include <nlohmann/json.hpp>

#include "tests/test_support.h"

namespace shefl {
namespace {

using namespace testing;

std::string UrlEncode(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

nlohmann::json Query(int port, const std::string& expr) {
  const std::string body = HttpGet(port, "/api/v1/query?query=" + UrlEncode(expr));
  return nlohmann::json::parse(body, nullptr, false);
}

size_t Series(const nlohmann::json& reply) {
  if (reply.is_discarded() || reply.value("status", "") != "success") return 0;
  return reply["data"]["result"].size();
}

struct Killer {
  std::vector<int> pids;
  ~Killer() {
    for (int pid : pids) {
      ::kill(-pid, SIGKILL);
      WaitFor(pid, 10);
    }
  }
};

TEST_CASE("every PromQL expression of the dashboard returns series from a real run") {
  REQUIRE(std::filesystem::exists("/usr/bin/prometheus"));  // scripts/setup.sh installs it
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  const int grpc = FreePort(), cm = FreePort(), d0 = FreePort(), d1 = FreePort(),
            prom = FreePort();
  Killer k;
  k.pids.push_back(Spawn({BinDir() + "/shefl-coordinator", "--config", dir / "c.yaml",
                          "--listen", "127.0.0.1:" + std::to_string(grpc),
                          "--metrics-listen", "127.0.0.1:" + std::to_string(cm),
                          "--out", dir / "run", "--threads", "1", "--insecure",
                          "--set", "rounds=100000"},
                         dir / "c.log"));
  int i = 0;
  for (int mp : {d0, d1}) {
    k.pids.push_back(Spawn({BinDir() + "/shefl-client", "--coordinator",
                            "127.0.0.1:" + std::to_string(grpc), "--clients",
                            i == 0 ? "0-3" : "4-7", "--name", "d" + std::to_string(i),
                            "--metrics-listen", "127.0.0.1:" + std::to_string(mp),
                            "--out", dir / "run/daemons", "--threads", "1", "--insecure"},
                           dir / ("d" + std::to_string(i) + ".log")));
    ++i;
  }
  const std::string rules =
      std::string(SHEFL_SOURCE_DIR) + "/deploy/prometheus/rules/shefl-recording.yml";
  WriteFile(dir / "prometheus.yml",
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            "rule_files: ['" + rules + "']\n"
            "scrape_configs:\n"
            "  - job_name: shefl-coordinator\n"
            "    static_configs: [{targets: ['127.0.0.1:" + std::to_string(cm) + "']}]\n"
            "  - job_name: shefl-daemons\n"
            "    static_configs: [{targets: ['127.0.0.1:" + std::to_string(d0) +
                "', '127.0.0.1:" + std::to_string(d1) + "']}]\n");
  k.pids.push_back(Spawn({"/usr/bin/prometheus", "--config.file=" + dir / "prometheus.yml",
                          "--storage.tsdb.path=" + dir / "tsdb",
                          "--web.listen-address=127.0.0.1:" + std::to_string(prom)},
                         dir / "prometheus.log"));
  // Enough history for 15 s rate windows: rounds recorded for 20 s.
  REQUIRE(WaitUntil([&] { return Series(Query(prom, "shefl_round > 0")) == 1; }, 180));
  REQUIRE(WaitUntil([&] {
    return Series(Query(prom, "changes(shefl_round[20s]) > 3 and count_over_time(shefl_round[20s]) > 15")) == 1;
  }, 180));
  const auto dash = nlohmann::json::parse(
      ReadFile(std::string(SHEFL_SOURCE_DIR) + "/deploy/grafana/dashboards/shefl.json"));
  int asked = 0;
  for (const auto& panel : dash["panels"]) {
    if (!panel.contains("targets")) continue;
    for (const auto& t : panel["targets"]) {
      std::string expr = t["expr"];
      expr = std::regex_replace(expr, std::regex("\\$(coordinator|daemon)"), ".*");
      expr = std::regex_replace(expr, std::regex("\\$__rate_interval"), "15s");
      const nlohmann::json reply = Query(prom, expr);
      INFO(panel["title"].get<std::string>() << ": " << expr << "\n" << reply.dump());
      CHECK(Series(reply) >= 1);
      ++asked;
    }
  }
  CHECK(asked >= 15);
  std::printf("dashboard: %d expressions, each answered by Prometheus with series\n", asked);
}

}  // namespace
}  // namespace shefl
