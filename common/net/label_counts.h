// A client's label histogram (HASA, 003 section IV-A): what a client sends
// instead of samples, and the exact bytes it adds to the message that
// carries it (every byte is booked, per client: docs/DESIGN.md,
// "Wire format and byte accounting").
#ifndef SHEFL_COMMON_NET_LABEL_COUNTS_H_
#define SHEFL_COMMON_NET_LABEL_COUNTS_H_

#include <cstdint>
#include <vector>

#include "shefl.pb.h"

namespace shefl {

// counts[c] = how many of `indices` have label c (labels[i] in
// [0, num_classes); others are skipped).
std::vector<uint64_t> LabelHistogram(const std::vector<int64_t>& labels,
                                     const std::vector<int64_t>& indices,
                                     int64_t num_classes);

// The bytes `client.label_counts` adds to a message that carries `client`
// as an embedded field (TaskFeedRequest.clients): the packed field itself
// and the growth of the LogicalClient's length prefix. Summed over the
// clients, it is exactly what the histograms add to the message's
// WireSize; both ends book it under the client, the rest of the message
// under the daemon.
uint64_t LabelCountBytes(const v1::LogicalClient& client);

}  // namespace shefl

#endif  // SHEFL_COMMON_NET_LABEL_COUNTS_H_
