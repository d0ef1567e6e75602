// Bit streams for the index codes (common/sparse/index_codes.h): bit i of a stream
// is bit (i mod 8), least significant first, of byte floor(i/8), so a
// stream read as little-endian 64-bit words has bit i at bit (i mod 64) of
// word floor(i/64). Raw pointers and no allocation: the codec sizes every
// section exactly before writing it, and bounds every read by the input.
// Not thread-safe: one writer or reader per stream.
#ifndef SHEFL_COMMON_SPARSE_BIT_IO_H_
#define SHEFL_COMMON_SPARSE_BIT_IO_H_

#include <cstdint>
#include <cstring>

namespace shefl {

inline uint64_t LoadLe64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

inline void StoreLe64(uint8_t* p, uint64_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  std::memcpy(p, &v, sizeof(v));
}

// Appends bits to a buffer the caller sized for exactly the bits it will
// write, rounded up to a byte. Whole 64-bit words are stored only once all
// their bits are written, so no store passes the end of that buffer; Finish
// stores the last partial word byte by byte, its unused high bits zero.
class BitWriter {
 public:
  explicit BitWriter(uint8_t* out) : p_(out) {}

  // Appends the low `bits` bits of v (bits <= 64; v's higher bits zero).
  void Put(uint64_t v, unsigned bits) {
    acc_ |= v << n_;  // n_ < 64 always
    n_ += bits;
    if (n_ >= 64) {
      StoreLe64(p_, acc_);
      p_ += 8;
      n_ -= 64;
      // The bits of v that did not fit (none when v ended the word exactly).
      acc_ = n_ == 0 ? 0 : v >> (bits - n_);
    }
  }

  // Appends `count` zero bits (any count: a long unary run).
  void PutZeros(uint64_t count) {
    const uint64_t total = n_ + count;
    if (total < 64) {
      n_ = static_cast<unsigned>(total);
      return;
    }
    StoreLe64(p_, acc_);
    p_ += 8;
    acc_ = 0;
    for (uint64_t w = total / 64 - 1; w > 0; --w) {
      StoreLe64(p_, 0);
      p_ += 8;
    }
    n_ = static_cast<unsigned>(total % 64);
  }

  // Stores the partial word; returns the byte after the stream.
  uint8_t* Finish() {
    for (unsigned b = 0; b < n_; b += 8) *p_++ = static_cast<uint8_t>(acc_ >> b);
    n_ = 0;
    acc_ = 0;
    return p_;
  }

 private:
  uint8_t* p_;
  uint64_t acc_ = 0;  // bits written but not stored, from bit 0 up
  unsigned n_ = 0;    // how many
};

// Random access to the bits of [begin, end). Reads past end see zeros, so a
// caller that reads a field past the end learns it from its position, never
// from a fault.
class BitReader {
 public:
  BitReader(const uint8_t* begin, const uint8_t* end)
      : begin_(begin), size_(static_cast<uint64_t>(end - begin)) {}

  uint64_t size_bits() const { return size_ * 8; }

  // Bits [pos, pos + 57) as the low bits of the result (at least 57 bits
  // are valid: one unaligned load from the byte holding pos).
  uint64_t Peek(uint64_t pos) const {
    const uint64_t byte = pos >> 3;
    uint64_t w;
    if (byte + 8 <= size_) {
      w = LoadLe64(begin_ + byte);
    } else {
      uint8_t tail[8] = {0};
      if (byte < size_) std::memcpy(tail, begin_ + byte, size_ - byte);
      w = LoadLe64(tail);
    }
    return w >> (pos & 7);
  }

  // `bits` bits (<= 57) at pos.
  uint64_t Get(uint64_t pos, unsigned bits) const {
    return Peek(pos) & ((uint64_t{1} << bits) - 1);
  }

 private:
  const uint8_t* begin_;
  uint64_t size_;
};

}  // namespace shefl

#endif  // SHEFL_COMMON_SPARSE_BIT_IO_H_
