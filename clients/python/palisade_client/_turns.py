"""Turns per name inside one client, first come first served. A client is one session, and
a session holds a name once (the cluster answers a second acquire of it with the same grant
and token), so two threads of one client must not both believe they have it: they queue
here before they reach the cluster."""
from __future__ import annotations

import threading
import time
from collections import deque
from typing import Deque, Dict, Optional


class Turns:
    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._queues: Dict[str, Deque[object]] = {}

    def take(self, name: str, deadline: Optional[float]) -> bool:
        """Waits for the turn on `name` until `deadline` (time.monotonic(); None: as long as
        it takes). True when it is this caller's; pass it on with `give_back`."""
        ticket = object()
        with self._cv:
            queue = self._queues.setdefault(name, deque())
            queue.append(ticket)
            while queue[0] is not ticket:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    queue.remove(ticket)
                    return False
                self._cv.wait(remaining)
            return True

    def try_take(self, name: str) -> bool:
        """The turn if nobody in this client holds or waits for it now."""
        with self._cv:
            if name in self._queues:
                return False
            self._queues[name] = deque([object()])
            return True

    def give_back(self, name: str) -> None:
        with self._cv:
            queue = self._queues[name]
            queue.popleft()
            if not queue:
                del self._queues[name]
            self._cv.notify_all()
