"""Palisade over its HTTP/JSON API, with the Python standard library only (3.9+).

    client = Client(["http://127.0.0.1:7001", "http://127.0.0.1:7002"])
    with client.lock("reports/nightly", wait=5.0) as lock:
        write_report(fencing_token=lock.token)   # stop when lock.lost is set
    client.close()
"""
from .client import Client, Lock, Leadership
from .errors import (
    PalisadeError,
    Unavailable,
    Timeout,
    SessionExpired,
    NotHolder,
    Fenced,
    Conflict,
    Unauthenticated,
    PermissionDenied,
    LimitExceeded,
    InvalidArgument,
    LockTimeout,
)

__all__ = [
    "Client", "Lock", "Leadership", "PalisadeError", "Unavailable", "Timeout", "SessionExpired",
    "NotHolder", "Fenced", "Conflict", "Unauthenticated", "PermissionDenied", "LimitExceeded",
    "InvalidArgument", "LockTimeout",
]
