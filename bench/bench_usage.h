// --help for the bench programs that take positional arguments only: the
// usage on --help/-h (exit 0), a refusal naming any other flag (exit 2).
#ifndef SHEFL_BENCH_BENCH_USAGE_H_
#define SHEFL_BENCH_BENCH_USAGE_H_

#include <cstdio>
#include <string>

namespace shefl {

// The exit code when argv asks for help or holds a flag; -1 to go on.
inline int HelpOrBadFlag(int argc, char** argv, const char* usage) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf("%s", usage);
      return 0;
    }
    if (a.rfind("-", 0) == 0) {
      std::fprintf(stderr, "unknown argument %s\n\n%s", argv[i], usage);
      return 2;
    }
  }
  return -1;
}

}  // namespace shefl

#endif  // SHEFL_BENCH_BENCH_USAGE_H_
