// What the coordinator says while it waits for clients: connected,
// missing, and how many more daemons like the connected ones that takes
// (compose's scaled auto:10 daemons).
#include "server/run/waiting_line.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

TEST_CASE("the waiting line counts the missing clients and the daemons they take",
          "[waiting]") {
  CHECK(WaitingLine(10, 25, "need 25", {10}) ==
        "waiting for clients: 10/25 connected, 15 missing (need 25); the "
        "daemons connected host 10 each: start 2 more like them (3 in all; "
        "compose: --scale daemon=3)");
  // Daemons of different sizes, or none yet: no guess.
  CHECK(WaitingLine(12, 20, "need 20", {10, 2}) ==
        "waiting for clients: 12/20 connected, 8 missing (need 20)");
  CHECK(WaitingLine(0, 20, "need 20", {}) ==
        "waiting for clients: 0/20 connected, 20 missing (need 20)");
  CHECK(WaitingLine(20, 20, "need all, or 15 after 60 s", {10, 10}) ==
        "waiting for clients: 20/20 connected, 0 missing (need all, or 15 "
        "after 60 s)");
}

}  // namespace
}  // namespace shefl
