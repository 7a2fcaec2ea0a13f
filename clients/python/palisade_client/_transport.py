"""JSON over HTTP(S) to the cluster's nodes.

- One kept-alive connection per node is reused from request to request (more are opened
  only while requests overlap: a long poll, the keepalive thread, other threads), and an
  idle one is dropped before the node's 5 s idle limit would close it under a request.
- A request goes to the current node; a connection failure, 503 or 504 moves to the next
  node (or the leader a node names) and retries the same body, hence the same seq, with
  backoff, until the deadline.
- Definite or not (docs/protocol.md section 9): a request that never reached a node fails
  with Unavailable; one that was sent and got no definite answer (a broken or silent
  connection after the send, 504 TIMEOUT) fails with Timeout at the deadline.
- The cluster, not whoever answers: every answer names its cluster (`Palisade-Cluster-Id`).
  The first id seen is pinned (or the one given); a node that answers with another is
  refused and skipped from then on.
"""
from __future__ import annotations

import http.client
import json
import logging
import random
import socket
import ssl
import threading
import time
import urllib.parse
from typing import Any, Dict, Iterator, List, Mapping, Optional, Set, Tuple

from .errors import PalisadeError, Timeout, Unavailable, WrongCluster, error_from

log = logging.getLogger("palisade_client")

CLUSTER_ID_HEADER = "palisade-cluster-id"
# Nodes close a keep-alive connection idle for 5 s; one idle this long is not reused, so a
# request never races that close.
IDLE_REUSE_S = 3.0
IDLE_KEPT_PER_NODE = 4
# Codes after which the same request is retried at another node.
_ELSEWHERE = {"NOT_LEADER", "UNAVAILABLE", "TIMEOUT"}
_INTERNAL_RETRIES = 3


def http_base(url: str) -> str:
    """http(s)://host:port of a node URL given as ws(s):// or http(s)://."""
    u = url.strip().rstrip("/")
    if u.startswith("ws://"):
        u = "http://" + u[5:]
    elif u.startswith("wss://"):
        u = "https://" + u[6:]
    parsed = urllib.parse.urlsplit(u)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ValueError(f"not a node URL: {url!r} (expected http(s)://host:port or ws(s)://host:port)")
    return f"{parsed.scheme}://{parsed.netloc}"


class _Node:
    def __init__(self, base: str) -> None:
        self.base = base
        parsed = urllib.parse.urlsplit(base)
        self.https = parsed.scheme == "https"
        self.host = parsed.hostname or ""
        self.port = parsed.port or (443 if self.https else 80)
        self.idle: List[Tuple[http.client.HTTPConnection, float]] = []
        self.foreign: Optional[str] = None  # the other cluster id it answered with


class _Sent(Exception):
    """An attempt failed after its request may have reached the node."""


class Transport:
    def __init__(
        self,
        urls: List[str],
        token: Optional[str],
        ssl_context: Optional[ssl.SSLContext],
        cluster_id: Optional[str],
        attempt_timeout: float,
    ) -> None:
        if not urls:
            raise ValueError("give at least one node URL")
        self._nodes = [_Node(http_base(u)) for u in urls]
        self._token = token
        self._ssl = ssl_context
        self._attempt_timeout = attempt_timeout
        self._lock = threading.Lock()
        self._current = random.randrange(len(self._nodes))
        self.cluster_id = cluster_id
        self._closed = False
        self._streams: Set[http.client.HTTPConnection] = set()

    # ---- nodes ----------------------------------------------------------------------------

    def _pick(self) -> _Node:
        with self._lock:
            for _ in range(len(self._nodes)):
                n = self._nodes[self._current % len(self._nodes)]
                if n.foreign is None:
                    return n
                self._current += 1
            return self._nodes[self._current % len(self._nodes)]

    def _move_on(self, node: _Node, hint: Any = None) -> None:
        """Try another node next: the leader a node named, else the next in the list. A named
        node that is not in the list is dialled with the same TLS trust as the seeds."""
        with self._lock:
            url = hint.get("clientUrl") if isinstance(hint, Mapping) else None
            if isinstance(url, str):
                try:
                    base = http_base(url)
                except ValueError:
                    base = ""
                if base:
                    for i, n in enumerate(self._nodes):
                        if n.base == base:
                            if n.foreign is None and n is not node:
                                self._current = i
                                return
                            break
                    else:
                        if urllib.parse.urlsplit(base).scheme == ("https" if self._nodes[0].https else "http"):
                            self._nodes.append(_Node(base))
                            self._current = len(self._nodes) - 1
                            return
            if self._nodes[self._current % len(self._nodes)] is node:
                self._current += 1

    def _all_foreign(self) -> bool:
        with self._lock:
            return all(n.foreign is not None for n in self._nodes)

    # ---- connections ----------------------------------------------------------------------

    def _connect(self, node: _Node, timeout: float) -> http.client.HTTPConnection:
        with self._lock:
            now = time.monotonic()
            while node.idle:
                idle, since = node.idle.pop()
                if now - since < IDLE_REUSE_S:
                    if idle.sock is not None:
                        idle.sock.settimeout(timeout)
                    return idle
                idle.close()
        conn: http.client.HTTPConnection
        if node.https:
            conn = http.client.HTTPSConnection(node.host, node.port, timeout=timeout, context=self._ssl)
        else:
            conn = http.client.HTTPConnection(node.host, node.port, timeout=timeout)
        conn.connect()  # failures here: the request never left
        return conn

    def _keep(self, node: _Node, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if self._closed or len(node.idle) >= IDLE_KEPT_PER_NODE:
                conn.close()
            else:
                node.idle.append((conn, time.monotonic()))

    def close(self) -> None:
        """Closes idle connections, and cuts open event streams (their readers see the end)."""
        with self._lock:
            self._closed = True
            for n in self._nodes:
                for conn, _ in n.idle:
                    conn.close()
                n.idle.clear()
            streams = list(self._streams)
        for conn in streams:
            if conn.sock is not None:
                try:
                    conn.sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def _headers(self, has_body: bool, accept: str = "application/json") -> Dict[str, str]:
        headers = {"accept": accept}
        if has_body:
            headers["content-type"] = "application/json"
        if self._token is not None:
            headers["authorization"] = "Bearer " + self._token
        return headers

    def _check_cluster(self, node: _Node, res: http.client.HTTPResponse) -> None:
        """Pins the first cluster id seen; refuses a node that answers with another."""
        got = res.getheader(CLUSTER_ID_HEADER)
        if got is None:
            return  # a node from before the header: nothing to compare
        with self._lock:
            if self.cluster_id is None:
                self.cluster_id = got
                log.info("pinned cluster %r (first answer, from %s)", got, node.base)
                return
            if got == self.cluster_id:
                return
            first = node.foreign is None
            node.foreign = got
        if first:
            log.warning("%s answers for cluster %r, not %r: refused, and not asked again", node.base, got, self.cluster_id)
        raise WrongCluster("WRONG_CLUSTER", f"{node.base} answers for cluster {got!r}, not {self.cluster_id!r}")

    def _attempt(self, node: _Node, method: str, target: str, data: Optional[bytes], timeout: float) -> Tuple[int, Any]:
        """One request on one node: (status, parsed JSON). Raises OSError/HTTPException when
        it never left, _Sent when it may have reached the node, WrongCluster."""
        conn = self._connect(node, timeout)
        try:
            conn.request(method, target, body=data, headers=self._headers(data is not None))
            res = conn.getresponse()
            raw = res.read()
        except ssl.SSLError as e:
            conn.close()
            # With TLS 1.3 a node refuses a client certificate after the client's side of the
            # handshake is done, so the alert comes in place of the answer: the node refused
            # the connection, not the request.
            if "ALERT" in str(e.reason or ""):
                raise
            raise _Sent(f"{node.base}: {e}") from e
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            raise _Sent(f"{node.base}: {e or type(e).__name__}") from e
        if res.will_close:
            conn.close()
        else:
            self._keep(node, conn)
        self._check_cluster(node, res)
        try:
            return res.status, json.loads(raw.decode("utf-8")) if raw else None
        except ValueError:
            return res.status, {"error": {"code": "INTERNAL", "message": f"HTTP {res.status} with a body that is not JSON"}}

    # ---- requests -------------------------------------------------------------------------

    def call(
        self,
        method: str,
        path: str,
        body: Optional[Mapping[str, Any]] = None,
        query: Optional[Mapping[str, str]] = None,
        *,
        deadline: float,
        attempt_timeout: Optional[float] = None,
    ) -> Any:
        """The answer of the first node that gives a definite one; retried with the same body
        until `deadline` (time.monotonic()). Raises the typed error of a definite refusal,
        Unavailable when nothing reached a node that could apply it, Timeout otherwise."""
        target = path + ("?" + urllib.parse.urlencode(query) if query else "")
        data = None if body is None else json.dumps(body).encode("utf-8")
        per_attempt = self._attempt_timeout if attempt_timeout is None else attempt_timeout
        in_doubt = False
        last: Optional[BaseException] = None
        internal = 0
        backoff = 0.025
        tried = 0
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                why = f" (last: {last})" if last is not None else ""
                if in_doubt:
                    raise Timeout("TIMEOUT", f"no definite answer before the deadline: the request may or may not have been applied{why}")
                if isinstance(last, WrongCluster) and self._all_foreign():
                    raise last
                raise Unavailable("UNAVAILABLE", f"no node could serve the request before the deadline{why}")
            node = self._pick()
            hint: Any = None
            try:
                status, answer = self._attempt(node, method, target, data, min(per_attempt, max(0.01, remaining)))
            except _Sent as e:
                in_doubt, last = True, e
                log.debug("%s %s: %s; trying another node", method, path, e)
            except WrongCluster as e:
                if self._all_foreign():
                    raise  # definite: no node of this client's cluster is known
                last = e
            except (OSError, http.client.HTTPException) as e:
                last = Unavailable("UNAVAILABLE", f"{node.base}: {e or type(e).__name__}")
                log.debug("%s %s: %s not reachable (%s); trying another node", method, path, node.base, e)
            else:
                if 200 <= status < 300:
                    return answer
                err = error_from(answer, status)
                last = err
                if err.code in _ELSEWHERE:
                    in_doubt = in_doubt or err.code == "TIMEOUT"
                    hint = answer.get("error", {}).get("leaderHint") if isinstance(answer, Mapping) else None
                    log.debug("%s %s: %s from %s; trying another node", method, path, err.code, node.base)
                elif err.code == "RATE_LIMITED" or (err.code == "INTERNAL" and internal < _INTERNAL_RETRIES):
                    internal += err.code == "INTERNAL"
                else:
                    raise err
            self._move_on(node, hint)
            tried += 1
            # A pause after each round of the nodes (or a refusal to slow down), never past the deadline.
            if tried % len(self._nodes) == 0 or isinstance(last, PalisadeError) and last.code in ("RATE_LIMITED", "INTERNAL"):
                pause = min(backoff * (0.5 + random.random()), max(0.0, deadline - time.monotonic()))
                time.sleep(pause)
                backoff = min(backoff * 2, 1.0)

    def stream(self, path: str, query: Mapping[str, str], read_timeout: float) -> Iterator[Tuple[str, Any]]:
        """(event, data) of a Server-Sent Events stream from the current node. Ends (or
        raises) when the stream breaks; the caller reopens it, on the next node."""
        node = self._pick()
        target = path + "?" + urllib.parse.urlencode(query)
        conn: Optional[http.client.HTTPConnection] = None
        try:
            try:
                if node.https:
                    conn = http.client.HTTPSConnection(node.host, node.port, timeout=read_timeout, context=self._ssl)
                else:
                    conn = http.client.HTTPConnection(node.host, node.port, timeout=read_timeout)
                with self._lock:
                    if self._closed:
                        return
                    self._streams.add(conn)
                conn.request("GET", target, headers=self._headers(False, "text/event-stream"))
                res = conn.getresponse()
            except (OSError, http.client.HTTPException) as e:
                self._move_on(node)
                raise Unavailable("UNAVAILABLE", f"{node.base}: {e or type(e).__name__}") from e
            try:
                self._check_cluster(node, res)
            except WrongCluster:
                self._move_on(node)
                raise
            if res.status != 200:
                raw = res.read()
                try:
                    answer = json.loads(raw.decode("utf-8") or "null")
                except ValueError:
                    answer = None
                err = error_from(answer, res.status)
                if err.code in _ELSEWHERE:
                    self._move_on(node, answer.get("error", {}).get("leaderHint") if isinstance(answer, Mapping) else None)
                raise err
            event: Optional[str] = None
            data: List[str] = []
            while True:
                try:
                    raw_line = res.readline()
                except (OSError, http.client.HTTPException) as e:
                    self._move_on(node)
                    raise Unavailable("UNAVAILABLE", f"{node.base}: the stream broke ({e or type(e).__name__})") from e
                if not raw_line:
                    self._move_on(node)
                    raise Unavailable("UNAVAILABLE", f"{node.base}: the stream ended")
                line = raw_line.decode("utf-8").rstrip("\r\n")
                if line == "":
                    if event is not None and data:
                        yield event, json.loads("\n".join(data))
                    event, data = None, []
                elif line.startswith("event:"):
                    event = line[6:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].lstrip(" "))
        finally:
            if conn is not None:
                with self._lock:
                    self._streams.discard(conn)
                conn.close()
