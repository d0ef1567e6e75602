// Serves a prometheus-cpp registry at http://HOST:PORT/metrics
// (--metrics-listen on both binaries).
//
// Not prometheus-cpp's civetweb Exposer: Debian's civetweb starts its
// threads with a fixed 100 KB stack, and the static TLS that LibTorch's
// libraries bring (OpenBLAS alone 60 KB) makes pthread_create fail in any
// process that links torch. This is a small HTTP/1.0 server on one
// thread of our own, with prometheus-cpp's registry and text format.
#ifndef SHEFL_COMMON_METRICS_SERVER_H_
#define SHEFL_COMMON_METRICS_SERVER_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace shefl {

class MetricsServer {
 public:
  // Listens on `listen` ("127.0.0.1:9100"; port 0 picks a free one). An
  // empty `listen` serves nothing and returns nullptr. A port in use or a
  // bad address is an error naming the address.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(
      const std::string& listen,
      std::shared_ptr<prometheus::Registry> registry);
  ~MetricsServer();

  int port() const { return port_; }

 private:
  MetricsServer() = default;
  void Serve();
  void Answer(int conn);

  std::shared_ptr<prometheus::Registry> registry_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace shefl

#endif  // SHEFL_COMMON_METRICS_SERVER_H_
