"""The client's own rules, without a cluster: value decoding (both forms), the safe-deadline
arithmetic, turns per name, and trust (the pinned cluster id, tokens that only grow) against
a stand-in node."""
from __future__ import annotations

import os
import sys
import threading
import time
import unittest
from typing import Any, Dict, List

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from fake_node import FakeNode, session_routes  # noqa: E402
from palisade_client import Change, Client, PalisadeError, TokenRegression, WrongCluster  # noqa: E402
from palisade_client._session import Session  # noqa: E402
from palisade_client._turns import Turns  # noqa: E402
from palisade_client._wire import decode_value, encode_value  # noqa: E402


class Values(unittest.TestCase):
    def test_both_forms_decode(self) -> None:
        # Today's answers: value when UTF-8, valueBase64 always.
        self.assertEqual(decode_value({"value": "one", "valueBase64": "b25l"}), b"one")
        self.assertEqual(decode_value({"valueBase64": "AP8="}), b"\x00\xff")
        # The coming form: the value once, with its encoding (which wins).
        self.assertEqual(decode_value({"value": "one", "encoding": "utf8"}), b"one")
        self.assertEqual(decode_value({"value": "AP8=", "encoding": "base64"}), b"\x00\xff")
        self.assertEqual(decode_value({"value": "aGk=", "encoding": "utf8"}), b"aGk=")
        # A deletion carries no value, in either form.
        self.assertIsNone(decode_value({"key": "k", "revision": 3}))
        self.assertIsNone(decode_value({"key": "k", "value": None, "revision": 3}))
        self.assertIsNone(decode_value({"key": "k", "encoding": "base64", "revision": 3}))

    def test_bad_values_are_errors(self) -> None:
        for bad in ({"value": "x", "encoding": "rot13"}, {"value": "%%%", "encoding": "base64"}, {"value": 5, "encoding": "utf8"}):
            with self.assertRaises(PalisadeError, msg=str(bad)):
                decode_value(bad)

    def test_requests_send_text_or_base64(self) -> None:
        self.assertEqual(encode_value("héllo"), {"value": "héllo"})
        self.assertEqual(encode_value(b"plain"), {"value": "plain"})
        self.assertEqual(encode_value(b"\x00\xff"), {"valueBase64": "AP8="})


class SafeDeadline(unittest.TestCase):
    # TTL 3 s, drift 1 %, margin max(50 ms, 5 % of 3 s) = 150 ms: safe = sent + 2.82 s.
    def test_counts_from_the_open_send_time(self) -> None:
        s = Session(1, 3.0, 100.0, 0.01, None)
        self.assertAlmostEqual(s.safe_until, 102.82)

    def test_an_acknowledged_keepalive_moves_it_to_its_send_time(self) -> None:
        s = Session(1, 3.0, 100.0, 0.01, None)
        s.extend(101.0)  # sent at 101, whenever it was answered
        self.assertAlmostEqual(s.safe_until, 103.82)
        s.extend(100.5)  # a late answer to an earlier keepalive never moves it back
        self.assertAlmostEqual(s.safe_until, 103.82)

    def test_past_the_deadline_the_session_is_not_live(self) -> None:
        s = Session(1, 1.0, time.monotonic() - 1.0, 0.01, None)
        self.assertFalse(s.live())

    def test_acked_seq_is_below_every_unanswered_seq(self) -> None:
        s = Session(1, 3.0, 0.0, 0.01, None)
        a = s.take_seqs()
        b = s.take_seqs(2)
        self.assertEqual((a, b, s.acked_seq), (1, 2, 0))
        s.settle(b, 2)
        self.assertEqual(s.acked_seq, 0)
        s.settle(a)
        self.assertEqual(s.acked_seq, 3)


class PerNameTurns(unittest.TestCase):
    def test_first_come_first_served_and_bounded(self) -> None:
        turns = Turns()
        self.assertTrue(turns.take("x", None))
        self.assertFalse(turns.try_take("x"))
        self.assertFalse(turns.take("x", time.monotonic() + 0.05))
        order: List[int] = []
        started: List[threading.Event] = []

        def waiter(i: int) -> None:
            started[i].set()
            turns.take("x", None)
            order.append(i)
            turns.give_back("x")

        threads = []
        for i in range(3):
            started.append(threading.Event())
            t = threading.Thread(target=waiter, args=(i,))
            t.start()
            started[i].wait()
            time.sleep(0.02)  # queued before the next one starts
            threads.append(t)
        turns.give_back("x")
        for t in threads:
            t.join(5)
        self.assertEqual(order, [0, 1, 2])
        self.assertTrue(turns.try_take("x"))


class Trust(unittest.TestCase):
    def test_a_node_of_another_cluster_is_refused_and_skipped(self) -> None:
        status: Dict[str, Any] = {"/v1/status": lambda b: (200, {"id": "n"})}
        ours = FakeNode("ours", status)
        theirs = FakeNode("theirs", status)
        try:
            with Client([theirs.url, ours.url], cluster_id="ours") as c:
                for _ in range(5):
                    c.status()
            self.assertEqual(len(ours.requests), 5)
            self.assertLessEqual(len(theirs.requests), 1, "refused once, then not asked again")
            with Client([theirs.url], cluster_id="ours") as c:
                with self.assertRaises(WrongCluster) as e:
                    c.status()
                self.assertEqual(e.exception.code, "WRONG_CLUSTER")
        finally:
            ours.close()
            theirs.close()

    def test_the_first_answer_pins_the_cluster(self) -> None:
        node = FakeNode("first", {"/v1/status": lambda b: (200, {})})
        try:
            with Client([node.url]) as c:
                c.status()
                self.assertEqual(c.cluster_id, "first")
                node.cluster_id = "second"  # the address now answers for another cluster
                with self.assertRaises(WrongCluster):
                    c.status()
        finally:
            node.close()

    def test_a_grant_below_a_token_already_seen_is_refused(self) -> None:
        routes = session_routes()
        routes["/v1/kv/put"] = lambda b: (200, {"revision": 100, "index": 100})
        routes["/v1/lock/acquire"] = lambda b: (200, {"status": "granted", "token": "50", "index": 50})
        routes["/v1/lock/release"] = lambda b: (200, {"index": 101})
        node = FakeNode("c", routes)
        try:
            with Client([node.url]) as c:
                c.put("k", "v")  # index 100 seen
                with self.assertRaises(TokenRegression) as e:
                    c.acquire("x")
                self.assertEqual(e.exception.code, "TOKEN_REGRESSION")
                self.assertFalse(e.exception.indefinite)
                deadline = time.monotonic() + 5
                while "/v1/lock/release" not in node.paths() and time.monotonic() < deadline:
                    time.sleep(0.01)
                self.assertIn("/v1/lock/release", node.paths(), "the grant it was told of is given back")
                # Nothing of it is held in this client: the name is free to try again.
                routes["/v1/lock/acquire"] = lambda b: (200, {"status": "granted", "token": "120", "index": 120})
                lock = c.acquire("x")
                self.assertEqual(lock.token, 120)
        finally:
            node.close()

    def test_answers_in_the_coming_value_encoding(self) -> None:
        routes = session_routes()
        routes["/v1/kv"] = lambda b: (200, {"key": b["key"], "value": "AP8=", "encoding": "base64", "revision": 9})
        routes["/v1/kv/watch"] = lambda b: (
            200,
            [
                ("snapshot", {"prefix": "p/", "entries": [{"key": "p/a", "value": "one", "encoding": "utf8", "revision": 4}]}),
                ("kvChanged", {"key": "p/b", "value": "AP8=", "encoding": "base64", "revision": 5}),
                ("kvChanged", {"key": "p/a", "revision": 6}),
            ],
        )
        node = FakeNode("c", routes)
        try:
            with Client([node.url]) as c:
                self.assertEqual(c.get_value("k"), (b"\x00\xff", 9))
                events = c.watch("p/", include_existing=True)
                got = [next(events) for _ in range(3)]
                self.assertEqual(got, [Change("p/a", b"one", 4), Change("p/b", b"\x00\xff", 5), Change("p/a", None, 6)])
                events.close()
        finally:
            node.close()


if __name__ == "__main__":
    unittest.main()
