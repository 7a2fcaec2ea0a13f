"""The Python client's conformance runner: plays every scenario of test/conformance/scenarios.json
against the cluster of PALISADE_ENDPOINTS, with PALISADE_CONTROL for faults
(test/conformance/README.md).

    python3 clients/python/tests/conformance.py SCENARIOS.json
    python3 clients/python/tests/conformance.py --bench N      (acquire + release pairs)
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
import urllib.request
import uuid
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from palisade_client import Client, Fenced, Leadership, Lock, LockTimeout  # noqa: E402

ENDPOINTS = [u for u in os.environ.get("PALISADE_ENDPOINTS", "").split(",") if u]
CONTROL = os.environ.get("PALISADE_CONTROL", "")

Outcome = Tuple[str, Optional[int]]  # (granted | leader | timeout | busy, token)


class Failure(Exception):
    pass


def check(ok: bool, what: str) -> None:
    if not ok:
        raise Failure(what)


def post(path: str) -> Dict[str, Any]:
    with urllib.request.urlopen(urllib.request.Request(CONTROL + path, method="POST", data=b""), timeout=60) as res:
        body: Dict[str, Any] = json.loads(res.read())
        return body


def eventually(within_ms: float, what: Callable[[], str], cond: Callable[[], bool]) -> None:
    """Polls cond every 50 ms until it holds or within_ms passes (0: once)."""
    deadline = time.monotonic() + within_ms / 1000
    while not cond():
        if time.monotonic() >= deadline:
            raise Failure(what())
        time.sleep(0.05)


class Task:
    """A call running in a thread of its own, awaited later."""

    def __init__(self, fn: Callable[[], Outcome]) -> None:
        self._result: Optional[Outcome] = None
        self._error: Optional[BaseException] = None
        self._thread = threading.Thread(target=self._run, args=(fn,), daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[[], Outcome]) -> None:
        try:
            self._result = fn()
        except BaseException as e:
            self._error = e

    def result(self) -> Outcome:
        self._thread.join(120)
        if self._error is not None:
            raise self._error
        check(self._result is not None, "the task did not finish")
        assert self._result is not None
        return self._result


class Seen:
    """What an observe or a watch yielded, and how far observed/watched have matched."""

    def __init__(self, source: Iterator[Tuple[Optional[str], Optional[str]]]) -> None:
        self.items: List[Tuple[Optional[str], Optional[str]]] = []
        self.cursor = 0
        threading.Thread(target=self._collect, args=(source,), daemon=True).start()

    def _collect(self, source: Iterator[Tuple[Optional[str], Optional[str]]]) -> None:
        for item in source:
            self.items.append(item)


class Actor:
    def __init__(self, client: Client, relay: Optional[str]) -> None:
        self.client = client
        self.relay = relay
        self.locks: Dict[str, Lock] = {}
        self.leads: Dict[str, Leadership] = {}


class Run:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.actors: Dict[str, Actor] = {}
        self.vars: Dict[str, int] = {}
        self.tasks: Dict[str, Task] = {}
        self.seen: Dict[str, Seen] = {}
        self._reader: Optional[Client] = None

    def name(self, x: Any) -> str:
        return self.prefix + str(x)

    def actor(self, step: Dict[str, Any]) -> Actor:
        a = self.actors.get(step["actor"])
        check(a is not None, f"no actor {step['actor']}")
        assert a is not None
        return a

    def reader(self) -> Client:
        if self._reader is None:
            self._reader = Client(ENDPOINTS, label="conformance-reader")
        return self._reader

    def expect(self, step: Dict[str, Any], outcome: Outcome) -> None:
        kind, token = outcome
        check(kind == step["expect"], f"{step['op']}: expected {step['expect']}, got {kind}")
        if "token" in step and token is not None:
            self.vars[step["token"]] = token

    def acquire(self, a: Actor, step: Dict[str, Any]) -> Outcome:
        name = self.name(step["lock"])
        try:
            lock = a.client.acquire(name, wait=step["waitMs"] / 1000)
        except LockTimeout:
            return ("timeout", None)
        a.locks[name] = lock
        return ("granted", lock.token)

    def campaign(self, a: Actor, step: Dict[str, Any]) -> Outcome:
        name = self.name(step["election"])
        try:
            lead = a.client.campaign(name, step["value"], wait=step["waitMs"] / 1000)
        except LockTimeout:
            return ("timeout", None)
        a.leads[name] = lead
        return ("leader", lead.token)

    def matched(self, step: Dict[str, Any]) -> None:
        seen = self.seen[step["task"]]
        key = self.name(step["key"]) if "key" in step else None

        def found() -> bool:
            for i in range(seen.cursor, len(seen.items)):
                k, v = seen.items[i]
                if (key is None or k == key) and v == step["value"]:
                    seen.cursor = i + 1
                    return True
            return False

        eventually(step.get("withinMs", 0), lambda: f"{step['op']}: {key}={step['value']} not seen (saw {seen.items})", found)

    def step(self, step: Dict[str, Any]) -> None:
        op = step["op"]
        if op == "open":
            relay = str(post("/relay")["hostPort"]) if step.get("via") == "relay" else None
            urls = [f"http://{relay}"] if relay else ENDPOINTS
            ttl = step.get("ttlMs", 10000) / 1000
            self.actors[step["actor"]] = Actor(Client(urls, ttl=ttl, label=f"conformance-{step['actor']}"), relay)
        elif op == "acquire":
            t0 = time.monotonic()
            self.expect(step, self.acquire(self.actor(step), step))
            if "withinMs" in step:
                took = (time.monotonic() - t0) * 1000
                check(took <= step["withinMs"], f"acquire took {took:.0f} ms")
        elif op == "acquireAsync":
            a = self.actor(step)
            self.tasks[step["task"]] = Task(lambda: self.acquire(a, step))
        elif op == "campaign":
            self.expect(step, self.campaign(self.actor(step), step))
        elif op == "campaignAsync":
            a = self.actor(step)
            self.tasks[step["task"]] = Task(lambda: self.campaign(a, step))
        elif op == "await":
            self.expect(step, self.tasks[step["task"]].result())
        elif op == "try":
            a = self.actor(step)
            name = self.name(step["lock"])
            lock = a.client.lock(name)
            if lock.acquire(blocking=False):
                a.locks[name] = lock
                self.expect(step, ("granted", lock.token))
            else:
                self.expect(step, ("busy", None))
        elif op == "release":
            held = self.actor(step).locks.get(self.name(step["lock"]))
            if held is not None:
                held.release()
        elif op == "resign":
            lead = self.actor(step).leads.get(self.name(step["election"]))
            if lead is not None:
                lead.resign()
        elif op == "lost":
            lock = self.actor(step).locks[self.name(step["lock"])]
            check(lock.lost.wait(step.get("withinMs", 0) / 1000), "the lock is not lost")
        elif op == "held":
            lock = self.actor(step).locks[self.name(step["lock"])]
            until = time.monotonic() + step.get("forMs", 0) / 1000
            while True:
                check(not lock.lost.is_set(), "the lock was lost")
                if time.monotonic() >= until:
                    break
                time.sleep(0.1)
        elif op == "lockState":
            name = self.name(step["lock"])
            last: List[str] = [""]

            def matches() -> bool:
                info = self.reader().get(name)
                last[0] = f"{len(info.holders)} holders, {len(info.waiters)} waiters"
                return ("holders" not in step or len(info.holders) == step["holders"]) and ("waiters" not in step or len(info.waiters) == step["waiters"])

            eventually(step.get("withinMs", 0), lambda: f"lock state: saw {last[0]}", matches)
        elif op == "put":
            fence = step.get("fence")
            as_fence = (self.name(fence["lock"]), self.vars[fence["token"]]) if fence else None
            try:
                self.actor(step).client.put(self.name(step["key"]), step["value"], fence=as_fence)
                got = "ok"
            except Fenced:
                got = "fenced"
            check(got == step["expect"], f"put: expected {step['expect']}, got {got}")
        elif op == "get":
            entry = self.reader().kv_get(self.name(step["key"]))
            value = entry.text if entry is not None else None
            check(value == step["value"], f"get: {value}, expected {step['value']}")
        elif op == "greater":
            a_, b_ = self.vars.get(step["a"]), self.vars.get(step["b"])
            check(a_ is not None and b_ is not None and a_ > b_, f"{step['a']}={a_} is not greater than {step['b']}={b_}")
        elif op == "observe":
            observed = self.actor(step).client.observe(self.name(step["election"]))
            self.seen[step["task"]] = Seen((None, s.value) for s in observed)
        elif op == "watch":
            changes = self.actor(step).client.watch(self.name(step["prefix"]), include_existing=True)
            self.seen[step["task"]] = Seen((c.key, None if c.value is None else c.value.decode("utf-8")) for c in changes)
        elif op in ("observed", "watched"):
            self.matched(step)
        elif op == "killLeader":
            post("/kill-leader")
        elif op == "restart":
            post("/restart")
        elif op in ("pause", "resume"):
            post(f"/relay/{op}?relay={self.actor(step).relay}")
        else:
            raise Failure(f"unknown op {op}")

    def close(self) -> None:
        for a in self.actors.values():
            if a.relay:
                try:
                    post(f"/relay/resume?relay={a.relay}")
                except OSError:
                    pass
            a.client.close()
        if self._reader is not None:
            self._reader.close()


def run_all(path: str) -> int:
    with open(path) as f:
        scenarios = json.load(f)["scenarios"]
    run = f"conf/py/{uuid.uuid4().hex[:8]}/"
    failed = 0
    for s in scenarios:
        r = Run(f"{run}{s['id']}/")
        t0 = time.monotonic()
        n = 0
        try:
            for n, step in enumerate(s["steps"], 1):
                r.step(step)
            print(f"ok {s['id']} {(time.monotonic() - t0) * 1000:.0f} ms", flush=True)
        except Exception as e:
            failed += 1
            print(f"not ok {s['id']}: step {n} ({s['steps'][n - 1]['op']}): {type(e).__name__}: {e}", flush=True)
        finally:
            r.close()
    print(json.dumps({"runner": "python", "scenarios": len(scenarios), "failed": failed}), flush=True)
    return 0 if failed == 0 else 1


def bench(pairs: int) -> int:
    """N acquire + release pairs by one client, one at a time; the first tenth is warm-up."""
    name = f"conf/py/bench/{uuid.uuid4().hex[:8]}"
    ms: List[float] = []
    with Client(ENDPOINTS) as c:
        for _ in range(pairs):
            t0 = time.perf_counter()
            c.acquire(name, wait=5.0).release()
            ms.append((time.perf_counter() - t0) * 1000)
    kept = ms[pairs // 10:]
    ordered = sorted(kept)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)

    result = {"client": "python", "transport": "http", "pairs": len(kept), "p50Ms": at(0.5), "p99Ms": at(0.99), "ms": [round(x, 2) for x in kept]}
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--bench"]:
        sys.exit(bench(int(args[1]) if len(args) > 1 else 300))
    sys.exit(run_all(args[0] if args else os.path.join(os.path.dirname(__file__), "..", "..", "..", "test", "conformance", "scenarios.json")))
