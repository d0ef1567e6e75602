// The layering of the tree, held to one intended graph: docs/rooms.txt
// names the rooms (layers), each with its folder, its CMake target(s), the
// rooms it may use directly and whether it may link LibTorch. The build's
// declared graph (build/layers.txt, which tests/CMakeLists.txt writes from
// every library's LINK_LIBRARIES) must keep to it:
//   - every library is a room's target, built from the room's folder, and
//     every arrow it declares is one its room may use;
//   - every `#include` of a project header (the generated protocol's too)
//     by a room's file is of the room itself or of a room its library
//     declares directly: reaching a room only through another library is
//     not enough, so a library's CMake file says all that its code uses;
//   - the intended graph has no cycle and the design's shape (secure on
//     core alone, server/ and client/ apart, the launcher on neither,
//     server/rpc and server/round siblings over server/shared), and its
//     LibTorch marks hold against what the libraries link;
//   - common/ reaches cuda/ only at its two dispatch points (learn's and
//     learn_stacked's).
// Tests and tools (`*_test.cc`, cli/fake_child.cc) are outside the rooms.
// Scratch trees, layers files and rooms files show that each rule fails
// with the file and line; ldd shows the torch-free binaries link no
// LibTorch.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
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

// ---------------------------------------------------------------------------
// The intended graph: docs/rooms.txt.

struct Room {
  std::string name;
  std::string dir;  // from the root, ending in '/'
  std::vector<std::string> targets;
  std::string torch;  // own | via | no
  std::set<std::string> uses;
  std::string what;
  int line = 0;  // its `room` line
};

struct Rooms {
  std::string shown;                    // the file as messages name it
  std::vector<Room> rooms;              // in the file's order, bottom first
  std::map<std::string, size_t> index;  // name -> rooms[i]
  std::map<std::string, std::string> target;  // CMake target -> room
  std::vector<std::string> errors;            // what does not parse

  const Room* Find(const std::string& name) const {
    auto it = index.find(name);
    return it == index.end() ? nullptr : &rooms[it->second];
  }
  std::string At(const Room& r) const {
    return shown + ":" + std::to_string(r.line);
  }
};

// `path` as a message names it: from the root of the tree when inside it.
std::string Shown(const std::string& path) {
  const std::string root = std::string(SHEFL_SOURCE_DIR) + "/";
  return path.rfind(root, 0) == 0 ? path.substr(root.size()) : path;
}

std::vector<std::string> Words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

Rooms ReadRooms(const std::string& path) {
  Rooms r;
  r.shown = Shown(path);
  std::ifstream in(path);
  if (!in.good()) {
    r.errors.push_back(r.shown + ": cannot be read");
    return r;
  }
  std::map<std::string, int> uses_line;  // room -> its `uses` line
  std::string text;
  for (int n = 1; std::getline(in, text); ++n) {
    const std::string where = r.shown + ":" + std::to_string(n) + ": ";
    const size_t hash = text.find('#');
    if (hash != std::string::npos) text.erase(hash);
    const std::vector<std::string> w = Words(text);
    if (w.empty()) continue;
    const std::string& key = w[0];
    if (key == "room") {
      if (w.size() != 2) {
        r.errors.push_back(where + "`room` takes one name");
        continue;
      }
      if (r.index.count(w[1])) {
        r.errors.push_back(where + "room " + w[1] + " again");
        continue;
      }
      r.index[w[1]] = r.rooms.size();
      r.rooms.push_back(Room{w[1], "", {}, "", {}, "", n});
      continue;
    }
    if (r.rooms.empty()) {
      r.errors.push_back(where + "`" + key + "` before any `room`");
      continue;
    }
    Room& room = r.rooms.back();
    const std::vector<std::string> rest(w.begin() + 1, w.end());
    if (key == "dir" && rest.size() == 1 && rest[0].back() == '/') {
      room.dir = rest[0];
    } else if (key == "target" && !rest.empty()) {
      room.targets = rest;
      for (const std::string& t : rest) {
        if (r.target.count(t))
          r.errors.push_back(where + t + " is room " + r.target[t] + "'s too");
        r.target[t] = room.name;
      }
    } else if (key == "torch" && rest.size() == 1 &&
               (rest[0] == "own" || rest[0] == "via" || rest[0] == "no")) {
      room.torch = rest[0];
    } else if (key == "uses" && !rest.empty()) {
      uses_line[room.name] = n;
      if (rest != std::vector<std::string>{"-"})
        room.uses.insert(rest.begin(), rest.end());
    } else if (key == "what" && !rest.empty()) {
      room.what = text.substr(text.find("what") + 4);
      room.what.erase(0, room.what.find_first_not_of(" \t"));
      room.what.erase(room.what.find_last_not_of(" \t\r") + 1);
    } else {
      std::string line;
      for (const std::string& x : w) line += (line.empty() ? "" : " ") + x;
      r.errors.push_back(where + "not a field: " + line);
    }
  }
  for (const Room& room : r.rooms) {
    const std::string where = r.At(room) + ": room " + room.name;
    if (room.dir.empty() || room.targets.empty() || room.torch.empty() ||
        !uses_line.count(room.name) || room.what.empty())
      r.errors.push_back(where +
                         " lacks one of dir, target, torch, uses, what");
    for (const std::string& u : room.uses)
      if (!r.index.count(u) || u == room.name)
        r.errors.push_back(
            r.shown + ":" + std::to_string(uses_line[room.name]) + ": room " +
            room.name + " uses " + u +
            (u == room.name ? ", itself" : ", which is no room"));
  }
  return r;
}

// The rooms `name` reaches through `deps`, not itself unless by a cycle.
std::set<std::string> Closure(
    const std::map<std::string, std::set<std::string>>& deps,
    const std::string& name) {
  std::set<std::string> seen;
  std::vector<std::string> todo = {name};
  while (!todo.empty()) {
    const std::string l = todo.back();
    todo.pop_back();
    auto it = deps.find(l);
    if (it == deps.end()) continue;
    for (const std::string& d : it->second)
      if (seen.insert(d).second) todo.push_back(d);
  }
  return seen;
}

std::map<std::string, std::set<std::string>> Uses(const Rooms& r) {
  std::map<std::string, std::set<std::string>> out;
  for (const Room& room : r.rooms) out[room.name] = room.uses;
  return out;
}

// The room a path of the tree (a file, or an include) belongs to: the room
// of the longest folder that holds it, the generated protocol's headers
// proto's; "" for paths outside every room.
std::string RoomOf(const Rooms& r, const std::string& rel) {
  static const std::regex generated("^[a-z_]+\\.(grpc\\.)?pb\\.h$");
  if (std::regex_match(rel, generated)) return r.Find("proto") ? "proto" : "";
  std::string best;
  size_t best_len = 0;
  for (const Room& room : r.rooms)
    if (rel.rfind(room.dir, 0) == 0 && room.dir.size() > best_len) {
      best = room.name;
      best_len = room.dir.size();
    }
  return best;
}

// ---------------------------------------------------------------------------
// The declared graph: build/layers.txt.

struct Library {
  std::string target, dir;
  std::vector<std::string> links;
  int line = 0;
};

struct Declared {
  std::string shown;
  std::vector<Library> libraries;
  std::map<std::string, std::set<std::string>> deps;  // room -> rooms, direct
  std::map<std::string, std::string> target_of;       // room -> a target
  std::map<std::string, int> line_of;                 // room -> a line
  std::set<std::string> own_torch;                    // link it themselves
};

bool IsTorch(const std::string& link) {
  return link.find("torch") != std::string::npos ||
         link.find("c10") != std::string::npos;
}

Declared ReadLayers(const std::string& path, const Rooms& r) {
  Declared d;
  d.shown = Shown(path);
  std::ifstream in(path);
  REQUIRE(in.good());
  std::string text;
  for (int n = 1; std::getline(in, text); ++n) {
    const std::vector<std::string> w = Words(text);
    if (w.size() < 2) continue;
    Library lib{w[0], w[1], {w.begin() + 2, w.end()}, n};
    d.libraries.push_back(lib);
    auto it = r.target.find(lib.target);
    if (it == r.target.end()) continue;  // ArrowViolations names it
    const std::string& room = it->second;
    d.deps[room];
    d.target_of.emplace(room, lib.target);
    d.line_of.emplace(room, n);
    for (const std::string& link : lib.links) {
      if (auto t = r.target.find(link); t != r.target.end()) {
        if (t->second != room) d.deps[room].insert(t->second);
      } else if (IsTorch(link)) {
        d.own_torch.insert(room);
      }
    }
  }
  return d;
}

// Whether `room` links LibTorch in the declared graph, itself or through
// what it declares.
bool BuildLinksTorch(const Declared& d, const std::string& room) {
  std::set<std::string> all = Closure(d.deps, room);
  all.insert(room);
  for (const std::string& l : all)
    if (d.own_torch.count(l)) return true;
  return false;
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += x + "\n";
  return s;
}

std::string JoinSet(const std::set<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : " ") + x;
  return s.empty() ? "-" : s;
}

// (a) Every library is a room's target, from the room's folder, and every
// arrow it declares is one its room may use.
std::vector<std::string> ArrowViolations(const Rooms& r, const Declared& d) {
  std::vector<std::string> out;
  for (const Library& lib : d.libraries) {
    const std::string where = d.shown + ":" + std::to_string(lib.line) + ": ";
    auto it = r.target.find(lib.target);
    if (it == r.target.end()) {
      out.push_back(where + lib.target + " (" + lib.dir +
                    ") is the target of no room of " + r.shown);
      continue;
    }
    const Room& room = *r.Find(it->second);
    if (lib.dir != room.dir)
      out.push_back(where + lib.target + " is built from " + lib.dir +
                    ", not from room " + room.name + "'s folder " + room.dir +
                    " (" + r.At(room) + ")");
    for (const std::string& link : lib.links) {
      auto t = r.target.find(link);
      if (t == r.target.end()) {
        if (link.rfind("shefl_", 0) == 0)
          out.push_back(where + lib.target + " declares " + link +
                        ", the target of no room of " + r.shown);
        continue;
      }
      if (t->second == room.name || room.uses.count(t->second)) continue;
      out.push_back(where + lib.target + " (room " + room.name + ") declares " +
                    link + " (room " + t->second + "), an arrow " + r.At(room) +
                    " does not allow (" + room.name + " uses " +
                    JoinSet(room.uses) + ")");
    }
  }
  return out;
}

// (c) The intended graph has no cycle, and its LibTorch marks agree with
// each other: a torch-free room uses none that links LibTorch, a room that
// has it only through its arrows uses one that does.
std::vector<std::string> GraphViolations(const Rooms& r) {
  std::vector<std::string> out;
  const auto uses = Uses(r);
  // Depth first, grey while on the path: an arrow to a grey room closes a
  // cycle, named from that room round to it.
  std::map<std::string, int> colour;  // 0 white, 1 grey, 2 black
  std::vector<std::string> path;
  std::function<void(const std::string&)> visit = [&](const std::string& n) {
    colour[n] = 1;
    path.push_back(n);
    for (const std::string& u : uses.at(n)) {
      if (!uses.count(u)) continue;  // ReadRooms names it
      if (colour[u] == 1) {
        std::string cycle;
        for (auto it = std::find(path.begin(), path.end(), u); it != path.end();
             ++it)
          cycle += *it + " -> ";
        out.push_back(r.At(*r.Find(n)) + ": a cycle: " + cycle + u);
      } else if (colour[u] == 0) {
        visit(u);
      }
    }
    path.pop_back();
    colour[n] = 2;
  };
  for (const Room& room : r.rooms)
    if (colour[room.name] == 0) visit(room.name);
  for (const Room& room : r.rooms) {
    bool torch_below = false;
    for (const std::string& u : room.uses) {
      const Room* used = r.Find(u);
      if (!used || used->torch == "no") continue;
      torch_below = true;
      if (room.torch == "no")
        out.push_back(r.At(room) + ": room " + room.name +
                      " is torch-free (torch no) but uses " + u +
                      ", which links LibTorch (torch " + used->torch + ")");
    }
    if (room.torch == "via" && !torch_below)
      out.push_back(r.At(room) + ": room " + room.name +
                    " has LibTorch through its arrows (torch via) but uses "
                    "no room that links it");
  }
  return out;
}

// (c) The marks hold against the build: `own` rooms link LibTorch
// themselves, `via` rooms only through what they declare, `no` rooms not
// at all. Rooms the build lacks (cuda/ without a CUDA LibTorch) are not
// asked.
std::vector<std::string> TorchViolations(const Rooms& r, const Declared& d) {
  std::vector<std::string> out;
  for (const Room& room : r.rooms) {
    if (!d.target_of.count(room.name)) continue;
    const std::string where =
        d.shown + ":" + std::to_string(d.line_of.at(room.name)) + ": " +
        d.target_of.at(room.name) + " (room " + room.name + ", " + r.At(room) +
        ": torch " + room.torch + ") ";
    const bool own = d.own_torch.count(room.name) > 0;
    const bool any = BuildLinksTorch(d, room.name);
    if (room.torch == "no" && any)
      out.push_back(where + "links LibTorch" +
                    (own ? "" : " through what it declares"));
    if (room.torch == "via" && own)
      out.push_back(where + "links LibTorch itself");
    if (room.torch == "via" && !any)
      out.push_back(where + "does not link LibTorch");
    if (room.torch == "own" && !own)
      out.push_back(where + "does not link LibTorch itself");
  }
  return out;
}

bool IsTestOrTool(const std::string& rel) {
  return rel.find("_test.cc") != std::string::npos ||
         rel == "cli/fake_child.cc";
}

// The includes of cuda/ from common/ the design allows: learn's dispatch
// point (top-k) and learn_stacked's (the cohort step's CUDA graphs), the
// only sources compiled with SHEFL_WITH_CUDA.
bool IsDispatchPoint(const std::string& room, const std::string& rel) {
  return (room == "learn" && rel == "common/learn/topk_backend.cc") ||
         (room == "learn_stacked" &&
          rel == "common/learn_stacked/step_graph_backend.cc");
}

// (b) Every include of a room's file: of its own room or of a room its
// library declares directly (for a room the build lacks, one the file lets
// it use); LibTorch's headers only in rooms that may link it.
std::vector<std::string> IncludeViolations(const fs::path& root, const Rooms& r,
                                           const Declared& d,
                                           size_t* scanned = nullptr) {
  std::vector<std::string> out;
  static const std::regex include("^\\s*#\\s*include\\s*([\"<])([^\">]+)[\">]");
  std::set<std::string> tops;
  for (const Room& room : r.rooms)
    tops.insert(room.dir.substr(0, room.dir.find('/')));
  for (const std::string& top : tops) {
    if (!fs::is_directory(root / top)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root / top)) {
      const std::string ext = e.path().extension().string();
      if (ext != ".h" && ext != ".cc" && ext != ".cu" && ext != ".cuh")
        continue;
      const std::string rel = fs::relative(e.path(), root).string();
      const std::string from = RoomOf(r, rel);
      if (from.empty() || IsTestOrTool(rel)) continue;
      const Room& room = *r.Find(from);
      if (scanned) ++*scanned;
      const bool built = d.target_of.count(from) > 0;
      const std::string lib = built ? d.target_of.at(from) : "room " + from;
      std::ifstream in(e.path());
      std::string text;
      for (int n = 1; std::getline(in, text); ++n) {
        std::smatch m;
        if (!std::regex_search(text, m, include)) continue;
        const std::string inc = m[2];
        const std::string where =
            rel + ":" + std::to_string(n) + ": " + from + " includes ";
        if (m[1] == "<") {
          const bool torch = inc.rfind("ATen/", 0) == 0 ||
                             inc.rfind("torch/", 0) == 0 ||
                             inc.rfind("c10/", 0) == 0;
          if (torch && room.torch == "no")
            out.push_back(where + "LibTorch <" + inc + ">, but " + r.At(room) +
                          " marks it torch-free");
          continue;
        }
        const std::string to = RoomOf(r, inc);
        if (to.empty() || to == from) continue;
        const std::string what = where + "\"" + inc + "\" of " + to;
        if (to == "cuda") {
          if (IsDispatchPoint(from, rel)) continue;
          out.push_back(what +
                        ": cuda/ is reached only at the dispatch points "
                        "(learn's topk_backend.cc, learn_stacked's "
                        "step_graph_backend.cc)");
          continue;
        }
        if (!built) {
          if (!room.uses.count(to))
            out.push_back(what + ", which " + r.At(room) + " does not let " +
                          from + " use");
          continue;
        }
        if (d.deps.at(from).count(to)) continue;
        if (Closure(d.deps, from).count(to))
          out.push_back(what + ", which " + lib + " does not declare " +
                        "directly (it reaches it only through another " +
                        "library): add it to " + lib +
                        "'s target_link_libraries");
        else
          out.push_back(what + ", which " + lib + " does not depend on");
      }
    }
  }
  return out;
}

const Rooms& TreeRooms() {
  static const Rooms kRooms = ReadRooms(SHEFL_ROOMS_FILE);
  return kRooms;
}

bool Has(const std::vector<std::string>& found, const std::string& text) {
  for (const std::string& f : found)
    if (f.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("docs/rooms.txt reads cleanly and holds every room of the design") {
  const Rooms& r = TreeRooms();
  INFO(Join(r.errors));
  CHECK(r.errors.empty());
  for (const char* name :
       {"proto", "core", "sparse", "fed", "secure", "secure_wire", "net",
        "data", "cuda", "learn", "learn_stacked", "server_state", "server_run",
        "server_shared", "server_rpc", "server_round", "server", "client",
        "cli"}) {
    INFO(name);
    CHECK(r.Find(name) != nullptr);
  }
}

TEST_CASE("every arrow CMake declares is one docs/rooms.txt allows") {
  const Rooms& r = TreeRooms();
  const Declared d = ReadLayers(SHEFL_LAYERS_FILE, r);
  // The build's layers file is whole: the bottom and the top are in it.
  for (const char* t : {"shefl_core", "shefl_fed", "shefl_net", "shefl_learn",
                        "shefl_server", "shefl_client", "shefl_launch"}) {
    INFO(t);
    CHECK(r.target.count(t));
    CHECK(d.target_of.count(r.target.count(t) ? r.target.at(t) : ""));
  }
  const std::vector<std::string> bad = ArrowViolations(r, d);
  INFO(Join(bad));
  CHECK(bad.empty());
}

TEST_CASE("every include of a room's file is of one its library declares") {
  const Rooms& r = TreeRooms();
  const Declared d = ReadLayers(SHEFL_LAYERS_FILE, r);
  size_t scanned = 0;
  const std::vector<std::string> bad =
      IncludeViolations(SHEFL_SOURCE_DIR, r, d, &scanned);
  INFO(Join(bad));
  CHECK(bad.empty());
  CHECK(scanned > 300);  // the tree's sources were read
}

TEST_CASE(
    "the intended graph has no cycle and its LibTorch marks hold against the "
    "build") {
  const Rooms& r = TreeRooms();
  const std::vector<std::string> graph = GraphViolations(r);
  INFO(Join(graph));
  CHECK(graph.empty());
  const Declared d = ReadLayers(SHEFL_LAYERS_FILE, r);
  const std::vector<std::string> torch = TorchViolations(r, d);
  INFO(Join(torch));
  CHECK(torch.empty());
  // LibTorch enters only in data and learn (and cuda/, learn's backend).
  std::set<std::string> own;
  for (const Room& room : r.rooms)
    if (room.torch == "own") own.insert(room.name);
  CHECK(own == std::set<std::string>{"cuda", "data", "learn"});
}

TEST_CASE("the intended graph has the design's shape") {
  const Rooms& r = TreeRooms();
  const auto uses = Uses(r);
  auto below = [&](const std::string& room) { return Closure(uses, room); };
  CHECK(below("core").empty());
  CHECK(below("sparse").empty());
  CHECK(below("proto").empty());
  // The secure-aggregation primitives stand on core alone (OpenSSL and
  // Abseil outside), so the coordinator and the daemon can both link
  // them; net stands without them (their messages are secure_wire's).
  CHECK(below("secure") == std::set<std::string>{"core"});
  CHECK_FALSE(below("net").count("secure"));
  // The stacked and cohort paths stand on learn, which holds the plain
  // path alone and never names them (it owns the interfaces they fill).
  CHECK(below("learn_stacked").count("learn"));
  CHECK_FALSE(below("learn").count("learn_stacked"));
  for (const char* l :
       {"core", "sparse", "fed", "net", "secure", "secure_wire", "cli",
        "server_state", "server_run", "server_shared", "server_rpc"}) {
    INFO(l);
    REQUIRE(r.Find(l));
    CHECK(r.Find(l)->torch == "no");
  }
  // server/ and client/ never meet; the launcher uses neither, nor
  // anything that links LibTorch.
  for (const Room& room : r.rooms) {
    const bool server = room.name.rfind("server", 0) == 0;
    for (const std::string& l : below(room.name)) {
      INFO(room.name << " reaches " << l);
      if (server) CHECK(l != "client");
      if (room.name == "client") CHECK(l.rfind("server", 0) != 0);
    }
  }
  for (const std::string& l : below("cli")) {
    INFO("cli reaches " << l);
    CHECK(l.rfind("server", 0) != 0);
    CHECK(l != "client");
    CHECK(r.Find(l)->torch == "no");
  }
  // server/'s rooms bottom up: state, run, shared; then the gRPC service
  // and the kinds of round, both on the shared state and neither on the
  // other; the Coordinator on both.
  const std::vector<std::string> rooms = {"server_state", "server_run",
                                          "server_shared"};
  for (size_t i = 0; i < rooms.size(); ++i) {
    INFO(rooms[i]);
    const std::set<std::string> under = below(rooms[i]);
    for (size_t j = 0; j < rooms.size(); ++j)
      CHECK(under.count(rooms[j]) == (j < i));  // every room below, none above
  }
  for (const char* top : {"server_rpc", "server_round"}) {
    INFO(top);
    for (const std::string& s : rooms) CHECK(below(top).count(s));
  }
  CHECK_FALSE(below("server_round").count("server_rpc"));
  CHECK_FALSE(below("server_rpc").count("server_round"));
  CHECK(below("server").count("server_rpc"));
  CHECK(below("server").count("server_round"));
  CHECK(r.Find("server_round")->torch == "via");
}

TEST_CASE("a bad include in a scratch tree is reported with file and line") {
  const Rooms& r = TreeRooms();
  const Declared d = ReadLayers(SHEFL_LAYERS_FILE, r);
  const shefl::testing::TempDir tmp;
  const fs::path root = fs::path(tmp.path());
  for (const char* dir : {"common/sparse", "common/learn", "server/rpc", "cli"})
    fs::create_directories(root / dir);
  std::ofstream(root / "common/sparse/codec.cc")
      << "#include \"common/sparse/codec.h\"\n"
         "#include \"common/learn/models.h\"\n";
  std::ofstream(root / "common/sparse/topk.cc") << "#include <ATen/ATen.h>\n";
  std::ofstream(root / "common/learn/compress.cc")
      << "#include \"cuda/topk_cuda.h\"\n";
  std::ofstream(root / "common/learn/topk_backend.cc")
      << "#include \"cuda/topk_cuda.h\"\n";  // a dispatch point: allowed
  std::ofstream(root / "server/x.cc") << "#include \"client/daemon.h\"\n";
  std::ofstream(root / "server/rpc/y.cc")
      << "#include \"server/round/round_kind.h\"\n";
  std::ofstream(root / "server/rpc/y_test.cc")
      << "#include \"server/round/round_kind.h\"\n";  // a test: exempt
  std::ofstream(root / "cli/fake_child.cc")
      << "#include \"server/coordinator.h\"\n";
  const std::vector<std::string> bad = IncludeViolations(root, r, d);
  INFO(Join(bad));
  REQUIRE(bad.size() == 5);
  CHECK(Has(bad,
            "common/sparse/codec.cc:2: sparse includes "
            "\"common/learn/models.h\" of learn, which shefl_sparse does "
            "not depend on"));
  CHECK(Has(bad,
            "common/sparse/topk.cc:1: sparse includes LibTorch <ATen/ATen.h>"));
  CHECK(Has(bad,
            "common/learn/compress.cc:1: learn includes "
            "\"cuda/topk_cuda.h\" of cuda: cuda/ is reached only at"));
  CHECK(
      Has(bad, "server/x.cc:1: server includes \"client/daemon.h\" of client"));
  CHECK(Has(bad,
            "server/rpc/y.cc:1: server_rpc includes "
            "\"server/round/round_kind.h\" of server_round"));
}

TEST_CASE(
    "an include reached only through another library fails in a scratch tree") {
  const Rooms& r = TreeRooms();
  const shefl::testing::TempDir tmp;
  const fs::path root = fs::path(tmp.path());
  // learn declares fed, which declares core: learn reaches core, but only
  // through fed. The generated protocol is a room like the others.
  shefl::testing::WriteFile(tmp / "layers.txt",
                            "shefl_core common/core/ absl::status\n"
                            "shefl_sparse common/sparse/\n"
                            "shefl_fed common/fed/ shefl_core shefl_sparse\n"
                            "shefl_learn common/learn/ shefl_fed torch\n"
                            "shefl_proto proto/ protobuf::libprotobuf\n"
                            "shefl_net common/net/ shefl_core\n");
  const Declared d = ReadLayers(tmp / "layers.txt", r);
  fs::create_directories(root / "common/learn");
  fs::create_directories(root / "common/net");
  std::ofstream(root / "common/learn/train.cc")
      << "#include \"common/learn/train.h\"\n"
         "#include \"common/fed/schedule.h\"\n"
         "#include \"common/core/log.h\"\n"
         "#include <torch/torch.h>\n";
  std::ofstream(root / "common/net/wire.h") << "#include \"shefl.pb.h\"\n";
  const std::vector<std::string> bad = IncludeViolations(root, r, d);
  INFO(Join(bad));
  REQUIRE(bad.size() == 2);
  CHECK(Has(bad,
            "common/learn/train.cc:3: learn includes \"common/core/log.h\" "
            "of core, which shefl_learn does not declare directly (it "
            "reaches it only through another library)"));
  CHECK(Has(bad,
            "common/net/wire.h:1: net includes \"shefl.pb.h\" of proto, "
            "which shefl_net does not depend on"));
}

TEST_CASE(
    "an arrow the intended graph forbids fails even when CMake declares it") {
  const Rooms& r = TreeRooms();
  const shefl::testing::TempDir tmp;
  shefl::testing::WriteFile(
      tmp / "layers.txt",
      "shefl_core common/core/ absl::status\n"
      "shefl_secure common/secure/ shefl_core OpenSSL::Crypto\n"
      "shefl_net common/net/ shefl_core shefl_secure shefl_proto\n"
      "shefl_fed common/fed/ shefl_core shefl_extra torch\n"
      "shefl_extra common/extra/ shefl_core\n"
      "shefl_launch server/ shefl_net\n");
  const Declared d = ReadLayers(tmp / "layers.txt", r);
  const std::vector<std::string> bad = ArrowViolations(r, d);
  INFO(Join(bad));
  REQUIRE(bad.size() == 4);
  CHECK(Has(bad,
            "layers.txt:3: shefl_net (room net) declares shefl_secure "
            "(room secure), an arrow docs/rooms.txt:"));
  CHECK(Has(bad,
            "layers.txt:4: shefl_fed declares shefl_extra, the target of "
            "no room of docs/rooms.txt"));
  CHECK(Has(bad,
            "layers.txt:5: shefl_extra (common/extra/) is the target of no "
            "room of docs/rooms.txt"));
  CHECK(Has(bad,
            "layers.txt:6: shefl_launch is built from server/, not from "
            "room cli's folder cli/"));
  // fed is torch-free in the intended graph; this build links it.
  const std::vector<std::string> torch = TorchViolations(r, d);
  INFO(Join(torch));
  REQUIRE(torch.size() == 1);
  CHECK(Has(torch, "layers.txt:4: shefl_fed (room fed, docs/rooms.txt:"));
  CHECK(Has(torch, "torch no) links LibTorch"));
}

TEST_CASE(
    "a cycle or a broken mark in a scratch rooms file fails with its line") {
  const shefl::testing::TempDir tmp;
  shefl::testing::WriteFile(
      tmp / "rooms.txt",
      "# a scratch graph\n"
      "room a\n dir a/\n target shefl_a\n torch no\n uses c\n what A\n"
      "\n"
      "room b\n dir b/\n target shefl_b\n torch own\n uses a\n what B\n"
      "\n"
      "room c\n dir c/\n target shefl_c\n torch no\n uses b\n what C\n"
      "\n"
      "room d\n dir d/\n target shefl_d\n torch via\n uses a nowhere\n"
      "\n"
      "room e\n colour blue\n");
  const Rooms r = ReadRooms(tmp / "rooms.txt");
  INFO(Join(r.errors));
  CHECK(
      Has(r.errors,
          "rooms.txt:23: room d lacks one of dir, target, torch, uses, what"));
  CHECK(Has(r.errors, "rooms.txt:27: room d uses nowhere, which is no room"));
  CHECK(Has(r.errors, "rooms.txt:30: not a field: colour blue"));
  const std::vector<std::string> bad = GraphViolations(r);
  INFO(Join(bad));
  CHECK(Has(bad, "rooms.txt:9: a cycle: a -> c -> b -> a"));
  CHECK(Has(bad,
            "rooms.txt:16: room c is torch-free (torch no) but uses b, "
            "which links LibTorch (torch own)"));
  CHECK(Has(bad,
            "rooms.txt:23: room d has LibTorch through its arrows (torch "
            "via) but uses no room that links it"));
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
