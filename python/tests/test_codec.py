"""shefl_client.codec against the C++ codec's own vectors
(tests/data/codec_vectors.json, written and checked by codec_vectors_test):
the same bytes for every delta, form and value type; the same refusals,
word for word, for deltas the encoder refuses and bytes the decoder
refuses. Run: PYTHONPATH=python python3 -m unittest discover -s python/tests
"""
import json
import os
import unittest

import numpy as np

from shefl_client import codec
from support import ROOT

VECTORS = os.path.join(ROOT, "tests", "data", "codec_vectors.json")


def load():
    with open(VECTORS) as f:
        return json.load(f)


def values_of(v):
    return np.array(v["value_bits"], dtype=np.uint32).view(np.float32)


class EncoderParity(unittest.TestCase):
    def test_every_form_and_value_type_byte_for_byte(self):
        checked = 0
        for v in load()["encodings"]:
            for vt, enc in v["encodings"].items():
                with self.subTest(v["name"], value_type=vt):
                    got = codec.encode(v["d"], v["indices"], values_of(v), vt)
                    self.assertEqual(got.hex(), enc["smallest"])
                    idx = np.array(v["indices"], dtype=np.uint32)
                    self.assertEqual(codec.plan_format(v["d"], idx), enc["format"])
                for fmt, hexbytes in enc["as"].items():
                    with self.subTest(v["name"], value_type=vt, form=fmt):
                        got = codec.encode(v["d"], v["indices"], values_of(v), vt, fmt)
                        self.assertEqual(got.hex(), hexbytes)
                        checked += 1
        self.assertGreater(checked, 80)

    def test_refusals_say_what_the_cpp_encoder_says(self):
        for e in load()["encode_errors"]:
            with self.subTest(e["name"]):
                with self.assertRaises(codec.CodecError) as cm:
                    codec.encode(e["d"], e["indices"], values_of(e), e["value_type"])
                self.assertEqual(str(cm.exception), e["error"])


class DecoderParity(unittest.TestCase):
    def test_every_vector_decodes_to_its_delta(self):
        for v in load()["encodings"]:
            for vt, enc in v["encodings"].items():
                for fmt, hexbytes in enc["as"].items():
                    with self.subTest(v["name"], value_type=vt, form=fmt):
                        idx, vals = codec.decode(bytes.fromhex(hexbytes), v["d"], v["d"])
                        self.assertEqual(idx.tolist(), v["indices"])
                        # Decoding then encoding again gives the same bytes.
                        again = codec.encode(v["d"], idx, vals, vt, fmt)
                        self.assertEqual(again.hex(), hexbytes)
                        if vt == "fp32":
                            self.assertEqual(vals.view(np.uint32).tolist(), v["value_bits"])

    def test_refusals_say_what_the_cpp_decoder_says(self):
        cases = load()["decode_errors"]
        self.assertGreater(len(cases), 20)
        for e in cases:
            with self.subTest(e["name"]):
                with self.assertRaises(codec.CodecError) as cm:
                    codec.decode(bytes.fromhex(e["bytes"]), e["expected_dim"], e["max_k"])
                self.assertEqual(str(cm.exception), e["error"])


if __name__ == "__main__":
    unittest.main()
