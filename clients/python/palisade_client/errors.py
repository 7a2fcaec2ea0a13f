"""Typed exceptions for the API's stable error codes (docs/protocol.md section 9)."""


class PalisadeError(Exception):
    """An error answer from a node: `code` is the protocol's stable code."""

    def __init__(self, code, message, status=None, current_token=None, current_revision=None):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status
        self.current_token = current_token
        self.current_revision = current_revision


class Unavailable(PalisadeError):
    """No node could serve the request (no leader, quorum lost, nodes down): retry later."""


class Timeout(PalisadeError):
    """The outcome is unknown."""


class SessionExpired(PalisadeError):
    """UNKNOWN_SESSION: the session is gone and every lock it held is lost."""


class NotHolder(PalisadeError):
    pass


class Fenced(PalisadeError):
    pass


class Conflict(PalisadeError):
    pass


class Unauthenticated(PalisadeError):
    pass


class PermissionDenied(PalisadeError):
    pass


class LimitExceeded(PalisadeError):
    pass


class InvalidArgument(PalisadeError):
    pass


class LockTimeout(PalisadeError):
    """The lock was not granted within the wait; nothing stays queued for it."""

    def __init__(self, name, wait):
        super().__init__("LOCK_TIMEOUT", f"lock {name!r} not granted within {wait} s")
        self.name = name


_BY_CODE = {
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
}


def error_from(body, status):
    err = (body or {}).get("error") or {}
    code = err.get("code", "INTERNAL")
    cls = _BY_CODE.get(code, PalisadeError)
    token = err.get("currentToken")
    return cls(
        code,
        err.get("message", ""),
        status=status,
        current_token=int(token) if isinstance(token, str) else token,
        current_revision=err.get("currentRevision"),
    )
