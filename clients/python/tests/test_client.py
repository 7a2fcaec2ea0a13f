"""The Python client against a real cluster. Run by test/http/python-client.test.ts, which
starts 3 nodes and sets PALISADE_URLS; by hand, against `npm start`:
PALISADE_URLS=http://127.0.0.1:7001,http://127.0.0.1:7002,http://127.0.0.1:7003 python3 -m unittest -v"""
from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
import unittest
import uuid
from typing import Dict, List

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from palisade_client import (  # noqa: E402
    Change,
    Client,
    ClientClosed,
    Conflict,
    Fenced,
    Leader,
    Lock,
    LockTimeout,
    NotHolder,
)
from proxy import Relay  # noqa: E402

URLS = [u for u in os.environ.get("PALISADE_URLS", "").split(",") if u]


def name(prefix: str) -> str:
    return f"py/{prefix}/{uuid.uuid4().hex[:8]}"


def release_behind_its_back(c: Client, lock: Lock) -> None:
    """Releases `lock` on the cluster without its handle knowing (a seq far ahead of the
    client's own, so that nothing of the client's numbering is disturbed)."""
    body = {"session": c.session, "seq": 100_000, "name": lock.name, "token": str(lock.token)}
    c._transport.call("POST", "/v1/lock/release", body, deadline=time.monotonic() + 5)


@unittest.skipUnless(URLS, "PALISADE_URLS is not set")
class LockTests(unittest.TestCase):
    def test_lock_story(self) -> None:
        n = name("story")
        with Client(URLS, label="py-a") as a, Client(list(reversed(URLS)), label="py-b") as b:
            with a.lock(n, wait=5.0) as lock:
                self.assertIsNotNone(lock.token)
                self.assertFalse(lock.lost.is_set())
                self.assertTrue(lock.is_acquired())
                with self.assertRaises(LockTimeout) as e:
                    b.acquire(n, wait=0.3)
                self.assertTrue(e.exception.withdrawn)
                # The wait was withdrawn: nothing of b stays queued.
                info = a.get(n)
                self.assertEqual(info.waiters, ())
                self.assertEqual([h.token for h in info.holders], [lock.token])
            self.assertTrue(lock.lost.is_set(), "a released lock is not held")
            with b.lock(n, wait=5.0) as second:
                assert lock.token is not None and second.token is not None
                self.assertGreater(second.token, lock.token)

    def test_acquire_blocking_and_timeout_return_a_bool(self) -> None:
        n = name("bool")
        with Client(URLS) as a, Client(URLS) as b:
            first = a.lock(n)
            self.assertTrue(first.acquire(blocking=False))
            other = b.lock(n)
            self.assertFalse(other.acquire(blocking=False))
            t0 = time.monotonic()
            self.assertFalse(other.acquire(timeout=0.4))
            self.assertGreaterEqual(time.monotonic() - t0, 0.3)
            self.assertEqual(a.get(n).waiters, ())
            first.release()
            self.assertTrue(other.acquire(timeout=5.0))
            other.release()
            # A handle can be taken again after its release, with a new token.
            self.assertTrue(first.acquire(timeout=5.0))
            assert first.token is not None and other.token is not None
            self.assertGreater(first.token, other.token)
            with self.assertRaises(RuntimeError):
                first.acquire(blocking=False)
            first.release()

    def test_waiter_is_granted_when_the_holder_releases(self) -> None:
        n = name("handoff")
        with Client(URLS) as a, Client(URLS) as b:
            first = a.acquire(n)
            got: Dict[str, object] = {}

            def wait_for_it() -> None:
                got["lock"] = b.acquire(n, wait=10.0)

            t = threading.Thread(target=wait_for_it)
            t.start()
            deadline = time.monotonic() + 5
            while not a.get(n).waiters and time.monotonic() < deadline:
                time.sleep(0.02)
            first.release()
            t.join(10)
            later = got["lock"]
            assert hasattr(later, "token") and first.token is not None
            self.assertGreater(later.token, first.token)
            later.release()

    def test_exit_never_hides_the_blocks_exception(self) -> None:
        n = name("exit")

        class Boom(Exception):
            pass

        with Client(URLS) as c:
            with self.assertRaises(Boom):
                with c.lock(n) as lock:
                    # The lock is freed behind the handle's back, so its release is refused...
                    release_behind_its_back(c, lock)
                    raise Boom()
            self.assertTrue(lock.lost.is_set())
        # ...and the client being closed under the block does not replace its error either.
        c2 = Client(URLS)
        with self.assertRaises(Boom):
            with c2.lock(name("exit2")):
                c2.close()
                raise Boom()

    def test_keepalive_holds_the_lock_past_its_ttl(self) -> None:
        n = name("keep")
        with Client(URLS, ttl=1.0) as c:
            with c.lock(n) as lock:
                time.sleep(2.5)
                self.assertFalse(lock.lost.is_set())
                self.assertEqual([h.token for h in c.get(n).holders], [lock.token])

    def test_lost_is_set_at_the_safe_deadline_when_keepalives_go_unanswered(self) -> None:
        n = name("lost")
        relay = Relay(URLS[0])
        relay.swallow.add("/v1/session/keepalive")
        try:
            c = Client([relay.url], ttl=1.0)
            opened = time.monotonic()
            lock = c.acquire(n)
            self.assertTrue(lock.lost.wait(3.0), "lock.lost within the TTL")
            lost_after = time.monotonic() - opened
            # Safe deadline: open sent + 1 s x 0.99 - max(50 ms, 5 % of 1 s) = + 0.94 s.
            self.assertGreaterEqual(lost_after, 0.94, "set before the safe deadline")
            self.assertLess(lost_after, 1.0, "set at the safe deadline, before the TTL ends")
            self.assertFalse(lock.is_acquired())
            # The cluster expires the session after its TTL; another client then gets the lock.
            with Client(URLS) as other:
                with other.lock(n, wait=5.0) as later:
                    assert later.token is not None and lock.token is not None
                    self.assertGreater(later.token, lock.token)
            # The client goes on with a new session, kept alive like the first.
            relay.swallow.clear()
            again = c.acquire(name("after-loss"), wait=2.0)
            time.sleep(1.5)
            self.assertFalse(again.lost.is_set(), "the new session is kept alive")
            again.release()
            c.close()
        finally:
            relay.close()

    def test_a_closed_client_takes_no_more_requests(self) -> None:
        c = Client(URLS)
        lock = c.acquire(name("closed"))
        c.close()
        self.assertTrue(lock.lost.is_set())
        with self.assertRaises(ClientClosed):
            c.acquire(name("closed2"))
        c.close()  # idempotent

    def test_errors_are_typed(self) -> None:
        n = name("errors")
        with Client(URLS) as c:
            lock = c.acquire(n)
            assert lock.token is not None
            s = c._live_session(time.monotonic() + 5)
            with self.assertRaises(NotHolder) as e:
                c._sequenced(s, "/v1/lock/release", {"name": n, "token": str(lock.token + 1000)})
            self.assertEqual(e.exception.current_token, lock.token)
            self.assertEqual(e.exception.status, 409)
            self.assertFalse(e.exception.indefinite)
        s = name("shared")
        with Client(URLS) as a, Client(URLS) as b:
            a.acquire(s, mode="shared", limit=2)
            with self.assertRaises(Conflict):
                b.acquire(s, mode="shared", limit=3)  # its holders use limit 2

    def test_key_value_and_fencing(self) -> None:
        k = name("kv")
        with Client(URLS) as c:
            rev = c.put(k, "one")
            entry = c.kv_get(k)
            assert entry is not None
            self.assertEqual((entry.value, entry.text, entry.revision), (b"one", "one", rev))
            with self.assertRaises(Conflict):
                c.put(k, "two", if_revision=0)
            c.put(k, b"\x00\xff", if_revision=rev)
            self.assertEqual(c.get_value(k), (b"\x00\xff", c.kv_get(k).revision))  # type: ignore[union-attr]
            guard = c.acquire(name("guard"))
            c.put(k, "fenced", fence=guard)
            guard.release()
            with self.assertRaises(Fenced):
                c.put(k, "late", fence=guard)
            self.assertTrue(c.delete(k))
            self.assertIsNone(c.get_value(k))

    def test_a_fenced_write_refused_marks_the_lock_lost(self) -> None:
        n = name("fenced")
        with Client(URLS) as c:
            lock = c.acquire(n)
            release_behind_its_back(c, lock)
            with self.assertRaises(Fenced):
                c.put(name("k"), "late", fence=lock)
            self.assertTrue(lock.lost.is_set())


@unittest.skipUnless(URLS, "PALISADE_URLS is not set")
class ElectionTests(unittest.TestCase):
    def test_elections(self) -> None:
        e = name("election")
        with Client(URLS) as a, Client(URLS) as b:
            lead = a.campaign(e, "a")
            with self.assertRaises(LockTimeout):
                b.campaign(e, "b", wait=0.3)
            events = b.observe(e)
            first = next(events)
            self.assertEqual(first.value, "a")
            lead.proclaim("a2")
            seen = next(events)
            self.assertEqual((seen.value, seen.token), ("a2", lead.token))
            lead.resign()
            self.assertTrue(lead.lost.is_set())
            self.assertIsNone(next(events).leader)
            self.assertEqual(a.leader(e), Leader(e, None, None, None))
            events.close()

    def test_hand_over(self) -> None:
        e = name("handover")
        with Client(URLS) as a, Client(URLS) as b:
            with a.campaign(e, "a") as lead_a:
                got: Dict[str, object] = {}
                t = threading.Thread(target=lambda: got.update(lead=b.campaign(e, "b", wait=10.0)))
                t.start()
                time.sleep(0.2)
            t.join(10)
            lead_b = got["lead"]
            assert hasattr(lead_b, "token")
            self.assertGreater(lead_b.token, lead_a.token)
            self.assertEqual(a.leader(e).value, "b")
            lead_b.resign()


@unittest.skipUnless(URLS, "PALISADE_URLS is not set")
class WatchTests(unittest.TestCase):
    def test_watch(self) -> None:
        p = name("watch") + "/"
        with Client(URLS) as c:
            c.put(p + "a", "one")
            events = c.watch(p, include_existing=True)
            first = next(events)
            self.assertEqual((first.key, first.value), (p + "a", b"one"))
            rev = c.put(p + "b", b"\x00two")
            self.assertEqual(next(events), Change(p + "b", b"\x00two", rev))
            c.delete(p + "a")
            gone = next(events)
            self.assertEqual((gone.key, gone.value), (p + "a", None))
            events.close()

    def test_closing_the_client_ends_a_watch(self) -> None:
        c = Client(URLS)
        events = c.watch(name("end") + "/")
        ended = threading.Event()

        def read() -> None:
            for _ in events:
                pass
            ended.set()

        t = threading.Thread(target=read, daemon=True)
        t.start()
        time.sleep(0.3)
        c.close()
        self.assertTrue(ended.wait(5.0), "the watch ended when the client closed")


@unittest.skipUnless(URLS, "PALISADE_URLS is not set")
class TrustTests(unittest.TestCase):
    def test_the_cluster_id_is_pinned_from_the_first_answer(self) -> None:
        with Client(URLS) as c:
            c.status()
            self.assertEqual(c.cluster_id, "palisade-test")

    def test_a_client_pinned_to_another_cluster_refuses_every_node(self) -> None:
        from palisade_client import WrongCluster

        with Client(URLS, cluster_id="some-other-cluster", request_timeout=1.0) as c:
            with self.assertRaises(WrongCluster) as e:
                c.acquire(name("foreign"))
            self.assertIn("palisade-test", str(e.exception))
            self.assertFalse(e.exception.indefinite)

    def test_logging_says_what_it_does(self) -> None:
        with self.assertLogs("palisade_client", level=logging.INFO) as logs:
            with Client(URLS) as c:
                c.acquire(name("log")).release()
        self.assertTrue(any("session" in line and "opened" in line for line in logs.output), logs.output)


@unittest.skipUnless(URLS, "PALISADE_URLS is not set")
class ExampleTests(unittest.TestCase):
    def test_paused_holder_example_runs_as_written(self) -> None:
        import subprocess

        script = os.path.join(os.path.dirname(__file__), "..", "examples", "paused_holder.py")
        r = subprocess.run([sys.executable, script], env=dict(os.environ, PALISADE_URLS=",".join(URLS)), capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("late write refused: FENCED", r.stdout)
        self.assertIn("lock.lost is set", r.stdout)


if __name__ == "__main__":
    unittest.main()
