// Secrets as a type: private keys, agreements, seeds, derived keys, mask
// streams, Shamir coefficients and opened boxes live in a holder that
// overwrites its bytes when it dies and when it is moved from, so no code
// path (an early return on an error included) leaves one in memory that
// goes back to the allocator. The holders cannot be copied: a copy is an
// explicit Clone(), so every place a secret is duplicated can be found.
//
// The writing is OPENSSL_cleanse's: a memset of memory about to be freed
// is a dead store the compiler may drop; OPENSSL_cleanse is made so it
// cannot. What it cannot reach: pages the kernel swapped out or a core
// dump took while the secret was alive, copies in registers and on the
// stack of the arithmetic that used it, and copies OpenSSL makes inside
// its own objects (an EVP_PKEY's key, a cipher context's schedule), which
// are OpenSSL's to clear when they are freed. This narrows the window to
// the secret's use; it does not close it.
// Thread-compatible: a holder is one owner's value.
#ifndef SHEFL_COMMON_SECURE_SECRET_H_
#define SHEFL_COMMON_SECURE_SECRET_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"

namespace shefl {

// Overwrites n bytes at p with zeros, surely (OPENSSL_cleanse).
void WipeBytes(void* p, size_t n);

// Whether a and b hold the same bytes, in a time that does not depend on
// where they differ (CRYPTO_memcmp); different sizes are unequal.
bool SecretEqual(absl::Span<const uint8_t> a, absl::Span<const uint8_t> b);

// N secret bytes kept inside the object (std::array): keys and seeds.
template <size_t N>
class Secret {
 public:
  Secret() : bytes_{} {}  // all zero
  ~Secret() { Wipe(); }
  Secret(const Secret&) = delete;
  Secret& operator=(const Secret&) = delete;
  // The bytes move; the source is left all zero.
  Secret(Secret&& other) noexcept : bytes_(other.bytes_) { other.Wipe(); }
  Secret& operator=(Secret&& other) noexcept {
    if (this != &other) {
      bytes_ = other.bytes_;
      other.Wipe();
    }
    return *this;
  }

  // A holder of the N bytes of `v`; InvalidArgument for another size.
  static absl::StatusOr<Secret> CopyOf(absl::Span<const uint8_t> v) {
    if (v.size() != N)
      return absl::InvalidArgumentError(
          absl::StrCat("secret: ", v.size(), " bytes, expected ", N));
    Secret s;
    std::copy(v.begin(), v.end(), s.bytes_.begin());
    return s;
  }
  Secret Clone() const {
    Secret s;
    s.bytes_ = bytes_;
    return s;
  }

  uint8_t* data() { return bytes_.data(); }
  const uint8_t* data() const { return bytes_.data(); }
  static constexpr size_t size() { return N; }
  const uint8_t* begin() const { return bytes_.data(); }
  const uint8_t* end() const { return bytes_.data() + N; }
  absl::Span<const uint8_t> view() const { return bytes_; }
  absl::Span<uint8_t> span() { return absl::MakeSpan(bytes_); }
  // Zeros the bytes now (the holder stays usable, all zero).
  void Wipe() { WipeBytes(bytes_.data(), N); }

  friend bool operator==(const Secret& a, const Secret& b) {
    return SecretEqual(a.view(), b.view());
  }
  friend bool operator!=(const Secret& a, const Secret& b) { return !(a == b); }

 private:
  std::array<uint8_t, N> bytes_;
};

// A secret of a size known at run time: n elements of T (std::vector
// storage, allocated once). It cannot grow: a vector that reallocates
// frees its old buffer unwiped, so the size is fixed at construction, and
// a holder is replaced only by assigning another one, which wipes the
// buffer it drops. `Alloc` lets a test hand it storage of its own.
template <typename T, typename Alloc = std::allocator<T>>
class SecretVector {
  static_assert(std::is_trivially_copyable_v<T>, "wiped as plain bytes");

 public:
  SecretVector() = default;
  // n zero elements.
  explicit SecretVector(size_t n, const Alloc& alloc = Alloc())
      : v_(n, T{}, alloc) {}
  static SecretVector CopyOf(absl::Span<const T> v,
                             const Alloc& alloc = Alloc()) {
    SecretVector s(v.size(), alloc);
    std::copy(v.begin(), v.end(), s.v_.begin());
    return s;
  }
  ~SecretVector() { Wipe(); }
  SecretVector(const SecretVector&) = delete;
  SecretVector& operator=(const SecretVector&) = delete;
  // The buffer moves; the source is left empty, having wiped whatever
  // an allocator that does not move buffers left it.
  SecretVector(SecretVector&& other) noexcept : v_(std::move(other.v_)) {
    other.Release();
  }
  SecretVector& operator=(SecretVector&& other) noexcept {
    if (this != &other) {
      Release();
      v_ = std::move(other.v_);
      other.Release();
    }
    return *this;
  }
  SecretVector Clone() const { return CopyOf(view(), v_.get_allocator()); }

  T* data() { return v_.data(); }
  const T* data() const { return v_.data(); }
  size_t size() const { return v_.size(); }
  bool empty() const { return v_.empty(); }
  T& operator[](size_t i) { return v_[i]; }
  const T& operator[](size_t i) const { return v_[i]; }
  const T* begin() const { return v_.data(); }
  const T* end() const { return v_.data() + v_.size(); }
  absl::Span<const T> view() const { return v_; }
  absl::Span<T> span() { return absl::MakeSpan(v_); }
  // Zeros the whole buffer now, keeping the size.
  void Wipe() { WipeBytes(v_.data(), v_.capacity() * sizeof(T)); }

  friend bool operator==(const SecretVector& a, const SecretVector& b) {
    return a.size() == b.size() && SecretEqual(a.Bytes(), b.Bytes());
  }
  friend bool operator==(const SecretVector& a, absl::Span<const T> b) {
    return a.size() == b.size() &&
           SecretEqual(a.Bytes(), {reinterpret_cast<const uint8_t*>(b.data()),
                                   b.size() * sizeof(T)});
  }
  friend bool operator!=(const SecretVector& a, const SecretVector& b) {
    return !(a == b);
  }
  friend bool operator!=(const SecretVector& a, absl::Span<const T> b) {
    return !(a == b);
  }

 private:
  absl::Span<const uint8_t> Bytes() const {
    return {reinterpret_cast<const uint8_t*>(v_.data()), v_.size() * sizeof(T)};
  }
  // Wipes and gives the buffer back: the holder is empty.
  void Release() {
    Wipe();
    std::vector<T, Alloc>(v_.get_allocator()).swap(v_);
  }

  std::vector<T, Alloc> v_;
};

using SecretBytes = SecretVector<uint8_t>;
// Mask streams and sums of encoded inputs: 32-bit words.
using SecretWords = SecretVector<uint32_t>;
// An X25519 private key or agreement, or a key derived from one.
using SecretKey32 = Secret<32>;

}  // namespace shefl

#endif  // SHEFL_COMMON_SECURE_SECRET_H_
