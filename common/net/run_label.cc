#include "common/net/run_label.h"

#include <prometheus/metric_family.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace shefl {

std::string RunIdOfFolder(const std::string& folder) {
  if (folder.empty()) return "";
  // "." and ".." name a folder too: take the absolute path's last part.
  std::filesystem::path p =
      std::filesystem::absolute(folder).lexically_normal();
  // "a/b/" normalises to "a/b/", whose filename is empty.
  if (p.filename().empty()) p = p.parent_path();
  std::string id = p.filename().string();
  for (char& c : id)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' ||
          c == '-'))
      c = '_';
  return id;
}

void AddRunLabel(const std::string& id,
                 std::vector<prometheus::MetricFamily>* families) {
  if (id.empty()) return;
  for (auto& family : *families)
    for (auto& metric : family.metric) {
      auto& labels = metric.label;
      labels.erase(std::remove_if(labels.begin(), labels.end(),
                                  [](const auto& l) { return l.name == kRunLabel; }),
                   labels.end());
      labels.insert(labels.begin(), {kRunLabel, id});
    }
}

std::string WithoutRunLabel(const std::string& series) {
  const std::string mark = std::string("{") + kRunLabel + "=\"";
  const size_t at = series.find(mark);
  if (at == std::string::npos) return series;
  // The id needs no escaping (RunIdOfFolder), so its end is the next quote.
  const size_t close = series.find('"', at + mark.size());
  if (close == std::string::npos) return series;
  size_t next = close + 1;
  if (next < series.size() && series[next] == ',')
    return series.substr(0, at + 1) + series.substr(next + 1);
  if (next < series.size() && series[next] == '}')
    return series.substr(0, at) + series.substr(next + 1);
  return series;
}

}  // namespace shefl
