"""The paused-holder story in Python: a holder stops (SIGSTOP, a GC pause, a stuck disk)
past its TTL, the lock goes to another client with a larger token, and the resource -- here
a key written with a fence -- refuses the first holder's late write.

    PALISADE_URLS=http://127.0.0.1:7001,http://127.0.0.1:7002,http://127.0.0.1:7003 \\
        python3 clients/python/examples/paused_holder.py
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from palisade_client import Client, Fenced  # noqa: E402

URLS = os.environ.get("PALISADE_URLS", "http://127.0.0.1:7001,http://127.0.0.1:7002,http://127.0.0.1:7003").split(",")

slow = Client(URLS, ttl=2.0, label="slow-holder")
fast = Client(URLS, ttl=10.0, label="second-holder")
try:
    first = slow.acquire("reports/nightly")
    print(f"slow holder has the lock, token {first.token}")
    slow._keepalive_paused = True  # the holder is paused: no keepalives reach the cluster
    first.lost.wait()
    print("slow holder: lock.lost is set (its safe deadline passed) -- a careful holder stops here")
    second = fast.acquire("reports/nightly", wait=10.0)
    print(f"second holder has the lock, token {second.token}")
    fast.put("reports/nightly/output", "written by the second holder", fence=second)
    time.sleep(0.1)
    try:
        # The slow holder wakes up and writes anyway, with its old token (its session is
        # gone, so the client opens a new one; the fence is what refuses the write).
        slow.put("reports/nightly/output", "late write by the slow holder", fence=first)
        print("BUG: the late write was accepted")
        sys.exit(1)
    except Fenced as e:
        print(f"late write refused: FENCED (the lock's token is now {e.current_token})")
    second.release()
finally:
    slow._closed.set()
    fast.close()
