"""The client: one session with a background keepalive, locks, elections, key-value.

Within one Client, acquires of one name take turns (first come, first served) before they
reach the cluster: a client is one session, and the cluster answers a second acquire of a
name the session holds with the same grant and token, so a second handle would be a lie
(its release would free the first one's lock)."""
from __future__ import annotations

import logging
import os
import ssl
import threading
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Type, Union

from ._session import Session, deadline_reason
from ._transport import Transport
from ._turns import Turns
from ._wire import Change, Entry, Leader, decode_value, encode_value, entry_of, leader_of, malformed, token_of
from .errors import (
    ClientClosed,
    Conflict,
    Fenced,
    LockTimeout,
    NotHolder,
    PalisadeError,
    SessionExpired,
    Timeout,
    TokenRegression,
    Unavailable,
)

log = logging.getLogger("palisade_client")

#: Longest wait of one long-poll acquire; a longer wait asks again (docs/http-api.md).
MAX_LONG_POLL = 60.0
#: How long past its deadline an acquire or campaign waits for the cluster to confirm the
#: withdrawal of a request whose outcome is unknown, before it reports anyway and goes on
#: withdrawing in the background (the TypeScript SDK's rule, docs/protocol.md section 10).
WITHDRAW_GRACE = 0.1
#: A long poll asks the node to give up this much before the caller's deadline, so that the
#: node's own answer ("timeout": nothing stays queued) arrives in time.
POLL_MARGIN = 0.1
#: Entries a node sends in a watch's snapshot at most: a full page proves no deletion.
WATCH_PAGE = 1000
#: An event stream says something every 15 s (a comment line); a silent one is given up.
STREAM_READ_TIMEOUT = 40.0

PathLike = Union[str, "os.PathLike[str]"]
Value = Union[bytes, bytearray, memoryview, str]


@dataclass(frozen=True)
class Holder:
    session: int
    token: int
    mode: str


@dataclass(frozen=True)
class Waiter:
    session: int
    mode: str


@dataclass(frozen=True)
class LockInfo:
    """A lock as the cluster has it now (a linearizable read). A free lock has no holders."""

    name: str
    holders: Tuple[Holder, ...]
    waiters: Tuple[Waiter, ...]
    limit: Optional[int]
    delayed: bool


class _Lost(threading.Event):
    """`lost` of a lock or leadership: set once the client can no longer be sure it holds it
    (the session's safe deadline passed, it expired, the client closed, the handle was
    released or fenced), and while the handle holds nothing. `is_set()` also checks the
    session's deadline at the moment it is asked, so it is right at once after the process
    was paused, before the keepalive thread has run."""

    def __init__(self, session: Optional[Session] = None) -> None:
        super().__init__()
        self._session = session
        if session is None:
            self.set()

    def is_set(self) -> bool:
        s = self._session
        if s is not None and not super().is_set() and not s.live():
            self.set()
        return super().is_set()


class _Turn:
    """This client's turn on one name, given back exactly once: by the handle that holds the
    name, or by a background withdrawal it was handed to."""

    def __init__(self, turns: Turns, name: str) -> None:
        self._turns = turns
        self._name = name
        self._lock = threading.Lock()
        self._done = False
        self.handed_off = False

    def give_back(self) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
        self._turns.give_back(self._name)

    def give_back_unless_handed_off(self) -> None:
        if not self.handed_off:
            self.give_back()


def _end_block(end: Callable[[], None], exc: Optional[BaseException], what: str) -> None:
    """The end of a `with` block that holds something: `end` it. If the block raised, its
    exception is the one worth reporting: a failure of `end` is logged, not raised."""
    if exc is None:
        end()
        return
    try:
        end()
    except Exception:
        log.warning("%s after the block raised failed", what, exc_info=True)


def _fence_fields(fence: "FenceLike") -> Dict[str, str]:
    if isinstance(fence, (Lock, Leadership)):
        return fence.fence
    name, token = fence
    return {"lock": name, "token": str(token)}


class Lock:
    """A lock of one Client, held or not. `token` is the fencing token of the current grant
    (send it with every write the lock protects); `lost` is set whenever the handle does not
    hold the lock, or can no longer be sure it does.

        lock = client.lock("reports/nightly")
        if lock.acquire(timeout=5.0):          # or: with client.lock(name, wait=5.0) as lock:
            try:
                write(fencing_token=lock.token)
            finally:
                lock.release()
    """

    def __init__(self, client: "Client", name: str, mode: str = "exclusive", limit: Optional[int] = None, wait: Optional[float] = None) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError("a lock name is a non-empty string")
        if mode not in ("exclusive", "shared"):
            raise ValueError("mode is 'exclusive' or 'shared'")
        self._client = client
        self.name = name
        self.mode = mode
        self.limit = limit
        self._wait = wait
        self.token: Optional[int] = None
        self.lost: threading.Event = _Lost()
        #: For the last acquire that returned False: whether the cluster confirmed that
        #: nothing is held or queued for it (False: still being withdrawn in the background).
        self.withdrawn = True
        self._session: Optional[Session] = None
        self._turn: Optional[_Turn] = None
        self._guard = threading.Lock()

    def acquire(self, blocking: bool = True, timeout: Optional[float] = None) -> bool:
        """Takes the lock. blocking=False: try once. Otherwise wait up to `timeout` seconds
        (None: as long as it takes). True when held; False when not granted in time, with
        nothing left held or queued for this call."""
        return self._client._acquire(self, blocking, timeout)

    def release(self) -> None:
        """Releases the lock: retried until the cluster answers or the session is over
        (which frees it too). Idempotent; a lock already lost is released quietly."""
        self._client._release(self)

    def is_acquired(self) -> bool:
        return self._turn is not None and not self.lost.is_set()

    @property
    def fence(self) -> Dict[str, str]:
        """`{"lock": name, "token": "..."}`: the fence of a guarded write."""
        if self.token is None:
            raise ValueError(f"lock {self.name!r} was never acquired")
        return {"lock": self.name, "token": str(self.token)}

    def __enter__(self) -> "Lock":
        wait = self._wait
        if not self.acquire(blocking=bool(wait), timeout=wait or None):
            raise LockTimeout(self.name, wait or 0, self.withdrawn)
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        _end_block(self.release, exc, f"releasing {self.name!r}")

    def _session_ended(self, reason: PalisadeError) -> None:
        self.lost.set()
        turn = self._turn
        if turn is not None:
            turn.give_back()

    def __repr__(self) -> str:
        return f"<Lock {self.name!r} token={self.token} {'held' if self.is_acquired() else 'not held'}>"


class Leadership:
    """This client leads `election` with `token` (the epoch, a fencing token) until it
    resigns or `lost` is set."""

    def __init__(self, client: "Client", session: Session, election: str, token: int, value: str, turn: _Turn) -> None:
        self._client = client
        self._session = session
        self.election = election
        self.token = token
        self.value = value
        self.lost: threading.Event = _Lost(session)
        self._turn = turn
        self._resigned = False

    @property
    def fence(self) -> Dict[str, str]:
        return {"lock": self.election, "token": str(self.token)}

    def proclaim(self, value: str) -> None:
        """Changes the value observers see; NotHolder (and `lost`) if no longer the leader."""
        try:
            self._client._sequenced(self._session, "/v1/election/proclaim", {"election": self.election, "token": str(self.token), "value": value})
        except NotHolder:
            self._session_ended(NotHolder("NOT_HOLDER", "no longer the leader"))
            raise
        self.value = value

    def resign(self) -> None:
        """Steps down (retried until the cluster answers or the session is over). Idempotent."""
        if self._resigned:
            return
        self._resigned = True
        self.lost.set()
        self._session.detach(self)
        try:
            if self._session.live():
                self._client._until_answered(self._session, "/v1/election/resign", {"election": self.election, "token": str(self.token)}, (NotHolder, Conflict))
        finally:
            self._turn.give_back()

    def __enter__(self) -> "Leadership":
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        _end_block(self.resign, exc, f"resigning {self.election!r}")

    def _session_ended(self, reason: PalisadeError) -> None:
        self.lost.set()
        self._turn.give_back()


FenceLike = Union[Lock, Leadership, Tuple[str, int]]


def _ssl_context(
    urls: Sequence[str], ca: Optional[PathLike], cert: Optional[PathLike], key: Optional[PathLike], context: Optional[ssl.SSLContext]
) -> Optional[ssl.SSLContext]:
    if context is not None:
        if ca is not None or cert is not None or key is not None:
            raise ValueError("give ssl_context, or ca/cert/key, not both")
        return context
    if key is not None and cert is None:
        raise ValueError("key= needs cert=")
    if ca is None and cert is None and not any(u.startswith(("https:", "wss:")) for u in urls):
        return None
    ctx = ssl.create_default_context(cafile=None if ca is None else os.fspath(ca))
    if cert is not None:
        ctx.load_cert_chain(os.fspath(cert), None if key is None else os.fspath(key))
    return ctx


class Client:
    """A client of one Palisade cluster, over its HTTP/JSON API.

    urls: the nodes' client URLs (http(s):// or ws(s)://); any reachable one is enough.
    token: bearer token, for clusters with `auth`.
    ttl: session TTL in seconds. label: shown next to this client's locks.
    request_timeout: bound on one request's retries across nodes.
    ca, cert, key: TLS files (PEM): the CA that signs the nodes' certificates (default: the
        system's roots), and a client certificate for nodes that require one; or pass a
        ready ssl_context.
    cluster_id: the cluster to trust (default: the one the first answer names).
    attempt_timeout: how long one attempt on one node may go unanswered before the next node.
    """

    def __init__(
        self,
        urls: Union[str, Sequence[str]],
        token: Optional[str] = None,
        ttl: float = 10.0,
        label: Optional[str] = None,
        request_timeout: float = 10.0,
        *,
        ca: Optional[PathLike] = None,
        cert: Optional[PathLike] = None,
        key: Optional[PathLike] = None,
        ssl_context: Optional[ssl.SSLContext] = None,
        cluster_id: Optional[str] = None,
        attempt_timeout: float = 2.0,
        max_clock_drift: float = 0.01,
        safety_margin: Optional[float] = None,
    ) -> None:
        url_list = [urls] if isinstance(urls, str) else list(urls)
        if not ttl > 0:
            raise ValueError("ttl must be positive")
        if not 0 <= max_clock_drift < 1:
            raise ValueError("max_clock_drift must be in [0, 1)")
        self._transport = Transport(url_list, token, _ssl_context(url_list, ca, cert, key, ssl_context), cluster_id, attempt_timeout)
        self._ttl = ttl
        self._label = label
        self._request_timeout = request_timeout
        self._attempt_timeout = attempt_timeout
        self._drift = max_clock_drift
        self._margin = safety_margin
        self._mutex = threading.RLock()
        self._session: Optional[Session] = None
        self._closed = threading.Event()
        self._lock_turns = Turns()
        self._election_turns = Turns()
        # Highest log index this client has seen in an answer (grant tokens, write indexes):
        # a grant to a request sent after that must carry a higher token.
        self._seen_index = 0
        self._index_lock = threading.Lock()

    # ---- session --------------------------------------------------------------------------

    @property
    def session(self) -> int:
        """The current session id (a session is opened if there is none)."""
        return self._live_session(time.monotonic() + self._request_timeout).id

    @property
    def cluster_id(self) -> Optional[str]:
        """The cluster this client trusts: given, or pinned from the first answer."""
        return self._transport.cluster_id

    def _check_open(self) -> None:
        if self._closed.is_set():
            raise ClientClosed()

    def _live_session(self, deadline: float) -> Session:
        with self._mutex:
            self._check_open()
            s = self._session
            if s is not None:
                if s.live():
                    return s
                self._end_session(s, deadline_reason(), close_on_server=True)
            sent = time.monotonic()
            body: Dict[str, Any] = {"ttlMs": max(1, int(self._ttl * 1000))}
            if self._label:
                body["label"] = self._label
            r = self._transport.call("POST", "/v1/session/open", body, deadline=max(deadline, sent + 0.05))
            if not isinstance(r, Mapping) or not isinstance(r.get("session"), int) or not isinstance(r.get("ttlMs"), int):
                raise malformed("openSession")
            s = Session(r["session"], r["ttlMs"] / 1000.0, sent, self._drift, self._margin)
            self._session = s
            log.info("session %d opened (TTL %.3f s)", s.id, s.ttl)
            threading.Thread(target=self._keepalive_loop, args=(s,), name=f"palisade-keepalive-{s.id}", daemon=True).start()
            return s

    def _keepalive_loop(self, s: Session) -> None:
        """Keepalives every TTL/3; ends the session at its safe deadline if none was acknowledged."""
        while not s.ended.is_set():
            now = time.monotonic()
            if now >= s.safe_until:
                self._end_session(s, deadline_reason(), close_on_server=True)
                return
            # Every TTL/3, and never sleep past the safe deadline unnoticed.
            if s.ended.wait(min(s.ttl / 3, s.safe_until - now)):
                return
            sent = time.monotonic()
            if sent >= s.safe_until:
                continue
            try:
                # Its retries stop by the next keepalive's turn, and never outlive the lease.
                self._transport.call("POST", "/v1/session/keepalive", {"session": s.id}, deadline=min(sent + s.ttl / 3, s.safe_until))
            except SessionExpired as e:
                self._end_session(s, e, close_on_server=False)
                return
            except PalisadeError as e:
                log.debug("keepalive of session %d: %s", s.id, e)
                continue
            s.extend(sent)

    def _end_session(self, s: Session, reason: PalisadeError, close_on_server: bool) -> None:
        """Ends `s` here. When the client gave up on it while the cluster may still hold it,
        asks the cluster to close it, so its locks do not outlive the client's belief."""
        if not s.end(reason):
            return
        with self._mutex:
            if self._session is s:
                self._session = None
        log.info("session %d ended: %s", s.id, reason.message)
        if close_on_server and not self._closed.is_set():
            seq = s.take_seqs()

            def close_it() -> None:
                try:
                    self._send(s, "/v1/session/close", {}, seq, deadline=time.monotonic() + self._request_timeout)
                except PalisadeError:
                    pass  # it expires on its own

            threading.Thread(target=close_it, name=f"palisade-close-{s.id}", daemon=True).start()

    def _note_index(self, r: Any) -> None:
        if isinstance(r, Mapping) and isinstance(r.get("index"), int):
            with self._index_lock:
                self._seen_index = max(self._seen_index, r["index"])

    def _index_floor(self) -> int:
        with self._index_lock:
            return self._seen_index

    def _check_token(self, token: int, floor: int, what: str) -> None:
        """A grant to a request sent after index `floor` was seen is a later entry (tokens
        only grow): a lower token comes from a node that does not speak for this cluster."""
        if token < floor:
            log.error("%s was granted with token %d, below index %d already seen: refused", what, token, floor)
            raise TokenRegression("TOKEN_REGRESSION", f"{what} was granted with token {token}, below {floor} which this client has already seen")
        with self._index_lock:
            self._seen_index = max(self._seen_index, token)

    def _send(self, s: Session, path: str, fields: Mapping[str, Any], seq: int, *, deadline: float, attempt_timeout: Optional[float] = None) -> Any:
        """One session-scoped write with the given seq, retried with it until `deadline`."""
        body = dict(fields, session=s.id, seq=seq)
        acked = s.acked_seq
        if acked > 0:
            body["ackedSeq"] = min(acked, seq - 1)
        try:
            r = self._transport.call("POST", path, body, deadline=deadline, attempt_timeout=attempt_timeout)
        except SessionExpired as e:
            self._end_session(s, e, close_on_server=False)
            raise
        self._note_index(r)
        return r

    def _sequenced(self, s: Session, path: str, fields: Mapping[str, Any]) -> Any:
        """A write with a seq of its own, answered or given up on within the request timeout."""
        self._check_open()
        if not s.live():
            raise s.end_reason or deadline_reason()
        seq = s.take_seqs()
        try:
            return self._send(s, path, fields, seq, deadline=time.monotonic() + self._request_timeout)
        finally:
            s.settle(seq)

    def _until_answered(self, s: Session, path: str, fields: Mapping[str, Any], done: Tuple[Type[PalisadeError], ...]) -> None:
        """A release or resign: retried with its seq until the cluster answers or the session
        is over (which frees it too). The errors in `done` mean it is not held: done."""
        seq = s.take_seqs()
        try:
            while s.live() and not self._closed.is_set():
                try:
                    self._send(s, path, fields, seq, deadline=min(time.monotonic() + self._request_timeout, s.safe_until))
                    return
                except done + (SessionExpired,):
                    return
                except (Timeout, Unavailable) as e:
                    log.debug("%s for session %d: %s; retrying", path, s.id, e)
        finally:
            s.settle(seq)

    def _give_back(self, s: Session, path: str, fields: Mapping[str, Any]) -> None:
        """Releases (or resigns) a grant the caller will not get, in the background, so that
        the caller's error is not held up by it."""
        threading.Thread(target=self._until_answered, args=(s, path, fields, (NotHolder, Conflict)), name="palisade-give-back", daemon=True).start()

    # ---- locks ----------------------------------------------------------------------------

    def lock(self, name: str, wait: Optional[float] = None, mode: str = "exclusive", limit: Optional[int] = None) -> Lock:
        """A handle on lock `name`, not yet acquired. `with client.lock(name, wait=5.0) as lock:`
        takes it (waiting up to `wait` seconds; None or 0: one try; LockTimeout if not
        granted) and releases it when the block ends."""
        return Lock(self, name, mode, limit, wait)

    def acquire(self, name: str, wait: Optional[float] = None, mode: str = "exclusive", limit: Optional[int] = None) -> Lock:
        """Takes `name`, waiting up to `wait` seconds (None or 0: one try). Returns the held
        Lock; LockTimeout (nothing left held or queued) if not granted in time."""
        lock = Lock(self, name, mode, limit, wait)
        if not lock.acquire(blocking=bool(wait), timeout=wait or None):
            raise LockTimeout(name, wait or 0, lock.withdrawn)
        return lock

    def _acquire(self, lock: Lock, blocking: bool, timeout: Optional[float]) -> bool:
        self._check_open()
        if timeout is not None and timeout < 0:
            raise ValueError("timeout must be >= 0")
        with lock._guard:
            if lock._turn is not None:
                if not lock.lost.is_set():
                    raise RuntimeError(f"this handle already holds {lock.name!r}: release it first")
                self._release_held(lock)  # lost meanwhile: released as release() would
            start = time.monotonic()
            deadline = None if blocking and timeout is None else start + (timeout if blocking and timeout is not None else 0.0)
            got = self._lock_turns.take(lock.name, deadline) if blocking else self._lock_turns.try_take(lock.name)
            if not got:
                lock.withdrawn = True
                return False
            turn = _Turn(self._lock_turns, lock.name)
            held = False
            try:
                try:
                    s = self._live_session(deadline if blocking and deadline is not None else start + self._request_timeout)
                except Unavailable:
                    if blocking and deadline is not None and time.monotonic() >= deadline:
                        lock.withdrawn = True
                        return False  # nothing was asked of the cluster for this call
                    raise
                floor = self._index_floor()
                token = self._acquire_on(s, lock, blocking, deadline, turn)
                if token is None:
                    return False
                try:
                    self._check_token(token, floor, f"lock {lock.name!r}")
                except TokenRegression:
                    self._give_back(s, "/v1/lock/release", {"name": lock.name, "token": str(token)})
                    raise
                lock.token = token
                lock.lost = _Lost(s)
                lock._session = s
                lock._turn = turn
                lock.withdrawn = True
                if not s.attach(lock):
                    lock._session_ended(s.end_reason or deadline_reason())
                    raise s.end_reason or deadline_reason()
                held = True
                log.debug("lock %r held with token %d", lock.name, token)
                return True
            finally:
                if not held:
                    turn.give_back_unless_handed_off()

    def _acquire_on(self, s: Session, lock: Lock, blocking: bool, deadline: Optional[float], turn: _Turn) -> Optional[int]:
        """The granted token, or None when not granted in time (lock.withdrawn says whether
        the cluster confirmed that nothing stays queued)."""
        fields: Dict[str, Any] = {"name": lock.name, "mode": lock.mode}
        if lock.limit is not None:
            fields["limit"] = lock.limit
        while True:
            now = time.monotonic()
            if blocking:
                remaining = MAX_LONG_POLL if deadline is None else deadline - now
                if remaining <= 0:
                    return None
                wait = min(MAX_LONG_POLL, remaining if deadline is None else max(remaining - POLL_MARGIN, remaining / 2))
                # A long poll takes two seqs: the acquire and the withdrawal of its wait.
                body, seqs = dict(fields, waitMs=max(1, int(wait * 1000))), 2
                request_deadline = deadline if deadline is not None else now + wait + self._request_timeout
                attempt: Optional[float] = wait + self._attempt_timeout
            else:
                body, seqs = dict(fields), 1
                request_deadline, attempt = now + self._request_timeout, None
            seq = s.take_seqs(seqs)
            try:
                r = self._send(s, "/v1/lock/acquire", body, seq, deadline=request_deadline, attempt_timeout=attempt)
            except (Timeout, Unavailable):
                # The outcome is unknown: a node may have granted or queued it (a long poll
                # answered 503 may have queued before its node failed to withdraw it). Take it
                # back before reporting, so no lock is held for nobody.
                lock.withdrawn = self._withdraw(s, lock.name, body, seq, seqs, turn)
                if blocking and deadline is not None and time.monotonic() >= deadline:
                    return None
                raise
            except BaseException:
                s.settle(seq, seqs)
                raise
            s.settle(seq, seqs)
            status = r.get("status") if isinstance(r, Mapping) else None
            if status == "granted":
                token = token_of(r.get("token"))
                if token is None:
                    raise malformed("a grant without a token")
                return token
            if status == "busy" and not blocking:
                lock.withdrawn = True
                return None
            if status == "timeout" and blocking:
                if deadline is not None and deadline - time.monotonic() <= POLL_MARGIN:
                    lock.withdrawn = True
                    return None
                continue
            raise malformed(f"acquire answered {status!r}")

    def _withdraw(self, s: Session, name: str, body: Mapping[str, Any], seq: int, seqs: int, turn: _Turn) -> bool:
        """Takes back an acquire whose outcome is unknown: the same request with the same seq
        tells what happened (a long poll retried with waitMs 1 withdraws a wait still queued),
        and a grant is released. True when confirmed within WITHDRAW_GRACE; otherwise it goes
        on in the background while the session lives, keeping this client's turn on the name
        (the next acquire of it here waits), and settles the seqs when done."""
        retry = dict(body, waitMs=1) if seqs == 2 else dict(body)

        def take_back(deadline: float) -> bool:
            if not s.live() or self._closed.is_set():
                return True  # the session's end frees everything
            try:
                r = self._send(s, "/v1/lock/acquire", retry, seq, deadline=deadline)
            except (Timeout, Unavailable):
                return False
            except PalisadeError:
                return True  # a definite refusal (or the session is gone): nothing is held
            if isinstance(r, Mapping) and r.get("status") == "granted":
                token = token_of(r.get("token"))
                if token is not None:
                    log.info("lock %r was granted (token %d) after its caller gave up: releasing it", name, token)
                    release = s.take_seqs()
                    try:
                        self._send(s, "/v1/lock/release", {"name": name, "token": str(token)}, release, deadline=deadline)
                    except (NotHolder, SessionExpired):
                        pass
                    except PalisadeError:
                        return False
                    finally:
                        s.settle(release)
            return True

        return self._withdraw_within(f"lock {name!r}", turn, take_back, lambda: s.settle(seq, seqs))

    def _release(self, lock: Lock) -> None:
        with lock._guard:
            self._release_held(lock)

    def _release_held(self, lock: Lock) -> None:
        turn, s, token = lock._turn, lock._session, lock.token
        if turn is None or s is None or token is None:
            return
        lock._turn = None
        lock.lost.set()
        s.detach(lock)
        try:
            # Even a lock already lost is released by token while its session lives:
            # harmless if it is gone, and nothing can stay held.
            if s.live():
                self._until_answered(s, "/v1/lock/release", {"name": lock.name, "token": str(token)}, (NotHolder,))
        finally:
            turn.give_back()

    def get(self, name: str) -> LockInfo:
        """Holders (with tokens) and waiters of a lock, as the cluster has them now."""
        r = self._read("/v1/lock", {"name": name})
        if not isinstance(r, Mapping):
            raise malformed("lock")
        holders = tuple(Holder(h["session"], token_of(h["token"]) or 0, h["mode"]) for h in r.get("holders") or [])
        waiters = tuple(Waiter(w["session"], w["mode"]) for w in r.get("waiters") or [])
        limit = r.get("limit")
        return LockInfo(str(r.get("name", name)), holders, waiters, limit if isinstance(limit, int) else None, r.get("delayed") is True)

    def _read(self, path: str, query: Mapping[str, str]) -> Any:
        self._check_open()
        return self._transport.call("GET", path, query=query, deadline=time.monotonic() + self._request_timeout)

    def status(self) -> Dict[str, Any]:
        """The status of a node (role, term, leader, commit index ...)."""
        r = self._read("/v1/status", {})
        return dict(r) if isinstance(r, Mapping) else {}

    # ---- elections ------------------------------------------------------------------------

    def campaign(self, election: str, value: str, wait: Optional[float] = None) -> Leadership:
        """Stands for `election`; returns a Leadership once this client leads. Waits up to
        `wait` seconds (None or 0: leads now or not at all); a candidacy not leading by then
        is withdrawn and LockTimeout raised. A second campaign of one election in one client
        waits for the first one's leadership to end."""
        self._check_open()
        start = time.monotonic()
        deadline = start + (wait or 0)
        if not self._election_turns.take(election, deadline):
            raise LockTimeout(election, wait or 0)
        turn = _Turn(self._election_turns, election)
        leading = False
        try:
            s = self._live_session(max(deadline, start + self._request_timeout))
            floor = self._index_floor()
            fields = {"election": election, "value": value}
            seq = s.take_seqs()
            try:
                r = self._send(s, "/v1/election/campaign", fields, seq, deadline=max(deadline, time.monotonic() + self._request_timeout))
            except (Timeout, Unavailable):
                self._withdraw_candidacy(s, election, fields, seq, turn)
                raise
            except BaseException:
                s.settle(seq)
                raise
            s.settle(seq)
            if not isinstance(r, Mapping):
                raise malformed("campaign")
            token = token_of(r.get("token")) if r.get("status") == "leader" else self._await_leadership(s, election, deadline)
            if token is None:
                withdrawn = self._withdraw_candidacy(s, election, None, 0, turn)
                raise LockTimeout(election, wait or 0, withdrawn)
            try:
                self._check_token(token, floor, f"leadership of {election!r}")
            except TokenRegression:
                self._give_back(s, "/v1/election/resign", {"election": election, "token": str(token)})
                raise
            lead = Leadership(self, s, election, token, value, turn)
            leading = True
            if not s.attach(lead):
                lead._session_ended(s.end_reason or deadline_reason())
            return lead
        finally:
            if not leading:
                turn.give_back_unless_handed_off()

    def _await_leadership(self, s: Session, election: str, deadline: float) -> Optional[int]:
        """The token once this session leads (read every 50-250 ms); None at the deadline."""
        pause = 0.05
        while True:
            state = self.leader(election)
            if state.leader == s.id and state.token is not None:
                return state.token
            if not s.live():
                raise s.end_reason or deadline_reason()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            time.sleep(min(pause, remaining))
            pause = min(pause * 2, 0.25)

    def _withdraw_candidacy(self, s: Session, election: str, campaign: Optional[Mapping[str, Any]], seq: int, turn: _Turn) -> bool:
        """Leaves the election's queue, or steps down if elected meanwhile. `campaign` and
        `seq`: a campaign whose outcome is unknown, retried first to learn it. True when
        confirmed within WITHDRAW_GRACE; otherwise goes on in the background (keeping the turn)."""

        def take_back(deadline: float) -> bool:
            if not s.live() or self._closed.is_set():
                return True
            try:
                if campaign is not None:
                    self._send(s, "/v1/election/campaign", campaign, seq, deadline=deadline)
                resign = s.take_seqs()
                try:
                    self._send(s, "/v1/election/resign", {"election": election}, resign, deadline=deadline)
                    return True
                except Conflict:
                    pass  # no candidate: elected meanwhile, or never queued
                finally:
                    s.settle(resign)
                state = leader_of(election, self._transport.call("GET", "/v1/election/leader", query={"election": election}, deadline=deadline))
                if state.leader == s.id and state.token is not None:
                    resign = s.take_seqs()
                    try:
                        self._send(s, "/v1/election/resign", {"election": election, "token": str(state.token)}, resign, deadline=deadline)
                    except (NotHolder, Conflict):
                        pass
                    finally:
                        s.settle(resign)
                return True
            except (Timeout, Unavailable):
                return False
            except PalisadeError:
                return True

        def settle() -> None:
            if campaign is not None:
                s.settle(seq)

        return self._withdraw_within(f"election {election!r}", turn, take_back, settle)

    def _withdraw_within(self, what: str, turn: _Turn, take_back: Callable[[float], bool], settle: Callable[[], None]) -> bool:
        """Runs take_back (a withdrawal of a request whose outcome is unknown; its argument is
        a deadline) for at most WITHDRAW_GRACE. Confirmed: settle runs, True. Otherwise it
        goes on in the background (each try bounded by the request timeout) keeping `turn`,
        which it gives back when done, after settle: False."""
        if take_back(time.monotonic() + WITHDRAW_GRACE):
            settle()
            return True
        log.warning("%s: the cluster did not confirm the withdrawal in time; withdrawing in the background", what)
        turn.handed_off = True

        def in_background() -> None:
            try:
                while not take_back(time.monotonic() + self._request_timeout):
                    time.sleep(0.05)
            finally:
                settle()
                turn.give_back()

        threading.Thread(target=in_background, name="palisade-withdraw", daemon=True).start()
        return False

    def leader(self, election: str) -> Leader:
        """The election's leader now (a linearizable read)."""
        return leader_of(election, self._read("/v1/election/leader", {"election": election}))

    def observe(self, election: str) -> Iterator[Leader]:
        """Yields the election's state now and on every change, from a node's event stream
        (GET /v1/election/observe). A broken stream is reopened on the next node; its
        snapshot is yielded only if it differs from the last state yielded."""
        last: Optional[Leader] = None

        def events() -> Iterator[Tuple[str, Any]]:
            return self._transport.stream("/v1/election/observe", {"election": election}, STREAM_READ_TIMEOUT)

        for _, data in self._reopening(events):
            state = leader_of(election, data)
            if state != last:
                last = state
                yield state

    def _reopening(self, open_stream: Callable[[], Iterator[Tuple[str, Any]]]) -> Iterator[Tuple[str, Any]]:
        """The events of a stream, reopened (on the next node, with backoff) when it breaks,
        until the client is closed."""
        pause = 0.05
        while not self._closed.is_set():
            try:
                for item in open_stream():
                    pause = 0.05
                    yield item
                    if self._closed.is_set():
                        return
            except (Unavailable, Timeout, OSError, ValueError) as e:
                log.debug("event stream broke (%s); reopening", e)
            if self._closed.wait(pause):
                return
            pause = min(pause * 2, 1.0)

    # ---- key-value ------------------------------------------------------------------------

    def put(self, key: str, value: Value, fence: Optional[FenceLike] = None, if_revision: Optional[int] = None) -> int:
        """Writes `key` (str: as UTF-8; bytes as they are); returns its new revision. With
        `fence` (a held Lock, a Leadership, or (lock name, token)) only while that lock is
        held with that token (else Fenced, and the Lock's `lost` is set); with
        `if_revision` only if the key is at that revision (0: absent; else Conflict)."""
        fields: Dict[str, Any] = dict(encode_value(value), key=key)
        r = self._kv_write("/v1/kv/put", fields, fence, if_revision)
        return int(r["revision"])

    def delete(self, key: str, fence: Optional[FenceLike] = None, if_revision: Optional[int] = None) -> bool:
        """Deletes `key`; True when it existed. `fence` and `if_revision` as for put."""
        r = self._kv_write("/v1/kv/delete", {"key": key}, fence, if_revision)
        return r.get("existed") is True

    def _kv_write(self, path: str, fields: Dict[str, Any], fence: Optional[FenceLike], if_revision: Optional[int]) -> Mapping[str, Any]:
        if fence is not None:
            fields["fence"] = _fence_fields(fence)
        if if_revision is not None:
            fields["ifRevision"] = if_revision
        s = self._live_session(time.monotonic() + self._request_timeout)
        try:
            r = self._sequenced(s, path, fields)
        except Fenced:
            if isinstance(fence, (Lock, Leadership)):
                fence.lost.set()
            raise
        if not isinstance(r, Mapping):
            raise malformed(path)
        return r

    def kv_get(self, key: str) -> Optional[Entry]:
        """The key's entry (value bytes, revision), or None when it does not exist."""
        r = self._read("/v1/kv", {"key": key})
        return None if r is None else entry_of(r)

    def get_value(self, key: str) -> Optional[Tuple[bytes, int]]:
        """(bytes, revision), or None when the key does not exist."""
        e = self.kv_get(key)
        return None if e is None else (e.value, e.revision)

    def watch(self, prefix: str, include_existing: bool = False) -> Iterator[Change]:
        """Yields every change to keys under `prefix`, from a node's event stream (GET
        /v1/kv/watch); with include_existing, the keys that exist first. The stream stays up
        through leader changes; when it breaks it is reopened on the next node, and the new
        snapshot fills in what was missed (deletions seen then have revision 0)."""
        known: Dict[str, int] = {}
        baselined = False

        def offer(change: Change) -> Optional[Change]:
            seen = known.get(change.key)
            if seen is not None and change.revision != 0 and change.revision <= seen:
                return None
            known[change.key] = change.revision
            return change

        def events() -> Iterator[Tuple[str, Any]]:
            return self._transport.stream("/v1/kv/watch", {"prefix": prefix}, STREAM_READ_TIMEOUT)

        for kind, data in self._reopening(events):
            if kind == "snapshot" and isinstance(data, Mapping):
                entries = [entry_of(e) for e in data.get("entries") or []]
                first, baselined = not baselined, True
                present = set()
                for e in entries:
                    present.add(e.key)
                    if first and not include_existing:
                        known[e.key] = max(known.get(e.key, 0), e.revision)
                        continue
                    got = offer(Change(e.key, e.value, e.revision))
                    if got is not None:
                        yield got
                if not first and len(entries) < WATCH_PAGE:
                    for key, revision in list(known.items()):
                        if revision > 0 and key not in present:
                            known[key] = 0
                            yield Change(key, None, 0)
            elif kind == "kvChanged" and isinstance(data, Mapping) and isinstance(data.get("key"), str):
                rev = data.get("revision")
                got = offer(Change(data["key"], decode_value(data), rev if isinstance(rev, int) else 0))
                if got is not None:
                    yield got

    # ---- end ------------------------------------------------------------------------------

    def close(self) -> None:
        """Closes the session (the cluster releases what it holds; at most one attempt is
        waited for, else it expires on its own) and stops the keepalive thread. The client
        takes no more requests (ClientClosed). Idempotent."""
        with self._mutex:
            if self._closed.is_set():
                return
            s = self._session
            self._session = None
            if s is not None and s.live():
                seq = s.take_seqs()
                try:
                    self._send(s, "/v1/session/close", {}, seq, deadline=time.monotonic() + self._attempt_timeout)
                except PalisadeError:
                    pass  # it expires on its own
            self._closed.set()
        if s is not None:
            s.end(ClientClosed())
        self._transport.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        self.close()


__all__ = ["Client", "Lock", "Leadership", "LockInfo", "Holder", "Waiter", "Entry", "Change", "Leader", "FenceLike"]
