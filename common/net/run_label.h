// The `run` label that every series of a coordinator's and a daemon's
// /metrics carries: the run's id (its results folder's name), so that
// Prometheus keeps consecutive runs on one host apart and a dashboard can
// pick one. One endpoint serves one run at a time, so readers of a single
// endpoint (shefl status, shefl run's live line) drop the label again.
#ifndef SHEFL_COMMON_NET_RUN_LABEL_H_
#define SHEFL_COMMON_NET_RUN_LABEL_H_

#include <string>
#include <vector>

namespace prometheus {
struct MetricFamily;
}  // namespace prometheus

namespace shefl {

// The label's name: a contract (docs/MONITORING.md, the dashboard's $run).
inline constexpr char kRunLabel[] = "run";

// The run id of a results folder: its last path component ("results/
// quick-20261127-081930/" gives "quick-20261127-081930"), with any
// character outside [A-Za-z0-9._-] made '_' so it needs no escaping in
// the text format or PromQL. Empty for an empty path.
std::string RunIdOfFolder(const std::string& folder);

// Puts run="id" first among each series' labels (replacing one already
// there). An empty id leaves the families as they are.
void AddRunLabel(const std::string& id,
                 std::vector<prometheus::MetricFamily>* families);

// A series key of the text format without its run label:
// `name{run="x",a="b"}` gives `name{a="b"}`, `name{run="x"}` gives `name`.
std::string WithoutRunLabel(const std::string& series);

}  // namespace shefl

#endif  // SHEFL_COMMON_NET_RUN_LABEL_H_
