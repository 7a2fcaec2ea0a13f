"""The Python client against a real cluster. Run by test/http/python-client.test.ts, which
starts 3 nodes and sets PALISADE_URLS (and PALISADE_PIDS, "id:pid,...", for the failover
test); by hand: PALISADE_URLS=http://127.0.0.1:7001,... python3 -m unittest -v"""
import os
import signal
import sys
import threading
import time
import unittest
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from palisade_client import Client, LockTimeout, NotHolder, Fenced, Conflict  # noqa: E402

URLS = [u for u in os.environ.get("PALISADE_URLS", "").split(",") if u]


def name(prefix):
    return f"py/{prefix}/{uuid.uuid4().hex[:8]}"


@unittest.skipUnless(URLS, "PALISADE_URLS is not set")
class LockTests(unittest.TestCase):
    def test_lock_story(self):
        n = name("story")
        with Client(URLS, label="py-a") as a, Client(list(reversed(URLS)), label="py-b") as b:
            with a.lock(n, wait=5.0) as lock:
                self.assertGreater(lock.token, 0)
                self.assertFalse(lock.lost.is_set())
                with self.assertRaises(LockTimeout):
                    b.acquire(n, wait=0.3)
                # The wait was withdrawn: nothing of b stays queued.
                self.assertEqual(a.get(n)["waiters"], [])
                self.assertEqual(a.get(n)["holders"][0]["token"], str(lock.token))
            with b.lock(n, wait=5.0) as second:
                self.assertGreater(second.token, lock.token)

    def test_waiter_is_granted_when_the_holder_releases(self):
        n = name("handoff")
        with Client(URLS) as a, Client(URLS) as b:
            first = a.acquire(n)
            got = {}

            def wait_for_it():
                got["lock"] = b.acquire(n, wait=10.0)

            t = threading.Thread(target=wait_for_it)
            t.start()
            deadline = time.monotonic() + 5
            while not a.get(n)["waiters"] and time.monotonic() < deadline:
                time.sleep(0.02)
            first.release()
            t.join(10)
            self.assertGreater(got["lock"].token, first.token)
            got["lock"].release()

    def test_keepalive_holds_the_lock_past_its_ttl(self):
        n = name("keep")
        with Client(URLS, ttl=1.0) as c:
            with c.lock(n) as lock:
                time.sleep(2.5)
                self.assertFalse(lock.lost.is_set())
                self.assertEqual(c.get(n)["holders"][0]["token"], str(lock.token))

    def test_lost_is_set_when_keepalives_stop(self):
        n = name("lost")
        c = Client(URLS, ttl=1.0)
        lock = c.acquire(n)
        started = time.monotonic()
        c._keepalive_paused = True
        self.assertTrue(lock.lost.wait(3.0), "lock.lost within the TTL")
        self.assertLess(time.monotonic() - started, 1.0, "set at the safe deadline, before the TTL ends")
        # The cluster expires the session after its TTL; another client then gets the lock.
        with Client(URLS) as other:
            with other.lock(n, wait=5.0) as later:
                self.assertGreater(later.token, lock.token)
        c._closed.set()

    def test_errors_are_typed(self):
        n = name("errors")
        with Client(URLS) as c:
            lock = c.acquire(n)
            with self.assertRaises(NotHolder) as e:
                c._write("/v1/lock/release", {"name": n, "token": str(lock.token + 1000)})
            self.assertEqual(e.exception.current_token, lock.token)
            self.assertEqual(e.exception.status, 409)
            with self.assertRaises(Conflict):
                c.acquire(n, mode="shared")

    def test_key_value_and_fencing(self):
        k = name("kv")
        with Client(URLS) as c:
            rev = c.put(k, "one")
            with self.assertRaises(Conflict):
                c.put(k, "two", if_revision=0)
            c.put(k, b"\x00\xff", if_revision=rev)
            self.assertEqual(c.get_value(k)[0], b"\x00\xff")
            guard = c.acquire(name("guard"))
            c.put(k, "fenced", fence=guard)
            guard.release()
            with self.assertRaises(Fenced):
                c.put(k, "late", fence=guard)
            self.assertTrue(c.delete(k))
            self.assertIsNone(c.get_value(k))

    def test_elections(self):
        e = name("election")
        with Client(URLS) as a, Client(URLS) as b:
            seen = []
            lead = a.campaign(e, "a")
            with self.assertRaises(LockTimeout):
                b.campaign(e, "b", wait=0.3)
            events = b.observe(e)
            first = next(events)
            self.assertEqual(first["value"], "a")
            lead.proclaim("a2")
            seen.append(next(events))
            self.assertEqual(seen[0]["value"], "a2")
            self.assertEqual(seen[0]["token"], str(lead.token))
            lead.resign()
            self.assertIsNone(next(events)["leader"])
            self.assertIsNone(a.leader(e)["leader"])
            events.close()

    def test_watch(self):
        p = name("watch") + "/"
        with Client(URLS) as c:
            c.put(p + "a", "one")
            events = c.watch(p)
            kind, snap = next(events)
            self.assertEqual(kind, "snapshot")
            self.assertEqual([e["key"] for e in snap["entries"]], [p + "a"])
            c.put(p + "b", "two")
            kind, change = next(events)
            self.assertEqual((kind, change["key"], change["value"]), ("kvChanged", p + "b", "two"))
            events.close()


@unittest.skipUnless(URLS, "PALISADE_URLS is not set")
class ExampleTests(unittest.TestCase):
    def test_paused_holder_example_runs_as_written(self):
        import subprocess

        script = os.path.join(os.path.dirname(__file__), "..", "examples", "paused_holder.py")
        r = subprocess.run([sys.executable, script], env=dict(os.environ, PALISADE_URLS=",".join(URLS)),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("late write refused: FENCED", r.stdout)


@unittest.skipUnless(URLS and os.environ.get("PALISADE_PIDS"), "PALISADE_PIDS is not set")
class ZFailoverTests(unittest.TestCase):
    """Runs last (the cluster keeps two nodes afterwards)."""

    def test_leader_sigkill_while_holding_a_lock(self):
        pids = dict(p.split(":") for p in os.environ["PALISADE_PIDS"].split(","))
        n = name("failover")
        with Client(URLS, ttl=5.0) as c:
            with c.lock(n, wait=5.0) as lock:
                leader = c._http.call("GET", "/v1/status")["leader"]
                os.kill(int(pids[leader]), signal.SIGKILL)
                # Keepalives go on through the other nodes; the new leader gives the session
                # a full TTL, so the lock is never lost.
                deadline = time.monotonic() + 8.0
                while time.monotonic() < deadline:
                    self.assertFalse(lock.lost.is_set(), "lock lost during failover")
                    time.sleep(0.1)
                holders = c.get(n)["holders"]
                self.assertEqual(holders[0]["token"], str(lock.token))
            self.assertEqual(c.get(n)["holders"], [])


if __name__ == "__main__":
    unittest.main()
