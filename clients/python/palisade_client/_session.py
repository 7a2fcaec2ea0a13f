"""One lease on the cluster, as the client sees it: its id, its safe deadline, the numbering
of its writes, and the handles (locks, leaderships) that end with it.

Safe deadline (docs/protocol.md section 4, the TypeScript SDK's rule). The leader expires a
session at (time it received the last keepalive) + TTL. The client only knows when it sent
the keepalive, so it counts from the send:

    safe_until = sent(last acknowledged keepalive, or the open) + TTL * (1 - max_clock_drift) - margin

margin defaults to max(50 ms, 5 % of the TTL). Past it the client no longer vouches for the
session: every handle is marked lost."""
from __future__ import annotations

import threading
import time
from typing import Optional, Protocol, Set

from .errors import PalisadeError, SessionExpired


class Handle(Protocol):
    def _session_ended(self, reason: PalisadeError) -> None:
        ...


def deadline_reason() -> SessionExpired:
    return SessionExpired("SESSION_EXPIRED", "no keepalive was acknowledged before the safe deadline: the lease may have expired")


class Session:
    def __init__(self, session_id: int, ttl: float, opened_sent_at: float, max_clock_drift: float, safety_margin: Optional[float]) -> None:
        self.id = session_id
        self.ttl = ttl
        self._drift = max_clock_drift
        self._margin = max(0.05, 0.05 * ttl) if safety_margin is None else safety_margin
        # The cluster starts the lease no earlier than it received the open.
        self.safe_until = self.deadline_from(opened_sent_at)
        self.ended = threading.Event()
        self.end_reason: Optional[PalisadeError] = None
        self._lock = threading.Lock()
        self._next_seq = 1
        self._unanswered: Set[int] = set()
        self._handles: Set[Handle] = set()

    def deadline_from(self, sent_at: float) -> float:
        return sent_at + self.ttl * (1 - self._drift) - self._margin

    def extend(self, sent_at: float) -> None:
        """A keepalive sent at `sent_at` was acknowledged."""
        with self._lock:
            if not self.ended.is_set():
                self.safe_until = max(self.safe_until, self.deadline_from(sent_at))

    def live(self) -> bool:
        """Not ended, and the safe deadline not passed (checked now, not by a timer: right
        after a process pause this is already False)."""
        return not self.ended.is_set() and time.monotonic() < self.safe_until

    # ---- exactly-once numbering (docs/protocol.md section 5) --------------------------------

    def take_seqs(self, count: int = 1) -> int:
        """`count` consecutive seqs (a long-poll acquire takes two); returns the first."""
        with self._lock:
            first = self._next_seq
            self._next_seq += count
            self._unanswered.update(range(first, first + count))
            return first

    def settle(self, first: int, count: int = 1) -> None:
        """Answered, or given up on: never sent again, so the node may forget the answers."""
        with self._lock:
            self._unanswered.difference_update(range(first, first + count))

    @property
    def acked_seq(self) -> int:
        """Highest seq with every seq at or below it settled."""
        with self._lock:
            return min(self._unanswered, default=self._next_seq) - 1

    # ---- handles ----------------------------------------------------------------------------

    def attach(self, handle: Handle) -> bool:
        """Ties `handle` to the session's end; False when the session already ended."""
        with self._lock:
            if self.ended.is_set():
                return False
            self._handles.add(handle)
            return True

    def detach(self, handle: Handle) -> None:
        with self._lock:
            self._handles.discard(handle)

    def end(self, reason: PalisadeError) -> bool:
        """Ends the session locally and marks its handles lost. False if it had ended."""
        with self._lock:
            if self.ended.is_set():
                return False
            self.end_reason = reason
            self.ended.set()
            handles, self._handles = self._handles, set()
        for h in handles:
            h._session_ended(reason)
        return True
