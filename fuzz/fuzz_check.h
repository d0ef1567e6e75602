// The one assertion the fuzz targets use: a broken invariant is a crash,
// which libFuzzer reports and saves like a sanitizer's finding. Unlike
// assert() it stays on in every build type.
#ifndef SHEFL_FUZZ_FUZZ_CHECK_H_
#define SHEFL_FUZZ_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond)                                               \
  do {                                                                 \
    if (!(cond)) {                                                     \
      std::fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, \
                   __LINE__, #cond);                                   \
      std::abort();                                                    \
    }                                                                  \
  } while (0)

#endif  // SHEFL_FUZZ_FUZZ_CHECK_H_
