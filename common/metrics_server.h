// Serves a prometheus-cpp registry on http://HOST:PORT/metrics
// (--metrics-listen on both binaries).
#ifndef SHEFL_COMMON_METRICS_SERVER_H_
#define SHEFL_COMMON_METRICS_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace prometheus {
class Exposer;
class Registry;
}  // namespace prometheus

namespace shefl {

// Starts serving `registry` at `listen` ("127.0.0.1:9100"). An empty
// `listen` serves nothing and returns nullptr. A port in use or a bad
// address is an error naming the address.
absl::StatusOr<std::unique_ptr<prometheus::Exposer>> StartMetricsServer(
    const std::string& listen,
    const std::shared_ptr<prometheus::Registry>& registry);

}  // namespace shefl

#endif  // SHEFL_COMMON_METRICS_SERVER_H_
