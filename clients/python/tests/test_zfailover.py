"""The leader is SIGKILLed while the client holds a lock (PALISADE_PIDS, "id:pid,..."). Runs
last: the cluster keeps two nodes afterwards."""
from __future__ import annotations

import os
import signal
import sys
import time
import unittest
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from palisade_client import Client  # noqa: E402

URLS = [u for u in os.environ.get("PALISADE_URLS", "").split(",") if u]
PIDS = os.environ.get("PALISADE_PIDS", "")


@unittest.skipUnless(URLS and PIDS, "PALISADE_URLS and PALISADE_PIDS are not set")
class Failover(unittest.TestCase):
    def test_leader_sigkill_while_holding_a_lock(self) -> None:
        pids = dict(p.split(":") for p in PIDS.split(","))
        n = f"py/failover/{uuid.uuid4().hex[:8]}"
        with Client(URLS, ttl=5.0) as c:
            with c.lock(n, wait=5.0) as lock:
                leader = c.status()["leader"]
                os.kill(int(pids[leader]), signal.SIGKILL)
                # Keepalives go on through the other nodes; the new leader gives the session
                # a full TTL, so the lock is never lost.
                deadline = time.monotonic() + 8.0
                while time.monotonic() < deadline:
                    self.assertFalse(lock.lost.is_set(), "lock lost during failover")
                    time.sleep(0.1)
                self.assertEqual([h.token for h in c.get(n).holders], [lock.token])
            self.assertEqual(c.get(n).holders, ())
            # New work goes through the surviving nodes.
            with c.lock(f"{n}/after", wait=5.0) as after:
                assert after.token is not None and lock.token is not None
                self.assertGreater(after.token, lock.token)


if __name__ == "__main__":
    unittest.main()
