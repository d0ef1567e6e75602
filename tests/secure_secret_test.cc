// The secret holders of common/secure/secret.h: they cannot be copied,
// only moved or cloned; a destroyed holder and a moved-from one leave
// zeros where the secret was, observed in memory the test owns (a holder
// built in a buffer of the test's, a vector's storage from an arena of the
// test's that is never given back); and the comparisons and wipes the
// crypto path relies on.
#include <algorithm>
#include <array>
#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/secure/masks.h"
#include "common/secure/secret.h"
#include "common/secure/shamir_share.h"
#include "common/secure/x25519.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

template <typename T>
constexpr bool kMoveOnly = !std::is_copy_constructible_v<T> &&
                           !std::is_copy_assignable_v<T> &&
                           std::is_nothrow_move_constructible_v<T> &&
                           std::is_nothrow_move_assignable_v<T>;
static_assert(kMoveOnly<Secret<32>>);
static_assert(kMoveOnly<SelfSeed>);
static_assert(kMoveOnly<SecretBytes>);
static_assert(kMoveOnly<SecretWords>);
static_assert(!std::is_copy_constructible_v<X25519KeyPair>);

// A holder cannot grow: a vector that reallocates frees its old buffer
// unwiped.
template <typename T, typename = void>
struct CanGrow : std::false_type {};
template <typename T>
struct CanGrow<T, std::void_t<decltype(std::declval<T&>().push_back(0))>>
    : std::true_type {};
template <typename T, typename = void>
struct CanResize : std::false_type {};
template <typename T>
struct CanResize<T, std::void_t<decltype(std::declval<T&>().resize(1))>>
    : std::true_type {};
static_assert(CanGrow<std::vector<uint8_t>>::value);  // the check sees it
static_assert(!CanGrow<SecretBytes>::value && !CanResize<SecretBytes>::value);

bool AllZero(const uint8_t* p, size_t n) {
  return std::all_of(p, p + n, [](uint8_t b) { return b == 0; });
}

std::array<uint8_t, 32> Pattern() {
  std::array<uint8_t, 32> p;
  for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<uint8_t>(0xa0 + i);
  return p;
}

TEST_CASE("secret holders are move-only") {
  CHECK(kMoveOnly<Secret<32>>);
  CHECK(kMoveOnly<SecretBytes>);
  CHECK_FALSE(std::is_copy_constructible_v<X25519KeyPair>);
  CHECK_FALSE(CanGrow<SecretBytes>::value);
}

TEST_CASE("a destroyed Secret leaves zeros in the memory it lived in") {
  static_assert(sizeof(Secret<32>) == 32, "the bytes are the whole object");
  alignas(Secret<32>) uint8_t buf[sizeof(Secret<32>)];
  std::fill(std::begin(buf), std::end(buf), 0xee);
  const std::array<uint8_t, 32> pattern = Pattern();
  auto* s = new (buf) Secret<32>(*Secret<32>::CopyOf(pattern));
  // The test sees the secret where it lives...
  CHECK(std::equal(pattern.begin(), pattern.end(), buf));
  CHECK(s->data() == buf);
  s->~Secret<32>();
  // ...and zeros there once it is gone.
  CHECK(AllZero(buf, sizeof buf));
}

TEST_CASE("a moved-from Secret is zero, and the bytes are in the new one") {
  const std::array<uint8_t, 32> pattern = Pattern();
  Secret<32> a = *Secret<32>::CopyOf(pattern);
  Secret<32> b(std::move(a));
  CHECK(AllZero(a.data(), a.size()));  // read after the move on purpose
  CHECK(std::equal(pattern.begin(), pattern.end(), b.data()));
  Secret<32> c;
  c = std::move(b);
  CHECK(AllZero(b.data(), b.size()));
  CHECK(std::equal(pattern.begin(), pattern.end(), c.data()));
  Secret<32>& same = c;
  c = std::move(same);  // moving onto itself keeps the bytes
  CHECK(std::equal(pattern.begin(), pattern.end(), c.data()));
  c.Wipe();
  CHECK(AllZero(c.data(), c.size()));
}

TEST_CASE("a Secret copies in and clones only explicitly, and compares") {
  const std::array<uint8_t, 32> pattern = Pattern();
  CHECK(Secret<32>::CopyOf(ByteView(pattern).subspan(1)).status().code() ==
        absl::StatusCode::kInvalidArgument);
  const Secret<32> a = *Secret<32>::CopyOf(pattern);
  Secret<32> b = a.Clone();
  CHECK(b.data() != a.data());
  CHECK(a == b);
  b.data()[31] ^= 1;
  CHECK(a != b);
  CHECK(ByteView(a) == ByteView(pattern));  // a view, not a copy
  CHECK(ByteView(a).data() == a.data());
}

// Storage of the test's own: allocations are cut from one buffer (zeros
// to begin with) and never given back, so the test can read what a holder
// left there.
struct Arena {
  alignas(16) uint8_t bytes[512] = {};
  size_t used = 0;
  uint8_t* Take(size_t n) {
    n = (n + 15) / 16 * 16;
    REQUIRE(used + n <= sizeof bytes);
    uint8_t* p = bytes + used;
    used += n;
    return p;
  }
  bool Holds(ByteView pattern) const {
    return std::search(bytes, bytes + used, pattern.begin(), pattern.end()) !=
           bytes + used;
  }
};

// Does not move buffers between holders of different arenas, so a move
// assignment across arenas copies, and the source must wipe its own.
template <typename T>
struct ArenaAlloc {
  using value_type = T;
  using propagate_on_container_move_assignment = std::false_type;
  using is_always_equal = std::false_type;
  Arena* arena;
  explicit ArenaAlloc(Arena* a) : arena(a) {}
  template <typename U>
  ArenaAlloc(const ArenaAlloc<U>& other) : arena(other.arena) {}  // rebinds
  T* allocate(size_t n) { return reinterpret_cast<T*>(arena->Take(n * sizeof(T))); }
  void deallocate(T*, size_t) {}
  friend bool operator==(const ArenaAlloc& a, const ArenaAlloc& b) {
    return a.arena == b.arena;
  }
  friend bool operator!=(const ArenaAlloc& a, const ArenaAlloc& b) {
    return !(a == b);
  }
};
using ArenaSecret = SecretVector<uint8_t, ArenaAlloc<uint8_t>>;

TEST_CASE("a destroyed SecretVector leaves zeros in its storage") {
  Arena arena;
  const std::array<uint8_t, 32> pattern = Pattern();
  {
    const ArenaSecret s = ArenaSecret::CopyOf(pattern, ArenaAlloc<uint8_t>(&arena));
    CHECK(s.data() == arena.bytes);
    CHECK(arena.Holds(pattern));
  }
  CHECK(arena.used >= pattern.size());
  CHECK(AllZero(arena.bytes, arena.used));
}

TEST_CASE("a moved-from SecretVector holds nothing and left nothing behind") {
  const std::array<uint8_t, 32> pattern = Pattern();
  Arena one, two;
  const ArenaAlloc<uint8_t> in_one(&one), in_two(&two);
  ArenaSecret a = ArenaSecret::CopyOf(pattern, in_one);
  const uint8_t* buffer = a.data();
  ArenaSecret b(std::move(a));  // the buffer itself moves
  CHECK(a.empty());
  CHECK(b.data() == buffer);
  // Onto a holder of its own arena: the buffer moves, the old one is wiped.
  ArenaSecret c(8, in_one);
  std::fill(c.span().begin(), c.span().end(), 0x77);
  c = std::move(b);
  CHECK(b.empty());
  CHECK(c.data() == buffer);
  CHECK(std::count(one.bytes, one.bytes + one.used, 0x77) == 0);
  // Onto a holder of another arena: the bytes are copied over, and the
  // buffer they came from is wiped.
  ArenaSecret d(1, in_two);
  d = std::move(c);
  CHECK(c.empty());
  CHECK(d == ByteView(pattern));
  CHECK_FALSE(one.Holds(pattern));
  CHECK(AllZero(one.bytes, one.used));
  CHECK(two.Holds(pattern));
  d.Wipe();
  CHECK(d.size() == pattern.size());
  CHECK(AllZero(two.bytes, two.used));
}

TEST_CASE("SecretVector compares in constant time and clones explicitly") {
  const std::array<uint8_t, 32> pattern = Pattern();
  const SecretBytes a = SecretBytes::CopyOf(pattern);
  SecretBytes b = a.Clone();
  CHECK(b.data() != a.data());
  CHECK(a == b);
  CHECK(a == ByteView(pattern));
  CHECK(a != ByteView(pattern).subspan(1));  // another size
  b[0] ^= 1;
  CHECK(a != b);
  const SecretWords w(4);
  CHECK(w.size() == 4);
  CHECK(std::all_of(w.begin(), w.end(), [](uint32_t v) { return v == 0; }));
  CHECK(SecretWords() == SecretWords(0));
}

TEST_CASE("a Shamir share wipes its elements on demand and stays copyable") {
  ShamirShare s;
  s.x = 3;
  s.y = {1, 2, 3};
  ShamirShare copy = s;
  CHECK(copy.y == s.y);
  s.Wipe();
  CHECK(s.y == std::vector<uint64_t>(3, 0));
  CHECK(copy.y == std::vector<uint64_t>({1, 2, 3}));
  ShamirShare moved = std::move(copy);
  CHECK(copy.y.empty());
  CHECK(moved.y.size() == 3);
  moved = s;  // assigned over: the zeros, not a mix
  CHECK(moved.y == std::vector<uint64_t>(3, 0));
}

}  // namespace
}  // namespace shefl
