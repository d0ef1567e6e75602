// The model registry, the flat state layout and device parsing.
#include "common/learn/models.h"

#include <ATen/Functions.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>

#include "common/core/model_catalog.h"
#include "common/learn/device.h"
#include "common/learn/flat_state.h"
#include "common/learn_stacked/cohort_train.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

ModelShape Image(int64_t c, int64_t h, int64_t w, int64_t classes) {
  ModelShape s;
  s.in_channels = c;
  s.height = h;
  s.width = w;
  s.num_classes = classes;
  return s;
}

std::shared_ptr<Net> Make(const std::string& name, const ModelShape& s,
                          uint64_t seed = 1, int64_t member = 0) {
  auto m = MakeInitialisedModel(name, s, seed, member);
  REQUIRE(m.ok());
  return *m;
}

TEST_CASE("cnn on 28x28x1 has d = 582,026 and gives logits") {
  auto m = Make("cnn", Image(1, 28, 28, 10));
  CHECK(NumParameters(*m) == 582026);
  CHECK(FlatSize(*m) == 582026);
  c10::NoGradGuard no_grad;
  at::Tensor out = m->forward(at::randn({3, 1, 28, 28}));
  CHECK(out.sizes() == at::IntArrayRef({3, 10}));
}

TEST_CASE("resnet18 on CIFAR-10 has 11,173,962 parameters") {
  auto m = Make("resnet18", Image(3, 32, 32, 10));
  CHECK(NumParameters(*m) == 11173962);
  m->eval();
  c10::NoGradGuard no_grad;
  at::Tensor out = m->forward(at::randn({2, 3, 32, 32}));
  CHECK(out.sizes() == at::IntArrayRef({2, 10}));
}

TEST_CASE("resnet34 on CIFAR-10 has 21,282,122 parameters") {
  auto m = Make("resnet34", Image(3, 32, 32, 10));
  CHECK(NumParameters(*m) == 21282122);
}

TEST_CASE("mlp takes features and images") {
  ModelShape f;
  f.features = 20;
  f.num_classes = 4;
  auto flat = Make("mlp", f);
  CHECK(NumParameters(*flat) == 20 * 200 + 200 + 200 * 200 + 200 + 200 * 4 + 4);
  auto img = Make("mlp", Image(1, 28, 28, 10));
  c10::NoGradGuard no_grad;
  CHECK(flat->forward(at::randn({5, 20})).sizes() == at::IntArrayRef({5, 4}));
  CHECK(img->forward(at::randn({5, 1, 28, 28})).sizes() ==
        at::IntArrayRef({5, 10}));
}

TEST_CASE("text model averages over non-padding tokens only") {
  ModelShape s;
  s.vocab = 100;
  s.num_classes = 4;
  auto m = Make("text", s);
  c10::NoGradGuard no_grad;
  at::Tensor a =
      m->forward(at::tensor({5, 7, 0, 0, 0}, at::kLong).view({1, 5}));
  at::Tensor b = m->forward(at::tensor({5, 7}, at::kLong).view({1, 2}));
  at::Tensor c = m->forward(at::tensor({5, 8}, at::kLong).view({1, 2}));
  CHECK(a.sizes() == at::IntArrayRef({1, 4}));
  CHECK(at::allclose(a, b, 1e-6, 1e-6));
  CHECK_FALSE(at::allclose(a, c, 1e-6, 1e-6));
}

TEST_CASE("unknown model names and impossible shapes are errors naming them") {
  auto m = MakeModel("vgg11", Image(1, 28, 28, 10));
  REQUIRE_FALSE(m.ok());
  CHECK(m.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(m.status().message()).find("vgg11") != std::string::npos);
  ModelShape s;
  s.features = 20;
  s.num_classes = 4;
  CHECK_FALSE(MakeModel("cnn", s).ok());
  CHECK_FALSE(MakeModel("text", s).ok());
  CHECK_FALSE(MakeModel("cnn", Image(1, 28, 28, 0)).ok());
}

TEST_CASE("ShapeOf reads images, features and token ids") {
  Dataset img{"img", at::zeros({4, 3, 32, 32}), at::zeros({4}, at::kLong), 10};
  auto s = ShapeOf(img, 0);
  REQUIRE(s.ok());
  CHECK((s->in_channels == 3 && s->height == 32 && s->width == 32));
  CHECK(s->num_classes == 10);
  Dataset txt{"txt", at::zeros({4, 16}, at::kLong), at::zeros({4}, at::kLong),
              4};
  auto t = ShapeOf(txt, 1000);
  REQUIRE(t.ok());
  CHECK(t->vocab == 1000);
  Dataset syn{"syn", at::zeros({4, 20}), at::zeros({4}, at::kLong), 4};
  CHECK(ShapeOf(syn, 0)->features == 20);
}

TEST_CASE("the same seed gives identical weights, another member others") {
  ModelShape s = Image(1, 28, 28, 10);
  at::Tensor a = Flatten(*Make("cnn", s, 7, 0));
  at::Tensor b = Flatten(*Make("cnn", s, 7, 0));
  at::Tensor c = Flatten(*Make("cnn", s, 7, 1));
  at::Tensor d = Flatten(*Make("cnn", s, 8, 0));
  CHECK(at::equal(a, b));
  CHECK_FALSE(at::equal(a, c));
  CHECK_FALSE(at::equal(a, d));
}

TEST_CASE("flatten and unflatten round-trip exactly") {
  ModelShape s = Image(1, 28, 28, 10);
  auto a = Make("cnn", s, 1, 0);
  auto b = Make("cnn", s, 1, 1);
  at::Tensor fa = Flatten(*a);
  CHECK(fa.dim() == 1);
  CHECK(fa.scalar_type() == at::kFloat);
  REQUIRE(Unflatten(fa, *b).ok());
  CHECK(at::equal(Flatten(*b), fa));
  c10::NoGradGuard no_grad;
  at::Tensor x = at::randn({2, 1, 28, 28});
  CHECK(at::equal(a->forward(x), b->forward(x)));

  std::vector<float> v = FlattenToVector(*a);
  REQUIRE(static_cast<int64_t>(v.size()) == FlatSize(*a));
  v[0] += 1.0f;
  REQUIRE(Unflatten(v, *b).ok());
  CHECK(FlattenToVector(*b) == v);
  CHECK(b->named_parameters()["conv1.weight"].view({-1})[0].item<float>() ==
        v[0]);
}

TEST_CASE("unflatten refuses a wrong size, naming both sizes") {
  auto m = Make("cnn", Image(1, 28, 28, 10));
  at::Tensor before = Flatten(*m);
  absl::Status st = Unflatten(at::zeros({100}), *m);
  REQUIRE_FALSE(st.ok());
  const std::string msg(st.message());
  CHECK(msg.find("100") != std::string::npos);
  CHECK(msg.find("582026") != std::string::npos);
  CHECK(at::equal(Flatten(*m), before));
}

TEST_CASE("flat order: parameters, then BatchNorm running stats") {
  auto m = Make("resnet18", Image(3, 32, 32, 10));
  std::vector<FlatEntry> layout = FlatLayout(*m);
  int64_t bn_stats = 0;
  for (const auto& b : m->named_buffers()) {
    if (b.key().find("running_") != std::string::npos) {
      bn_stats += b.value().numel();
    }
  }
  CHECK(bn_stats > 0);
  CHECK(FlatSize(*m) == NumParameters(*m) + bn_stats);
  REQUIRE(!layout.empty());
  CHECK(layout.front().name == "conv1.weight");
  CHECK(layout.back().name.find("running_var") != std::string::npos);
  int64_t offset = 0;
  bool in_buffers = false;
  for (const FlatEntry& e : layout) {
    CHECK(e.offset == offset);
    CHECK(e.name.find("num_batches_tracked") == std::string::npos);
    if (e.is_buffer && !in_buffers) {
      in_buffers = true;
      CHECK(e.offset == NumParameters(*m));
    }
    CHECK(e.is_buffer == in_buffers);  // no parameter after a buffer
    offset += e.numel;
  }
  CHECK(offset == FlatSize(*m));

  // The tail really is the running statistics: write it and read it back.
  at::Tensor flat = Flatten(*m);
  flat[flat.size(0) - 1] = 42.0f;
  REQUIRE(Unflatten(flat, *m).ok());
  at::Tensor last = m->named_buffers()[layout.back().name];
  CHECK(last.view({-1})[-1].item<float>() == 42.0f);
}

TEST_CASE("ResolveDevice parses device strings and names bad ones") {
  auto cpu = ResolveDevice("cpu");
  REQUIRE(cpu.ok());
  CHECK(cpu->is_cpu());
  auto autod = ResolveDevice("auto");
  REQUIRE(autod.ok());
  CHECK(autod->is_cuda() == CudaAvailable());
  for (const std::string bad : {"gpu", "cuda:x", "cuda:-1", "cuda:99"}) {
    auto d = ResolveDevice(bad);
    REQUIRE_FALSE(d.ok());
    CHECK(std::string(d.status().message()).find("'" + bad + "'") !=
          std::string::npos);
  }
  if (!CudaAvailable()) {
    // It says why: no CUDA in this LibTorch at all, or no GPU it can use.
    auto cuda = ResolveDevice("cuda:0");
    REQUIRE_FALSE(cuda.ok());
    const std::string why(cuda.status().message());
    const bool cpu_only = why.find("this build's LibTorch has no CUDA") != std::string::npos;
    const bool no_gpu = why.find("finds no usable GPU") != std::string::npos;
    CHECK(cpu_only != no_gpu);
    if (cpu_only) CHECK(why.find("docs/GPU.md") != std::string::npos);
  }
}

TEST_CASE("ConfigureThreads sets torch's thread count") {
  const int before = at::get_num_threads();
  CHECK(ConfigureThreads(1) == 1);
  CHECK(at::get_num_threads() == 1);
  CHECK(ConfigureThreads(0) >= 1);
  at::set_num_threads(before);
}

}  // namespace
}  // namespace shefl

namespace shefl {
namespace {

TEST_CASE("the model registry and the config loader's catalogue agree") {
  CHECK(ModelNames() == ModelCatalog());
  // And on which models the cohort stack takes.
  ModelShape images, tokens;
  images.in_channels = 1;
  images.height = images.width = 28;
  images.num_classes = 10;
  tokens.vocab = 100;
  tokens.num_classes = 4;
  TrainConfig sgd;
  for (const std::string& name : ModelCatalog()) {
    auto net = MakeModel(name, name == "text" ? tokens : images);
    REQUIRE(net.ok());
    INFO(name);
    CHECK(StacksInCohort(name) == CohortSupports(**net, sgd).ok());
  }
}

}  // namespace
}  // namespace shefl
