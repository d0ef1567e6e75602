// deploy/grafana's dashboard against real parts: a real run (coordinator
// and two daemons on 127.0.0.1, a HASA run so the capacity panels have
// series), Debian's prometheus scraping them with deploy/prometheus's
// recording rules, and every PromQL expression of the dashboard (template
// variables filled) sent to Prometheus's HTTP API: each must succeed and
// return at least one series. Beside it, what makes the file importable
// into any Grafana and its panels honest: no datasource uid of ours, units
// that fit the metrics, windows that hold minute-long rounds.
#include <signal.h>

#include <filesystem>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

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

const std::string kDashboard =
    std::string(SHEFL_SOURCE_DIR) + "/deploy/grafana/dashboards/shefl.json";

// A panel's expression with the dashboard's variables filled in as Grafana
// would: every coordinator, run and daemon, and a window the test's
// history holds.
std::string Filled(std::string expr) {
  expr = std::regex_replace(expr, std::regex("\\$(coordinator|daemon|run)"), ".*");
  return std::regex_replace(expr, std::regex("\\$(__rate_interval|window)"), "15s");
}

// The "seconds since the last round" panel's expression.
std::string SinceLastRound(const nlohmann::json& dash) {
  for (const auto& panel : dash["panels"])
    if (panel.contains("targets"))
      for (const auto& t : panel["targets"])
        if (t["expr"].get<std::string>().find("time() - ") == 0) return t["expr"];
  return "";
}

TEST_CASE("every PromQL expression of the dashboard returns series from a real run") {
  REQUIRE(std::filesystem::exists("/usr/bin/prometheus"));  // scripts/setup.sh installs it
  TempDir dir;
  // HASA (capacity and HASA gauges; its r_min wants 5 members), clients
  // 0-7 on two daemons.
  WriteFile(dir / "c.yaml",
            SyntheticConfig("hasa:\n  allocation: hasa\n"));
  const int grpc = FreePort(), cm = FreePort(), d0 = FreePort(), d1 = FreePort(),
            prom = FreePort();
  Killer k;
  k.pids.push_back(Spawn({BinDir() + "/shefl-coordinator", "--config", dir / "c.yaml",
                          "--listen", "127.0.0.1:" + std::to_string(grpc),
                          "--metrics-listen", "127.0.0.1:" + std::to_string(cm),
                          "--out", dir / "run", "--threads", "1", "--insecure",
                          "--set", "rounds=100000", "--set", "method=hasa",
                          "--set", "clients.num_hpc=0", "--set", "clients.per_round_hpc=0",
                          "--set", "clients.per_round_lpc=4", "--set", "model.num_models=5"},
                         dir / "c.log"));
  const auto dash = nlohmann::json::parse(ReadFile(kDashboard));
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
  // Before round 1 (no daemon yet) the round's end time is 0: the panel
  // shows nothing rather than the time since 1970.
  REQUIRE(WaitUntil([&] {
    return Series(Query(prom, "shefl_round_end_timestamp_seconds == 0")) == 1;
  }, 120));
  {
    const std::string since = SinceLastRound(dash);
    REQUIRE(!since.empty());
    const nlohmann::json reply = Query(prom, Filled(since));
    INFO(since << "\n" << reply.dump());
    CHECK(reply.value("status", "") == "success");
    CHECK(Series(reply) == 0);
  }
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
  // Enough history for 15 s rate windows: rounds recorded for 20 s.
  REQUIRE(WaitUntil([&] { return Series(Query(prom, "shefl_round > 0")) == 1; }, 180));
  REQUIRE(WaitUntil([&] {
    return Series(Query(prom, "changes(shefl_round[20s]) > 3 and count_over_time(shefl_round[20s]) > 15")) == 1;
  }, 180));
  int asked = 0;
  for (const auto& panel : dash["panels"]) {
    if (!panel.contains("targets")) continue;
    for (const auto& t : panel["targets"]) {
      const std::string expr = Filled(t["expr"]);
      const nlohmann::json reply = Query(prom, expr);
      INFO(panel["title"].get<std::string>() << ": " << expr << "\n" << reply.dump());
      CHECK(Series(reply) >= 1);
      ++asked;
    }
  }
  CHECK(asked >= 30);
  std::printf("dashboard: %d expressions, each answered by Prometheus with series\n", asked);
  // The daemons are known by their --name (shefl_client_info), which the
  // daemon panels' legends show.
  const nlohmann::json names = Query(prom, "count by (name) (shefl_client_info)");
  std::set<std::string> seen;
  if (Series(names) > 0)
    for (const auto& r : names["data"]["result"]) seen.insert(r["metric"]["name"]);
  CHECK(seen == std::set<std::string>{"d0", "d1"});
  // Every series of the coordinator and of the registered daemons carries
  // the run's id, the results folder's name: the dashboard's $run.
  const nlohmann::json runs =
      Query(prom, "count by (job, run) ({__name__=~\"shefl_.+\"})");
  std::set<std::string> labelled;
  if (Series(runs) > 0)
    for (const auto& r : runs["data"]["result"])
      labelled.insert(r["metric"]["job"].get<std::string>() + " " +
                      r["metric"].value("run", "(none)"));
  CHECK(labelled ==
        std::set<std::string>{"shefl-coordinator run", "shefl-daemons run"});
  CHECK(Series(Query(prom, "shefl_rounds_planned == 100000")) == 1);
  CHECK(Series(Query(prom, "shefl_run_finished == 0")) == 1);
}

// Each `datasource` object anywhere under `j`.
void DataSources(const nlohmann::json& j, std::vector<nlohmann::json>* out) {
  if (j.is_object()) {
    for (const auto& [key, v] : j.items()) {
      if (key == "datasource" && v.is_object()) out->push_back(v);
      DataSources(v, out);
    }
  } else if (j.is_array()) {
    for (const auto& v : j) DataSources(v, out);
  }
}

// The unit a panel's series should have, from its expression.
std::string UnitFor(const std::string& e) {
  auto has = [&e](const char* s) { return e.find(s) != std::string::npos; };
  if (has("accuracy") || has("_ece") || has("1 - sum(") ||
      (has("shefl_rounds_planned") && has(" / ")))
    return "percentunit";
  if (has("seconds") || has("time()")) return "s";
  if (has("bytes") && has("rate(")) return "Bps";
  if (has("bytes")) return "bytes";
  if (has("rate(")) return "cps";
  return "none";
}

TEST_CASE("the dashboard imports into any Grafana and its units fit its series") {
  const std::string text = ReadFile(kDashboard);
  const auto dash = nlohmann::json::parse(text);
  // Import: one datasource input, and every query through the datasource
  // variable (provisioning cannot fill __inputs; a variable works both ways).
  REQUIRE(dash["__inputs"].is_array());
  REQUIRE(dash["__inputs"].size() == 1u);
  CHECK(dash["__inputs"][0]["name"] == "DS_PROMETHEUS");
  CHECK(dash["__inputs"][0]["type"] == "datasource");
  CHECK(dash["__inputs"][0]["pluginId"] == "prometheus");
  bool variable = false;
  for (const auto& v : dash["templating"]["list"])
    if (v["type"] == "datasource" && v["name"] == "datasource" && v["query"] == "prometheus")
      variable = true;
  CHECK(variable);
  std::vector<nlohmann::json> sources;
  DataSources(dash["panels"], &sources);
  DataSources(dash["templating"], &sources);
  CHECK(sources.size() > 30u);
  for (const auto& ds : sources) {
    INFO(ds.dump());
    CHECK(ds["uid"] == "${datasource}");
  }
  CHECK(text.find("shefl-prometheus") == std::string::npos);
  // Windows for minute-long rounds, not Grafana's scrape-based one.
  CHECK(text.find("$__rate_interval") == std::string::npos);

  std::set<int> ids;
  std::set<std::string> metrics;
  for (const auto& panel : dash["panels"]) {
    INFO(panel["title"].get<std::string>());
    CHECK(ids.insert(panel["id"].get<int>()).second);
    CHECK(panel["gridPos"]["x"].get<int>() + panel["gridPos"]["w"].get<int>() <= 24);
    if (!panel.contains("targets")) continue;
    const std::string unit = panel["fieldConfig"]["defaults"]["unit"];
    for (const auto& t : panel["targets"]) {
      const std::string e = t["expr"];
      INFO(e);
      std::string want_unit = unit;  // a per-query override wins
      for (const auto& o : panel["fieldConfig"]["overrides"])
        if (o["matcher"]["id"] == "byFrameRefID" && o["matcher"]["options"] == t["refId"])
          for (const auto& prop : o["properties"])
            if (prop["id"] == "unit") want_unit = prop["value"];
      CHECK(want_unit == UnitFor(e));
      // No series scaled to share an axis with another.
      CHECK(!std::regex_search(e, std::regex("\\*\\s*[0-9]")));
      // A daemon is shown by its name, not by its address.
      CHECK(t["legendFormat"].get<std::string>().find("{{instance}}") == std::string::npos);
      std::regex metric("\\bshefl_[a-z_]+");
      for (std::sregex_iterator it(e.begin(), e.end(), metric), end; it != end; ++it)
        metrics.insert(std::regex_replace(it->str(), std::regex("_(sum|count|bucket)$"), ""));
    }
  }
  // Every metric a panel reads is one the binaries export (server/ with
  // its rooms, client/).
  std::string code;
  for (const char* dir : {"/server", "/client"})
    for (const auto& f : std::filesystem::recursive_directory_iterator(
             std::string(SHEFL_SOURCE_DIR) + dir))
      if (f.path().extension() == ".cc") code += ReadFile(f.path().string());
  CHECK(metrics.size() >= 25u);
  for (const std::string& m : metrics) {
    INFO(m);
    CHECK(code.find("\"" + m + "\"") != std::string::npos);
  }
}

}  // namespace
}  // namespace shefl
