// Fuzzes the registration handler's state (server/state/client_registry.h) with
// sequences of calls from a few identities, names and client ids, as
// daemons (honest, restarted or hostile) can make them.
//
// Input: one call a line, so that seeds read as scenarios:
//   register IDENTITY NAME DEVICE IDS   IDENTITY 0..2, NAME "_" for empty,
//                                       IDS comma-separated or "-" for none
//   report HANDLE CLIENT NUM_SAMPLES    HANDLE: a session ever returned
//   feed HANDLE 0|1                     (live or replaced), by index
//   lookup SESSION_ID                   a guessed id finds nothing
// Lines that do not parse are skipped. After every call RegistryModel
// checks the outcome and the rules of the registry's header.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/registry_model.h"
#include "server/state/client_registry.h"

namespace shefl {
namespace {

constexpr int64_t kClients = 8;
constexpr int kMaxCalls = 64;
const char* const kIdentities[] = {"cert:CN=x;", "cert:CN=y;", "token"};

bool ParseRegister(const std::vector<std::string>& w,
                   v1::RegisterRequest* req, std::string* identity) {
  int who = 0;
  if (w.size() != 5 || !absl::SimpleAtoi(w[1], &who) || who < 0 || who > 2)
    return false;
  *identity = kIdentities[who];
  req->set_daemon_name(w[2] == "_" ? "" : w[2]);
  req->set_device(w[3]);
  if (w[4] == "-") return true;
  for (absl::string_view id : absl::StrSplit(w[4], ',')) {
    int64_t c = 0;
    if (!absl::SimpleAtoi(id, &c)) return false;
    req->add_clients()->set_client_id(c);
  }
  return true;
}

// Makes the call one line names, if it parses.
void Call(const std::vector<std::string>& w, ClientRegistry& registry,
          RegistryModel& model) {
  if (w[0] == "register") {
    v1::RegisterRequest req;
    std::string identity;
    if (ParseRegister(w, &req, &identity)) model.Register(req, identity);
    return;
  }
  size_t handle = 0;
  int64_t client = 0;
  uint64_t samples = 0;
  if (w[0] == "report" && w.size() == 4 && absl::SimpleAtoi(w[1], &handle) &&
      absl::SimpleAtoi(w[2], &client) && absl::SimpleAtoi(w[3], &samples)) {
    model.ReportShardSize(handle, client, samples);
  } else if (w[0] == "feed" && w.size() == 3 &&
             absl::SimpleAtoi(w[1], &handle) && (w[2] == "0" || w[2] == "1")) {
    model.SetFeedOpen(handle, w[2] == "1");
  } else if (w[0] == "lookup" && w.size() == 2) {
    FUZZ_CHECK(registry.BySession(w[1]) == nullptr);
  }
}

}  // namespace
}  // namespace shefl

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shefl;
  const std::string input(reinterpret_cast<const char*>(data), size);
  ClientRegistry registry(kClients);
  RegistryModel model(&registry, kClients);
  int calls = 0;
  for (absl::string_view line : absl::StrSplit(input, '\n')) {
    const std::vector<std::string> words =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (words.empty()) continue;
    if (++calls > kMaxCalls) break;
    Call(words, registry, model);
    model.CheckInvariants();
  }
  return 0;
}
