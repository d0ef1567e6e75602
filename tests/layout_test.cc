// Channels-last layout of the convolutional models (common/learn/layout.h): the
// strides change, the values, the flat order and the outputs do not.
#include "common/learn/layout.h"

#include <ATen/Functions.h>
#include <c10/core/GradMode.h>
#include <torch/nn/modules/conv.h>

#include "common/learn/flat_state.h"
#include "common/learn/models.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

ModelShape Image(int64_t c, int64_t hw, int64_t classes) {
  ModelShape s;
  s.in_channels = c;
  s.height = hw;
  s.width = hw;
  s.num_classes = classes;
  return s;
}

bool StridesAreChannelsLast(const at::Tensor& t) {
  return t.suggest_memory_format() == at::MemoryFormat::ChannelsLast;
}

TEST_CASE("ChannelsLast restrides one-channel tensors and keeps values") {
  at::Tensor x = at::randn({4, 1, 28, 28});
  REQUIRE_FALSE(StridesAreChannelsLast(x));
  at::Tensor y = ChannelsLast(x);
  CHECK(StridesAreChannelsLast(y));
  CHECK(at::equal(x, y));
  at::Tensor z = at::randn({2, 3, 8, 8});
  CHECK(at::equal(ChannelsLast(z), z));
  CHECK(StridesAreChannelsLast(ChannelsLast(z)));
  at::Tensor flat = at::randn({5, 7});
  CHECK(ChannelsLast(flat).is_same(flat));
}

TEST_CASE("cnn and resnet18 keep their convolution weights channels-last") {
  for (const auto& [name, shape] :
       {std::pair<std::string, ModelShape>{"cnn", Image(1, 28, 10)},
        {"resnet18", Image(3, 32, 10)}}) {
    auto m = MakeInitialisedModel(name, shape, 3, 0);
    REQUIRE(m.ok());
    int convs = 0;
    for (const at::Tensor& p : (*m)->parameters()) {
      if (p.dim() != 4) continue;
      ++convs;
      CHECK(StridesAreChannelsLast(p));
    }
    CHECK(convs >= 2);
  }
}

TEST_CASE("the flat state of a channels-last cnn is in logical order") {
  auto m = MakeInitialisedModel("cnn", Image(1, 28, 10), 3, 0);
  REQUIRE(m.ok());
  const int64_t d = FlatSize(**m);
  at::Tensor ramp = at::arange(d, at::kFloat);
  REQUIRE(Unflatten(ramp, **m).ok());
  CHECK(at::equal(Flatten(**m), ramp));
  // conv1.weight leads the flat order: element [o][0][i][j] sits at
  // o*25 + i*5 + j whatever the strides.
  at::Tensor w = (*m)->parameters()[0];
  REQUIRE(w.dim() == 4);
  CHECK(w[2][0][3][1].item<float>() == 2 * 25 + 3 * 5 + 1);
}

TEST_CASE("a channels-last cnn computes what the same weights give in NCHW") {
  auto m = MakeInitialisedModel("cnn", Image(1, 28, 10), 3, 0);
  REQUIRE(m.ok());
  c10::NoGradGuard no_grad;
  at::Tensor x = at::randn({6, 1, 28, 28});
  at::Tensor out = (*m)->forward(x);
  // The same network by hand on contiguous (NCHW) weights.
  std::vector<at::Tensor> p = (*m)->parameters();
  at::Tensor h = at::conv2d(x, p[0].contiguous(), p[1]);
  h = at::max_pool2d(at::relu(h), {2, 2});
  h = at::conv2d(h.contiguous(), p[2].contiguous(), p[3]);
  h = at::max_pool2d(at::relu(h), {2, 2}).contiguous().flatten(1);
  h = at::relu(at::linear(h, p[4], p[5]));
  at::Tensor ref = at::linear(h, p[6], p[7]);
  CHECK(at::allclose(out, ref, 1e-4, 1e-5));
}

}  // namespace
}  // namespace shefl
