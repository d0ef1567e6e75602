"""The session id of secure aggregation in Python
(shefl_client.secure.session_id) is the C++ one
(common/secure/session_id.h): the session encoding is the bytes the C++
library made for tests/secure_masks_test.cc's session, every parameter
changes the id, and inconsistent parameters are refused."""
import unittest

from shefl_client.secure import primitives as prim
from shefl_client.secure.session_id import encode_session_params, make_session_id

from secure_support import hash_of, kat_params


class CppValues(unittest.TestCase):
    """The session encoding the C++ library printed for the pinned session
    (written down here, not recomputed)."""

    def test_the_session_encoding_is_the_cpp_bytes(self):
        self.assertEqual(
            encode_session_params(kat_params()).hex(),
            "736865666c207369642076310000000872756e2d323032340000000000000003000000010000"
            "00030000000a000000140000001e0000000300000002000000183fe0000000000000a1860308"
            "6e5bdf9df88ccc9f5a083fed093e819976e87456b74dafcbd70111149372c470eeadd5ecd9c3"
            "c74c2b3cb633f8e2f2fad799250a0f70d652b6b825e4")


class SessionIds(unittest.TestCase):
    def test_the_session_id_covers_every_parameter_and_refuses_inconsistent_ones(self):
        base = kat_params()
        sid = make_session_id(base)
        ordered = kat_params()
        ordered.roster = [10, 20, 30]
        self.assertEqual(make_session_id(ordered), sid)  # the roster's order does not matter
        changes = [("run_id", "run-2025"), ("round", 4), ("model", 2), ("roster", [10, 20, 31]),
                   ("t", 3), ("scale_bits", 23), ("clip", 0.25),
                   ("support_hash", b"\x01" + hash_of("support")[1:]),
                   ("model_hash", hash_of("model")[:31] + b"\x80")]
        ids = {sid}
        for name, value in changes:
            p = kat_params()
            setattr(p, name, value)
            ids.add(make_session_id(p))
        p = kat_params()
        p.roster, p.n = [10, 20, 30, 40], 4
        ids.add(make_session_id(p))
        self.assertEqual(len(ids), 11)
        for name, value in [("roster", [10, 10, 20]), ("n", 4), ("t", 0), ("t", 4), ("clip", 0.0),
                            ("clip", float("nan")), ("clip", float("inf")), ("round", -1),
                            ("model", 1 << 32), ("support_hash", bytes(31))]:
            p = kat_params()
            setattr(p, name, value)
            with self.assertRaises(prim.InvalidArgument, msg=name):
                make_session_id(p)


if __name__ == "__main__":
    unittest.main()
