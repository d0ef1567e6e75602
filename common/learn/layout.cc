#include "common/learn/layout.h"

#include <ATen/Functions.h>

namespace shefl {

at::Tensor ChannelsLast(const at::Tensor& t) {
  if (t.dim() != 4 ||
      t.suggest_memory_format() == at::MemoryFormat::ChannelsLast) {
    return t;
  }
  at::Tensor out = at::empty(
      t.sizes(), t.options().memory_format(at::MemoryFormat::ChannelsLast));
  out.copy_(t);
  return out;
}

void UseChannelsLast(torch::nn::Module& module) {
  for (at::Tensor& p : module.parameters()) {
    if (p.dim() == 4) p.set_data(ChannelsLast(p.detach()));
  }
}

}  // namespace shefl
