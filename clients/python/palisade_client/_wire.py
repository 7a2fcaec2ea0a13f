"""What the JSON answers carry, as typed values: key-value bytes in either encoding, tokens
as decimal strings, election states."""
from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from .errors import PalisadeError


@dataclass(frozen=True)
class Entry:
    """A key's value (bytes) and revision (the index of the entry that last wrote it)."""

    key: str
    value: bytes
    revision: int

    @property
    def text(self) -> str:
        return self.value.decode("utf-8")


@dataclass(frozen=True)
class Change:
    """One change under a watched prefix. `value` None: the key was deleted. `revision` 0: a
    deletion the client inferred from a fresh snapshot after its stream broke."""

    key: str
    value: Optional[bytes]
    revision: int


@dataclass(frozen=True)
class Leader:
    """An election's state: `leader` is the leading session (None: nobody leads), `token`
    its epoch (a fencing token)."""

    election: str
    leader: Optional[int]
    value: Optional[str]
    token: Optional[int]


def malformed(what: str) -> PalisadeError:
    return PalisadeError("INTERNAL", f"malformed answer: {what}")


def decode_value(obj: Mapping[str, Any]) -> Optional[bytes]:
    """The bytes of a kvGet answer, a snapshot entry or a kvChanged event; None when the
    key was deleted. Two forms: `value` + `encoding` ("utf8" | "base64"), or `value` (when
    UTF-8) + `valueBase64` (always, but for deletions). `encoding` wins when present."""
    try:
        encoding = obj.get("encoding")
        value = obj.get("value")
        if encoding is not None:
            if value is None:
                return None
            if not isinstance(value, str):
                raise malformed("value is not a string")
            if encoding == "utf8":
                return value.encode("utf-8")
            if encoding == "base64":
                return base64.b64decode(value, validate=True)
            raise malformed(f"unknown value encoding {encoding!r}")
        b64 = obj.get("valueBase64")
        if isinstance(b64, str):
            return base64.b64decode(b64, validate=True)
        if isinstance(value, str):
            return value.encode("utf-8")
        return None
    except (binascii.Error, UnicodeEncodeError) as e:
        raise malformed(f"value: {e}") from e


def encode_value(value: "bytes | bytearray | memoryview | str") -> Mapping[str, str]:
    """A request's value: UTF-8 text as `value`, other bytes as `valueBase64`."""
    if isinstance(value, str):
        return {"value": value}
    raw = bytes(value)
    try:
        return {"value": raw.decode("utf-8")}
    except UnicodeDecodeError:
        return {"valueBase64": base64.b64encode(raw).decode("ascii")}


def entry_of(obj: Any) -> Entry:
    if not isinstance(obj, Mapping) or not isinstance(obj.get("key"), str) or not isinstance(obj.get("revision"), int):
        raise malformed("a key-value entry")
    value = decode_value(obj)
    if value is None:
        raise malformed(f"entry {obj.get('key')!r} has no value")
    return Entry(obj["key"], value, obj["revision"])


def token_of(x: Any) -> Optional[int]:
    """A token from an answer: a decimal string (or a number from an older node); None for null."""
    if x is None:
        return None
    if isinstance(x, bool):
        raise malformed("token")
    if isinstance(x, int):
        return x
    if isinstance(x, str) and x.isdigit():
        return int(x)
    raise malformed(f"token {x!r}")


def leader_of(election: str, obj: Any) -> Leader:
    if not isinstance(obj, Mapping):
        raise malformed("election state")
    leader = obj.get("leader")
    value = obj.get("value")
    return Leader(
        election=str(obj.get("election", election)),
        leader=leader if isinstance(leader, int) else None,
        value=value if isinstance(value, str) else None,
        token=token_of(obj.get("token")),
    )
