// Ensemble metrics against hand-computed values, and personalised weights.
#include "common/learn/evaluate.h"

#include <ATen/Context.h>
#include <ATen/Functions.h>

#include <cmath>
#include <limits>
#include <numeric>

#include "common/learn_stacked/stacked_eval.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

double H(std::vector<double> p) {
  double h = 0;
  for (double x : p) h -= x * std::log(x);
  return h;
}

// Two members, two samples, two classes; both labels are 0.
//   member 0: [0.9, 0.1], [0.4, 0.6]     member 1: [0.7, 0.3], [0.2, 0.8]
//   ensemble: [0.8, 0.2] (right, conf 0.8), [0.3, 0.7] (wrong, conf 0.7)
at::Tensor HandProbs() {
  return at::tensor({0.9, 0.1, 0.4, 0.6, 0.7, 0.3, 0.2, 0.8}, at::kDouble)
      .view({2, 2, 2});
}
at::Tensor HandLabels() { return at::tensor({0, 0}, at::kLong); }

void CheckHandExample(const EvalResult& r) {
  CHECK(r.samples == 2);
  CHECK(r.ensemble_accuracy == Approx(0.5));
  CHECK(r.ensemble_nll == Approx((-std::log(0.8) - std::log(0.3)) / 2));
  // Two single-sample bins: (|1 - 0.8| + |0 - 0.7|) / 2.
  CHECK(r.ece == Approx(0.45));
  CHECK(r.mean_entropy == Approx((H({0.8, 0.2}) + H({0.3, 0.7})) / 2));
  // p_k(yhat): sample 0 {0.9, 0.7}, sample 1 {0.6, 0.8}; variance 0.01 each.
  CHECK(r.mean_member_variance == Approx(0.01));
  REQUIRE(r.member_accuracy.size() == 2);
  CHECK(r.member_accuracy[0] == Approx(0.5));
  CHECK(r.member_accuracy[1] == Approx(0.5));
  CHECK(r.member_nll[0] == Approx((-std::log(0.9) - std::log(0.4)) / 2));
  CHECK(r.member_nll[1] == Approx((-std::log(0.7) - std::log(0.2)) / 2));
}

TEST_CASE("hand-computed ensemble metrics from probabilities") {
  auto r = EvaluateFromProbs(HandProbs(), HandLabels());
  REQUIRE(r.ok());
  CheckHandExample(*r);
}

TEST_CASE("logits give the same metrics as their softmax") {
  // log p plus a per-row constant: the softmax is p again.
  at::Tensor logits = HandProbs().log() + 3.0;
  auto r = EvaluateFromLogits(logits.to(at::kFloat), HandLabels());
  REQUIRE(r.ok());
  CheckHandExample(*r);
}

TEST_CASE("ECE pools samples that share a confidence bin") {
  // conf 0.81 and 0.84 both fall in (12/15, 13/15]; one right, one wrong.
  at::Tensor p =
      at::tensor({0.81, 0.19, 0.84, 0.16}, at::kDouble).view({1, 2, 2});
  auto r = EvaluateFromProbs(p, at::tensor({0, 1}, at::kLong));
  REQUIRE(r.ok());
  CHECK(r->ece == Approx(std::abs(0.5 - 0.825)));
  CHECK(r->mean_member_variance == Approx(0.0).margin(1e-12));  // M = 1
  // A perfectly calibrated pair: conf 1 and right.
  at::Tensor sure =
      at::tensor({1.0, 0.0, 0.0, 1.0}, at::kDouble).view({1, 2, 2});
  auto s = EvaluateFromProbs(sure, at::tensor({0, 1}, at::kLong));
  REQUIRE(s.ok());
  CHECK(s->ece == Approx(0.0).margin(1e-12));
  CHECK(s->ensemble_accuracy == 1.0);
  CHECK(s->mean_entropy == Approx(0.0).margin(1e-12));
}

TEST_CASE("member weights reweigh the ensemble") {
  auto r = EvaluateFromProbs(HandProbs(), HandLabels(), {1.0, 0.0});
  REQUIRE(r.ok());
  CHECK(r->ensemble_accuracy == Approx(r->member_accuracy[0]));
  CHECK(r->ensemble_nll == Approx(r->member_nll[0]));
  CHECK_FALSE(EvaluateFromProbs(HandProbs(), HandLabels(), {0.5, 0.6}).ok());
  CHECK_FALSE(EvaluateFromProbs(HandProbs(), HandLabels(), {1.0}).ok());
}

TEST_CASE("a model whose outputs overflow is still evaluated") {
  // Logits of +-inf give NaN probabilities; the ECE bin must stay in range
  // (it was an "index out of range" that stopped the coordinator).
  const double inf = std::numeric_limits<double>::infinity();
  at::Tensor logits =
      at::tensor({inf, -inf, inf, inf, 1.0, 0.0, 0.0, 1.0}, at::kDouble)
          .view({2, 2, 2});
  auto r = EvaluateFromLogits(logits, HandLabels(), {});
  INFO(r.status());
  REQUIRE(r.ok());
  CHECK(r->samples == 2);
}

TEST_CASE("wrong shapes are refused") {
  CHECK_FALSE(EvaluateFromLogits(at::zeros({2, 2}), HandLabels()).ok());
  CHECK_FALSE(EvaluateFromLogits(at::zeros({2, 3, 2}), HandLabels()).ok());
}

TEST_CASE(
    "personalised weights: sum 1, favour low loss, uniform for large gamma") {
  const std::vector<double> losses = {0.5, 1.5, 1.0};
  auto a = PersonalisedWeights(losses, 1.0);
  REQUIRE(a.ok());
  CHECK(std::accumulate(a->begin(), a->end(), 0.0) == Approx(1.0));
  CHECK((*a)[0] > (*a)[2]);
  CHECK((*a)[2] > (*a)[1]);
  // softmax(-loss / gamma): ratio of members 0 and 1 is e^{(1.5-0.5)/gamma}.
  CHECK((*a)[0] / (*a)[1] == Approx(std::exp(1.0)));
  auto flat = PersonalisedWeights(losses, 1e6);
  REQUIRE(flat.ok());
  for (double w : *flat) CHECK(w == Approx(1.0 / 3).epsilon(1e-5));
  auto sharp = PersonalisedWeights(losses, 1e-3);
  REQUIRE(sharp.ok());
  CHECK((*sharp)[0] == Approx(1.0));
  CHECK_FALSE(PersonalisedWeights(losses, 0.0).ok());
  CHECK_FALSE(PersonalisedWeights({1.0, NAN}, 1.0).ok());
  auto many = PersonalisedWeights(
      std::vector<std::vector<double>>{{0.1, 0.2}, {0.3, 0.1}}, 0.5);
  REQUIRE(many.ok());
  CHECK((*many)[0][0] > (*many)[0][1]);
  CHECK((*many)[1][1] > (*many)[1][0]);
}

ModelShape Features(int64_t f, int64_t c) {
  ModelShape s;
  s.features = f;
  s.num_classes = c;
  return s;
}

TEST_CASE("EvaluateEnsemble on models agrees with EvaluateFromLogits") {
  at::manual_seed(1);
  Dataset d{"syn", at::randn({50, 8}), at::randint(3, {50}, at::kLong), 3};
  std::vector<std::shared_ptr<Net>> models;
  for (int k = 0; k < 3; ++k) {
    auto m = MakeInitialisedModel("mlp", Features(8, 3), 2, k);
    REQUIRE(m.ok());
    models.push_back(*m);
  }
  models[1]->eval();  // its mode must come back as it was
  std::vector<at::Tensor> logits;
  for (auto& m : models) logits.push_back(m->forward(d.x).detach());
  auto want = EvaluateFromLogits(at::stack(logits, 0), d.y);
  REQUIRE(want.ok());
  const c10::Device cpu(c10::kCPU);
  auto got = EvaluateEnsemble(models, d, 7, 0, cpu);
  REQUIRE(got.ok());
  CHECK(got->samples == 50);
  CHECK(got->ensemble_accuracy == Approx(want->ensemble_accuracy));
  CHECK(got->ensemble_nll == Approx(want->ensemble_nll));
  CHECK(got->ece == Approx(want->ece));
  CHECK(got->mean_entropy == Approx(want->mean_entropy));
  CHECK(got->mean_member_variance == Approx(want->mean_member_variance));
  for (int k = 0; k < 3; ++k) {
    CHECK(got->member_nll[k] == Approx(want->member_nll[k]));
  }
  CHECK(models[0]->is_training());
  CHECK_FALSE(models[1]->is_training());
  auto first = EvaluateEnsemble(models, d, 1000, 20, cpu);
  REQUIRE(first.ok());
  CHECK(first->samples == 20);

  std::vector<int64_t> all(50);
  std::iota(all.begin(), all.end(), 0);
  auto losses = MemberLosses(models, d, all, 16, cpu);
  REQUIRE(losses.ok());
  for (int k = 0; k < 3; ++k)
    CHECK((*losses)[k] == Approx(want->member_nll[k]));
  CHECK_FALSE(MemberLosses(models, d, {50}, 16, cpu).ok());
}

TEST_CASE("the members stacked give the evaluation one after another gives") {
  // What a CUDA coordinator does (it hands in StackedEval(), kAuto), forced
  // here on the CPU; resnet18 has BatchNorm in eval mode (running stats).
  at::manual_seed(2);
  for (const std::string name : {"cnn", "resnet18"}) {
    const bool cnn = name == "cnn";
    ModelShape shape;
    shape.in_channels = cnn ? 1 : 3;
    shape.height = shape.width = cnn ? 28 : 8;
    shape.num_classes = 10;
    Dataset d{"img", at::randn({30, shape.in_channels, shape.height, shape.width}),
              at::randint(10, {30}, at::kLong), 10};
    std::vector<std::shared_ptr<Net>> models;
    for (int k = 0; k < 3; ++k) {
      auto m = MakeInitialisedModel(name, shape, 4, k);
      REQUIRE(m.ok());
      models.push_back(*m);
    }
    const c10::Device cpu(c10::kCPU);
    EvalThreads loop, stacked;  // loop: no stack handed in
    stacked.stack = StackedEval(StackedPath::kOn);
    auto a = EvaluateEnsemble(models, d, 8, 0, cpu, {}, loop);
    auto b = EvaluateEnsemble(models, d, 8, 0, cpu, {}, stacked);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    INFO(name);
    CHECK(b->samples == 30);
    CHECK(b->ensemble_accuracy == a->ensemble_accuracy);
    CHECK(b->ensemble_nll == Approx(a->ensemble_nll).epsilon(1e-5));
    for (int k = 0; k < 3; ++k)
      CHECK(b->member_nll[k] == Approx(a->member_nll[k]).epsilon(1e-5));
    CHECK(models[0]->is_training());  // modes come back
  }
}

}  // namespace
}  // namespace shefl
