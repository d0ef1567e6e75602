// A secure round's arithmetic around the masks (common/secure/
// secure_input.h): a client keeps in its residual exactly what it did not
// send; the model's update from a masked session equals, bit for bit, the
// one from the same inputs summed in the clear, whatever the packing of
// clients into parties and the order of arrival; and it is the weighted
// mean of the clipped updates within the rounding.
#include "common/secure/secure_input.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>

#include "common/secure/collector.h"
#include "common/secure/party.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

constexpr size_t kDim = 2000;

SecureEncoding Encoding() {
  SecureEncoding e;
  for (uint32_t i = 3; i < kDim; i += 7) e.support.push_back(i);
  e.clip = 0.05;
  e.scale_bits = 24;
  e.seed = 9;
  e.round = 3;
  e.model = 2;
  return e;
}

struct Client {
  uint32_t id;
  double weight;
  std::vector<float> delta, residual;
};

std::vector<Client> Clients() {
  std::mt19937_64 rng(1);
  std::normal_distribution<float> normal(0.0f, 0.03f);  // some beyond the clip
  std::vector<Client> out;
  const double weights[] = {0.1, 0.2, 0.15, 0.25, 0.2, 0.1};
  for (uint32_t c = 0; c < 6; ++c) {
    Client cl{10 + c, weights[c], std::vector<float>(kDim), std::vector<float>(kDim)};
    for (float& v : cl.delta) v = normal(rng);
    for (float& v : cl.residual) v = normal(rng) / 4;
    out.push_back(cl);
  }
  return out;
}

// The update through a masked session: `packing` lists each party's
// clients (indices into Clients()), parties upload in `order`.
std::vector<float> Secure(const std::vector<std::vector<int>>& packing,
                          const std::vector<int>& order) {
  const SecureEncoding e = Encoding();
  std::vector<Client> clients = Clients();
  CollectorSettings s;
  s.params.run_id = "r";
  s.params.round = 3;
  s.params.model = 2;
  s.params.scale_bits = 24;
  s.params.clip = e.clip;
  s.min_parties = 2;
  s.words = e.support.size();
  SecureCollector collector(s);
  std::vector<std::unique_ptr<SecureParty>> parties;
  for (size_t p = 0; p < packing.size(); ++p) {
    parties.push_back(*SecureParty::Create(static_cast<uint32_t>(p)));
    REQUIRE(collector.AddAdvert(parties.back()->Advert()).ok());
  }
  auto roster = collector.CloseAdverts();
  REQUIRE(roster.ok());
  for (auto& p : parties) REQUIRE(collector.AddBoxes(p->id(), *p->ShareBoxes(*roster)).ok());
  REQUIRE(collector.CloseShares().ok());
  for (int p : order) {
    SecretWords q;
    double mass = 0;
    for (int c : packing[p]) {
      Client& cl = clients[c];
      REQUIRE(AddClientInput(cl.delta, cl.weight, cl.id, e, &cl.residual, &q).ok());
      mass += cl.weight;
    }
    REQUIRE(parties[p]->TakeBoxes(collector.BoxesFor(p)).ok());
    REQUIRE(collector.AddInput(*parties[p]->Mask(q, mass)).ok());
  }
  auto request = collector.CloseInputs();
  REQUIRE(request.ok());
  for (auto& p : parties) REQUIRE(collector.AddReply(*p->Unmask(*request)).ok());
  auto sum = collector.Finish();
  REQUIRE(sum.ok());
  auto update = SecureUpdate(sum->sum, sum->weight, e);
  REQUIRE(update.ok());
  return *update;
}

// The same inputs summed in the clear.
std::vector<float> Plain() {
  const SecureEncoding e = Encoding();
  SecretWords q;
  double mass = 0;
  for (Client& cl : Clients()) {
    REQUIRE(AddClientInput(cl.delta, cl.weight, cl.id, e, &cl.residual, &q).ok());
    mass += cl.weight;
  }
  return *SecureUpdate(q, mass, e);
}

TEST_CASE("a client's residual keeps exactly what it did not send") {
  const SecureEncoding e = Encoding();
  Client cl = Clients()[3];
  std::vector<float> x(kDim);
  for (size_t i = 0; i < kDim; ++i) x[i] = cl.delta[i] + cl.residual[i];
  SecretWords q;
  REQUIRE(AddClientInput(cl.delta, cl.weight, cl.id, e, &cl.residual, &q).ok());
  REQUIRE(q.size() == e.support.size());
  size_t j = 0, clipped = 0;
  for (size_t i = 0; i < kDim; ++i) {
    if (j < e.support.size() && e.support[j] == i) {
      const double sent =
          std::ldexp(static_cast<double>(static_cast<int32_t>(q[j])), -24) / cl.weight;
      CHECK(std::fabs(cl.residual[i] + sent - x[i]) < 1e-6);
      CHECK(std::fabs(sent) <= e.clip + 1e-6);
      if (std::fabs(x[i]) > e.clip) ++clipped;
      ++j;
    } else {
      CHECK(cl.residual[i] == x[i]);  // off the support nothing was sent
    }
  }
  CHECK(clipped > 5);  // the clip was exercised
}

TEST_CASE("masked or in the clear, packed any way, arriving in any order: the same floats") {
  const std::vector<float> plain = Plain();
  CHECK(Secure({{0}, {1}, {2}, {3}, {4}, {5}}, {0, 1, 2, 3, 4, 5}) == plain);
  CHECK(Secure({{0, 1}, {2, 3}, {4, 5}}, {2, 0, 1}) == plain);
  CHECK(Secure({{5, 0, 3}, {2}, {1, 4}}, {1, 2, 0}) == plain);
}

TEST_CASE("the update is the weighted mean of the clipped updates, within the rounding") {
  const SecureEncoding e = Encoding();
  const std::vector<float> update = Plain();
  const std::vector<Client> clients = Clients();
  double mass = 0;
  for (const Client& cl : clients) mass += cl.weight;
  for (size_t j = 0; j < e.support.size(); ++j) {
    double mean = 0;
    for (const Client& cl : clients) {
      const double x = cl.delta[e.support[j]] + cl.residual[e.support[j]];
      mean += cl.weight * std::clamp(x, -e.clip, e.clip);
    }
    mean /= mass;
    // Each client's rounding moves the sum by less than 2^-f.
    CHECK(std::fabs(update[j] - mean) <= 6 * std::ldexp(1.0, -24) / mass + 1e-9);
  }
}

TEST_CASE("inputs that do not fit are refused, naming what") {
  const SecureEncoding e = Encoding();
  std::vector<float> delta(kDim, 0.01f), residual;
  SecretWords q;
  CHECK(!AddClientInput(delta, 0.0, 1, e, &residual, &q).ok());
  CHECK(!AddClientInput(delta, 1.5, 1, e, &residual, &q).ok());
  std::vector<float> short_residual(10);
  CHECK(!AddClientInput(delta, 0.5, 1, e, &short_residual, &q).ok());
  std::vector<float> small(100);
  auto beyond = AddClientInput(small, 0.5, 1, e, &residual, &q);
  CHECK(std::string(beyond.message()).find("beyond the model") != std::string::npos);
  CHECK(q.empty());  // nothing refused was added
  CHECK(!SecureUpdate(std::vector<uint32_t>(3), 1.0, e).ok());
  CHECK(!SecureUpdate(std::vector<uint32_t>(e.support.size()), 0.0, e).ok());
}

}  // namespace
}  // namespace shefl
