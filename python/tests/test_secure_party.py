"""The party of secure aggregation in Python (shefl_client.secure.party)
acts as the C++ one (common/secure/party.h): whole sessions of Python
parties with a small collector written here (the C++ SecureCollector's
steps) give the exact sum of the survivors with drops at every stage and
are abandoned below t; a party refuses a minority t, masking with fewer
than t sharers, requests that would reveal an input, tampered or replayed
boxes and stages out of order; pinned secrets derive the C++ keys."""
import copy
import unittest

import numpy as np

from shefl_client import rng as R
from shefl_client.secure import fixed_point as fp
from shefl_client.secure import masks
from shefl_client.secure import primitives as prim
from shefl_client.secure import shamir
from shefl_client.secure import share_box as sbox
from shefl_client.secure.messages import (KeyAdvert, MaskedInput, Roster, ShareBox,
                                          UnmaskRequest)
from shefl_client.secure.party import SecureParty
from shefl_client.secure.session_id import SessionParams, make_session_id

from secure_support import hash_of, hex_words, kat_params, mask_pair


class Collector:
    """The C++ SecureCollector's steps (common/secure/collector.cc), enough
    to drive Python parties: roster, box routing, masked sum, survivors,
    reconstruction from the first t replies, the dropped keys checked
    against their adverts, unmasking. Raises FailedPrecondition where the
    C++ abandons the session."""

    def __init__(self, words, threshold=0, min_parties=5):
        self.params = SessionParams(run_id="test-run", round=4, model=1, scale_bits=24, clip=1.0)
        self.words, self.threshold, self.min_parties = words, threshold, min_parties
        self.adverts, self.boxes, self.weights, self.replies = {}, {}, {}, {}
        self.sum = np.zeros(0, dtype=np.uint32)

    def add_advert(self, a):
        self.adverts[a.party] = a

    def close_adverts(self):
        n = len(self.adverts)
        if n < self.min_parties:
            raise prim.FailedPrecondition("fewer than secure.min_parties = %d" % self.min_parties)
        p = self.params
        p.roster, p.n = sorted(self.adverts), n
        p.t = self.threshold or 2 * n // 3 + 1
        self.sid = make_session_id(p)
        return Roster(p, [self.adverts[i] for i in p.roster])

    def add_boxes(self, from_, boxes):
        assert sorted(b.to for b in boxes) == [i for i in sorted(self.adverts) if i != from_]
        assert all(b.from_ == from_ for b in boxes)
        self.boxes[from_] = boxes

    def close_shares(self):
        if len(self.boxes) < self.params.t:
            raise prim.FailedPrecondition("abandoned after the shares")
        return sorted(self.boxes)

    def boxes_for(self, party):
        return [b for f in sorted(self.boxes) for b in self.boxes[f] if b.to == party]

    def add_input(self, m):
        assert m.party in self.boxes and m.party not in self.weights and m.y.size == self.words
        self.sum = masks.add_masked(self.sum, m.y)
        self.weights[m.party] = m.weight

    def close_inputs(self):
        if len(self.weights) < self.params.t:
            raise prim.FailedPrecondition("abandoned after the inputs")
        self.request = UnmaskRequest(sorted(self.weights),
                                     [i for i in sorted(self.boxes) if i not in self.weights])
        return self.request

    def add_reply(self, r):
        assert sorted(r.seed_shares) == self.request.survivors
        assert sorted(r.key_shares) == self.request.dropped
        self.replies[r.party] = r

    def finish(self):
        t = self.params.t
        if len(self.replies) < t:
            raise prim.FailedPrecondition("%d unmasking replies, t = %d needed"
                                          % (len(self.replies), t))
        replies = [self.replies[p] for p in sorted(self.replies)]
        seeds = {v: shamir.shamir_reconstruct([r.seed_shares[v] for r in replies], t, 16)
                 for v in self.request.survivors}
        dropped = {}
        for d in self.request.dropped:
            key = shamir.shamir_reconstruct([r.key_shares[d] for r in replies], t, 32)
            if prim.x25519_key_pair_from_private(key).public_key != self.adverts[d].mask_public:
                raise prim.DataLoss("the shares of party %d's key do not give its key" % d)
            dropped[d] = key
        public = {v: self.adverts[v].mask_public for v in self.request.survivors}
        total = masks.unmask(self.sum, seeds, dropped, public, self.sid)
        return total, sum(self.weights.values()), self.request.survivors, self.request.dropped


KEYS, SHARES, INPUT, REPLY = 1, 2, 3, 4
WORDS = 300


class Session:
    def __init__(self, n, threshold=0):
        gen = np.random.default_rng(n * 7919 + threshold)
        self.parties = [SecureParty.create(100 + 3 * i) for i in range(n)]  # ids need not be 0..n-1
        self.q = {p.id: gen.integers(0, 1 << 32, WORDS, dtype=np.uint64).astype(np.uint32)
                  for p in self.parties}
        self.collector = Collector(WORDS, threshold)

    def run(self, drop=None):
        """Runs the session; parties in `drop` vanish before the stage named."""
        drop = drop or {}
        c = self.collector

        def here(p, stage):
            return drop.get(p.id, 99) > stage
        for p in self.parties:
            if here(p, KEYS):
                c.add_advert(p.advert())
        roster = c.close_adverts()
        for p in self.parties:
            if here(p, SHARES):
                c.add_boxes(p.id, p.share_boxes(roster))
        c.close_shares()
        for p in self.parties:
            if here(p, INPUT):
                p.take_boxes(c.boxes_for(p.id))
                c.add_input(p.mask(self.q[p.id], 1.5))
        request = c.close_inputs()
        for p in self.parties:
            if here(p, REPLY):
                c.add_reply(p.unmask(request))
        return c.finish()

    def plain_sum(self, who):
        total = np.zeros(WORDS, dtype=np.uint32)
        for i in who:
            total += self.q[i]
        return total


def drop_three(stage):
    return {100: stage, 115: stage, 127: stage}


class Sessions(unittest.TestCase):
    def test_with_nobody_dropped_the_collector_gets_exactly_the_sum(self):
        s = Session(10)
        total, weight, survivors, dropped = s.run()
        self.assertEqual(s.collector.params.t, 7)
        self.assertEqual((len(survivors), dropped, weight), (10, [], 15.0))
        self.assertTrue(np.array_equal(total, s.plain_sum(survivors)))

    def test_30_percent_dropped_at_any_stage_gives_the_survivors_exact_sum(self):
        for stage in (KEYS, SHARES, INPUT, REPLY):
            with self.subTest(stage=stage):
                s = Session(10)
                total, _, survivors, dropped = s.run(drop_three(stage))
                want = [p.id for p in s.parties
                        if stage == REPLY or p.id not in drop_three(stage)]
                self.assertEqual(survivors, want)
                self.assertTrue(np.array_equal(total, s.plain_sum(want)))
                # Only those that sent shares and then no input need their key rebuilt.
                self.assertEqual(dropped, [100, 115, 127] if stage == INPUT else [])

    def test_one_more_dropped_abandons_the_session(self):
        for stage in (SHARES, INPUT, REPLY):
            with self.subTest(stage=stage):
                drop = drop_three(stage)
                drop[103] = stage
                with self.assertRaises(prim.FailedPrecondition):
                    Session(10).run(drop)
        with self.assertRaisesRegex(prim.FailedPrecondition, "secure.min_parties"):
            Session(4).run()

    def setup_six(self):
        s = Session(6)
        c = s.collector
        for p in s.parties:
            c.add_advert(p.advert())
        roster = c.close_adverts()
        self.assertEqual(roster.params.t, 5)
        for p in s.parties:
            c.add_boxes(p.id, p.share_boxes(roster))
        c.close_shares()
        return s, roster

    def test_a_party_refuses_a_minority_t_and_to_mask_with_fewer_than_t_sharers(self):
        s, roster = self.setup_six()
        fresh = SecureParty.create(100)
        # t = 3 of 6 is not a majority: two halves could give up one party's
        # seed and key; the party refuses the roster before sharing anything.
        low = copy.deepcopy(roster)
        low.params.t = 3
        low.keys[0] = fresh.advert()
        with self.assertRaisesRegex(prim.PermissionDenied, "t = 3 of n = 6"):
            fresh.share_boxes(low)
        # Only three of the five peers' boxes reach party 100: with itself,
        # 4 sharers, fewer than t = 5, so it will not mask.
        p = s.parties[0]
        p.take_boxes(s.collector.boxes_for(p.id)[:3])
        with self.assertRaisesRegex(prim.FailedPrecondition, "4 parties shared .* fewer than t = 5"):
            p.mask(s.q[p.id], 1.0)
        p.take_boxes(s.collector.boxes_for(p.id))  # all five: it masks
        self.assertEqual(p.mask(s.q[p.id], 1.0).party, 100)

    def test_a_party_refuses_a_request_that_would_reveal_an_input(self):
        s, _ = self.setup_six()
        p = s.parties[0]
        with self.assertRaises(prim.FailedPrecondition):  # no input sent yet
            p.unmask(UnmaskRequest([100, 103, 106, 109, 112], [115]))
        for q in s.parties:
            q.take_boxes(s.collector.boxes_for(q.id))
            s.collector.add_input(q.mask(s.q[q.id], 1.0))
        all_ids = [100, 103, 106, 109, 112, 115]
        with self.assertRaisesRegex(prim.PermissionDenied, "both the seed and the key of party 103"):
            p.unmask(UnmaskRequest(all_ids, [103]))
        with self.assertRaisesRegex(prim.PermissionDenied, "fewer than t = 5"):
            p.unmask(UnmaskRequest([100, 103, 106, 109], [112, 115]))
        with self.assertRaises(prim.InvalidArgument):
            p.unmask(UnmaskRequest([100, 100, 103, 106, 109, 112], [115]))
        with self.assertRaises(prim.InvalidArgument):  # not a survivor itself
            p.unmask(UnmaskRequest([103, 106, 109, 112, 115], [100]))
        with self.assertRaises(prim.InvalidArgument):  # 118 gave it no shares
            p.unmask(UnmaskRequest([100, 103, 106, 109, 112], [118]))
        first = p.unmask(UnmaskRequest([100, 103, 106, 109, 112], [115]))
        self.assertEqual(sorted(first.key_shares), [115])
        self.assertEqual(sorted(first.seed_shares), [100, 103, 106, 109, 112])
        self.assertTrue(all(v.x == 1 for v in first.seed_shares.values()))  # its point: 1
        again = p.unmask(UnmaskRequest([100, 103, 106, 109, 112], [115]))  # a retry
        self.assertEqual(again, first)
        with self.assertRaisesRegex(prim.PermissionDenied, "answered already"):
            p.unmask(UnmaskRequest([100, 103, 106, 109, 115], [112]))

    def test_boxes_tampered_with_or_from_another_session_are_refused(self):
        a, ra = self.setup_six()
        to0 = a.collector.boxes_for(100)
        self.assertEqual(len(to0), 5)
        p0 = a.parties[0]
        tampered = list(to0)
        bad = bytearray(to0[1].box)
        bad[20] ^= 0x10
        tampered[1] = ShareBox(to0[1].from_, to0[1].to, bytes(bad))
        with self.assertRaises(prim.DataLoss):
            p0.take_boxes(tampered)
        relabelled = list(to0)
        relabelled[0], relabelled[1] = (ShareBox(to0[1].from_, 100, to0[0].box),
                                        ShareBox(to0[0].from_, 100, to0[1].box))
        with self.assertRaises(prim.DataLoss):
            p0.take_boxes(relabelled)
        with self.assertRaises(prim.InvalidArgument):  # two boxes from one party
            p0.take_boxes([to0[0], to0[0]])
        with self.assertRaises(prim.InvalidArgument):  # addressed to another
            p0.take_boxes([a.collector.boxes_for(103)[0]])
        p0.take_boxes(to0)
        # A roster that changes a party's keys is refused by that party.
        b = Session(6)
        for q in b.parties:
            b.collector.add_advert(q.advert())
        rb = b.collector.close_adverts()
        forged = Roster(rb.params, list(rb.keys))
        k = forged.keys[2]
        forged.keys[2] = KeyAdvert(k.party, k.enc_public, bytes([k.mask_public[0] ^ 1])
                                   + k.mask_public[1:])
        with self.assertRaises(prim.PermissionDenied):
            b.parties[2].share_boxes(forged)
        unsorted = Roster(rb.params, rb.keys[::-1])
        with self.assertRaises(prim.InvalidArgument):
            b.parties[2].share_boxes(unsorted)
        with self.assertRaises(prim.InvalidArgument):  # not in the roster
            SecureParty.create(999).share_boxes(rb)
        b.parties[2].share_boxes(rb)
        with self.assertRaisesRegex(prim.FailedPrecondition, "a second roster"):
            b.parties[2].share_boxes(rb)
        # A box replayed from another session: its keys and id are not this one's.
        b.parties[0].share_boxes(rb)
        replayed = [x for x in to0 if x.from_ == 106]
        with self.assertRaises(prim.DataLoss):
            b.parties[0].take_boxes(replayed)

    def test_stages_out_of_order_are_refused(self):
        p = SecureParty.create(100)
        with self.assertRaises(prim.FailedPrecondition):
            p.take_boxes([])
        with self.assertRaises(prim.FailedPrecondition):
            p.mask([1, 2, 3], 1.0)
        s, _ = self.setup_six()
        q = s.parties[1]
        q.take_boxes(s.collector.boxes_for(q.id))
        self.assertIsInstance(q.mask(s.q[q.id], 1.0), MaskedInput)
        with self.assertRaises(prim.FailedPrecondition):
            q.mask(s.q[q.id], 1.0)
        with self.assertRaises(prim.FailedPrecondition):
            q.take_boxes(s.collector.boxes_for(q.id))

    def test_pinned_secrets_make_a_party_derive_the_cpp_keys(self):
        # A party built from secure_masks_test.cc's keys of party 10 masks as
        # MaskInput does: no boxes taken, so its upload carries the self mask
        # alone, whose first words the C++ test pins.
        s10, b10 = mask_pair(10)
        p = SecureParty.from_secrets(10, hash_of("c10"), hash_of("s10"), b10)
        self.assertEqual(p.advert().mask_public, s10.public_key)
        roster = Roster(kat_params(), [])
        keys = {10: p.advert()}
        for other in (20, 30):
            keys[other] = KeyAdvert(other, prim.x25519_key_pair_from_private(
                hash_of("c%d" % other)).public_key, mask_pair(other)[0].public_key)
        roster.params.roster = [10, 20, 30]
        roster.keys = [keys[i] for i in (10, 20, 30)]
        boxes = p.share_boxes(roster)
        self.assertEqual([(b.from_, b.to, len(b.box)) for b in boxes], [(10, 20, 100), (10, 30, 100)])
        self.assertEqual(p.session_id.hex(),
                         "e03313045cceb88aa5776ed940b7f6676664feef8d021b2522cb04ecd48ca6a1")
        c20 = prim.x25519_key_pair_from_private(hash_of("c20"))
        plain = sbox.open_share_box(boxes[0].box, p.session_id, 10, 20, c20.private_key,
                                    keys[10].enc_public)
        self.assertEqual(sbox.unpack_peer_shares(plain).self_seed.x, 2)  # 20's point
        # No boxes taken: fewer than t sharers, so the party will not mask;
        # the self mask alone, as MaskInput makes it, keeps the pinned words.
        p.take_boxes([])
        with self.assertRaises(prim.FailedPrecondition):
            p.mask(np.zeros(4, dtype=np.uint32), 1.0)
        y = masks.mask_input(np.zeros(4, dtype=np.uint32), 10, b10, hash_of("s10"), {},
                             p.session_id)
        self.assertEqual(hex_words(y), ["0c1aade5", "86c88561", "366acc01", "b1135830"])

    def test_masked_and_plain_fixed_point_sums_decode_to_the_same_floats(self):
        s = Session(7)
        g = R.MT19937_64(5)
        values = np.random.default_rng(5)
        for pid in s.q:
            s.q[pid] = fp.encode_fixed_point(values.normal(0, 0.3, WORDS).astype(np.float32),
                                             1.0, 24, g).q
        total, _, survivors, _ = s.run({106: INPUT})
        self.assertNotIn(106, survivors)
        self.assertTrue(np.array_equal(fp.decode_fixed_point(total, 24),
                                       fp.decode_fixed_point(s.plain_sum(survivors), 24)))


if __name__ == "__main__":
    unittest.main()
