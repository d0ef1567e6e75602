// Secrets overwritten before their memory goes back: private keys, self-
// mask seeds and Shamir shares. OPENSSL_cleanse does the writing, which
// the compiler may not drop as a dead store the way it may a memset of
// memory about to be freed. What a swap file or a core dump took before
// that is out of reach; this narrows the window to the secret's use.
// Thread-safe: free functions without state.
#ifndef SHEFL_COMMON_SECURE_WIPE_H_
#define SHEFL_COMMON_SECURE_WIPE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace shefl {

// Overwrites n bytes at p with zeros, surely.
void WipeBytes(void* p, size_t n);

template <size_t N>
void Wipe(std::array<uint8_t, N>& a) {
  WipeBytes(a.data(), N);
}

// The elements' memory (the vector keeps its size, every element zero).
template <typename T>
void Wipe(std::vector<T>& v) {
  WipeBytes(v.data(), v.size() * sizeof(T));
}

}  // namespace shefl

#endif  // SHEFL_COMMON_SECURE_WIPE_H_
