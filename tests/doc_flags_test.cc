// Every flag the documentation and the deployment files pass to a shefl
// binary is one that binary takes: command lines of shefl-coordinator,
// shefl-client and `shefl run|report|certs|health|config|ls|status|stop`
// are pulled out of README.md, docs/**/*.md and deploy/** (code blocks and
// inline code in Markdown; shell, YAML block scalars and flow lists,
// systemd units, env files elsewhere), and each --flag must appear in the
// `--help` of the binary or subcommand it is given to. The deploy_*_tests
// check their own files more closely (values, ports, probes); this one
// covers every file.
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace fs = std::filesystem;
using shefl::testing::BinDir;
using shefl::testing::ReadFile;
using shefl::testing::RunProcess;

namespace {

// One command line as found: where, and its text.
struct Line {
  std::string where;  // file:line
  std::string text;
};

// A flag given to a command, and where.
struct Use {
  std::string command;  // "shefl-client", "shefl run", ...
  std::string flag;     // "--clients"
  std::string where;
};

const std::set<std::string> kSubcommands = {"run",    "report", "certs",
                                            "health", "config", "ls",
                                            "status", "stop"};

std::string Rel(const fs::path& p) {
  return fs::relative(p, SHEFL_SOURCE_DIR).string();
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

size_t Indent(const std::string& l) {
  size_t i = 0;
  while (i < l.size() && l[i] == ' ') ++i;
  return i;
}

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() &&
         s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string TrimRight(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

// Lines of a shell script, unit, env file or YAML document, joined where
// one command spans several: a trailing backslash, a YAML block scalar
// (`key: >-` and the lines indented under it), a flow list left open.
// Comment lines are kept on their own (a comment may show a command).
std::vector<Line> LogicalLines(const std::vector<std::string>& lines,
                               const std::string& file, size_t first = 0,
                               size_t end = std::string::npos) {
  std::vector<Line> out;
  end = std::min(end, lines.size());
  for (size_t i = first; i < end; ++i) {
    Line l{file + ":" + std::to_string(i + 1), TrimRight(lines[i])};
    const std::string& t = l.text;
    if (EndsWith(t, ">-") || EndsWith(t, ">") || EndsWith(t, "|") ||
        EndsWith(t, "|-")) {
      const size_t base = Indent(lines[i]);
      while (i + 1 < end && (TrimRight(lines[i + 1]).empty() ||
                             Indent(lines[i + 1]) > base))
        l.text += " " + TrimRight(lines[++i]);
    }
    auto open = [](const std::string& s) {
      int n = 0;
      for (char c : s) n += c == '[' ? 1 : c == ']' ? -1 : 0;
      return n;
    };
    while (i + 1 < end && (EndsWith(l.text, "\\") || open(l.text) > 0)) {
      if (EndsWith(l.text, "\\")) l.text.pop_back();
      l.text += " " + TrimRight(lines[++i]);
    }
    out.push_back(l);
  }
  return out;
}

// Markdown: the lines of fenced code blocks (joined as a shell would),
// and every inline code span of the prose, paragraphs joined first so a
// span may wrap.
std::vector<Line> MarkdownLines(const std::string& text,
                                const std::string& file) {
  const std::vector<std::string> lines = SplitLines(text);
  std::vector<Line> out;
  std::string para;
  size_t para_start = 0;
  auto flush = [&] {
    size_t pos = 0;
    while ((pos = para.find('`', pos)) != std::string::npos) {
      const size_t close = para.find('`', pos + 1);
      if (close == std::string::npos) break;
      out.push_back({file + ":" + std::to_string(para_start + 1),
                     para.substr(pos + 1, close - pos - 1)});
      pos = close + 1;
    }
    para.clear();
  };
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string t = TrimRight(lines[i]);
    if (t.rfind("```", Indent(t)) == Indent(t) && t.size() >= 3 + Indent(t)) {
      flush();
      size_t close = i + 1;
      while (close < lines.size() &&
             TrimRight(lines[close]).find("```") == std::string::npos)
        ++close;
      for (Line& l : LogicalLines(lines, file, i + 1, close)) out.push_back(l);
      i = close;
      continue;
    }
    if (t.empty()) {
      flush();
      continue;
    }
    if (para.empty()) para_start = i;
    para += " " + t;
  }
  flush();
  return out;
}

std::vector<std::string> Tokens(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  auto push = [&] {
    // Quotes and brackets around a word are not part of it.
    while (!cur.empty() && std::string("\"'`[(").find(cur.front()) !=
                               std::string::npos)
      cur.erase(cur.begin());
    while (!cur.empty() && std::string("\"'`]),:").find(cur.back()) !=
                               std::string::npos &&
           !EndsWith(cur, ";"))
      cur.pop_back();
    if (!cur.empty()) out.push_back(cur);
    cur.clear();
  };
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == ',') push();
    else cur += c;
  }
  push();
  return out;
}

std::string Basename(const std::string& token) {
  const size_t slash = token.rfind('/');
  return slash == std::string::npos ? token : token.substr(slash + 1);
}

bool IsFlag(const std::string& t) {
  return t.size() > 2 && t[0] == '-' && t[1] == '-' && std::isalpha(t[2]);
}

std::string FlagName(const std::string& t) {
  size_t n = 2;
  while (n < t.size() && (std::isalnum(t[n]) || t[n] == '-')) ++n;
  return t.substr(0, n);
}

// The flags each command on `line` is given. Statements end at `;`, `&&`,
// `|` and a comment; flags of `set -- ...` go to the next command of the
// line (the `set -- FLAGS; exec shefl-coordinator ... "$@"` pattern).
void FlagsOf(const Line& line, std::vector<Use>* uses) {
  std::vector<std::string> toks = Tokens(line.text);
  // A comment line: read what it shows after the '#'.
  if (!toks.empty() && toks[0][0] == '#') toks[0] = toks[0].substr(1);
  std::string command;
  std::vector<std::string> carried;
  bool in_set = false;
  for (size_t i = 0; i < toks.size(); ++i) {
    std::string t = toks[i];
    if (t.empty()) continue;
    if (i > 0 && t[0] == '#') break;  // a comment after a command
    const bool ends = EndsWith(t, ";");
    if (ends) t.pop_back();
    if (t == "&&" || t == "||" || t == "|" || t == "&" || t == ";") {
      command.clear();
      in_set = false;
      continue;
    }
    const bool after_flag = i > 0 && IsFlag(toks[i - 1]) &&
                            toks[i - 1].find('=') == std::string::npos;
    const std::string base = Basename(t);
    if (t == "set" && i + 1 < toks.size() && toks[i + 1] == "--") {
      in_set = true;
      ++i;
    } else if (!after_flag &&
               (base == "shefl-coordinator" || base == "shefl-client")) {
      command = base;
    } else if (!after_flag && base == "shefl" && i + 1 < toks.size() &&
               kSubcommands.count(toks[i + 1])) {
      command = "shefl " + toks[++i];
    } else if (IsFlag(t)) {
      if (in_set) carried.push_back(FlagName(t));
      else if (!command.empty())
        uses->push_back({command, FlagName(t), line.where});
    }
    if (!command.empty() && !carried.empty()) {
      for (const std::string& f : carried)
        uses->push_back({command, f, line.where});
      carried.clear();
    }
    if (ends) {
      command.clear();
      in_set = false;
    }
  }
}

std::vector<Line> DocumentedLines() {
  std::vector<Line> lines;
  const fs::path root(SHEFL_SOURCE_DIR);
  auto add = [&](const std::vector<Line>& more) {
    lines.insert(lines.end(), more.begin(), more.end());
  };
  add(MarkdownLines(ReadFile((root / "README.md").string()), "README.md"));
  for (const auto& e : fs::recursive_directory_iterator(root / "docs"))
    if (e.is_regular_file() && e.path().extension() == ".md")
      add(MarkdownLines(ReadFile(e.path().string()), Rel(e.path())));
  for (const auto& e : fs::recursive_directory_iterator(root / "deploy")) {
    if (!e.is_regular_file()) continue;
    const std::string ext = e.path().extension().string();
    if (ext == ".json" || ext == ".png") continue;  // dashboards, pictures
    const std::string text = ReadFile(e.path().string());
    if (ext == ".md") add(MarkdownLines(text, Rel(e.path())));
    else add(LogicalLines(SplitLines(text), Rel(e.path())));
  }
  return lines;
}

// `command --help`, read once per command.
const std::string& Help(const std::string& command) {
  static std::map<std::string, std::string> cache;
  auto it = cache.find(command);
  if (it != cache.end()) return it->second;
  std::vector<std::string> argv;
  std::istringstream words(command);
  for (std::string w; words >> w;) argv.push_back(argv.empty() ? BinDir() + "/" + w : w);
  argv.push_back("--help");
  auto r = RunProcess(argv, 60);
  INFO(command << " --help:\n" << r.output);
  CHECK(r.exit_code == 0);
  return cache[command] = r.output;
}

// `flag` as a whole word in `text` (--clients is not --clients-per-x).
bool Mentions(const std::string& text, const std::string& flag) {
  for (size_t pos = text.find(flag); pos != std::string::npos;
       pos = text.find(flag, pos + 1)) {
    const size_t after = pos + flag.size();
    if (after == text.size() ||
        !(std::isalnum(text[after]) || text[after] == '-'))
      return true;
  }
  return false;
}

}  // namespace

TEST_CASE("every flag the docs and deploy files pass is in that binary's --help") {
  std::vector<Use> uses;
  for (const Line& l : DocumentedLines()) FlagsOf(l, &uses);

  // The extraction itself must keep finding the commands it is for.
  std::set<std::string> seen;
  for (const Use& u : uses) seen.insert(u.command);
  for (const char* c : {"shefl-coordinator", "shefl-client", "shefl run",
                        "shefl report", "shefl certs", "shefl health",
                        "shefl config"}) {
    INFO("no flag of `" << c << "` found in README.md, docs/ or deploy/");
    CHECK(seen.count(c) == 1);
  }
  CHECK(uses.size() > 100);

  for (const Use& u : uses) {
    if (u.flag == "--help") continue;
    INFO(u.where << ": `" << u.command << " " << u.flag
                 << "`, but `" << u.command << " --help` does not list "
                 << u.flag);
    CHECK(Mentions(Help(u.command), u.flag));
  }
}

TEST_CASE("the extraction reads the forms the files use") {
  std::vector<Use> uses;
  const std::vector<std::string> yaml = {
      "    command:",
      "      - >-",
      "        set -- --listen 0.0.0.0:1 --metrics-listen 0.0.0.0:2;",
      "        exec shefl-coordinator --config c.yaml \"$@\"",
      "    test: [\"CMD\", \"shefl\", \"health\", \"c:1\", \"--tls-ca\",",
      "           \"/ca\"]",
      "    command: [shefl-client, --coordinator, \"c:1\", --tls-server-name,",
      "              shefl-coordinator, --token-file, /t]",
      "\"$BIN/shefl-client\" --clients 0-3 \\",
      "  --name d1 >log 2>&1 &   # shefl-client --not-a-flag-here",
  };
  for (const Line& l : LogicalLines(yaml, "x.yml")) FlagsOf(l, &uses);
  std::multiset<std::string> got;
  for (const Use& u : uses) got.insert(u.command + " " + u.flag);
  CHECK(got == std::multiset<std::string>{
                   "shefl-coordinator --listen",
                   "shefl-coordinator --metrics-listen",
                   "shefl-coordinator --config", "shefl health --tls-ca",
                   "shefl-client --coordinator",
                   "shefl-client --tls-server-name",
                   "shefl-client --token-file", "shefl-client --clients",
                   "shefl-client --name"});

  uses.clear();
  const std::string md =
      "Run `shefl run CONFIG --daemons 2` or\n`shefl-client\n--capacity N`.\n"
      "\n```sh\nbuild/bin/shefl report RUN --plots DIR \\\n    --markdown F"
      "   # shefl run --no\n```\n";
  for (const Line& l : MarkdownLines(md, "x.md")) FlagsOf(l, &uses);
  got.clear();
  for (const Use& u : uses) got.insert(u.command + " " + u.flag);
  CHECK(got == std::multiset<std::string>{
                   "shefl run --daemons", "shefl-client --capacity",
                   "shefl report --plots", "shefl report --markdown"});
}

TEST_CASE("every binary and shefl command and bench program answers --help") {
  const std::vector<std::vector<std::string>> commands = {
      {"shefl-coordinator"}, {"shefl-client"}, {"shefl"},
      {"shefl", "run"},      {"shefl", "report"}, {"shefl", "certs"},
      {"shefl", "health"},   {"shefl", "config"}, {"shefl", "ls"},
      {"shefl", "status"},   {"shefl", "stop"}};
  for (const auto& c : commands) {
    std::vector<std::string> argv = c;
    argv[0] = BinDir() + "/" + argv[0];
    for (const char* help : {"--help", "-h"}) {
      argv.push_back(help);
      auto r = RunProcess(argv, 60);
      INFO(c[0] << (c.size() > 1 ? " " + c[1] : "") << " " << help << ":\n"
                << r.output);
      CHECK(r.exit_code == 0);
      CHECK(r.output.find("usage:") != std::string::npos);
      argv.pop_back();
    }
  }
  // Scripts print their header comment or docstring, which holds the
  // usage line, and do nothing else (no build, no run, no install).
  const fs::path bench = fs::path(SHEFL_SOURCE_DIR) / "bench";
  int scripts = 0;
  for (const auto& e : fs::recursive_directory_iterator(bench)) {
    const std::string ext = e.path().extension().string();
    if (!e.is_regular_file() || (ext != ".sh" && ext != ".py")) continue;
    ++scripts;
    auto r = RunProcess({ext == ".sh" ? "/bin/bash" : "/usr/bin/python3",
                         e.path().string(), "--help"},
                        30);
    INFO(Rel(e.path()) << " --help:\n" << r.output);
    CHECK(r.exit_code == 0);
    CHECK(r.output.find(e.path().filename().string()) != std::string::npos);
  }
  CHECK(scripts >= 8);
  // The compiled bench programs, where this build has them.
  for (const char* b : {"codec_bench", "aggregate_bench", "topk_bench",
                        "topk_gpu_bench", "train_parallel_bench",
                        "stacked_train_bench"}) {
    const std::string path = BinDir() + "/" + b;
    if (!fs::exists(path)) continue;
    auto r = RunProcess({path, "--help"}, 60);
    INFO(b << " --help:\n" << r.output);
    CHECK(r.exit_code == 0);
  }
}

TEST_CASE("every shefl command takes --flag=value as --flag value") {
  shefl::testing::TempDir dir;
  auto certs = RunProcess({BinDir() + "/shefl", "certs", "--out=" + dir / "pki",
                           "--hosts=localhost", "--clients=1"},
                          60);
  INFO(certs.output);
  CHECK(certs.exit_code == 0);
  CHECK(fs::exists(dir / "pki/ca.pem"));
  auto health = RunProcess({BinDir() + "/shefl", "health", "127.0.0.1:1",
                            "--insecure", "--timeout-s=0.5"},
                           30);
  INFO(health.output);
  CHECK(health.exit_code == 1);  // no answer: not a usage error
  auto report = RunProcess({BinDir() + "/shefl", "report", dir.path(),
                            "--markdown=" + dir / "t.md"},
                           30);
  INFO(report.output);
  CHECK(report.output.find("unknown flag") == std::string::npos);
  auto config = RunProcess(
      {BinDir() + "/shefl", "config",
       std::string(SHEFL_SOURCE_DIR) + "/configs/quick.yaml", "--set=rounds=4"},
      30);
  CHECK(config.exit_code == 0);
  CHECK(config.output.find("rounds: 4\n") != std::string::npos);
  for (const char* bin : {"shefl-coordinator", "shefl-client"}) {
    auto r = RunProcess({BinDir() + "/" + bin, "--metrics-listen=x", "--help"}, 30);
    INFO(bin << ": " << r.output);
    CHECK(r.exit_code == 0);
  }
}
