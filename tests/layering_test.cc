// The layering of the tree (docs/ARCHITECTURE.md), held to the build's own
// declared graph: every `#include` of a project header must follow an arrow
// that CMake declares (build/layers.txt, written from each library's
// LINK_LIBRARIES), LibTorch headers appear only in layers that link it, the
// launcher links neither side nor LibTorch, and common/ reaches cuda/ only
// at learn's one dispatch point. A bad include in a scratch tree is shown
// to fail.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace fs = std::filesystem;

namespace {

// layer -> the layers and external libraries it declares (direct).
struct Graph {
  std::map<std::string, std::set<std::string>> deps;  // layer -> layers
  std::map<std::string, bool> links_torch;            // directly
};

const std::map<std::string, std::string>& TargetLayers() {
  static const std::map<std::string, std::string> kMap = {
      {"shefl_core", "core"},     {"shefl_sparse", "sparse"},
      {"shefl_fed", "fed"},       {"shefl_net", "net"},
      {"shefl_secure", "secure"},
      {"shefl_data", "data"},     {"shefl_learn", "learn"},
      {"shefl_cuda", "cuda"},     {"shefl_server", "server"},
      {"shefl_server_state", "server_state"},
      {"shefl_server_run", "server_run"},
      {"shefl_server_shared", "server_shared"},
      {"shefl_server_rpc", "server_rpc"},
      {"shefl_server_round", "server_round"}, {"shefl_client", "client"},
      {"shefl_launch", "cli"},    {"shefl_proto", "proto"}};
  return kMap;
}

Graph ReadGraph(const std::string& path) {
  Graph g;
  std::ifstream in(path);
  REQUIRE(in.good());
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string layer, target, dep;
    words >> layer >> target;
    g.deps[layer];
    while (words >> dep) {
      if (auto it = TargetLayers().find(dep); it != TargetLayers().end()) {
        if (it->second != layer) g.deps[layer].insert(it->second);
      } else if (dep.find("torch") != std::string::npos ||
                 dep.find("c10") != std::string::npos) {
        g.links_torch[layer] = true;
      }
    }
  }
  // Built only with a CUDA LibTorch; its CMake file declares sparse/ and
  // LibTorch (cuda/CMakeLists.txt).
  if (!g.deps.count("cuda")) {
    g.deps["cuda"] = {"sparse"};
    g.links_torch["cuda"] = true;
  }
  return g;
}

std::set<std::string> Closure(const Graph& g, const std::string& layer) {
  std::set<std::string> seen;
  std::vector<std::string> todo = {layer};
  while (!todo.empty()) {
    std::string l = todo.back();
    todo.pop_back();
    auto it = g.deps.find(l);
    if (it == g.deps.end()) continue;
    for (const std::string& d : it->second)
      if (seen.insert(d).second) todo.push_back(d);
  }
  return seen;
}

bool LinksTorch(const Graph& g, const std::string& layer) {
  std::set<std::string> all = Closure(g, layer);
  all.insert(layer);
  for (const std::string& l : all)
    if (g.links_torch.count(l) && g.links_torch.at(l)) return true;
  return false;
}

// The layer a path (relative to the root) belongs to, or "" for files
// outside the layered code (tests, benches, fuzz targets, tools).
std::string LayerOf(const std::string& rel) {
  static const std::regex common("^common/([a-z]+)/");
  static const std::regex room("^server/(state|run|shared|rpc|round)/");
  std::smatch m;
  if (std::regex_search(rel, m, common)) return m[1];
  if (std::regex_search(rel, m, room)) return "server_" + m[1].str();
  for (const char* top : {"server", "client", "cli", "cuda"})
    if (rel.rfind(std::string(top) + "/", 0) == 0) return top;
  return "";
}

bool IsTestOrTool(const std::string& rel) {
  return rel.find("_test.cc") != std::string::npos ||
         rel == "cli/fake_child.cc";
}

// The includes of cuda/ from common/ the design allows: learn's two
// dispatch points, the only sources compiled with SHEFL_WITH_CUDA.
bool IsDispatchPoint(const std::string& rel) {
  return rel == "common/learn/topk_backend.cc" ||
         rel == "common/learn/step_graph_backend.cc";
}

std::vector<std::string> Violations(const fs::path& root, const Graph& g) {
  std::vector<std::string> out;
  static const std::regex include("^\\s*#\\s*include\\s*([\"<])([^\">]+)[\">]");
  for (const char* top : {"common", "server", "client", "cli", "cuda"}) {
    if (!fs::exists(root / top)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root / top)) {
      const std::string ext = e.path().extension().string();
      if (ext != ".h" && ext != ".cc" && ext != ".cu") continue;
      const std::string rel = fs::relative(e.path(), root).string();
      const std::string layer = LayerOf(rel);
      if (layer.empty() || IsTestOrTool(rel)) continue;
      const std::set<std::string> allowed = Closure(g, layer);
      std::ifstream in(e.path());
      std::string text;
      for (int n = 1; std::getline(in, text); ++n) {
        std::smatch m;
        if (!std::regex_search(text, m, include)) continue;
        const std::string inc = m[2];
        const std::string where = rel + ":" + std::to_string(n) + ": ";
        if (m[1] == "<") {
          const bool torch = inc.rfind("ATen/", 0) == 0 ||
                             inc.rfind("torch/", 0) == 0 ||
                             inc.rfind("c10/", 0) == 0;
          if (torch && !LinksTorch(g, layer))
            out.push_back(where + layer + " includes LibTorch <" + inc +
                          "> but does not link it");
          continue;
        }
        const std::string to = LayerOf(inc);
        if (to.empty() || to == layer || allowed.count(to)) continue;
        if (layer == "learn" && to == "cuda" && IsDispatchPoint(rel))
          continue;
        out.push_back(where + layer + " includes \"" + inc + "\" of " + to +
                      ", which " + layer + " does not depend on");
      }
    }
  }
  return out;
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += x + "\n";
  return s;
}

}  // namespace

TEST_CASE("every include of the tree follows the declared library graph") {
  const Graph g = ReadGraph(SHEFL_LAYERS_FILE);
  REQUIRE(g.deps.count("fed"));
  const std::vector<std::string> bad = Violations(SHEFL_SOURCE_DIR, g);
  INFO(Join(bad));
  CHECK(bad.empty());
}

TEST_CASE("the declared graph has the designed arrows and no cycle") {
  const Graph g = ReadGraph(SHEFL_LAYERS_FILE);
  for (const auto& [layer, deps] : g.deps)
    CHECK_FALSE(Closure(g, layer).count(layer));  // no cycle through it
  // LibTorch only in data and learn (and what builds on learn).
  for (const char* l : {"core", "sparse", "fed", "net", "secure", "cli",
                        "server_state", "server_run", "server_rpc"}) {
    INFO(l);
    CHECK_FALSE(LinksTorch(g, l));
  }
  CHECK(LinksTorch(g, "data"));
  CHECK(LinksTorch(g, "learn"));
  CHECK(Closure(g, "sparse").empty());
  CHECK(Closure(g, "core").empty());
  // The secure-aggregation primitives stand on core alone (OpenSSL and
  // Abseil outside), so the coordinator and the daemon can both link them.
  REQUIRE(g.deps.count("secure"));
  CHECK(Closure(g, "secure") == std::set<std::string>{"core"});
  // server/ and client/ never meet; the launcher links neither.
  CHECK_FALSE(Closure(g, "server").count("client"));
  CHECK_FALSE(Closure(g, "client").count("server"));
  for (const char* l : {"server", "client", "learn", "data"}) {
    INFO(l);
    CHECK_FALSE(Closure(g, "cli").count(l));
  }
}

TEST_CASE("server/'s rooms stand bottom up: state, run, shared, then rpc beside round") {
  const Graph g = ReadGraph(SHEFL_LAYERS_FILE);
  const std::vector<std::string> rooms = {"server_state", "server_run",
                                          "server_shared"};
  for (size_t i = 0; i < rooms.size(); ++i) {
    INFO(rooms[i]);
    REQUIRE(g.deps.count(rooms[i]));
    const std::set<std::string> below = Closure(g, rooms[i]);
    for (size_t j = 0; j < rooms.size(); ++j)
      CHECK(below.count(rooms[j]) == (j < i));  // every room below, none above
  }
  // The gRPC service and the kinds of round both stand on the shared
  // state, and neither on the other; the Coordinator on both.
  for (const char* top : {"server_rpc", "server_round"}) {
    INFO(top);
    for (const std::string& r : rooms) CHECK(Closure(g, top).count(r));
  }
  CHECK_FALSE(Closure(g, "server_round").count("server_rpc"));
  CHECK_FALSE(Closure(g, "server_rpc").count("server_round"));
  CHECK(Closure(g, "server").count("server_rpc"));
  CHECK(Closure(g, "server").count("server_round"));
  CHECK(LinksTorch(g, "server_round"));
}

TEST_CASE("a bad include in a scratch tree is reported with file and line") {
  const Graph g = ReadGraph(SHEFL_LAYERS_FILE);
  const shefl::testing::TempDir tmp;
  const fs::path root = fs::path(tmp.path());
  fs::create_directories(root / "common/sparse");
  fs::create_directories(root / "common/learn");
  fs::create_directories(root / "server/rpc");
  std::ofstream(root / "common/sparse/codec.cc")
      << "#include \"common/sparse/codec.h\"\n"
         "#include \"common/learn/models.h\"\n";
  std::ofstream(root / "common/sparse/topk.cc") << "#include <ATen/ATen.h>\n";
  std::ofstream(root / "common/learn/compress.cc")
      << "#include \"cuda/topk_cuda.h\"\n";
  std::ofstream(root / "server/x.cc") << "#include \"client/daemon.h\"\n";
  std::ofstream(root / "server/rpc/y.cc")
      << "#include \"server/round/round_kind.h\"\n";
  const std::vector<std::string> bad = Violations(root, g);
  INFO(Join(bad));
  REQUIRE(bad.size() == 5);
  CHECK(Join(bad).find("common/sparse/codec.cc:2: sparse includes "
                       "\"common/learn/models.h\" of learn") !=
        std::string::npos);
  CHECK(Join(bad).find("common/sparse/topk.cc:1: sparse includes LibTorch") !=
        std::string::npos);
  CHECK(Join(bad).find("common/learn/compress.cc:1: learn includes "
                       "\"cuda/topk_cuda.h\"") != std::string::npos);
  CHECK(Join(bad).find("server/x.cc:1: server includes \"client/daemon.h\"") !=
        std::string::npos);
  CHECK(Join(bad).find("server/rpc/y.cc:1: server_rpc includes "
                       "\"server/round/round_kind.h\" of server_round") !=
        std::string::npos);
}

namespace {

// The shared libraries `ldd` lists for a built binary of build/bin.
std::string Ldd(const std::string& binary) {
  const std::string path = shefl::testing::BinDir() + "/" + binary;
  REQUIRE(fs::exists(path));
  std::string out;
  FILE* p = popen(("ldd '" + path + "' 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[512];
  while (fgets(buf, sizeof(buf), p)) out += buf;
  pclose(p);
  return out;
}

}  // namespace

TEST_CASE("the launcher and the torch-free unit tests link no LibTorch") {
  for (const char* bin : {"shefl", "codec_test", "method_registry_test",
                          "server_optimizer_test"}) {
    const std::string libs = Ldd(bin);
    INFO(bin << ":\n" << libs);
    CHECK(libs.find("libc.so") != std::string::npos);  // ldd really ran
    CHECK(libs.find("libtorch") == std::string::npos);
    CHECK(libs.find("libc10") == std::string::npos);
  }
  // The daemon and the coordinator do train and evaluate with it.
  CHECK(Ldd("shefl-client").find("libtorch") != std::string::npos);
}
