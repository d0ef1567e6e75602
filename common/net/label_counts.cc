#include "common/net/label_counts.h"

#include <google/protobuf/io/coded_stream.h>

#include <algorithm>

namespace shefl {

std::vector<uint64_t> LabelHistogram(const std::vector<int64_t>& labels,
                                     const std::vector<int64_t>& indices,
                                     int64_t num_classes) {
  std::vector<uint64_t> counts(static_cast<size_t>(std::max<int64_t>(num_classes, 0)), 0);
  for (int64_t i : indices) {
    if (i < 0 || i >= static_cast<int64_t>(labels.size())) continue;
    const int64_t y = labels[i];
    if (y >= 0 && y < num_classes) ++counts[y];
  }
  return counts;
}

uint64_t LabelCountBytes(const v1::LogicalClient& client) {
  if (client.label_counts_size() == 0) return 0;
  v1::LogicalClient without = client;
  without.clear_label_counts();
  auto embedded = [](size_t n) {
    return n + google::protobuf::io::CodedOutputStream::VarintSize64(n);
  };
  return embedded(client.ByteSizeLong()) - embedded(without.ByteSizeLong());
}

}  // namespace shefl
