#include "common/metrics_server.h"

#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include <exception>

#include "absl/strings/str_cat.h"

namespace shefl {

absl::StatusOr<std::unique_ptr<prometheus::Exposer>> StartMetricsServer(
    const std::string& listen,
    const std::shared_ptr<prometheus::Registry>& registry) {
  if (listen.empty()) return std::unique_ptr<prometheus::Exposer>();
  if (listen.find(':') == std::string::npos)
    return absl::InvalidArgumentError(absl::StrCat(
        "--metrics-listen '", listen, "': expected HOST:PORT"));
  try {
    auto exposer = std::make_unique<prometheus::Exposer>(listen, 1);
    exposer->RegisterCollectable(registry);
    return exposer;
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat(
        "--metrics-listen ", listen, ": cannot serve metrics: ", e.what()));
  }
}

}  // namespace shefl
