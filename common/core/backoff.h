// Reconnect backoff with jitter: the base delay starts at `initial`,
// doubles after every failed attempt up to `max`, and each delay is the
// base times a factor drawn uniformly from [0.5, 1.5), so daemons that lost
// the same coordinator do not all knock again at the same instant. Reset()
// after a session that ran starts over. The generator is seeded: the
// daemon seeds it from std::random_device, a test with a constant.
// Not thread-safe: one per reconnect loop.
#ifndef SHEFL_COMMON_CORE_BACKOFF_H_
#define SHEFL_COMMON_CORE_BACKOFF_H_

#include <cstdint>
#include <random>

namespace shefl {

class Backoff {
 public:
  Backoff(double initial_s, double max_s, uint64_t seed);

  // The delay before the next attempt, in seconds; doubles the base.
  double NextDelay();
  void Reset() { base_ = initial_; }
  // The base the next NextDelay() will jitter.
  double base() const { return base_; }

 private:
  const double initial_, max_;
  double base_;
  std::mt19937_64 rng_;
};

}  // namespace shefl

#endif  // SHEFL_COMMON_CORE_BACKOFF_H_
