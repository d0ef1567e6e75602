"""Secure aggregation with Python clients in it
(shefl_client.secure.secure_sessions): runs that mix C++ daemons and a
Python client under aggregation.secure: common_support, started by
`shefl run --python-clients`, finish every session, book what the
coordinator books byte for byte, and give the C++-only run's models bit
for bit, whether the Python party hosts three clients or one;
clear_support gives the same models. Then, without a coordinator: the
support's wire form (decode_index_set) round trips in every index format
and is refused as the C++ refuses it; each client's words and residual
(add_client_input) are those of a plain per-coordinate reading of
common/secure/secure_input.cc, whatever the packing; and the party's
stages (setup, roster, boxes, input, unmasking) go up when the C++
daemon's do, with masks that cancel and books under the party."""
import glob
import json
import os
import shutil
import sys
import tempfile
import unittest

import grpc
import numpy as np
import torch

from shefl_client import books as B
from shefl_client import codec
from shefl_client import rng as R
from shefl_client._proto import shefl_pb2 as pb
from shefl_client.codec_decode import decode_index_set
from shefl_client.codec_layout import CodecError
from shefl_client.compress import ResidualBook
from shefl_client.secure import masks
from shefl_client.secure import shamir
from shefl_client.secure.primitives import InvalidArgument
from shefl_client.secure.secure_input import SecureEncoding, add_client_input, secure_update
from shefl_client.secure.secure_sessions import Link, SecureSessions, support_hash
from shefl_client.secure.session_id import SessionParams, make_session_id
# The mixed-run helpers sit beside this file; it may be run as
# tests.test_secure_run from python/ as well as from python/tests.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_mixed_run import REFERENCE, books, jsonl, read, shefl_run  # noqa: E402

CONFIG = """name: %s
method: shefl
seed: 7
rounds: 3
round_deadline_s: 60
data: {dataset: synthetic, synthetic_train: 1200, synthetic_test: 300, synthetic_features: 16, synthetic_classes: 4}
partition: {scheme: dirichlet, alpha: 1.0}
model: {name: mlp, num_models: 2}
clients: {num_clients: 6, num_hpc: 6, per_round_hpc: 6, per_round_lpc: 0}
train: {lr: 0.05, local_epochs: 1, batch_size: 32}
compression: {density: 0.1, error_feedback: true}
"""
# Four parties when the Python client hosts three clients: below the
# default of 5, so every run of the class sets the same lower bound.
MIN_PARTIES = "secure.min_parties=3"


def python_flags(clients):
    return ("--python-clients", clients, "--python-script", REFERENCE, "--python",
            sys.executable)


def daemon_excess(out):
    """Per round: (the daemons' daemon-wide bytes less the coordinator's)
    per daemon. The coordinator books some daemon-wide traffic outside its
    round lines; a daemon that books each feed message under the round the
    C++ daemon does differs from it by what a C++ daemon differs by."""
    coordinator = {d["round"]: d["daemon_bytes"] for d in jsonl(os.path.join(out, "rounds.jsonl"))}
    paths = glob.glob(os.path.join(out, "daemons", "*.jsonl"))
    daemons = {}
    for path in paths:
        for line in jsonl(path):
            for k, v in line["daemon_bytes"].items():
                daemons.setdefault(line["round"], {}).setdefault(k, 0)
                daemons[line["round"]][k] += v
    return {r: {k: (daemons.get(r, {}).get(k, 0) - v) / len(paths) for k, v in c.items()}
            for r, c in coordinator.items()}


class SecureRuns(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="shefl-py-secure-")
        cls.runs = {}

        def run(name, mode, *flags):
            out = os.path.join(cls.tmp, name)
            cls.runs[name] = (out, shefl_run(cls.tmp, CONFIG % name, out, "--set",
                                             "aggregation.secure=" + mode, "--set", MIN_PARTIES,
                                             *flags))
        run("cpp", "common_support", "--daemons", "6")
        # The Python client is one party of three clients, then of one.
        run("mixed", "common_support", "--daemons", "3", *python_flags("3-5"))
        run("mixed1", "common_support", "--daemons", "5", *python_flags("5"))
        run("clear", "clear_support", "--daemons", "3", *python_flags("3-5"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def out(self, name):
        out, proc = self.runs[name]
        self.assertEqual(proc.returncode, 0, proc.stdout)
        return out

    def models(self, name):
        with open(os.path.join(self.out(name), "summary.json")) as f:
            return json.load(f)["model_sha256"]

    def test_every_session_finishes_with_the_python_party_in_it(self):
        for name, parties in (("cpp", 6), ("mixed", 4), ("mixed1", 6), ("clear", 4)):
            lines = jsonl(os.path.join(self.out(name), "rounds.jsonl"))
            self.assertEqual(len(lines), 3, name)
            for line in lines:
                for model, s in line["secure"].items():
                    where = "%s round %d model %s" % (name, line["round"], model)
                    self.assertEqual(s["outcome"], "finished", where)
                    self.assertEqual((s["survivors"], s["dropped"], s["clients"]), (parties, 0, 6),
                                     where)
                self.assertIn("masked_input", line["secure_bytes"])
        for name in ("mixed", "mixed1", "clear"):
            log = read(os.path.join(self.out(name), "logs", "python-0.log"))
            self.assertRegex(log, r"round 3 client 5 model 1: given to the secure session")
            self.assertNotIn("secure aggregation:", log)
            self.assertNotIn("secure round", log)
            self.assertNotIn("refused", log)

    def test_models_equal_a_cpp_only_run(self):
        cpp = self.models("cpp")
        self.assertEqual(len(cpp), 2)
        self.assertEqual(self.models("mixed"), cpp)
        self.assertEqual(self.models("mixed1"), cpp)

    def test_clear_support_gives_the_common_support_models(self):
        self.assertEqual(self.models("clear"), self.models("cpp"))

    def test_books_agree_byte_for_byte(self):
        cpp_excess = daemon_excess(self.out("cpp"))
        for name, party in (("mixed", "3"), ("mixed1", "5"), ("clear", "3")):
            coordinator, daemons, by_daemon = books(self.out(name))
            self.assertGreater(len(coordinator), 0)
            self.assertEqual(set(coordinator), set(daemons), name)
            for key, counts in coordinator.items():
                self.assertEqual(daemons[key], counts, "%s round %d client %s" % ((name,) + key))
            self.assertIn(int(party), by_daemon["python-0"])
            # The masked inputs go up under the party, as payload.
            for rnd in (1, 2, 3):
                self.assertGreater(daemons[(rnd, party)]["payload_up"], 4 * 4000, name)
            self.assertEqual(daemon_excess(self.out(name)), cpp_excess, name)


# ---------------------------------------------------------------- support

def index_set_bytes(d, indices, fmt=None):
    """EncodeIndexSet: the fp16 encoding of zeros, less its 2k value bytes."""
    idx = np.asarray(indices, dtype=np.uint32)
    whole = codec.encode(d, idx, np.zeros(idx.size, np.float32), "fp16", fmt)
    return whole[:len(whole) - 2 * idx.size]


def random_set(d, k, seed):
    return np.sort(np.random.default_rng(seed).choice(d, size=k, replace=False)).astype(np.uint32)


class IndexSets(unittest.TestCase):
    def test_index_sets_round_trip_in_every_format(self):
        d = 5000
        for k in (0, 1, 40, 500, 2600, 4900):
            s = random_set(d, k, k + 1)
            for fmt in ("varint", "bitmap", "golomb-rice", "elias-fano"):
                back = decode_index_set(index_set_bytes(d, s, fmt), d, d)
                self.assertEqual(back.dtype, np.uint32)
                np.testing.assert_array_equal(back, s, "k = %d, %s" % (k, fmt))
        every = np.arange(100, dtype=np.uint32)
        np.testing.assert_array_equal(decode_index_set(index_set_bytes(100, every, "dense"),
                                                       100, 100), every)
        # The smallest form, as the C++ encoder picks it, costs the header
        # and the indices only.
        s = random_set(10000, 100, 3)
        self.assertEqual(len(index_set_bytes(10000, s)) + 200,
                         len(codec.encode(10000, s, np.zeros(100, np.float32), "fp16")))

    def test_index_sets_are_refused_as_the_cpp_refuses_them(self):
        s = random_set(10000, 100, 3)
        data = index_set_bytes(10000, s)

        def refused(b, d, max_k):
            with self.assertRaises(CodecError) as e:
                decode_index_set(b, d, max_k)
            return str(e.exception)
        self.assertEqual(refused(data, 9999, 10000),
                         "index set: 100 of 10000 coordinates, expected at most 10000 of 9999")
        self.assertEqual(refused(data, 10000, 99),
                         "index set: 100 of 10000 coordinates, expected at most 99 of 10000")
        self.assertIn("truncated", refused(data[:-1], 10000, 10000))
        self.assertEqual(refused(data[:3], 10000, 10000), "index set: not an fp16 codec header")
        self.assertEqual(refused(data[:4], 10000, 10000), "index set: truncated header")
        self.assertEqual(refused(data + b"x", 10000, 10000),
                         "sparse delta: 1 trailing bytes after the value section")
        fp32 = bytes([data[0], 0]) + data[2:]
        self.assertEqual(refused(fp32, 10000, 10000), "index set: not an fp16 codec header")
        # A varint of more than six bytes is cut off where the C++ stops.
        long_d = data[:3] + b"\x80" * 6 + b"\x01" + b"\x00"
        self.assertEqual(refused(long_d, 10000, 10000), "index set: truncated header")


# ------------------------------------------------------------- arithmetic

def encoding(support, clip=0.5, scale_bits=24, rnd=3, model=1):
    return SecureEncoding(np.asarray(support, dtype=np.uint32), clip, scale_bits, 7, rnd, model)


def plain_add(delta, weight, client, e, residual, q):
    """common/secure/secure_input.cc's AddClientInput, one coordinate at a
    time with Python floats and numpy float32 scalars: the reference the
    vectorised add_client_input must meet bit for bit."""
    f32 = np.float32
    x = [f32(v) for v in delta]
    if residual is not None:
        x = [f32(a + f32(b)) for a, b in zip(x, residual)]
    g = R.make_rng(e.seed, R.SECURE_ROUNDING, (e.round, e.model, client))
    scale = 2.0 ** e.scale_bits
    words = []
    for i in e.support:
        v = float(x[i])
        c = e.clip if v > e.clip else -e.clip if v < -e.clip or v != v else v
        w = float(f32(weight * c))
        s = min(max(w, -e.clip), e.clip) * scale
        low = float(np.floor(s))
        n = low + (1.0 if R.uniform01(g) < s - low else 0.0)
        words.append(int(n) & 0xFFFFFFFF)
        x[i] = f32(float(x[i]) - n / scale / weight)
    out = [(a + b) & 0xFFFFFFFF for a, b in zip(q, words)] if q is not None else words
    return np.array(x, np.float32), np.array(out, np.uint32)


class SecureInputs(unittest.TestCase):
    def setUp(self):
        g = np.random.default_rng(5)
        self.d = 400
        self.e = encoding(random_set(self.d, 60, 9))
        self.deltas = {c: (g.standard_normal(self.d) * 0.4).astype(np.float32) for c in range(5)}
        self.deltas[2][self.e.support[:3]] = [np.nan, np.inf, -np.inf]  # clipped or -c
        self.residuals = {c: (g.standard_normal(self.d) * 0.05).astype(np.float32)
                          for c in range(5)}
        self.weights = {c: (c + 1) / 5 for c in range(5)}

    def test_words_and_residuals_are_a_plain_reading_of_the_cpp(self):
        q = None
        for c in range(5):
            r = None if c == 0 else self.residuals[c]
            left, q2 = add_client_input(self.deltas[c], self.weights[c], c, self.e, r, q)
            want_left, want_q = plain_add(self.deltas[c], self.weights[c], c, self.e, r,
                                          None if q is None else list(q))
            np.testing.assert_array_equal(q2, want_q)
            np.testing.assert_array_equal(left, want_left)
            off = np.setdiff1d(np.arange(self.d), self.e.support)
            # Off the support nothing was sent: the residual is x.
            x = self.deltas[c] + (0 if r is None else r)
            np.testing.assert_array_equal(left[off], x[off])
            q = q2

    def test_the_packing_and_order_change_no_word(self):
        def party(clients):
            q = None
            for c in clients:
                _, q = add_client_input(self.deltas[c], self.weights[c], c, self.e,
                                        self.residuals[c], q)
            return q
        whole = party(range(5))
        for packing in ([[0, 1], [2, 3, 4]], [[4, 0], [3], [2, 1]]):
            total = np.zeros(self.e.support.size, np.uint32)
            for p in packing:
                total += party(p)
            np.testing.assert_array_equal(total, whole)
        mass = sum(self.weights.values())
        update = secure_update(whole, mass, self.e)
        self.assertEqual(update.dtype, np.float32)
        self.assertEqual(update.size, self.e.support.size)

    def test_inputs_that_do_not_fit_are_refused(self):
        delta = self.deltas[0]
        for w in (0.0, 1.5, float("nan")):
            with self.assertRaises(InvalidArgument):
                add_client_input(delta, w, 1, self.e, None, None)
        with self.assertRaisesRegex(InvalidArgument, "residual has 3 entries, its update 400"):
            add_client_input(delta, 0.5, 1, self.e, np.zeros(3, np.float32), None)
        with self.assertRaisesRegex(InvalidArgument, "inputs of two sizes"):
            add_client_input(delta, 0.5, 1, self.e, None, np.zeros(3, np.uint32))
        with self.assertRaisesRegex(InvalidArgument, "beyond the model"):
            add_client_input(delta[:10], 0.5, 1, self.e, None, None)
        with self.assertRaises(InvalidArgument):
            secure_update(np.zeros(3, np.uint32), 1.0, self.e)
        with self.assertRaises(InvalidArgument):
            secure_update(np.zeros(self.e.support.size, np.uint32), 0.0, self.e)


# ------------------------------------------------------------- the party

class FakeStub:
    """The coordinator's Secure call: records each call; `refuse` makes it
    answer FAILED_PRECONDITION."""

    def __init__(self):
        self.calls, self.refuse = [], False

    def Secure(self, call, metadata=(), timeout=None):
        copy = pb.SecureCall()
        copy.CopyFrom(call)
        if self.refuse:
            raise Refused()
        self.calls.append(copy)
        return pb.SecureReply(accepted=True)


class Refused(grpc.RpcError):
    def code(self):
        return grpc.StatusCode.FAILED_PRECONDITION

    def details(self):
        return "refused"


D = 300
ROUND, MODEL = 4, 1


class Daemon:
    """One SecureSessions with its stub, books and residuals."""

    def __init__(self, masked):
        self.stub, self.ledger = FakeStub(), B.Ledger()
        self.residuals = ResidualBook("", 0)
        self.secure = SecureSessions("test", self.ledger, self.residuals, D, 7, masked)
        self.link = Link(self.stub, (), "sid")

    def feed(self, **kind):
        self.secure.on_feed(self.link, pb.FeedMessage(**kind))

    def stages(self):
        return [c.WhichOneof("stage") for c in self.stub.calls]


def setup(party, weights, support):
    return pb.SecureSetup(round=ROUND, model_id=MODEL, party=party,
                          support=index_set_bytes(D, support), scale_bits=24, clip=0.5,
                          weights=[pb.SecureWeight(client_id=c, weight=w)
                                   for c, w in weights.items()])


class Parties(unittest.TestCase):
    def setUp(self):
        g = np.random.default_rng(11)
        self.support = random_set(D, 30, 4)
        self.e = SecureEncoding(self.support, 0.5, 24, 7, ROUND, MODEL)
        self.deltas = {c: (g.standard_normal(D) * 0.3).astype(np.float32) for c in range(4)}

    def q_of(self, clients, weights):
        q = None
        for c in clients:
            _, q = add_client_input(self.deltas[c], weights[c], c, self.e, None, q)
        return q

    def test_clear_support_sends_the_words_once_every_client_is_in(self):
        daemon = Daemon(masked=False)
        weights = {1: 0.5, 2: 1.0, 3: 0.25}
        # Trained before the setup: it waits for it.
        daemon.secure.contribute(daemon.link, ROUND, MODEL, 2, self.deltas[2])
        daemon.feed(secure_setup=setup(1, weights, self.support))
        self.assertEqual(daemon.stages(), [])  # no keys in the clear
        daemon.secure.contribute(daemon.link, ROUND, MODEL, 3, None)  # failed: adds nothing
        self.assertEqual(daemon.stages(), [])
        daemon.secure.contribute(daemon.link, ROUND, MODEL, 1, self.deltas[1])
        self.assertEqual(daemon.stages(), ["input"])
        call = daemon.stub.calls[0]
        self.assertEqual((call.round, call.model_id, call.party, call.session_id),
                         (ROUND, MODEL, 1, "sid"))
        self.assertEqual(call.input.weight, 0.5 + 1.0)  # in client order
        np.testing.assert_array_equal(np.frombuffer(call.input.words, "<u4"),
                                      self.q_of([1, 2], weights))
        # The residual left is staged under the round; the failed client has none.
        left, _ = add_client_input(self.deltas[2], 1.0, 2, self.e, None, None)
        np.testing.assert_array_equal(daemon.residuals.in_force(2, MODEL, ROUND + 1).numpy(),
                                      left)
        self.assertIsNone(daemon.residuals.in_force(3, MODEL, ROUND + 1))
        # Booked under the party and the model: the input as payload.
        self.assertEqual(daemon.ledger.by_client(ROUND)[1],
                         [B.wire_size(call), 0, 0, B.wire_size(pb.SecureReply(accepted=True))])
        self.assertEqual(daemon.ledger.by_model(ROUND)[MODEL][0], B.wire_size(call))
        # Nothing goes twice.
        daemon.secure.contribute(daemon.link, ROUND, MODEL, 1, self.deltas[1])
        self.assertEqual(len(daemon.stub.calls), 1)

    def test_a_refused_input_puts_the_residual_before_it_back(self):
        daemon = Daemon(masked=False)
        before = torch.full((D,), 0.125)
        daemon.residuals.stage(0, MODEL, ROUND - 1, before)
        daemon.feed(secure_setup=setup(0, {0: 1.0}, self.support))
        daemon.stub.refuse = True
        daemon.secure.contribute(daemon.link, ROUND, MODEL, 0, self.deltas[0])
        self.assertEqual(daemon.ledger.by_client(ROUND), {})  # refused: not booked
        np.testing.assert_array_equal(daemon.residuals.in_force(0, MODEL, ROUND + 1).numpy(),
                                      before.numpy())

    def test_masked_parties_send_each_stage_and_their_masks_cancel(self):
        a, b = Daemon(masked=True), Daemon(masked=True)
        wa, wb = {0: 1.0}, {2: 0.5, 3: 0.75}
        a.feed(secure_setup=setup(0, wa, self.support))
        b.secure.contribute(b.link, ROUND, MODEL, 3, self.deltas[3])  # before its setup
        b.feed(secure_setup=setup(2, wb, self.support))
        self.assertEqual((a.stages(), b.stages()), (["keys"], ["keys"]))
        keys = [a.stub.calls[0].keys, b.stub.calls[0].keys]
        self.assertEqual([k.party for k in keys], [0, 2])

        def roster(h):
            return pb.SecureRoster(round=ROUND, model_id=MODEL, run_id="run", threshold=2,
                                   support_hash=h, model_hash=bytes(32), keys=keys)
        # A roster that binds another support is refused: nothing goes up.
        a.feed(secure_roster=roster(support_hash(self.support[1:])))
        self.assertEqual(a.stages(), ["keys"])
        a.feed(secure_roster=roster(support_hash(self.support)))
        b.feed(secure_roster=roster(support_hash(self.support)))
        self.assertEqual((a.stages(), b.stages()), (["keys", "boxes"], ["keys", "boxes"]))
        box_ab, box_ba = a.stub.calls[1].boxes, b.stub.calls[1].boxes
        self.assertEqual([(getattr(x, "from"), x.to, len(x.box)) for x in box_ab.boxes],
                         [(0, 2, 100)])

        # Trained, but the boxes addressed to it are not taken yet: it waits.
        a.secure.contribute(a.link, ROUND, MODEL, 0, self.deltas[0])
        self.assertEqual(a.stages(), ["keys", "boxes"])
        a.feed(secure_boxes=box_ba)
        b.feed(secure_boxes=box_ab)
        self.assertEqual(a.stages()[-1], "input")
        self.assertEqual(b.stages()[-1], "boxes")  # client 2 is not in yet
        b.secure.contribute(b.link, ROUND, MODEL, 2, self.deltas[2])
        self.assertEqual(b.stages()[-1], "input")
        ya = np.frombuffer(a.stub.calls[-1].input.words, "<u4")
        yb = np.frombuffer(b.stub.calls[-1].input.words, "<u4")
        self.assertFalse(np.array_equal(ya, self.q_of([0], wa)))  # masked
        self.assertEqual(b.stub.calls[-1].input.weight, 0.5 + 0.75)

        unmask = pb.SecureUnmask(round=ROUND, model_id=MODEL, survivors=[0, 2])
        a.feed(secure_unmask=unmask)
        b.feed(secure_unmask=unmask)
        shares = a.stub.calls[-1].shares
        self.assertEqual([s.party for s in shares.seed_shares], [0, 2])
        self.assertEqual([len(s.share) for s in shares.seed_shares], [28, 28])
        self.assertEqual(len(shares.key_shares), 0)
        # The coordinator's side: the seeds rebuilt from both replies take
        # the self masks off; the pairwise masks cancel in the sum.
        seeds = {}
        for party in (0, 2):
            got = [shamir.parse_shamir_share(s.share, 16) for d in (a, b)
                   for s in d.stub.calls[-1].shares.seed_shares if s.party == party]
            seeds[party] = shamir.shamir_reconstruct(got, 2, 16)
        sid = make_session_id(SessionParams("run", ROUND, MODEL, [0, 2], 2, 2, 24, 0.5,
                                            support_hash(self.support), bytes(32)))
        np.testing.assert_array_equal(masks.unmask(ya + yb, seeds, {}, {}, sid),
                                      self.q_of([0], wa) + self.q_of([2, 3], wb))
        # Every call and reply booked under the party and the model.
        ups = [B.wire_size(c) for c in a.stub.calls]
        down = B.wire_size(pb.SecureReply(accepted=True))
        self.assertEqual(a.ledger.by_client(ROUND)[0],
                         [ups[2], 0, ups[0] + ups[1] + ups[3], 4 * down])
        self.assertEqual(a.ledger.by_model(ROUND)[MODEL],
                         a.ledger.by_client(ROUND)[0])
        a.secure.round_ended(ROUND)
        a.feed(secure_unmask=unmask)  # the session is gone
        self.assertEqual(len(a.stub.calls), 4)


if __name__ == "__main__":
    unittest.main()
