#include "common/core/flags.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <optional>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/core/version.h"

namespace shefl {

std::function<absl::Status(const std::string&)> SetString(std::string* out) {
  return [out](const std::string& v) {
    *out = v;
    return absl::OkStatus();
  };
}

std::function<absl::Status(const std::string&)> AppendString(
    std::vector<std::string>* out) {
  return [out](const std::string& v) {
    out->push_back(v);
    return absl::OkStatus();
  };
}

std::function<absl::Status(const std::string&)> SetInt(const std::string& flag,
                                                       int* out) {
  return [flag, out](const std::string& v) {
    if (!absl::SimpleAtoi(v, out))
      return absl::InvalidArgumentError(
          absl::StrCat(flag, " '", v, "': expected a whole number"));
    return absl::OkStatus();
  };
}

std::function<absl::Status(const std::string&)> SetSeconds(
    const std::string& flag, double* out) {
  return [flag, out](const std::string& v) {
    double s = 0;
    if (!absl::SimpleAtod(v, &s) || !(s >= 0) || s > 86400)
      return absl::InvalidArgumentError(absl::StrCat(
          flag, " '", v, "': expected seconds between 0 and 86400"));
    *out = s;
    return absl::OkStatus();
  };
}

namespace {
constexpr char kCannotStartPayload[] = "shefl/cannot-start";
}  // namespace

absl::Status CannotStart(absl::Status st) {
  if (!st.ok()) st.SetPayload(kCannotStartPayload, absl::Cord("1"));
  return st;
}

int RunMain(int argc, char** argv, const std::string& program,
            const std::string& usage, const FlagSetters& setters,
            const std::function<absl::Status()>& run, void (*stop)(int),
            const FlagSwitches& switches) {
  auto fail = [&](const std::string& error, int code) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), error.c_str());
    if (code == 2) std::fputs(usage.c_str(), stderr);
    return code;
  };
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(usage.c_str(), stdout);
      return 0;
    }
    if (flag == "--version") {
      std::fputs(VersionLine(program).c_str(), stdout);
      return 0;
    }
    // "--flag=value" as well as "--flag value", as `shefl run` takes them.
    std::optional<std::string> inline_value;
    if (const size_t eq = flag.find('=');
        flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      inline_value = flag.substr(eq + 1);
      flag.resize(eq);
    }
    if (auto sw = switches.find(flag); sw != switches.end()) {
      if (inline_value) return fail(flag + " takes no value", 2);
      *sw->second = true;
      continue;
    }
    auto it = setters.find(flag);
    if (it == setters.end()) return fail("unknown flag " + flag, 2);
    if (!inline_value && i + 1 >= argc) return fail(flag + " needs a value", 2);
    if (auto st = it->second(inline_value ? *inline_value : argv[++i]); !st.ok())
      return fail(std::string(st.message()), 2);
  }
  std::signal(SIGTERM, stop);
  std::signal(SIGINT, stop);
  if (absl::Status st = run(); !st.ok())
    return fail(std::string(st.message()),
                st.GetPayload(kCannotStartPayload) ? kExitCannotStart : 1);
  return 0;
}

absl::StatusOr<std::vector<int64_t>> ParseIdRanges(const std::string& flag,
                                                   const std::string& spec) {
  std::vector<int64_t> ids;
  for (absl::string_view part : absl::StrSplit(spec, ',')) {
    std::vector<absl::string_view> step_split = absl::StrSplit(part, '/');
    std::vector<absl::string_view> ends = absl::StrSplit(step_split[0], '-');
    int64_t lo = 0, hi = 0, step = 1;
    if (step_split.size() > 2 || ends.size() > 2 ||
        !absl::SimpleAtoi(ends[0], &lo) || !absl::SimpleAtoi(ends.back(), &hi) ||
        lo < 0 || hi < lo ||
        (step_split.size() == 2 &&
         (ends.size() != 2 || !absl::SimpleAtoi(step_split[1], &step) ||
          step < 1)))
      return absl::InvalidArgumentError(absl::StrCat(
          flag, " '", spec,
          "': expected ranges like 0-24, 0-4,10-14 or 0-90/10 (every 10th)"));
    for (int64_t i = lo; i <= hi; i += step) ids.push_back(i);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace shefl
