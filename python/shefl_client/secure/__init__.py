"""Secure aggregation in Python, byte for byte the C++ library, so that a
Python client and C++ daemons are parties of one session (docs/DESIGN.md,
"Secure aggregation"; docs/PYTHON.md). Each module is named after the C++
file it mirrors:

    primitives       common/secure/bytes.h, x25519.h, hkdf.h, sha256.h,
                     aes_ctr.h and aes_gcm.h (no single twin: the
                     cryptographic primitives, through OpenSSL, and the
                     C++ status codes as exceptions)
    session_id       common/secure/session_id.h
    shamir           common/secure/shamir.h, with shamir_share.h and gf61.h
    share_box        common/secure/share_box.h
    masks            common/secure/masks.h
    fixed_point      common/secure/fixed_point.h
    messages         common/secure/messages.h
    party            common/secure/party.h (SecureParty)
    secure_input     common/secure/secure_input.h
    secure_sessions  client/secure_sessions.h (SecureSessions: a client's
                     parties, one per round and model); it also turns the
                     messages to and from their proto/ form, as
                     secure_wire.h does for the C++ daemon

The coordinator's side (common/secure/collector.h) has no Python twin: a
Python client is only ever a party. Importing this package imports none of
its modules; secure_sessions alone needs torch and gRPC."""
