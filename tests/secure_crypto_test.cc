// Known-answer tests of the cryptographic primitives of secure aggregation
// (common/secure/): X25519 against RFC 7748 (section 5.2's vectors and
// iterations, section 6.1's Diffie-Hellman), HKDF-SHA256 against RFC 5869's
// test cases 1 to 3, SHA-256 against FIPS 180's "abc", AES-256-CTR against
// NIST SP 800-38A F.5.5, AES-256-GCM against test case 16 of McGrew and
// Viega's GCM specification; then the refusals: a small-order X25519 key,
// any changed bit of a GCM box, and a share box opened in another session,
// direction or pair.
#include <cstdint>
#include <string>
#include <vector>

#include "common/secure/aes_ctr.h"
#include "common/secure/aes_gcm.h"
#include "common/secure/bytes.h"
#include "common/secure/hkdf.h"
#include "common/secure/session_id.h"
#include "common/secure/sha256.h"
#include "common/secure/shamir.h"
#include "common/secure/share_box.h"
#include "common/secure/x25519.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

Bytes Hex(const std::string& hex) {
  absl::StatusOr<Bytes> b = FromHex(hex);
  REQUIRE(b.ok());
  return *b;
}

Bytes Repeat(uint8_t v, size_t n) { return Bytes(n, v); }

Bytes Range(int from, int to) {  // from, from+1, ..., to-1
  Bytes b;
  for (int v = from; v < to; ++v) b.push_back(static_cast<uint8_t>(v));
  return b;
}

std::string X25519Hex(const std::string& scalar, const std::string& u) {
  absl::StatusOr<SecretKey32> out = X25519SharedSecret(Hex(scalar), Hex(u));
  REQUIRE(out.ok());
  return ToHex(*out);
}

TEST_CASE("X25519 gives RFC 7748 section 5.2's outputs") {
  CHECK(
      X25519Hex(
          "a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
          "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c") ==
      "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552");
  // The input u has its top bit set, which X25519 must ignore.
  CHECK(
      X25519Hex(
          "4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d",
          "e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493") ==
      "95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957");
}

TEST_CASE("X25519 iterated 1 and 1000 times gives RFC 7748's values") {
  SecretKey32 k, u;
  k.data()[0] = u.data()[0] = 9;
  for (int i = 1; i <= 1000; ++i) {
    absl::StatusOr<SecretKey32> next = X25519SharedSecret(k, u);
    REQUIRE(next.ok());
    u = std::move(k);
    k = *std::move(next);
    if (i == 1)
      CHECK(ToHex(k) ==
            "422c8e7a6227d7bca1350b3e2bb7279f7897b87bb6854b783c60e80311ae3079");
  }
  CHECK(ToHex(k) ==
        "684cf59ba83309552800ef566f2f4d3c1c3887c49360e3875f2eb94d99532c51");
}

TEST_CASE("X25519 Diffie-Hellman of RFC 7748 section 6.1") {
  absl::StatusOr<X25519KeyPair> alice = X25519KeyPairFromPrivate(
      Hex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"));
  absl::StatusOr<X25519KeyPair> bob = X25519KeyPairFromPrivate(
      Hex("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb"));
  REQUIRE(alice.ok());
  REQUIRE(bob.ok());
  CHECK(ToHex(alice->public_key) ==
        "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
  CHECK(ToHex(bob->public_key) ==
        "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f");
  absl::StatusOr<SecretKey32> ab =
      X25519SharedSecret(alice->private_key, bob->public_key);
  absl::StatusOr<SecretKey32> ba =
      X25519SharedSecret(bob->private_key, alice->public_key);
  REQUIRE(ab.ok());
  REQUIRE(ba.ok());
  CHECK(ToHex(*ab) ==
        "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742");
  CHECK(*ab == *ba);
}

TEST_CASE("X25519 fresh key pairs agree and differ from each other") {
  absl::StatusOr<X25519KeyPair> a = GenerateX25519KeyPair();
  absl::StatusOr<X25519KeyPair> b = GenerateX25519KeyPair();
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->private_key != b->private_key);
  CHECK(a->public_key != b->public_key);
  absl::StatusOr<X25519KeyPair> again =
      X25519KeyPairFromPrivate(a->private_key);
  REQUIRE(again.ok());
  CHECK(again->public_key == a->public_key);
  absl::StatusOr<SecretKey32> ab =
      X25519SharedSecret(a->private_key, b->public_key);
  absl::StatusOr<SecretKey32> ba =
      X25519SharedSecret(b->private_key, a->public_key);
  REQUIRE(ab.ok());
  REQUIRE(ba.ok());
  CHECK(*ab == *ba);
}

TEST_CASE("X25519 refuses small-order peer keys and wrong sizes") {
  absl::StatusOr<X25519KeyPair> a = GenerateX25519KeyPair();
  REQUIRE(a.ok());
  // u = 0 and u = 1 are points of small order: the agreement is all zeros
  // whatever the private key.
  Key32 zero{}, one{};
  one[0] = 1;
  for (const Key32& bad : {zero, one}) {
    absl::StatusOr<SecretKey32> s = X25519SharedSecret(a->private_key, bad);
    CHECK(s.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(s.status().message().find("small order") != std::string::npos);
  }
  CHECK_FALSE(X25519SharedSecret(Bytes(31, 1), a->public_key).ok());
  CHECK_FALSE(X25519SharedSecret(a->private_key, Bytes(33, 1)).ok());
  CHECK_FALSE(X25519KeyPairFromPrivate(Bytes(16, 1)).ok());
}

std::string HkdfHex(const Bytes& ikm, const Bytes& salt, const Bytes& info,
                    size_t length) {
  absl::StatusOr<SecretBytes> okm = HkdfSha256(ikm, salt, info, length);
  REQUIRE(okm.ok());
  return ToHex(*okm);
}

TEST_CASE("HKDF-SHA256 gives RFC 5869's test cases 1 to 3") {
  CHECK(HkdfHex(Repeat(0x0b, 22), Hex("000102030405060708090a0b0c"),
                Hex("f0f1f2f3f4f5f6f7f8f9"), 42) ==
        "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf3400"
        "7208d5b887185865");
  CHECK(HkdfHex(Range(0x00, 0x50), Range(0x60, 0xb0), Range(0xb0, 0x100), 82) ==
        "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c5904"
        "5a99cac7827271cb41c65e590e09da3275600c2f09b8367793a9aca3db71cc30c581"
        "79ec3e87c14c01d5c1f3434f1d87");
  // Empty salt and info.
  CHECK(HkdfHex(Repeat(0x0b, 22), {}, {}, 42) ==
        "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d20"
        "1395faa4b61a96c8");
}

TEST_CASE(
    "HKDF-SHA256 refuses lengths beyond RFC 5869's bound and empty keys") {
  CHECK(HkdfSha256(Repeat(1, 32), {}, {}, 255 * 32).ok());
  CHECK_FALSE(HkdfSha256(Repeat(1, 32), {}, {}, 255 * 32 + 1).ok());
  CHECK_FALSE(HkdfSha256(Repeat(1, 32), {}, {}, 0).ok());
  CHECK_FALSE(HkdfSha256({}, {}, {}, 32).ok());
  absl::StatusOr<SecretKey32> k = HkdfSha256Key(Repeat(0x0b, 22), {}, {});
  REQUIRE(k.ok());
  CHECK(ToHex(*k) ==
        "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d");
}

TEST_CASE("SHA-256 of abc is FIPS 180's digest") {
  absl::StatusOr<Key32> d = Sha256(AsBytes("abc"));
  REQUIRE(d.ok());
  CHECK(ToHex(*d) ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("AES-256-CTR gives NIST SP 800-38A F.5.5") {
  const Bytes key =
      Hex("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4");
  const Bytes iv = Hex("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff");
  const Bytes plain =
      Hex("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51"
          "30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710");
  absl::StatusOr<SecretBytes> ks = AesCtrKeystream(key, iv, plain.size());
  REQUIRE(ks.ok());
  Bytes cipher(plain.size());
  for (size_t i = 0; i < plain.size(); ++i) cipher[i] = plain[i] ^ (*ks)[i];
  CHECK(ToHex(cipher) ==
        "601ec313775789a5b7a7f504bbf3d228f443e3ca4d62b59aca84e990cacaf5c5"
        "2b0930daa23de94ce87017ba2d84988ddfc9c58db67aada613c2dd08457941a6");
}

TEST_CASE("AES-CTR mask words are the zero-IV keystream read little-endian") {
  const Bytes key = Range(1, 33);
  absl::StatusOr<SecretBytes> ks = AesCtrKeystream(key, Bytes(16, 0), 4 * 1000);
  absl::StatusOr<SecretWords> words = AesCtrWords(key, 1000);
  REQUIRE(ks.ok());
  REQUIRE(words.ok());
  REQUIRE(words->size() == 1000);
  for (size_t i = 0; i < 1000; i += 37) {
    const uint8_t* p = ks->data() + 4 * i;
    CHECK((*words)[i] ==
          (p[0] | p[1] << 8 | p[2] << 16 | static_cast<uint32_t>(p[3]) << 24));
  }
  // A longer stream begins with the shorter one (one counter, no restart).
  absl::StatusOr<SecretWords> longer = AesCtrWords(key, 3 << 18);
  REQUIRE(longer.ok());
  CHECK(std::equal(words->begin(), words->end(), longer->begin()));
  CHECK_FALSE(AesCtrWords(Bytes(16, 1), 4).ok());  // AES-128 key: refused
}

// McGrew and Viega, "The Galois/Counter Mode of Operation", test case 16:
// AES-256, 96-bit IV, 60 bytes of plaintext, 20 bytes of AAD.
struct GcmCase {
  Bytes key =
      Hex("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308");
  Bytes nonce = Hex("cafebabefacedbaddecaf888");
  Bytes plain =
      Hex("d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
          "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39");
  Bytes aad = Hex("feedfacedeadbeeffeedfacedeadbeefabaddad2");
  std::string sealed_hex =
      "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
      "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662"
      "76fc6ece0f4e1768cddf8853bb2d551b";  // the tag
};

TEST_CASE("AES-256-GCM seals and opens GCM test case 16") {
  const GcmCase c;
  absl::StatusOr<Bytes> sealed = AesGcmSeal(c.key, c.nonce, c.plain, c.aad);
  REQUIRE(sealed.ok());
  CHECK(ToHex(*sealed) == c.sealed_hex);
  absl::StatusOr<SecretBytes> opened = AesGcmOpen(c.key, c.nonce, *sealed, c.aad);
  REQUIRE(opened.ok());
  CHECK(*opened == c.plain);
}

TEST_CASE(
    "AES-256-GCM refuses any changed bit of ciphertext, tag, AAD or nonce") {
  const GcmCase c;
  const Bytes sealed = Hex(c.sealed_hex);
  auto refused = [&](const Bytes& key, const Bytes& nonce, const Bytes& box,
                     const Bytes& aad) {
    absl::StatusOr<SecretBytes> out = AesGcmOpen(key, nonce, box, aad);
    return out.status().code() == absl::StatusCode::kDataLoss;
  };
  // Every bit of the ciphertext and of the tag.
  for (size_t bit = 0; bit < 8 * sealed.size(); ++bit) {
    Bytes bad = sealed;
    bad[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    INFO("bit " << bit);
    CHECK(refused(c.key, c.nonce, bad, c.aad));
  }
  for (size_t bit = 0; bit < 8 * c.aad.size(); ++bit) {
    Bytes bad = c.aad;
    bad[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    CHECK(refused(c.key, c.nonce, sealed, bad));
  }
  for (size_t bit = 0; bit < 8 * c.nonce.size(); bit += 7) {
    Bytes bad = c.nonce;
    bad[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    CHECK(refused(c.key, bad, sealed, c.aad));
  }
  Bytes other_key = c.key;
  other_key[31] ^= 0x80;
  CHECK(refused(other_key, c.nonce, sealed, c.aad));
  CHECK(
      refused(c.key, c.nonce, Bytes(sealed.begin(), sealed.end() - 1), c.aad));
  CHECK(
      refused(c.key, c.nonce, Bytes(sealed.begin() + 1, sealed.end()), c.aad));
  CHECK(refused(c.key, c.nonce, Bytes(15, 0), c.aad));
  CHECK(refused(c.key, c.nonce, sealed, {}));  // AAD dropped
}

// Two parties with encryption key pairs, and a session.
struct BoxFixture {
  X25519KeyPair u = *GenerateX25519KeyPair();
  X25519KeyPair v = *GenerateX25519KeyPair();
  X25519KeyPair w = *GenerateX25519KeyPair();
  SessionId sid = SidOf(1);
  static SessionId SidOf(uint64_t round) {
    SessionParams p;
    p.run_id = "box-test";
    p.round = round;
    p.roster = {7, 9, 11};
    p.n = 3;
    p.t = 2;
    p.scale_bits = 24;
    p.clip = 1.0;
    absl::StatusOr<SessionId> sid = MakeSessionId(p);
    REQUIRE(sid.ok());
    return *sid;
  }
};

PeerShares SomeShares() {
  absl::StatusOr<std::vector<ShamirShare>> b = ShamirSplit(Range(1, 17), 2, 3);
  absl::StatusOr<std::vector<ShamirShare>> s = ShamirSplit(Range(50, 82), 2, 3);
  REQUIRE(b.ok());
  REQUIRE(s.ok());
  return PeerShares{(*b)[1], (*s)[1]};
}

TEST_CASE("a share box is 100 bytes and opens for its receiver only") {
  const BoxFixture f;
  const PeerShares shares = SomeShares();
  const SecretBytes plain = PackPeerShares(shares);
  CHECK(plain.size() == kPeerSharesBytes);
  absl::StatusOr<Bytes> box =
      SealShareBox(plain, f.sid, 7, 9, f.u.private_key, f.v.public_key);
  REQUIRE(box.ok());
  CHECK(box->size() == kShareBoxBytes);
  CHECK(box->size() == 100);
  absl::StatusOr<SecretBytes> opened =
      OpenShareBox(*box, f.sid, 7, 9, f.v.private_key, f.u.public_key);
  REQUIRE(opened.ok());
  CHECK(*opened == plain);
  absl::StatusOr<PeerShares> back = UnpackPeerShares(*opened);
  REQUIRE(back.ok());
  CHECK(back->self_seed.x == shares.self_seed.x);
  CHECK(back->self_seed.y == shares.self_seed.y);
  CHECK(back->mask_private.y == shares.mask_private.y);
  // A third party with its own keys cannot open it.
  CHECK_FALSE(
      OpenShareBox(*box, f.sid, 7, 9, f.w.private_key, f.u.public_key).ok());
  // Two boxes of one plaintext differ (random nonces).
  absl::StatusOr<Bytes> again =
      SealShareBox(plain, f.sid, 7, 9, f.u.private_key, f.v.public_key);
  REQUIRE(again.ok());
  CHECK(*again != *box);
}

TEST_CASE(
    "a share box is refused in another session, direction or pair, or "
    "changed") {
  const BoxFixture f;
  const SecretBytes plain = PackPeerShares(SomeShares());
  absl::StatusOr<Bytes> box =
      SealShareBox(plain, f.sid, 7, 9, f.u.private_key, f.v.public_key);
  REQUIRE(box.ok());
  auto code = [&](const Bytes& b, const SessionId& sid, uint32_t from,
                  uint32_t to) {
    return OpenShareBox(b, sid, from, to, f.v.private_key, f.u.public_key)
        .status()
        .code();
  };
  CHECK(code(*box, f.sid, 7, 9) == absl::StatusCode::kOk);
  CHECK(code(*box, BoxFixture::SidOf(2), 7, 9) == absl::StatusCode::kDataLoss);
  CHECK(code(*box, f.sid, 9, 7) == absl::StatusCode::kDataLoss);  // swapped
  CHECK(code(*box, f.sid, 7, 11) == absl::StatusCode::kDataLoss);
  CHECK(code(*box, f.sid, 11, 9) == absl::StatusCode::kDataLoss);
  for (size_t byte : {0, 5, 11, 12, 50, 83, 84, 99}) {  // nonce, text, tag
    Bytes bad = *box;
    bad[byte] ^= 0x01;
    INFO("byte " << byte);
    CHECK(code(bad, f.sid, 7, 9) == absl::StatusCode::kDataLoss);
  }
  CHECK(code(Bytes(box->begin(), box->begin() + 27), f.sid, 7, 9) ==
        absl::StatusCode::kDataLoss);
  // The same key serves v -> u; a box sealed that way opens only as v -> u.
  absl::StatusOr<Bytes> back =
      SealShareBox(plain, f.sid, 9, 7, f.v.private_key, f.u.public_key);
  REQUIRE(back.ok());
  CHECK(OpenShareBox(*back, f.sid, 9, 7, f.u.private_key, f.v.public_key).ok());
  CHECK_FALSE(
      OpenShareBox(*back, f.sid, 7, 9, f.u.private_key, f.v.public_key).ok());
}

TEST_CASE("packed peer shares refuse a wrong size and mismatched points") {
  PeerShares shares = SomeShares();
  const SecretBytes plain = PackPeerShares(shares);
  CHECK_FALSE(UnpackPeerShares(Bytes(plain.begin(), plain.end() - 1)).ok());
  shares.mask_private.x += 1;
  CHECK_FALSE(UnpackPeerShares(PackPeerShares(shares)).ok());
}

}  // namespace
}  // namespace shefl
