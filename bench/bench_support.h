// What the hand-written bench programs share: their command lines, the
// median of their sittings and the clocks they time with. (The Google
// Benchmark programs take their flags from benchmark::Initialize.)
//
// A command line is "--name=value" flags, bare "--name" switches and
// positional arguments:
//   --help or -h anywhere: the usage on stdout, exit 0;
//   a flag the bench does not take: "unknown argument X" and the usage on
//   stderr, exit 2; a value its flag refuses: "bad argument X", exit 2.
//
//   bench::BenchArgs args = bench::ParseBenchArgs(argc, argv, kUsage,
//       {{"--reps", bench::IntFlag(&o.reps, 1)}});
//   if (args.exit_code >= 0) return args.exit_code;
//   const int64_t steps = args.IntArg(0, 60);  // first positional
//
// Header-only (bench/CMakeLists.txt builds each *_bench.cc alone).
// Thread-compatible; the clocks are thread-safe.
#ifndef SHEFL_BENCH_BENCH_SUPPORT_H_
#define SHEFL_BENCH_BENCH_SUPPORT_H_

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"

namespace shefl::bench {

// Sets one flag from its value ("5" of --reps=5; null for a bare --cpu);
// false refuses it.
using BenchFlag = std::function<bool(const char* value)>;
// Keyed by the flag's name with its dashes: "--reps".
using BenchFlags = std::map<std::string, BenchFlag>;

struct BenchArgs {
  // >= 0: main returns it at once (0 after --help, 2 after a bad argument).
  int exit_code = -1;
  std::vector<std::string> positional;

  // positional[i], or `fallback` where fewer were given.
  std::string Arg(size_t i, const std::string& fallback) const {
    return i < positional.size() ? positional[i] : fallback;
  }
  // positional[i] read as std::atoll reads it (as the benches always have:
  // not a number reads 0), or `fallback`.
  int64_t IntArg(size_t i, int64_t fallback) const {
    return i < positional.size() ? std::atoll(positional[i].c_str()) : fallback;
  }
};

namespace bench_internal {

inline int Refuse(const char* what, const char* arg, const char* usage) {
  std::fprintf(stderr, "%s argument %s\n\n%s", what, arg, usage);
  return 2;
}

// Sets the flag `a` names; 2 (printed) when none does or it refuses.
inline int SetFlag(const std::string& a, const BenchFlags& flags,
                   const char* usage) {
  const size_t eq = a.find('=');
  auto it = flags.find(a.substr(0, eq));
  if (it == flags.end()) return Refuse("unknown", a.c_str(), usage);
  const char* value = eq == std::string::npos ? nullptr : a.c_str() + eq + 1;
  return it->second(value) ? -1 : Refuse("bad", a.c_str(), usage);
}

}  // namespace bench_internal

// Reads argv as the header says; positional arguments past
// `max_positional` are refused as unknown.
inline BenchArgs ParseBenchArgs(int argc, char** argv, const char* usage,
                                const BenchFlags& flags = {},
                                size_t max_positional = SIZE_MAX) {
  BenchArgs out;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf("%s", usage);
      out.exit_code = 0;
      return out;
    }
  }
  for (int i = 1; i < argc && out.exit_code < 0; ++i) {
    const std::string a = argv[i];
    if (a.rfind("-", 0) == 0)
      out.exit_code = bench_internal::SetFlag(a, flags, usage);
    else if (out.positional.size() >= max_positional)
      out.exit_code = bench_internal::Refuse("unknown", argv[i], usage);
    else
      out.positional.push_back(a);
  }
  return out;
}

// --name=N, N an integer of at least `min` (whose type follows `out`'s:
// common_type_t keeps it out of the deduction, so a literal 1 fits).
template <typename Int>
BenchFlag IntFlag(Int* out, std::common_type_t<Int> min) {
  return [out, min](const char* v) {
    return v != nullptr && absl::SimpleAtoi(v, out) && *out >= min;
  };
}

// --name=TEXT, any text.
inline BenchFlag TextFlag(std::string* out) {
  return [out](const char* v) {
    if (v != nullptr) *out = v;
    return v != nullptr;
  };
}

// --name=TEXT, one of `allowed`.
inline BenchFlag OneOfFlag(std::string* out, std::vector<std::string> allowed) {
  return [out, allowed = std::move(allowed)](const char* v) {
    if (v == nullptr ||
        std::find(allowed.begin(), allowed.end(), v) == allowed.end())
      return false;
    *out = v;
    return true;
  };
}

// --name=0 or --name=1.
inline BenchFlag BoolFlag(bool* out) {
  return [out](const char* v) {
    const std::string s = v != nullptr ? v : "";
    if (s != "0" && s != "1") return false;
    *out = s == "1";
    return true;
  };
}

// The middle value of `v` (non-empty); for an even count the mean of the
// two middle ones.
inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// CPU time of the calling thread: on a shared machine the figure that
// other processes do not inflate.
inline double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) +
         1e-9 * static_cast<double>(ts.tv_nsec);
}
inline double ThreadCpuMs() { return 1e3 * ThreadCpuSeconds(); }

// Monotonic wall time (a GPU's work, or a whole process's).
inline double WallSeconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
inline double WallMs() { return 1e3 * WallSeconds(); }

}  // namespace shefl::bench

#endif  // SHEFL_BENCH_BENCH_SUPPORT_H_
