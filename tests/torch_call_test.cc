// TorchCall and TorchError (common/learn/torch_call.h): a c10::Error
// becomes an INTERNAL status naming the call, without LibTorch's
// backtrace; values and statuses pass through unchanged.
#include "common/learn/torch_call.h"

#include <c10/util/Exception.h>

#include <stdexcept>
#include <string>
#include <type_traits>

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

void Boom() { TORCH_CHECK(false, "boom"); }

TEST_CASE("TorchCall turns a thrown c10::Error into INTERNAL naming the call") {
  const absl::Status st = TorchCall("unflatten", [] { Boom(); });
  CHECK(st.code() == absl::StatusCode::kInternal);
  CHECK_THAT(std::string(st.message()), StartsWith("unflatten: boom"));
  // The backtrace names LibTorch's frames, not the caller's: left out.
  CHECK_THAT(std::string(st.message()), !Contains("Exception raised from"));
  const absl::StatusOr<int> v = TorchCall("value", []() -> int {
    Boom();
    return 1;
  });
  CHECK(v.status().code() == absl::StatusCode::kInternal);
  CHECK_THAT(std::string(v.status().message()), StartsWith("value: boom"));
}

TEST_CASE("TorchError is INTERNAL \"what: message\"") {
  try {
    Boom();
    FAIL("TORCH_CHECK did not throw");
  } catch (const c10::Error& e) {
    const absl::Status st = TorchError("torch", e);
    CHECK(st.code() == absl::StatusCode::kInternal);
    CHECK_THAT(std::string(st.message()), StartsWith("torch: boom"));
  }
}

TEST_CASE("TorchCall passes values and statuses through") {
  // void and Status come back as Status; T and StatusOr<T> as StatusOr<T>.
  auto none = TorchCall("x", [] {});
  static_assert(std::is_same_v<decltype(none), absl::Status>);
  CHECK(none.ok());
  auto status = TorchCall("x", [] { return absl::NotFoundError("gone"); });
  static_assert(std::is_same_v<decltype(status), absl::Status>);
  CHECK(status == absl::NotFoundError("gone"));
  auto value = TorchCall("x", [] { return 7; });
  static_assert(std::is_same_v<decltype(value), absl::StatusOr<int>>);
  REQUIRE(value.ok());
  CHECK(*value == 7);
  auto ok = TorchCall("x", [] { return absl::StatusOr<std::string>("s"); });
  static_assert(std::is_same_v<decltype(ok), absl::StatusOr<std::string>>);
  REQUIRE(ok.ok());
  CHECK(*ok == "s");
  auto refused = TorchCall("x", []() -> absl::StatusOr<std::string> {
    return absl::InvalidArgumentError("bad shape");
  });
  CHECK(refused.status() == absl::InvalidArgumentError("bad shape"));
}

TEST_CASE("only TorchCallCatchAll turns other exceptions into a status") {
  auto other = [] { throw std::runtime_error("worker died"); };
  CHECK_THROWS_AS(TorchCall("x", other), std::runtime_error);
  const absl::Status st = TorchCallCatchAll("local training", other);
  CHECK(st == absl::InternalError("local training: worker died"));
  const absl::Status torch = TorchCallCatchAll("local training", Boom);
  CHECK_THAT(std::string(torch.message()), StartsWith("local training: boom"));
  CHECK_THAT(std::string(torch.message()), !Contains("Exception raised from"));
  CHECK(*TorchCallCatchAll("x", [] { return 3; }) == 3);
}

}  // namespace
}  // namespace shefl
