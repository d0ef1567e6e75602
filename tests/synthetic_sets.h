// Small learnable data sets for the training tests: class templates plus
// noise (images) and class centres plus noise (features), drawn from
// torch's global generator after seeding it, so a seed gives the same set.
#ifndef SHEFL_TESTS_SYNTHETIC_SETS_H_
#define SHEFL_TESTS_SYNTHETIC_SETS_H_

#include <ATen/Functions.h>

#include <cstdint>

#include "common/data/dataset.h"

namespace shefl {
namespace testing {

// n images of c x hw x hw in 10 classes.
inline Dataset Images(int64_t n, uint64_t seed, int64_t c = 1, int64_t hw = 28) {
  at::manual_seed(seed);
  at::Tensor templates = at::randn({10, c, hw, hw});
  at::Tensor y = at::randint(10, {n}, at::kLong);
  at::Tensor x = templates.index_select(0, y) + 0.5 * at::randn({n, c, hw, hw});
  return {"images", x, y, 10};
}

// n vectors of 20 features in 4 classes.
inline Dataset Features(int64_t n, uint64_t seed) {
  at::manual_seed(seed);
  at::Tensor centres = 2 * at::randn({4, 20});
  at::Tensor y = at::randint(4, {n}, at::kLong);
  at::Tensor x = centres.index_select(0, y) + at::randn({n, 20});
  return {"features", x, y, 4};
}

}  // namespace testing
}  // namespace shefl

#endif  // SHEFL_TESTS_SYNTHETIC_SETS_H_
