"""Palisade over its HTTP/JSON API, with the Python standard library only.

    from palisade_client import Client

    with Client(["http://127.0.0.1:7001", "http://127.0.0.1:7002"]) as client:
        with client.lock("reports/nightly", wait=5.0) as lock:
            write_report(fencing_token=lock.token)   # stop when lock.lost is set
"""
from .client import Change, Client, Entry, Holder, Leader, Leadership, Lock, LockInfo, Waiter
from .errors import (
    ClientClosed,
    Conflict,
    Fenced,
    InvalidArgument,
    LimitExceeded,
    LockTimeout,
    NotHolder,
    PalisadeError,
    PermissionDenied,
    SessionExpired,
    Timeout,
    TokenRegression,
    Unauthenticated,
    Unavailable,
    WrongCluster,
)

__version__ = "0.1.0"

__all__ = [
    "Client",
    "Lock",
    "Leadership",
    "LockInfo",
    "Holder",
    "Waiter",
    "Entry",
    "Change",
    "Leader",
    "PalisadeError",
    "Unavailable",
    "WrongCluster",
    "Timeout",
    "TokenRegression",
    "SessionExpired",
    "NotHolder",
    "Fenced",
    "Conflict",
    "Unauthenticated",
    "PermissionDenied",
    "LimitExceeded",
    "InvalidArgument",
    "LockTimeout",
    "ClientClosed",
]
