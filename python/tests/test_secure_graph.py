"""SecAgg+ in the Python party (shefl_client.secure.neighbour_graph and the
party's graph rules): the graph of a seed is the C++ one (the ring pinned in
tests/secure_secagg_plus_test.cc), the session id of a graph session is the
C++ bytes ("shefl sid v2" with the degree), a party refuses a box from a
non-neighbour, and a run above secure.graph_above (six parties, degree 4)
mixing C++ daemons and a Python party gives the models of a C++-only graph
run and of an all-pairs run, bit for bit: masks restricted to the graph
cancel and the neighbourhoods' shares unmask the exact sum."""
import json
import os
import shutil
import sys
import tempfile
import unittest

from shefl_client.secure import primitives as prim
from shefl_client.secure.messages import Roster, ShareBox
from shefl_client.secure.neighbour_graph import NeighbourGraph
from shefl_client.secure.party import SecureParty
from shefl_client.secure.session_id import SessionParams, encode_session_params, make_session_id

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_mixed_run import jsonl, shefl_run  # noqa: E402
from test_secure_run import CONFIG, MIN_PARTIES, python_flags  # noqa: E402


def kat_params():
    return SessionParams(run_id="graph-kat", round=3, model=1, roster=list(range(1, 9)), n=8,
                         t=4, scale_bits=16, clip=1.0, degree=4)


class Graphs(unittest.TestCase):
    def test_the_graph_of_a_seed_is_the_cpp_ring(self):
        g = NeighbourGraph.make(bytes(range(32)), list(range(1, 11)), 4)
        self.assertEqual(g.ring, [10, 5, 6, 4, 8, 2, 7, 3, 9, 1])
        self.assertEqual(g.neighbours(10), [1, 5, 6, 9])
        self.assertTrue(g.adjacent(10, 9) and not g.adjacent(10, 4))
        whole = NeighbourGraph.make(bytes(32), [5, 1, 3], 2)
        self.assertTrue(whole.complete)
        self.assertEqual(whole.neighbours(3), [1, 5])
        with self.assertRaisesRegex(prim.InvalidArgument, "degree must be even"):
            NeighbourGraph.make(bytes(32), list(range(10)), 3)

    def test_a_graph_session_id_is_the_cpp_v2_bytes(self):
        p = kat_params()
        sid = make_session_id(p)
        self.assertEqual(sid.hex(),
                         "2af7c063bb3b22494dbcdf10922226cef51f89729bdf1f13b4eb383b43dfedc9")
        self.assertEqual(NeighbourGraph.make(sid, p.roster, 4).ring, [3, 6, 7, 2, 4, 5, 8, 1])
        self.assertEqual(encode_session_params(p)[:12], b"shefl sid v2")
        p.degree = 0
        self.assertEqual(encode_session_params(p)[:12], b"shefl sid v1")
        for bad in (3, 7):
            p.degree = bad
            with self.assertRaisesRegex(prim.InvalidArgument, "degree = %d" % bad):
                encode_session_params(p)

    def test_boxes_go_to_neighbours_only_and_a_strangers_box_is_refused(self):
        p = kat_params()
        parties = {i: SecureParty.create(i) for i in p.roster}
        roster = Roster(p, [parties[i].advert() for i in p.roster])
        g = NeighbourGraph.make(make_session_id(p), p.roster, 4)
        boxes = {i: parties[i].share_boxes(roster) for i in p.roster}
        for i, sent in boxes.items():
            self.assertEqual(sorted(b.to for b in sent), g.neighbours(i))
        stranger = next(i for i in p.roster if i != 3 and not g.adjacent(3, i))
        forged = ShareBox(stranger, 3, boxes[stranger][0].box)
        with self.assertRaisesRegex(prim.InvalidArgument, "is not one party 3 takes"):
            parties[3].take_boxes([forged])
        bad = Roster(SessionParams(**{**p.__dict__, "t": 2}), roster.keys)
        with self.assertRaisesRegex(prim.PermissionDenied, "degree 4: 5 holders"):
            SecureParty.create(1).share_boxes(bad)


GRAPH = ("--set", "secure.graph_above=4", "--set", "secure.graph_degree=4")


class GraphRuns(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="shefl-py-graph-")
        cls.runs = {}
        # Six parties: five C++ daemons and a Python party of one client.
        for name, flags in (("cpp", ("--daemons", "6") + GRAPH),
                            ("mixed", ("--daemons", "5") + python_flags("5") + GRAPH),
                            ("pairs", ("--daemons", "6"))):
            out = os.path.join(cls.tmp, name)
            cls.runs[name] = (out, shefl_run(
                cls.tmp, CONFIG % name, out, "--set", "aggregation.secure=common_support",
                "--set", MIN_PARTIES, *flags))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_a_mixed_graph_run_equals_cpp_graph_and_all_pairs_runs(self):
        sums = {}
        for name, (out, proc) in self.runs.items():
            self.assertEqual(proc.returncode, 0, proc.stdout)
            for line in jsonl(os.path.join(out, "rounds.jsonl")):
                for model, s in line["secure"].items():
                    self.assertEqual(s["outcome"], "finished", "%s %s" % (name, line))
                    self.assertEqual(s["degree"], 0 if name == "pairs" else 4)
                    self.assertEqual(s["threshold"], 5 if name == "pairs" else 4)
            with open(os.path.join(out, "summary.json")) as f:
                sums[name] = json.load(f)["model_sha256"]
        self.assertEqual(len(sums["cpp"]), 2)
        self.assertEqual(sums["mixed"], sums["cpp"])
        self.assertEqual(sums["cpp"], sums["pairs"])


if __name__ == "__main__":
    unittest.main()
