// Serves a prometheus-cpp registry at http://HOST:PORT/metrics
// (--metrics-listen on both binaries), and any text endpoint a binary adds
// with SetHandler (a daemon's /healthz). Every series carries the run's
// id as its `run` label once SetRunId knows it.
//
// Not prometheus-cpp's civetweb Exposer: Debian's civetweb starts its
// threads with a fixed 100 KB stack, and the static TLS that LibTorch's
// libraries bring (OpenBLAS alone 60 KB) makes pthread_create fail in any
// process that links torch. This is a small HTTP/1.0 server of our own on
// one std::thread (default stack), with prometheus-cpp's registry and text
// format.
//
// One poll() loop multiplexes non-blocking connections, so a slow or idle
// peer never delays another's scrape. Every peer is bounded (see
// metrics_server.cc for why each bound is what it is):
//   - 5 s from accept to the end of its request head, 8 KiB of head at
//     most (over that: 431), and 5 s to take the reply; then it is closed;
//   - 64 connections open at most; a new one closes the oldest still
//     sending its head, so a scraper gets in past a crowd of idle peers.
// Replies are HTTP/1.0 with Connection: close: 200 with the body, 404 for
// a path nobody serves, 405 for a method other than GET, 400 for a request
// line that does not parse, 503 when a handler fails.
// Thread-safe: handlers may be set while Serve runs (mu_).
#ifndef SHEFL_COMMON_NET_METRICS_SERVER_H_
#define SHEFL_COMMON_NET_METRICS_SERVER_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "common/core/mutex.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace shefl {

class MetricsServer {
 public:
  // Makes the body of a GET reply. A lambda returning std::string fits; an
  // error status is answered 503 with its message (a failing health check).
  // It runs on the server's thread, so it must be quick and must not throw;
  // it may call SetHandler.
  using Body = std::function<absl::StatusOr<std::string>()>;

  // Listens on `listen` ("127.0.0.1:9100"; port 0 picks a free one) and
  // serves `registry` at /metrics in the prometheus text format. An empty
  // `listen` serves nothing and returns nullptr. A port in use or a bad
  // address is an error naming the address.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(
      const std::string& listen,
      std::shared_ptr<prometheus::Registry> registry);
  // Stops serving and closes every connection; returns promptly (well
  // under a second) whatever the peers do, as long as no Body blocks.
  ~MetricsServer();

  // Serves `body` as text/plain at `path` ("/healthz", matched exactly,
  // query string ignored), replacing what was there (/metrics included);
  // an empty `body` removes the path. Safe to call while serving.
  void SetHandler(const std::string& path, Body body);

  // Every series of /metrics carries run="id" from now on (run_label.h);
  // an empty id takes the label off. A daemon sets it when it registers.
  void SetRunId(const std::string& id);

  int port() const { return port_; }

 private:
  struct Handler {
    std::string content_type;
    Body body;
  };

  MetricsServer() = default;
  void Serve();
  // The whole reply to a complete request head.
  std::string Reply(const std::string& head);

  int listen_fd_ = -1;
  int wake_fd_ = -1;  // an eventfd: the destructor's signal to Serve()
  int port_ = 0;
  Mutex mu_;
  std::map<std::string, Handler> handlers_ ABSL_GUARDED_BY(mu_);
  std::string run_id_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace shefl

#endif  // SHEFL_COMMON_NET_METRICS_SERVER_H_
