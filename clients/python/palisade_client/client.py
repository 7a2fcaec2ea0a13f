"""The client: one session with a background keepalive, locks, elections, key-value."""
import json
import random
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

from .errors import LockTimeout, NotHolder, PalisadeError, SessionExpired, Timeout, Unavailable, error_from

# The safe-deadline rule of docs/protocol.md section 4 (the TypeScript SDK's numbers).
MAX_CLOCK_DRIFT = 0.01
MAX_LONG_POLL = 60.0


def _safe_deadline(sent_at, ttl):
    return sent_at + ttl * (1 - MAX_CLOCK_DRIFT) - max(0.05, 0.05 * ttl)


class _Http:
    """JSON over HTTP to any of the nodes: connection failures, 503 and 504 move on to the
    next node and retry the same request (the same seq), with backoff, until the deadline."""

    def __init__(self, urls, token, timeout):
        self.urls = [u.rstrip("/").replace("ws://", "http://").replace("wss://", "https://") for u in urls]
        self.token = token
        self.timeout = timeout
        self.current = 0

    def call(self, method, path, body=None, query=None, extra_time=0.0, timeout=None):
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout) + extra_time
        backoff = 0.05
        last = None
        while True:
            base = self.urls[self.current % len(self.urls)]
            url = base + path + ("?" + urllib.parse.urlencode(query) if query else "")
            data = None if body is None else json.dumps(body).encode("utf-8")
            headers = {"content-type": "application/json"} if data is not None else {}
            if self.token is not None:
                headers["authorization"] = "Bearer " + self.token
            req = urllib.request.Request(url, data=data, method=method, headers=headers)
            try:
                remaining = max(0.05, deadline - time.monotonic())
                with urllib.request.urlopen(req, timeout=remaining) as res:
                    return json.loads(res.read().decode("utf-8"))
            except urllib.error.HTTPError as e:
                try:
                    answer = json.loads(e.read().decode("utf-8"))
                except ValueError:
                    answer = {"error": {"code": "INTERNAL", "message": f"HTTP {e.code}"}}
                err = error_from(answer, e.code)
                if not isinstance(err, (Unavailable, Timeout)):
                    raise err
                last = err
            except (urllib.error.URLError, OSError, ValueError) as e:
                last = Unavailable("UNAVAILABLE", f"{base}: {e}")
            self.current += 1
            if time.monotonic() + backoff >= deadline:
                raise last
            time.sleep(backoff * (0.5 + random.random()))
            backoff = min(backoff * 2, 1.0)


    def stream(self, path, query):
        """(event, data) pairs of a Server-Sent Events stream from the current node."""
        url = self.urls[self.current % len(self.urls)] + path + "?" + urllib.parse.urlencode(query)
        headers = {"accept": "text/event-stream"}
        if self.token is not None:
            headers["authorization"] = "Bearer " + self.token
        try:
            res = urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=60)
        except urllib.error.HTTPError as e:
            raise error_from(json.loads(e.read().decode("utf-8") or "{}"), e.code)
        with res:
            event, data = None, []
            for raw in res:
                line = raw.decode("utf-8").rstrip("\r\n")
                if line == "":
                    if event is not None and data:
                        yield event, json.loads("\n".join(data))
                    event, data = None, []
                elif line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: "):
                    data.append(line[6:])


class Lock:
    """A held lock. `token` is its fencing token (send it with every write it protects);
    `lost` is set once the client can no longer be sure it holds it."""

    def __init__(self, client, name, token):
        self._client = client
        self.name = name
        self.token = token
        self.lost = threading.Event()
        self.released = False

    def release(self):
        if self.released:
            return
        self.released = True
        self._client._release(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        try:
            self.release()
        except (NotHolder, SessionExpired):
            if not self.lost.is_set():
                raise
        return False


class Leadership:
    """This client leads `election` with `token` (the epoch) until it resigns or is lost."""

    def __init__(self, client, election, token):
        self._client = client
        self.election = election
        self.token = token
        self.lost = threading.Event()

    def proclaim(self, value):
        self._client._write("/v1/election/proclaim", {"election": self.election, "token": str(self.token), "value": value})

    def resign(self):
        self._client._write("/v1/election/resign", {"election": self.election, "token": str(self.token)})


class Client:
    def __init__(self, urls, token=None, ttl=10.0, label=None, request_timeout=10.0):
        if isinstance(urls, str):
            urls = [urls]
        self._http = _Http(list(urls), token, request_timeout)
        self._ttl = ttl
        self._label = label
        self._mutex = threading.RLock()
        self._session = None
        self._seq = 0
        self._answered = set()
        self._acked = 0
        self._held = []  # locks and leaderships to mark lost with the session
        self._safe_until = 0.0
        self._closed = threading.Event()
        self._keepalive_paused = False  # tests: stop sending keepalives
        self._thread = None

    # ---- session ------------------------------------------------------------------------

    @property
    def session(self):
        return self._ensure_session()

    def _ensure_session(self):
        with self._mutex:
            if self._session is not None:
                return self._session
            sent = time.monotonic()
            body = {"ttlMs": int(self._ttl * 1000)}
            if self._label:
                body["label"] = self._label
            r = self._http.call("POST", "/v1/session/open", body)
            self._session = r["session"]
            self._ttl = r["ttlMs"] / 1000.0
            self._seq, self._answered, self._acked = 0, set(), 0
            self._safe_until = _safe_deadline(sent, self._ttl)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._keepalive_loop, name="palisade-keepalive", daemon=True)
                self._thread.start()
            return self._session

    def _keepalive_loop(self):
        while not self._closed.is_set():
            with self._mutex:
                session, until = self._session, self._safe_until
            if session is None:
                return
            now = time.monotonic()
            if now >= until:
                self._lose(session)
                return
            # Every TTL/3, and never sleep past the safe deadline unnoticed.
            if self._closed.wait(min(self._ttl / 3, max(0.0, until - now))):
                return
            if self._keepalive_paused or time.monotonic() >= until:
                continue
            sent = time.monotonic()
            try:
                # Not past the safe deadline: a silent node must not hide the loss.
                self._http.call("POST", "/v1/session/keepalive", {"session": session}, timeout=max(0.1, until - sent))
            except SessionExpired:
                self._lose(session)
                return
            except PalisadeError:
                continue
            with self._mutex:
                if self._session == session:
                    self._safe_until = max(self._safe_until, _safe_deadline(sent, self._ttl))

    def _lose(self, session):
        with self._mutex:
            if self._session != session:
                return
            self._session = None
            held, self._held = self._held, []
        for h in held:
            h.lost.set()

    def _next_seq(self, count=1):
        with self._mutex:
            first = self._seq + 1
            self._seq += count
            return first

    def _done(self, *seqs):
        with self._mutex:
            self._answered.update(seqs)
            while self._acked + 1 in self._answered:
                self._acked += 1
                self._answered.discard(self._acked)

    def _write(self, path, fields, seqs=1, extra_time=0.0):
        session = self._ensure_session()
        seq = self._next_seq(seqs)
        body = dict(fields, session=session, seq=seq)
        if self._acked:
            body["ackedSeq"] = self._acked
        try:
            return self._http.call("POST", path, body, extra_time=extra_time)
        except SessionExpired:
            self._lose(session)
            raise
        finally:
            self._done(*range(seq, seq + seqs))

    # ---- locks --------------------------------------------------------------------------

    def acquire(self, name, wait=None, mode="exclusive", limit=None):
        """Take `name`; wait up to `wait` seconds (None or 0: try once). Raises LockTimeout."""
        fields = {"name": name, "mode": mode}
        if limit is not None:
            fields["limit"] = limit
        deadline = time.monotonic() + (wait or 0)
        while True:
            remaining = deadline - time.monotonic()
            if not wait or remaining <= 0:
                r = self._write("/v1/lock/acquire", fields)
            else:
                chunk = min(remaining, MAX_LONG_POLL)
                # A long poll takes two seqs: the acquire and the withdrawal of its wait.
                r = self._write("/v1/lock/acquire", dict(fields, waitMs=max(1, int(chunk * 1000))), seqs=2, extra_time=chunk)
            if r["status"] == "granted":
                lock = Lock(self, name, int(r["token"]))
                with self._mutex:
                    self._held.append(lock)
                return lock
            if not wait or time.monotonic() >= deadline:
                raise LockTimeout(name, wait or 0)

    def lock(self, name, wait=None, mode="exclusive", limit=None):
        """`with client.lock(name, wait=5.0) as lock:` — released when the block ends."""
        return self.acquire(name, wait=wait, mode=mode, limit=limit)

    def _release(self, lock):
        with self._mutex:
            if lock in self._held:
                self._held.remove(lock)
        self._write("/v1/lock/release", {"name": lock.name, "token": str(lock.token)})

    def get(self, name):
        return self._http.call("GET", "/v1/lock", query={"name": name})

    # ---- elections ----------------------------------------------------------------------

    def campaign(self, election, value, wait=None):
        """Stand for `election`; returns a Leadership once this client leads. A candidacy not
        leading within `wait` seconds is withdrawn and LockTimeout raised."""
        r = self._write("/v1/election/campaign", {"election": election, "value": value})
        session = self._session
        deadline = time.monotonic() + (wait or 0)
        while r.get("status") != "leader":
            now = self.leader(election)
            if now["leader"] == session:
                r = {"status": "leader", "token": now["token"]}
                break
            if time.monotonic() >= deadline:
                self._write("/v1/election/resign", {"election": election})
                raise LockTimeout(election, wait or 0)
            time.sleep(0.05)
        lead = Leadership(self, election, int(r["token"]))
        with self._mutex:
            self._held.append(lead)
        return lead

    def leader(self, election):
        return self._http.call("GET", "/v1/election/leader", query={"election": election})

    def observe(self, election):
        """Yield the election's leader ({election, leader, value, token}) now and on every
        change, from the node's event stream (GET /v1/election/observe). A broken stream is
        reopened on the next node; its snapshot is yielded only if it differs."""
        last = None
        while not self._closed.is_set():
            try:
                for name, data in self._http.stream("/v1/election/observe", {"election": election}):
                    key = (data.get("leader"), data.get("value"), data.get("token"))
                    if key != last:
                        last = key
                        yield data
                    if self._closed.is_set():
                        return
            except (OSError, ValueError, Unavailable):
                self._http.current += 1
                self._closed.wait(0.2)

    def watch(self, prefix):
        """Yield ("snapshot", {prefix, entries}) and then ("kvChanged", {key, valueBase64?,
        revision}) from GET /v1/kv/watch. A broken stream is reopened on the next node with a
        fresh snapshot (the state to resume from)."""
        while not self._closed.is_set():
            try:
                for item in self._http.stream("/v1/kv/watch", {"prefix": prefix}):
                    yield item
                    if self._closed.is_set():
                        return
            except (OSError, ValueError, Unavailable):
                self._http.current += 1
                self._closed.wait(0.2)

    # ---- key-value ----------------------------------------------------------------------

    def put(self, key, value, fence=None, if_revision=None):
        fields = {"key": key}
        if isinstance(value, str):
            fields["value"] = value
        else:
            import base64

            fields["valueBase64"] = base64.b64encode(bytes(value)).decode("ascii")
        if fence is not None:
            fields["fence"] = {"lock": fence.name, "token": str(fence.token)}
        if if_revision is not None:
            fields["ifRevision"] = if_revision
        return self._write("/v1/kv/put", fields)["revision"]

    def get_value(self, key):
        """(bytes, revision), or None when the key does not exist."""
        import base64

        r = self._http.call("GET", "/v1/kv", query={"key": key})
        return None if r is None else (base64.b64decode(r["valueBase64"]), r["revision"])

    def delete(self, key, fence=None, if_revision=None):
        fields = {"key": key}
        if fence is not None:
            fields["fence"] = {"lock": fence.name, "token": str(fence.token)}
        if if_revision is not None:
            fields["ifRevision"] = if_revision
        return self._write("/v1/kv/delete", fields)["existed"]

    # ---- end ----------------------------------------------------------------------------

    def close(self):
        """Close the session (releasing what it holds) and stop the keepalive thread."""
        with self._mutex:
            session = self._session
        self._closed.set()
        if session is not None:
            try:
                self._write("/v1/session/close", {})
            except PalisadeError:
                pass  # it expires on its own
            self._lose(session)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
