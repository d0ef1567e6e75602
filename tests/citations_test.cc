// The repository stands alone (docs/DESIGN.md, "Conventions"): every path a
// comment or a document cites is a file or folder of the tree, a quoted
// section after a cited document (or after README, the root README.md) is
// one of its headings, and nothing cites
// a tracker number where a reason belongs. In C++ and proto sources only
// comments are read (includes are the compiler's to check, and string
// literals are data); everything else is read whole. Files that git ignores
// or that look generated or vendored are skipped, as are paths under an
// ignored folder (deploy/compose/pki is made at run time). A scratch tree
// with bad citations is shown to fail.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace fs = std::filesystem;

namespace {

struct Finding {
  std::string file;  // relative to the root
  int line = 0;
  std::string what;
  std::string Show() const { return absl::StrCat(file, ":", line, ": ", what); }
};

// The top-level folders a path-like citation starts with.
const std::set<std::string>& TopFolders() {
  static const std::set<std::string> kTop = {
      "bench", "cli",    "client", "cmake",   "common",  "configs",
      "cuda",  "deploy", "docker", "docs",    "fuzz",    "proto",
      "python", "scripts", "server", "shared", "tests"};
  return kTop;
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The files of the tree, relative: what git tracks when `root` is a git
// checkout, else a walk that skips build folders, results and hidden ones.
std::vector<std::string> ListFiles(const fs::path& root) {
  std::vector<std::string> out;
  if (fs::exists(root / ".git")) {
    const std::string cmd = "git -C '" + root.string() + "' ls-files";
    FILE* p = ::popen(cmd.c_str(), "r");
    REQUIRE(p != nullptr);
    std::string text;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) text.append(buf, n);
    REQUIRE(::pclose(p) == 0);
    for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty()))
      out.emplace_back(line);
    return out;
  }
  for (auto it = fs::recursive_directory_iterator(root);
       it != fs::recursive_directory_iterator(); ++it) {
    const std::string name = it->path().filename().string();
    if (it->is_directory() &&
        (name[0] == '.' || absl::StartsWith(name, "build") ||
         name == "results" || name == "__pycache__")) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file())
      out.push_back(fs::relative(it->path(), root).string());
  }
  return out;
}

// The plain (non-glob) entries of the root .gitignore: made at run time.
std::vector<std::string> IgnoredPaths(const fs::path& root) {
  std::vector<std::string> out;
  std::istringstream in(Slurp(root / ".gitignore"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line.find_first_of("*?[!#") != std::string::npos)
      continue;
    while (!line.empty() && line.front() == '/') line.erase(0, 1);
    while (!line.empty() && line.back() == '/') line.pop_back();
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

bool IsScanned(const std::string& rel) {
  for (const char* part : {"fuzz/corpus/", "tests/data/", "third_party/",
                           "vendor/", "_pb2", ".pb."})
    if (absl::StrContains(rel, part)) return false;
  const std::string name = fs::path(rel).filename().string();
  for (const char* ext : {".cc", ".h", ".cu", ".cuh", ".py", ".md", ".proto",
                          ".sh", ".yaml", ".yml", ".txt", ".cmake", ".service",
                          ".list", ".example"})
    if (absl::EndsWith(name, ext)) return true;
  return absl::StartsWith(name, "Dockerfile") || rel == ".ci/run";
}

bool IsCxx(const std::string& rel) {
  for (const char* ext : {".cc", ".h", ".cu", ".cuh", ".proto"})
    if (absl::EndsWith(rel, ext)) return true;
  return false;
}

// Line by line, the text of a C++ source's comments (line and block),
// skipping string, character and raw-string literals.
std::vector<std::string> CommentText(const std::vector<std::string>& lines) {
  std::vector<std::string> out;
  bool in_block = false;
  std::string raw_end;  // ")delim\"" while inside a raw string
  for (const std::string& line : lines) {
    std::string text;
    size_t i = 0;
    while (i < line.size()) {
      if (!raw_end.empty()) {
        const size_t j = line.find(raw_end, i);
        if (j == std::string::npos) break;
        i = j + raw_end.size();
        raw_end.clear();
      } else if (in_block) {
        const size_t j = line.find("*/", i);
        text += line.substr(i, j == std::string::npos ? j : j - i);
        if (j == std::string::npos) break;
        i = j + 2;
        in_block = false;
      } else if (line.compare(i, 2, "//") == 0) {
        text += line.substr(i + 2);
        break;
      } else if (line.compare(i, 2, "/*") == 0) {
        in_block = true;
        i += 2;
      } else if (line.compare(i, 2, "R\"") == 0 &&
                 (i == 0 || !(std::isalnum(static_cast<unsigned char>(line[i - 1])) ||
                              line[i - 1] == '_'))) {
        const size_t open = line.find('(', i + 2);
        if (open == std::string::npos) break;
        raw_end = ")" + line.substr(i + 2, open - i - 2) + "\"";
        i = open + 1;
      } else if (line[i] == '"' || line[i] == '\'') {
        const char quote = line[i];
        size_t j = i + 1;
        while (j < line.size() && line[j] != quote) j += line[j] == '\\' ? 2 : 1;
        i = j + 1;
      } else {
        ++i;
      }
    }
    out.push_back(text);
  }
  return out;
}

bool IsPathChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' ||
         c == '+' || c == '/' || c == '-';
}

// Whether the markdown file `doc` has a heading that starts with
// `section`, with or without its "N. " numbering.
bool HasHeading(const fs::path& doc, const std::string& section) {
  static const std::regex kHeading(R"(^#+\s+(([0-9]+[a-z]?\.\s+)?(.*))$)");
  std::istringstream in(Slurp(doc));
  std::string line;
  std::smatch m;
  while (std::getline(in, line))
    if (std::regex_match(line, m, kHeading) &&
        (absl::StartsWith(m[1].str(), section) ||
         absl::StartsWith(m[3].str(), section)))
      return true;
  return false;
}

class Checker {
 public:
  explicit Checker(fs::path root)
      : root_(std::move(root)), files_(ListFiles(root_)),
        ignored_(IgnoredPaths(root_)) {}

  std::vector<Finding> Run() {
    for (const std::string& rel : files_) {
      if (!IsScanned(rel) || !fs::is_regular_file(root_ / rel)) continue;
      std::vector<std::string> lines =
          absl::StrSplit(Slurp(root_ / rel), '\n');
      if (IsCxx(rel)) lines = CommentText(lines);
      for (size_t n = 0; n < lines.size(); ++n) CheckLine(rel, n + 1, lines[n]);
    }
    return findings_;
  }

 private:
  void Add(const std::string& rel, int line, std::string what) {
    findings_.push_back({rel, line, std::move(what)});
  }

  bool Exists(const std::string& rel) const { return fs::exists(root_ / rel); }

  bool UnderIgnored(const std::string& path) const {
    for (const std::string& g : ignored_)
      if (path == g || absl::StartsWith(path, g + "/")) return true;
    return false;
  }

  // A tracked file named `stem`.<ext> (bench/train_parallel_bench names
  // bench/train_parallel_bench.cc's program).
  bool IsStem(const std::string& stem) const {
    for (const std::string& f : files_)
      if (absl::StartsWith(f, stem + ".")) return true;
    return false;
  }

  void CheckLine(const std::string& rel, int n, const std::string& line) {
    static const std::regex kIssue(
        R"(\b[Ii]ssues?\s+#?[0-9]+|#[0-9]+\s+[Ii]ssue)");
    if (absl::StrContains(line, "ssue")) {
      for (auto it = std::sregex_iterator(line.begin(), line.end(), kIssue);
           it != std::sregex_iterator(); ++it)
        Add(rel, n, "a tracker number instead of a reason: '" + it->str() + "'");
    }
    size_t i = 0;
    while (i < line.size()) {
      if (!IsPathChar(line[i])) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < line.size() && IsPathChar(line[j])) ++j;
      std::string token = line.substr(i, j - i);
      while (!token.empty() && (token.back() == '.' || token.back() == '-'))
        token.pop_back();
      const char next = j < line.size() ? line[j] : '\0';
      const bool pattern = next != '\0' && absl::StrContains("*<{$[", next);
      if (!pattern && !token.empty()) CheckToken(rel, n, token, line.substr(j));
      i = j;
    }
  }

  void CheckToken(const std::string& rel, int n, const std::string& token,
                  const std::string& after) {
    static const std::regex kFile(R"(^[A-Za-z0-9_+-]+\.[A-Za-z0-9]+$)");
    static const std::regex kStem(R"(^[a-z0-9_-]+$)");
    static const std::regex kBareDoc(R"(^[A-Z][A-Z0-9_-]*\.md$)");
    if (token[0] == '/' || token[0] == '.') return;  // absolute or relative
    const size_t slash = token.find('/');
    std::string target;
    if (slash != std::string::npos && TopFolders().count(token.substr(0, slash))) {
      const std::string last = token.substr(token.rfind('/') + 1);
      if (Exists(token) || UnderIgnored(token)) {
        target = token;
      } else if (token.back() == '/' || std::regex_match(last, kFile) ||
                 (std::regex_match(last, kStem) && !IsStem(token))) {
        Add(rel, n, "cites a path the tree lacks: " + token);
        return;
      } else {
        return;
      }
    } else if (slash == std::string::npos && std::regex_match(token, kBareDoc)) {
      const std::string dir = fs::path(rel).parent_path().string();
      for (const std::string& base : {dir, std::string("docs"), std::string()}) {
        const std::string p = base.empty() ? token : base + "/" + token;
        if (Exists(p)) {
          target = p;
          break;
        }
      }
      if (target.empty()) {
        Add(rel, n, "cites a document the tree lacks: " + token);
        return;
      }
    } else if (token == "README" && Exists("README.md")) {
      // README followed by a quoted section: a heading of the root README.
      target = "README.md";
    } else {
      return;
    }
    CheckSection(rel, n, target, after);
  }

  // `docs/<doc>.md, "Section"` or `docs/<doc>.md ("Section")`: a heading
  // of that document.
  void CheckSection(const std::string& rel, int n, const std::string& target,
                    const std::string& after) {
    static const std::regex kQuoted(R"re(^,?\s*\(?"([^"]+)")re");
    static const std::regex kNumbered(R"(^,?\s*\(?section\s+([0-9]+)\b)");
    std::smatch m;
    if (!absl::EndsWith(target, ".md")) return;
    if (std::regex_search(after, m, kQuoted) &&
        !HasHeading(root_ / target, m[1].str()))
      Add(rel, n, absl::StrCat("cites a section ", target, " lacks: \"",
                               m[1].str(), "\""));
    // A section cited by its number ("section 7") that the document lacks.
    if (std::regex_search(after, m, kNumbered) &&
        !HasHeading(root_ / target, m[1].str() + ". "))
      Add(rel, n, absl::StrCat("cites a section number ", target, " lacks: ",
                               m[1].str()));
  }

  fs::path root_;
  std::vector<std::string> files_;
  std::vector<std::string> ignored_;
  std::vector<Finding> findings_;
};

std::string Report(const std::vector<Finding>& findings) {
  std::string out;
  for (const Finding& f : findings) absl::StrAppend(&out, f.Show(), "\n");
  return out;
}

TEST_CASE("every citation in the tree points inside the tree") {
  const std::vector<Finding> findings = Checker(SHEFL_SOURCE_DIR).Run();
  INFO(Report(findings));
  CHECK(findings.empty());
}

TEST_CASE("a scratch tree with bad citations fails, naming file and line") {
  shefl::testing::TempDir dir;
  const fs::path root = dir.path();
  fs::create_directories(root / "docs");
  fs::create_directories(root / "common/sparse");
  fs::create_directories(root / "build/x");
  shefl::testing::WriteFile(root / ".gitignore", "/build*/\ndeploy/pki/\n");
  shefl::testing::WriteFile(root / "docs/GUIDE.md",
                            "# Guide\n\n## Wire format\n\nSee common/sparse/codec.h.\n");
  shefl::testing::WriteFile(
      root / "docs/OTHER.md",
      std::string("Good: docs/GUIDE.md, \"Wire format\"; GUIDE.md; common/;\n") +
          "deploy/pki/ca.pem is made at run time; configs/*.yaml is a glob.\n" +
          "Bad: docs/GUIDE.md, \"No such section\".\n" +
          "Bad: common/codec.h and BRIEF.md.\n" +
          "Bad: fixed in iss" + "ue 12.\n" +
          "Bad: docs/GUIDE.md section 3. Good: docs/NUM.md, section 2.\n" +
          "Good: README \"Start\", README.md (\"Start\"). Bad: README \"Containers (podman)\".\n");
  shefl::testing::WriteFile(root / "README.md", "# Tool\n\n## Start here\n");
  shefl::testing::WriteFile(root / "docs/NUM.md", "# Num\n\n## 2. Two\n");
  shefl::testing::WriteFile(
      root / "common/sparse/codec.h",
      std::string("// The bytes (docs/GUIDE.md).\n") +
          "const char* kPath = \"server/none.cc\";  // data, not a citation\n" +
          "/* A block comment citing\n   server/gone.cc */\n" +
          "// See #" + "4 iss" + "ue.\n");
  // Not part of the tree: a build folder's files are never read.
  shefl::testing::WriteFile(root / "build/x/y.md", "common/missing.h\n");

  std::vector<std::string> shown;
  for (const Finding& f : Checker(root).Run()) shown.push_back(f.Show());
  std::sort(shown.begin(), shown.end());
  INFO(absl::StrJoin(shown, "\n"));
  CHECK(shown == std::vector<std::string>{
      "common/sparse/codec.h:4: cites a path the tree lacks: server/gone.cc",
      std::string("common/sparse/codec.h:5: a tracker number instead of a "
                  "reason: '#4 iss") + "ue'",
      "docs/OTHER.md:3: cites a section docs/GUIDE.md lacks: \"No such section\"",
      "docs/OTHER.md:4: cites a document the tree lacks: BRIEF.md",
      "docs/OTHER.md:4: cites a path the tree lacks: common/codec.h",
      std::string("docs/OTHER.md:5: a tracker number instead of a reason: 'iss") +
          "ue 12'",
      "docs/OTHER.md:6: cites a section number docs/GUIDE.md lacks: 3",
      "docs/OTHER.md:7: cites a section README.md lacks: \"Containers (podman)\"",
  });
}

}  // namespace
