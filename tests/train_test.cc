// Local training: the loss goes down, FedProx pulls towards the global
// model, and one seed gives bit-identical weights.
#include "common/learn/train.h"

#include <ATen/Context.h>
#include <ATen/Functions.h>
#include <c10/core/GradMode.h>
#include <torch/optim/optimizer.h>
#include <torch/optim/sgd.h>

#include <cmath>
#include <numeric>

#include "common/learn/flat_state.h"
#include "common/learn/lean_sgd.h"
#include "common/learn/train_internal.h"
#include "common/learn_stacked/stacked_train.h"
#include "tests/synthetic_sets.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using testing::Features;
using testing::Images;



ModelShape ShapeFor(const Dataset& d, int64_t vocab = 0) {
  auto s = ShapeOf(d, vocab);
  REQUIRE(s.ok());
  return *s;
}

std::shared_ptr<Net> Model(const std::string& name, const Dataset& d,
                           int64_t member = 0, int64_t vocab = 0) {
  auto m = MakeInitialisedModel(name, ShapeFor(d, vocab), 3, member);
  REQUIRE(m.ok());
  return *m;
}

std::vector<int64_t> All(const Dataset& d) {
  std::vector<int64_t> v(d.size());
  std::iota(v.begin(), v.end(), 0);
  return v;
}

double Loss(Net& m, const Dataset& d) {
  c10::NoGradGuard no_grad;
  m.eval();
  double l = at::cross_entropy_loss(m.forward(d.x), d.y).item<double>();
  m.train();
  return l;
}

TrainConfig Config(double lr = 0.05) {
  TrainConfig c;
  c.lr = lr;
  c.batch_size = 16;
  return c;
}

LocalTrainParams Params(const TrainConfig& cfg, int64_t round = 0,
                        int64_t client = 0, int64_t member = 0) {
  return MakeLocalTrainParams(cfg, /*seed=*/11, round, client, member,
                              /*hpc=*/false, c10::Device(c10::kCPU));
}

TEST_CASE("RoundLearningRate decays every lr_decay_every rounds") {
  TrainConfig c;
  c.lr = 0.1;
  c.lr_decay = 0.5;
  c.lr_decay_every = 10;
  CHECK(RoundLearningRate(c, 0) == 0.1);
  CHECK(RoundLearningRate(c, 9) == 0.1);
  CHECK(RoundLearningRate(c, 10) == Approx(0.05));
  CHECK(RoundLearningRate(c, 25) == Approx(0.025));
  c.hpc_local_epochs = 3;
  c.local_epochs = 1;
  c.local_steps = 7;
  LocalTrainParams hpc =
      MakeLocalTrainParams(c, 1, 10, 2, 4, true, c10::Device(c10::kCPU));
  CHECK(hpc.epochs == 3);
  CHECK(hpc.steps == 7);
  CHECK(hpc.lr == Approx(0.05));
  CHECK(MakeLocalTrainParams(c, 1, 0, 2, 4, false, c10::Device(c10::kCPU))
            .epochs == 1);
}

TEST_CASE("the cosine schedule anneals the lr over the local epochs") {
  TrainConfig cfg = Config(0.2);
  CHECK(LocalLearningRate(cfg, 0.2, 3, 4) == 0.2);  // "constant"
  cfg.lr_schedule = "cosine";
  // CosineAnnealingLR(T_max = 4) stepped per epoch: 1, 0.854, 0.5, 0.146.
  CHECK(LocalLearningRate(cfg, 0.2, 0, 4) == Approx(0.2));
  CHECK(LocalLearningRate(cfg, 0.2, 1, 4) == Approx(0.2 * 0.8535534));
  CHECK(LocalLearningRate(cfg, 0.2, 2, 4) == Approx(0.1));
  CHECK(LocalLearningRate(cfg, 0.2, 3, 4) == Approx(0.2 * 0.1464466));

  // ScheduleStep sets it on every parameter group: per pass by epochs ...
  Dataset d = Features(8, 1);
  auto m = Model("mlp", d);
  auto opt = train_internal::MakeOptimizer(cfg, 0.2, m->parameters());
  LocalTrainParams p = Params(cfg);
  p.lr = 0.2;
  p.epochs = 4;
  train_internal::ScheduleStep(*opt, cfg, p, /*pass=*/2, /*step=*/37);
  CHECK(opt->param_groups()[0].options().get_lr() == Approx(0.1));
  // ... per step when it trains by local_steps.
  p.steps = 8;
  train_internal::ScheduleStep(*opt, cfg, p, /*pass=*/0, /*step=*/6);
  CHECK(opt->param_groups()[0].options().get_lr() ==
        Approx(0.2 * 0.1464466));
}

TEST_CASE("a cosine lr changes training from the second epoch on") {
  Dataset d = Features(64, 12);
  TrainConfig flat = Config(0.05);
  TrainConfig cosine = flat;
  cosine.lr_schedule = "cosine";
  LocalTrainParams p = Params(flat, 1, 2);
  p.epochs = 1;  // one epoch runs at the full lr under both
  auto a = Model("mlp", d), b = Model("mlp", d);
  REQUIRE(LocalTrain(*a, d, All(d), flat, p).ok());
  REQUIRE(LocalTrain(*b, d, All(d), cosine, p).ok());
  CHECK(at::equal(Flatten(*a), Flatten(*b)));
  p.epochs = 3;
  auto c = Model("mlp", d), e = Model("mlp", d);
  const at::Tensor w0 = Flatten(*c);
  REQUIRE(LocalTrain(*c, d, All(d), flat, p).ok());
  REQUIRE(LocalTrain(*e, d, All(d), cosine, p).ok());
  CHECK_FALSE(at::equal(Flatten(*c), Flatten(*e)));
  // The annealed run ends closer to its start: its later steps are smaller.
  CHECK((Flatten(*e) - w0).norm().item<double>() <
        (Flatten(*c) - w0).norm().item<double>());
}

TEST_CASE("a few cnn steps lower the loss on the same data") {
  Dataset d = Images(64, 1);
  auto m = Model("cnn", d);
  const double before = Loss(*m, d);
  TrainConfig cfg = Config(0.05);
  LocalTrainParams p = Params(cfg);
  p.epochs = 5;
  auto stats = LocalTrain(*m, d, All(d), cfg, p);
  REQUIRE(stats.ok());
  const double after = Loss(*m, d);
  CHECK(after < before * 0.8);
  CHECK(stats->last_epoch_loss < stats->first_loss);
  CHECK(stats->steps == 20);
  CHECK(stats->samples == 320);
  CHECK(stats->first_loss == Approx(before).epsilon(0.05));
  CHECK(std::isfinite(stats->mean_loss));
  CHECK(stats->seconds > 0);
}

TEST_CASE("local_steps wins over epochs and a lone remainder is kept") {
  // 16 + 16 + 1: the single sample is a batch of its own, as with
  // PyTorch's DataLoader(drop_last=False).
  Dataset d = Features(33, 2);
  auto m = Model("mlp", d);
  TrainConfig cfg = Config();
  LocalTrainParams p = Params(cfg);
  p.epochs = 3;
  auto by_epochs = LocalTrain(*m, d, All(d), cfg, p);
  REQUIRE(by_epochs.ok());
  CHECK(by_epochs->steps == 9);
  CHECK(by_epochs->samples == 99);
  p.steps = 5;
  auto by_steps = LocalTrain(*m, d, All(d), cfg, p);
  REQUIRE(by_steps.ok());
  CHECK(by_steps->steps == 5);
  CHECK(by_steps->samples == 16 + 16 + 1 + 16 + 16);
}

TEST_CASE("Adam and momentum SGD train the mlp, and the text model trains") {
  Dataset d = Features(128, 3);
  for (const std::string opt : {"adam", "sgd"}) {
    auto m = Model("mlp", d);
    TrainConfig cfg = Config(opt == "adam" ? 0.005 : 0.02);
    cfg.optimizer = opt;
    cfg.momentum = opt == "sgd" ? 0.9 : 0.0;
    const double before = Loss(*m, d);
    REQUIRE(LocalTrain(*m, d, All(d), cfg, Params(cfg)).ok());
    CHECK(Loss(*m, d) < before * 0.8);
  }
  // Token ids: class c uses tokens 10c+1..10c+10, padded with zeros.
  at::manual_seed(4);
  at::Tensor y = at::randint(4, {64}, at::kLong);
  at::Tensor ids =
      at::randint(1, 11, {64, 12}, at::kLong) + 10 * y.view({-1, 1});
  ids.slice(1, 8) = 0;
  Dataset text{"text", ids, y, 4};
  auto tm = Model("text", text, 0, /*vocab=*/64);
  TrainConfig cfg = Config(0.5);
  LocalTrainParams p = Params(cfg);
  p.epochs = 5;
  const double before = Loss(*tm, text);
  REQUIRE(LocalTrain(*tm, text, All(text), cfg, p).ok());
  CHECK(Loss(*tm, text) < before * 0.9);
}

TEST_CASE("the same seed, round and client give bit-identical weights") {
  Dataset d = Images(48, 5);
  TrainConfig cfg = Config();
  std::vector<int64_t> shard = {3, 1, 4,  15, 9,  26, 5,  35, 8,  47,
                                2, 7, 18, 28, 11, 30, 44, 0,  21, 6};
  auto a = Model("cnn", d);
  auto b = Model("cnn", d);
  auto c = Model("cnn", d);
  REQUIRE(LocalTrain(*a, d, shard, cfg, Params(cfg, 4, 2)).ok());
  REQUIRE(LocalTrain(*b, d, shard, cfg, Params(cfg, 4, 2)).ok());
  REQUIRE(LocalTrain(*c, d, shard, cfg, Params(cfg, 5, 2)).ok());
  CHECK(at::equal(Flatten(*a), Flatten(*b)));
  CHECK_FALSE(at::equal(Flatten(*a), Flatten(*c)));  // another batch order
}

// LeanSgd and DropGrads against torch's SGD and zero_grad: the same steps
// on the same batches, compared bit for bit, with the lr changed midway as
// a schedule does. The mlp's sizes are not multiples of a vector's width,
// so the kernels' scalar tails are covered too.
TEST_CASE("LeanSgd gives torch's SGD weights bit for bit, and DropGrads leaves no gradient") {
  struct Case {
    const char* model;
    double momentum, weight_decay;
  };
  for (const Case k : {Case{"cnn", 0.0, 1e-3}, Case{"mlp", 0.9, 0.0},
                       Case{"mlp", 0.5, 5e-4}}) {
    INFO(k.model << " momentum " << k.momentum << " weight decay "
                 << k.weight_decay);
    Dataset d = std::string(k.model) == "cnn" ? Images(64, 2) : Features(64, 2);
    auto a = Model(k.model, d);
    auto b = Model(k.model, d);
    TrainConfig cfg = Config(0.05);
    cfg.momentum = k.momentum;
    cfg.weight_decay = k.weight_decay;
    torch::optim::SGD torch_sgd(
        a->parameters(), torch::optim::SGDOptions(cfg.lr)
                             .momentum(k.momentum)
                             .weight_decay(k.weight_decay));
    auto lean = train_internal::MakeOptimizer(cfg, cfg.lr, b->parameters());
    REQUIRE(dynamic_cast<LeanSgd*>(lean.get()) != nullptr);
    for (int step = 0; step < 8; ++step) {
      if (step == 4) {
        torch_sgd.param_groups()[0].options().set_lr(0.02);
        lean->param_groups()[0].options().set_lr(0.02);
      }
      at::Tensor x = d.x.slice(0, 8 * step, 8 * step + 8);
      at::Tensor y = d.y.slice(0, 8 * step, 8 * step + 8);
      torch_sgd.zero_grad();
      at::cross_entropy_loss(a->forward(x), y).backward();
      torch_sgd.step();
      DropGrads(*lean);
      for (const at::Tensor& p : b->parameters()) CHECK_FALSE(p.grad().defined());
      at::cross_entropy_loss(b->forward(x), y).backward();
      lean->step();
    }
    CHECK(at::equal(Flatten(*a), Flatten(*b)));
    CHECK_FALSE(at::equal(Flatten(*a), Flatten(*Model(k.model, d))));  // moved
  }
}

TEST_CASE("FedProx with a large mu stays closer to the global weights") {
  Dataset d = Features(128, 6);
  TrainConfig cfg = Config(0.05);
  auto free = Model("mlp", d);
  auto prox = Model("mlp", d);
  at::Tensor global = Flatten(*free);
  LocalTrainParams p = Params(cfg);
  p.epochs = 2;
  p.prox_reference = global;
  REQUIRE(LocalTrain(*free, d, All(d), cfg, p).ok());  // cfg.prox_mu = 0
  cfg.prox_mu = 5.0;
  REQUIRE(LocalTrain(*prox, d, All(d), cfg, p).ok());
  const double dist_free = (Flatten(*free) - global).norm().item<double>();
  const double dist_prox = (Flatten(*prox) - global).norm().item<double>();
  CHECK(dist_free > 0);
  CHECK(dist_prox < 0.7 * dist_free);
}

TEST_CASE("LocalTrainMany equals separate trainings with one batch order") {
  Dataset d = Features(64, 7);
  TrainConfig cfg = Config();
  std::vector<std::shared_ptr<Net>> many = {Model("mlp", d, 0),
                                            Model("mlp", d, 1)};
  std::vector<std::shared_ptr<Net>> one = {Model("mlp", d, 0),
                                           Model("mlp", d, 1)};
  LocalTrainParams p = Params(cfg, 1, 3, 0);
  auto stats = LocalTrainMany(many, d, All(d), cfg, p);
  REQUIRE(stats.ok());
  CHECK(stats->size() == 2);
  for (size_t k = 0; k < one.size(); ++k) {
    REQUIRE(LocalTrain(*one[k], d, All(d), cfg, p).ok());
    CHECK(at::equal(Flatten(*one[k]), Flatten(*many[k])));
  }
  CHECK_FALSE(LocalTrainMany(many, d, All(d), cfg, p, StackedPath::kAuto,
                             {at::zeros({1})}).ok());
}

TEST_CASE("bad indices and optimizers are refused, naming them") {
  Dataset d = Features(16, 8);
  auto m = Model("mlp", d);
  TrainConfig cfg = Config();
  auto st = LocalTrain(*m, d, {0, 1, 16}, cfg, Params(cfg));
  REQUIRE_FALSE(st.ok());
  CHECK(std::string(st.status().message()).find("16") != std::string::npos);
  cfg.optimizer = "lion";
  st = LocalTrain(*m, d, All(d), cfg, Params(cfg));
  REQUIRE_FALSE(st.ok());
  CHECK(std::string(st.status().message()).find("lion") != std::string::npos);
  // An empty shard trains nothing and leaves the model alone.
  cfg.optimizer = "sgd";
  at::Tensor before = Flatten(*m);
  auto empty = LocalTrain(*m, d, {}, cfg, Params(cfg));
  REQUIRE(empty.ok());
  CHECK(empty->steps == 0);
  CHECK(at::equal(Flatten(*m), before));
}

TEST_CASE("a diverging run is reported, not returned as weights") {
  Dataset d = Features(64, 9);
  d.x = d.x * 1e20;
  auto m = Model("mlp", d);
  TrainConfig cfg = Config(1e10);
  auto st = LocalTrain(*m, d, All(d), cfg, Params(cfg));
  REQUIRE_FALSE(st.ok());
  CHECK(std::string(st.status().message()).find("diverged") !=
        std::string::npos);
}

// Hidden ([.]): run by hand for the time of one cnn step, batch 16, CPU.
TEST_CASE("cnn step time", "[.][timing]") {
  Dataset d = Images(16 * 50, 10);
  auto m = Model("cnn", d);
  TrainConfig cfg = Config();
  LocalTrainParams p = Params(cfg);
  p.steps = 50;
  REQUIRE(LocalTrain(*m, d, All(d), cfg, p).ok());  // warm-up
  auto s = LocalTrain(*m, d, All(d), cfg, p);
  REQUIRE(s.ok());
  WARN("cnn step (batch 16): " << 1000 * s->seconds / s->steps << " ms");
}

// train.precision bf16 (common/learn/precision.h; its own test: precision_test).
TEST_CASE("bf16 training keeps fp32 weights and learns about as fp32 does") {
  Dataset d = Images(96, 4);
  const std::vector<int64_t> all = All(d);
  auto train = [&](const std::string& precision) {
    auto m = Model("cnn", d);
    TrainConfig cfg = Config(0.05);
    cfg.precision = precision;
    LocalTrainParams p = Params(cfg);
    p.epochs = 3;
    auto stats = LocalTrain(*m, d, all, cfg, p);
    REQUIRE(stats.ok());
    for (const at::Tensor& w : m->parameters()) CHECK(w.scalar_type() == at::kFloat);
    return std::make_pair(Flatten(*m), *stats);
  };
  const auto [w32, s32] = train("fp32");
  const auto [w16, s16] = train("bf16");
  CHECK_FALSE(at::equal(w32, w16));  // bf16 did run
  CHECK(std::isfinite(s16.mean_loss));
  CHECK(s16.last_epoch_loss < s16.first_loss * 0.9);  // it learns
  CHECK(s16.last_epoch_loss == Approx(s32.last_epoch_loss).margin(0.15));
  // The weights stay close: bf16 changes the rounding, not the descent.
  CHECK((w16 - w32).norm().item<double>() < 0.05 * w32.norm().item<double>());
}

}  // namespace
}  // namespace shefl
