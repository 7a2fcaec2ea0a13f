"""The paused-holder story in Python: a holder is stopped (SIGSTOP: think of a long GC pause,
a stuck disk, a VM migration) past its TTL, the lock goes to another client with a larger
token, and the resource -- here a key written with a fence -- refuses the first holder's late
write when it wakes up.

    PALISADE_URLS=http://127.0.0.1:7001,http://127.0.0.1:7002,http://127.0.0.1:7003 \\
        python3 clients/python/examples/paused_holder.py
"""
import os
import signal
import subprocess
import sys

try:
    import palisade_client  # noqa: F401  (installed: pip install ./clients/python)
except ImportError:  # run from the source tree
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from palisade_client import Client, Fenced  # noqa: E402

URLS = os.environ.get("PALISADE_URLS", "http://127.0.0.1:7001,http://127.0.0.1:7002,http://127.0.0.1:7003").split(",")
LOCK = "reports/nightly"
OUTPUT = "reports/nightly/output"


def holder() -> None:
    """The first holder, in a process of its own so that it can really be paused. It writes
    when told to, whatever it believes: the fence is what must refuse it."""
    client = Client(URLS, ttl=2.0, label="paused-holder")
    lock = client.acquire(LOCK, wait=10.0)
    print(lock.token, flush=True)
    sys.stdin.readline()  # told to write: it may have been paused for a long time
    print("lost" if lock.lost.is_set() else "held", flush=True)
    try:
        client.put(OUTPUT, "late write by the paused holder", fence=lock)
        print("accepted", flush=True)
    except Fenced as e:
        print(f"fenced {e.current_token}", flush=True)
    client.close()


def main() -> int:
    child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--holder"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdin is not None and child.stdout is not None
    try:
        first_token = int(child.stdout.readline())
        print(f"paused holder has the lock, token {first_token}")
        os.kill(child.pid, signal.SIGSTOP)
        print("the holder is paused (SIGSTOP); it still believes it holds the lock")
        with Client(URLS, label="second-holder") as second:
            lock = second.acquire(LOCK, wait=10.0)
            print(f"second holder has the lock, token {lock.token} (the paused holder's session expired)")
            second.put(OUTPUT, "written by the second holder", fence=lock)
            os.kill(child.pid, signal.SIGCONT)
            child.stdin.write("write\n")
            child.stdin.flush()
            belief = child.stdout.readline().strip()
            print(f"the holder resumes: lock.lost is {'set' if belief == 'lost' else 'NOT set'} -- a careful holder stops here")
            outcome = child.stdout.readline().strip()
            if outcome == "accepted":
                print("BUG: the late write was accepted")
                return 1
            print(f"late write refused: FENCED (the lock's token is now {outcome.split()[-1]})")
            lock.release()
        return 0 if belief == "lost" else 1
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGCONT)
            child.kill()
        child.wait()


if __name__ == "__main__":
    if sys.argv[1:] == ["--holder"]:
        holder()
    else:
        sys.exit(main())
