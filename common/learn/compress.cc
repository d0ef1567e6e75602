#include "common/learn/compress.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/core/status_macros.h"
#include "common/learn/topk_backend.h"
#include "common/learn/torch_call.h"
#include "common/sparse/radix_topk.h"

namespace shefl {
namespace {

absl::Status CheckShape(const at::Tensor& x) {
  if (!x.defined()) return absl::InvalidArgumentError("delta is undefined");
  if (x.dim() != 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("delta must be 1-D, got %d-D", x.dim()));
  }
  if (x.scalar_type() != at::kFloat) {
    return absl::InvalidArgumentError(absl::StrCat(
        "delta must be fp32, got ", c10::toString(x.scalar_type())));
  }
  return absl::OkStatus();
}

absl::Status CheckDelta(const at::Tensor& x) {
  SHEFL_RETURN_IF_ERROR(CheckShape(x));
  const at::Tensor finite = at::isfinite(x);
  if (finite.all().item<bool>()) return absl::OkStatus();
  const int64_t i = at::logical_not(finite).nonzero()[0][0].item<int64_t>();
  const float v = x[i].item<float>();
  return absl::InvalidArgumentError(absl::StrFormat(
      "delta holds %s at index %d", std::isnan(v) ? "NaN" : "Inf", i));
}

// Ascending int64 indices of the k largest |x|, ties to the lower index,
// for 0 < k < d. Stays on x's device. nonzero lists positions in ascending
// order on every device, so the indices come out sorted without a sort.
at::Tensor TopKIndices(const at::Tensor& x, int64_t k) {
  const int64_t d = x.numel();
  const at::Tensor mag = x.abs();
  // The k-th largest magnitude is the (d-k+1)-th smallest.
  const at::Tensor t = std::get<0>(at::kthvalue(mag, d - k + 1));
  at::Tensor idx = (mag >= t).nonzero().squeeze(1);
  if (idx.numel() == k) return idx;  // no tie at t: the common case
  // Keep everything above t, then only the first `need` entries equal to t.
  const at::Tensor at_t = mag == t;
  const at::Tensor above = mag > t;
  const int64_t need = k - above.sum().item<int64_t>();  // 1 <= need
  const at::Tensor first_ties = at_t.logical_and(at_t.cumsum(0) <= need);
  return above.logical_or(first_ties).nonzero().squeeze(1);
}

// Copies the kept pairs (int64 indices and fp32 values, on any device)
// straight into the SparseDelta's vectors.
void CopyToHost(const at::Tensor& idx, const at::Tensor& vals, int64_t d,
                SparseDelta* out) {
  const int64_t k = idx.numel();
  out->indices.resize(k);
  out->values.resize(k);
  if (k == 0) return;
  at::from_blob(out->values.data(), {k}, at::kFloat).copy_(vals);
  if (d <= std::numeric_limits<int32_t>::max()) {
    // Narrow on the device: half the bytes over the bus; uint32 and int32
    // agree on non-negative values.
    at::from_blob(out->indices.data(), {k}, at::kInt).copy_(idx.to(at::kInt));
  } else {
    const at::Tensor host = idx.to(at::kCPU).contiguous();
    const int64_t* p = host.data_ptr<int64_t>();
    for (int64_t i = 0; i < k; ++i) {
      out->indices[i] = static_cast<uint32_t>(p[i]);
    }
  }
}

// Indices (int64) and values (fp32) of a SparseDelta, on `device`.
std::pair<at::Tensor, at::Tensor> SparseToDevice(const SparseDelta& s,
                                                 at::Device device) {
  const int64_t k = static_cast<int64_t>(s.indices.size());
  at::Tensor idx = at::empty({k}, at::kLong);
  int64_t* p = idx.data_ptr<int64_t>();
  for (int64_t i = 0; i < k; ++i) p[i] = s.indices[i];
  at::Tensor vals =
      at::from_blob(const_cast<float*>(s.values.data()), {k}, at::kFloat);
  return {idx.to(device), vals.to(device, at::kFloat, false, /*copy=*/true)};
}

bool SparseIsValid(const SparseDelta& s) {
  if (s.indices.size() != s.values.size()) return false;
  return std::all_of(s.indices.begin(), s.indices.end(),
                     [&](uint32_t i) { return i < s.dim; });
}

}  // namespace

namespace {

absl::StatusOr<SparseDelta> TopKImpl(const at::Tensor& delta, int64_t k,
                                     bool radix_on_cpu) {
  return TorchCall("torch", [&]() -> absl::StatusOr<SparseDelta> {
    SHEFL_RETURN_IF_ERROR(CheckShape(delta));
    const at::Tensor x = delta.contiguous();
    const int64_t d = x.numel();
    k = std::clamp<int64_t>(k, 0, d);
    SparseDelta out;
    // On the CPU the radix select's first pass also finds NaN/Inf; the
    // tensor-ops check below then only runs to name the bad index.
    if (radix_on_cpu && x.device().is_cpu() &&
        d <= std::numeric_limits<uint32_t>::max() &&
        RadixTopK(x.data_ptr<float>(), d, k, &out))
      return out;
    // The device backend (learn/topk_backend.h); false means no backend,
    // or NaN/Inf, which the check below names.
    if (radix_on_cpu && x.device().is_cuda() &&
        DeviceTopK(x, static_cast<uint64_t>(k), &out))
      return out;
    SHEFL_RETURN_IF_ERROR(CheckDelta(x));
    out.dim = static_cast<uint64_t>(d);
    if (k == 0) return out;
    const at::Tensor idx =
        k == d ? at::arange(d, x.options().dtype(at::kLong))
               : TopKIndices(x, k);
    CopyToHost(idx, k == d ? x : x.index_select(0, idx), d, &out);
    return out;
  });
}

}  // namespace

absl::StatusOr<SparseDelta> TopK(const at::Tensor& delta, int64_t k) {
  return TopKImpl(delta, k, /*radix_on_cpu=*/true);
}

absl::StatusOr<SparseDelta> TopKWithTensorOps(const at::Tensor& delta,
                                              int64_t k) {
  return TopKImpl(delta, k, /*radix_on_cpu=*/false);
}

at::Tensor Densify(const SparseDelta& sparse, at::Device device) {
  if (!SparseIsValid(sparse)) return at::Tensor();
  try {
    at::Tensor dense = at::zeros({static_cast<int64_t>(sparse.dim)},
                                 at::TensorOptions(at::kFloat).device(device));
    if (sparse.indices.empty()) return dense;
    auto [idx, vals] = SparseToDevice(sparse, device);
    dense.index_put_({idx}, vals);
    return dense;
  } catch (const c10::Error&) {
    return at::Tensor();
  }
}

absl::StatusOr<at::Tensor> ResidualAfter(const at::Tensor& corrected,
                                         const SparseDelta& sent,
                                         at::Device device) {
  if (!corrected.defined() || corrected.dim() != 1 ||
      corrected.numel() != static_cast<int64_t>(sent.dim)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "error feedback: corrected delta is not a 1-D tensor of %d", sent.dim));
  }
  if (!SparseIsValid(sent)) {
    return absl::InvalidArgumentError(
        "error feedback: sent delta has mismatched sizes or an index >= dim");
  }
  return TorchCall("torch", [&] {
    at::Tensor residual =
        corrected.to(device, at::kFloat, false, /*copy=*/true).contiguous();
    if (!sent.indices.empty()) {
      auto [idx, vals] = SparseToDevice(sent, device);
      residual.index_put_({idx}, residual.index_select(0, idx) - vals);
    }
    return residual;
  });
}

}  // namespace shefl
