"""Two ways one Client could believe something the cluster does not, against a real cluster
(PALISADE_URLS): two threads of one client both holding an exclusive lock, and an acquire
whose answer was lost leaving the lock held for nobody."""
from __future__ import annotations

import json
import os
import sys
import threading
import time
import unittest
import uuid
from typing import Any, Dict, List

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from palisade_client import Client, LockTimeout, PalisadeError  # noqa: E402
from proxy import Relay  # noqa: E402

URLS = [u for u in os.environ.get("PALISADE_URLS", "").split(",") if u]


def name(prefix: str) -> str:
    return f"py/{prefix}/{uuid.uuid4().hex[:8]}"


def holders(c: Client, n: str) -> List[int]:
    """The tokens `n` is held with. (Reads the earlier, untyped client's answer too, a dict
    with tokens as strings, so that this file also shows what that client got wrong.)"""
    info: Any = c.get(n)
    found = info["holders"] if isinstance(info, dict) else info.holders
    return [int(h["token"]) if isinstance(h, dict) else h.token for h in found]


@unittest.skipUnless(URLS, "PALISADE_URLS is not set")
class OneClientManyThreads(unittest.TestCase):
    def test_a_second_thread_waits_while_the_first_holds(self) -> None:
        n = name("threads")
        with Client(URLS) as c:
            first = c.acquire(n)
            outcome: Dict[str, object] = {}

            def second() -> None:
                try:
                    outcome["lock"] = c.acquire(n, wait=0.5)
                except LockTimeout as e:
                    outcome["timeout"] = e

            t = threading.Thread(target=second)
            t.start()
            t.join(10)
            # The session holds the name once: the other thread must not get a second handle
            # to the same grant (its release would free the first thread's lock).
            self.assertIn("timeout", outcome, f"second thread got {outcome.get('lock')!r} while the first held the lock")
            self.assertEqual(holders(c, n), [first.token])
            first.release()

    def test_threads_take_turns_and_never_hold_together(self) -> None:
        n = name("turns")
        inside = 0
        most = 0
        tokens: List[int] = []
        guard = threading.Lock()
        errors: List[BaseException] = []
        with Client(URLS) as c:

            def worker() -> None:
                nonlocal inside, most
                try:
                    for _ in range(5):
                        with c.lock(n, wait=20.0) as lock:
                            with guard:
                                inside += 1
                                most = max(most, inside)
                                tokens.append(lock.token)
                            # Another thread that got a handle now would overlap this one.
                            time.sleep(0.01)
                            with guard:
                                inside -= 1
                except BaseException as e:  # reported below, not lost in the thread
                    errors.append(e)

            threads = [threading.Thread(target=worker) for _ in range(3)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            self.assertEqual(errors, [])
            self.assertEqual(most, 1, "two threads of one client held the exclusive lock at once")
            self.assertEqual(len(tokens), 15)
            self.assertEqual(len(set(tokens)), 15, f"a grant was handed out twice: {tokens}")
            self.assertEqual(holders(c, n), [])


@unittest.skipUnless(URLS, "PALISADE_URLS is not set")
class LostAnswers(unittest.TestCase):
    def test_an_acquire_whose_answer_was_lost_leaves_nothing_held(self) -> None:
        n = name("lost-answer")
        relay = Relay(URLS[0])
        try:
            with Client([relay.url], request_timeout=1.0) as c, Client(URLS) as other:
                relay.swallow.add("/v1/lock/acquire")
                # The node grants the lock; the client never hears of it and gives up.
                with self.assertRaises(PalisadeError):
                    c.acquire(n)
                self.assertGreater(relay.swallowed, 0)
                relay.swallow.clear()
                # Whatever the client said, the cluster must not keep the lock for a
                # session that is alive and kept alive but holds no handle to it.
                deadline = time.monotonic() + 5.0
                while holders(other, n) and time.monotonic() < deadline:
                    time.sleep(0.05)
                self.assertEqual(holders(other, n), [], "the lost grant is still held by the live session")
                got = other.acquire(n, wait=2.0)
                got.release()
        finally:
            relay.close()


    def test_a_timed_out_acquire_is_withdrawn_before_the_caller_hears_of_it(self) -> None:
        n = name("withdrawn")
        relay = Relay(URLS[0])
        # Every answer to the acquire is lost; the withdrawal (the same request with the same
        # seq and waitMs 1, which tells the client its grant) gets through.
        relay.swallow_if = lambda path, body: path == "/v1/lock/acquire" and json.loads(body).get("waitMs") != 1
        try:
            with Client([relay.url]) as c, Client(URLS) as other:
                with self.assertRaises(LockTimeout) as e:
                    c.acquire(n, wait=1.0)
                self.assertGreater(relay.swallowed, 0)
                if not e.exception.withdrawn:
                    # Not confirmed within the client's grace (a loaded machine): it goes on
                    # in the background and must get there.
                    deadline = time.monotonic() + 5.0
                    while holders(other, n) and time.monotonic() < deadline:
                        time.sleep(0.05)
                # Withdrawn means nothing is held or queued now, not eventually.
                info = other.get(n)
                self.assertEqual((info.holders, info.waiters), ((), ()))
        finally:
            relay.close()


if __name__ == "__main__":
    unittest.main()
