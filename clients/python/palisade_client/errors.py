"""Typed exceptions for the API's stable error codes (docs/protocol.md section 9), and the
ones only the client can decide (TOKEN_REGRESSION, WRONG_CLUSTER, LOCK_TIMEOUT,
CLIENT_CLOSED).

Definite or not: every error says whether the request it ends may have been applied.
`Timeout` is the only indefinite one (`indefinite` is True): the outcome is unknown, and a
retry with the same seq gets the first answer. Every other error is definite: the request
was refused, or never reached a node of this cluster that could apply it."""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Type


class PalisadeError(Exception):
    """An error answer from a node, or one the client decided: `code` is the stable code."""

    indefinite = False

    def __init__(
        self,
        code: str,
        message: str,
        status: Optional[int] = None,
        current_token: Optional[int] = None,
        current_revision: Optional[int] = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status
        self.current_token = current_token
        self.current_revision = current_revision


class Unavailable(PalisadeError):
    """No node of the cluster could serve the request before the deadline (no leader, quorum
    lost, nodes down). Definite: the request was not applied."""


class WrongCluster(Unavailable):
    """The nodes that answered belong to another cluster than the one this client pinned
    (the `Palisade-Cluster-Id` of the first answer, or `cluster_id=`). Nothing was applied
    in this client's cluster."""


class Timeout(PalisadeError):
    """The deadline passed without a definite answer: the request may or may not have been
    applied. A lock acquire that ends this way is withdrawn before the error is raised."""

    indefinite = True


class TokenRegression(PalisadeError):
    """A grant carried a fencing token below one this client had already seen: the node that
    answered does not speak for the cluster the client knows (it lost data, or it is another
    cluster). Definite: the client holds nothing from that grant."""


class SessionExpired(PalisadeError):
    """UNKNOWN_SESSION, or the safe deadline passed: the session is gone and every lock it
    held is lost."""


class NotHolder(PalisadeError):
    """Release, proclaim or resign by a session that does not hold it with that token."""


class Fenced(PalisadeError):
    """A fenced write whose lock is not held with that token right now; nothing changed."""


class Conflict(PalisadeError):
    """The state forbids it: mode or limit mismatch, revision mismatch, not waiting."""


class Unauthenticated(PalisadeError):
    pass


class PermissionDenied(PalisadeError):
    pass


class LimitExceeded(PalisadeError):
    pass


class InvalidArgument(PalisadeError):
    pass


class ClientClosed(PalisadeError):
    """The client was closed: it has no session and takes no more requests."""

    def __init__(self) -> None:
        super().__init__("CLIENT_CLOSED", "the client is closed")


class LockTimeout(PalisadeError):
    """The lock (or leadership) was not granted within the wait. Nothing is held for the
    caller. `withdrawn` says whether the cluster also confirmed that nothing is queued or
    held for this call; when False it did not answer in time, and the client goes on
    withdrawing in the background (the next acquire of the name in this client waits for
    that)."""

    def __init__(self, name: str, wait: float, withdrawn: bool = True) -> None:
        more = "" if withdrawn else " (the cluster did not answer in time: withdrawing in the background)"
        super().__init__("LOCK_TIMEOUT", f"{name!r} not granted within {wait} s{more}")
        self.name = name
        self.withdrawn = withdrawn


_BY_CODE: Dict[str, Type[PalisadeError]] = {
    "UNAVAILABLE": Unavailable,
    "NOT_LEADER": Unavailable,
    "RATE_LIMITED": Unavailable,
    "TIMEOUT": Timeout,
    "UNKNOWN_SESSION": SessionExpired,
    "NOT_HOLDER": NotHolder,
    "FENCED": Fenced,
    "CONFLICT": Conflict,
    "STALE_SEQUENCE": Conflict,
    "UNAUTHENTICATED": Unauthenticated,
    "PERMISSION_DENIED": PermissionDenied,
    "LIMIT_EXCEEDED": LimitExceeded,
    "INVALID_ARGUMENT": InvalidArgument,
    "BAD_FRAME": InvalidArgument,
    "FRAME_TOO_LARGE": InvalidArgument,
    "TOKEN_REGRESSION": TokenRegression,
}


def error_from(body: Any, status: Optional[int]) -> PalisadeError:
    """The typed error of an `{"error": {...}}` answer."""
    err: Mapping[str, Any] = {}
    if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
        err = body["error"]
    code = str(err.get("code", "INTERNAL"))
    cls = _BY_CODE.get(code, PalisadeError)
    token = err.get("currentToken")
    revision = err.get("currentRevision")
    return cls(
        code,
        str(err.get("message", "")),
        status=status,
        current_token=int(token) if isinstance(token, (str, int)) else None,
        current_revision=revision if isinstance(revision, int) else None,
    )
