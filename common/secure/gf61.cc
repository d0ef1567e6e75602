#include "common/secure/gf61.h"

namespace shefl {

uint64_t Gf61Pow(uint64_t a, uint64_t e) {
  uint64_t result = 1;
  while (e > 0) {
    if (e & 1) result = Gf61Mul(result, a);
    a = Gf61Mul(a, a);
    e >>= 1;
  }
  return result;
}

uint64_t Gf61Inverse(uint64_t a) { return Gf61Pow(a, kGf61Prime - 2); }

}  // namespace shefl
