"""The messages between the session guard's JVM side and the rule service, defined once.

One JSON object per line each way. A request is one of the frozen dataclasses below, named by its
``op``; :func:`parse_request` builds it from the decoded JSON and refuses (:class:`ProtocolError`,
naming the key) an unknown operation, an unknown key, a missing required key or a value of the wrong
JSON type, so a driver and a service that disagree about a message fail on the first request instead
of judging a write from a key one side never sent. Each operation's answer has a type of its own
(:data:`ANSWERS`: :class:`PlanMetadataAnswer`, ...; any of them may be an :class:`ErrorAnswer`);
:func:`serialize_answer` refuses a key the operation's answer type does not define.

The Java counterparts are ``io.icecompat.shim.guard.ServiceMessages`` (the same operations, keys
and :data:`PROTOCOL_VERSION`) and ``ServiceAnswers`` (each operation's answer keys and their JSON
types, the only names the JVM reads answers by). The first request of every service process is
``hello``, carrying the driver's protocol version: the service answers its own, and either side
refuses a difference (:func:`check_hello` here; ``RuleServiceMismatchException`` in the JVM, which
the Spark adapter raises as :class:`icecompat_writer.errors.RuleServiceMismatch`). Change
:data:`PROTOCOL_VERSION` with any change of a message, on both sides at once.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import field
from typing import Any, ClassVar, TypedDict

from icecompat_writer.errors import IcecompatError

__all__ = [
    "ANSWERS",
    "PROTOCOL_VERSION",
    "Answer",
    "CheckCommit",
    "CheckCommitAnswer",
    "ErrorAnswer",
    "Hello",
    "HelloAnswer",
    "Ping",
    "PingAnswer",
    "PlanMetadata",
    "PlanMetadataAnswer",
    "ProtocolError",
    "Refusal",
    "Request",
    "Sync",
    "SyncAnswer",
    "answer_keys",
    "check_hello",
    "parse_request",
    "serialize_answer",
]

# The version of the messages below; the JVM's ServiceMessages.PROTOCOL_VERSION must equal it.
PROTOCOL_VERSION = 2


class ProtocolError(IcecompatError):
    """A message that is not one the protocol defines (the text names the operation and the key)."""


JsonObject = Mapping[str, Any]

# The JSON type a field takes (its metadata), checked by parse_request: a string, an integer, a
# boolean, a JSON object (e.g. a Delta action as the log holds it), a list of strings, an object of
# string values, or footers (add path -> {"footer": base64} or {"error": text}).
_KIND = "kind"
_STR = {_KIND: "str"}
_INT = {_KIND: "int"}
_BOOL = {_KIND: "bool"}
_OBJECT = {_KIND: "object"}
_STRINGS = {_KIND: "strings"}
_STRMAP = {_KIND: "strmap"}
_FOOTERS = {_KIND: "footers"}


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Message:
    # Every request may carry the session's object-store settings (fs.s3a.*, fs.azure.*, fs.gs.*);
    # they are used for that request only.
    op: ClassVar[str] = ""
    hadoop: Mapping[str, str] | None = field(default=None, metadata=_STRMAP)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Hello(_Message):
    """The first request of a service process: the driver's protocol version."""

    op: ClassVar[str] = "hello"
    protocol: int = field(metadata=_INT)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Ping(_Message):
    """Is the service up (``icecompat doctor``)? Answers the package version."""

    op: ClassVar[str] = "ping"


@dataclasses.dataclass(frozen=True, kw_only=True)
class PlanMetadata(_Message):
    """Delta is about to update a table's metadata: the compliant metadata, or the violations."""

    op: ClassVar[str] = "plan_metadata"
    new_metadata: JsonObject = field(metadata=_OBJECT)
    table: str | None = field(default=None, metadata=_STR)
    profile: str = field(default="", metadata=_STR)
    creating: bool = field(default=False, metadata=_BOOL)
    overwrite_schema: bool = field(default=False, metadata=_BOOL)
    table_exists: bool = field(default=False, metadata=_BOOL)
    old_protocol: JsonObject | None = field(default=None, metadata=_OBJECT)
    old_metadata: JsonObject | None = field(default=None, metadata=_OBJECT)
    # the properties of the ALTER TABLE ... SET TBLPROPERTIES making this change; absent for any other
    command_properties: Mapping[str, str] | None = field(default=None, metadata=_STRMAP)


@dataclasses.dataclass(frozen=True, kw_only=True)
class CheckCommit(_Message):
    """A commit file is about to be written: ``actions`` are its lines, as the log will hold them.

    ``state`` and ``footers`` come only for a table off the local disk (the JVM read them through
    the session's file system); ``command_properties`` are the running command's table properties.
    """

    op: ClassVar[str] = "check_commit"
    table: str = field(metadata=_STR)
    version: int = field(metadata=_INT)
    actions: tuple[str, ...] = field(metadata=_STRINGS)
    profile: str = field(default="", metadata=_STR)
    opted_out: bool = field(default=False, metadata=_BOOL)
    state: JsonObject | None = field(default=None, metadata=_OBJECT)
    footers: Mapping[str, Mapping[str, str]] | None = field(default=None, metadata=_FOOTERS)
    command_properties: Mapping[str, str] | None = field(default=None, metadata=_STRMAP)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Sync(_Message):
    """The commit file of ``version`` exists: bring the table's Iceberg metadata up to it.

    ``identifier`` is the table's Spark catalog name (``db.tbl``) when the commit was made through it
    (protocol 2): the Iceberg identifier unless the table property ``icecompat.iceberg.identifier``
    names another.
    """

    op: ClassVar[str] = "sync"
    table: str = field(metadata=_STR)
    version: int = field(metadata=_INT)
    configuration: Mapping[str, str] | None = field(default=None, metadata=_STRMAP)
    catalog: str | None = field(default=None, metadata=_STR)
    identifier: str | None = field(default=None, metadata=_STR)


Request = Hello | Ping | PlanMetadata | CheckCommit | Sync

_REQUESTS: dict[str, type[Hello | Ping | PlanMetadata | CheckCommit | Sync]] = {
    cls.op: cls for cls in (Hello, Ping, PlanMetadata, CheckCommit, Sync)
}


def _checked(op: str, key: str, kind: str, value: Any) -> Any:
    """``value`` as field ``key`` holds it, or ProtocolError naming the key and what it should be."""

    def wrong(expected: str) -> ProtocolError:
        return ProtocolError(
            f"rule service request {op!r}: key {key!r} must be {expected}, got {json.dumps(value)[:80]}"
        )

    if kind == "str":
        if not isinstance(value, str):
            raise wrong("a string")
        return value
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise wrong("an integer")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise wrong("true or false")
        return value
    if kind == "object":
        if not isinstance(value, dict):
            raise wrong("a JSON object")
        return value
    if kind == "strings":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise wrong("a list of strings")
        return tuple(value)
    if kind == "strmap":
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise wrong("an object of string values")
        return dict(value)
    if kind == "footers":
        entries_ok = isinstance(value, dict) and all(
            isinstance(v, dict)
            and len(v) == 1
            and next(iter(v)) in ("footer", "error")
            and isinstance(next(iter(v.values())), str)
            for v in value.values()
        )
        if not entries_ok:
            raise wrong('an object of {"footer": base64} or {"error": text} per add path')
        return {str(k): dict(v) for k, v in value.items()}
    raise AssertionError(f"unknown field kind {kind!r}")


def parse_request(raw: Any) -> Request:
    """The typed request a decoded JSON line holds, or ProtocolError naming what is wrong with it.

    A key whose value is JSON ``null`` counts as absent (Jackson writes ``null`` for an unset node).
    """
    if not isinstance(raw, dict):
        raise ProtocolError(f"a rule service request must be a JSON object, got {json.dumps(raw)[:80]}")
    op = raw.get("op")
    cls = _REQUESTS.get(op) if isinstance(op, str) else None
    if cls is None:
        raise ProtocolError(f"unknown operation {op!r} (known: {', '.join(sorted(_REQUESTS))})")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(raw) - set(fields) - {"op"})
    if unknown:
        raise ProtocolError(f"rule service request {op!r}: unknown key {unknown[0]!r}")
    values: dict[str, Any] = {}
    for name, f in fields.items():
        value = raw.get(name)
        if value is None:
            if f.default is dataclasses.MISSING:
                raise ProtocolError(f"rule service request {op!r}: missing key {name!r}")
            continue
        values[name] = _checked(str(op), name, f.metadata[_KIND], value)
    return cls(**values)


class ErrorAnswer(TypedDict):
    """The answer to any request that failed (the JVM then refuses the write, or logs a failed sync)."""

    error: str


class HelloAnswer(TypedDict, total=False):
    """``hello``: the service's protocol version; ``error`` too when it differs from the driver's."""

    ok: bool
    protocol: int
    error: str


class PingAnswer(TypedDict):
    """``ping``: the package version and the protocol version."""

    ok: bool
    version: str
    protocol: int


class Refusal(TypedDict):
    """A refused ``plan_metadata`` or ``check_commit``: the report, the violations (as
    :class:`~icecompat_writer.errors.Violation` fields) and the data files to delete."""

    ok: bool
    profile: str | None
    report: str
    violations: list[dict[str, Any]]
    delete: list[str]


class PlanMetadataAnswer(TypedDict, total=False):
    """``plan_metadata``: the compliant metadata to use instead (null: Delta's proposal complies or no
    profile applies) and the changes made, or a :class:`Refusal`."""

    ok: bool
    profile: str | None
    metadata: JsonObject | None
    changes: list[str]
    report: str
    violations: list[dict[str, Any]]
    delete: list[str]


class CheckCommitAnswer(TypedDict, total=False):
    """``check_commit``: passed, with ``sync`` when the table asks for Iceberg, or a :class:`Refusal`."""

    ok: bool
    profile: str | None
    report: str
    violations: list[dict[str, Any]]
    delete: list[str]
    sync: dict[str, str]


class SyncAnswer(TypedDict, total=False):
    """``sync``: the version converted, the lag, the metadata file, the catalog's action, and when the
    sync failed a ``warning`` for the JVM to log."""

    ok: bool
    profile: str | None
    converted_version: int | None
    lag: int | None
    metadata_location: str | None
    catalog: str | None
    warning: str


Answer = (
    ErrorAnswer | HelloAnswer | PingAnswer | Refusal | PlanMetadataAnswer | CheckCommitAnswer | SyncAnswer
)

# Per operation, the type of its answer (every answer may be an ErrorAnswer instead). The Java
# counterpart is io.icecompat.shim.guard.ServiceAnswers, which declares the same keys and JSON types.
ANSWERS: dict[str, type[Any]] = {
    Hello.op: HelloAnswer,
    Ping.op: PingAnswer,
    PlanMetadata.op: PlanMetadataAnswer,
    CheckCommit.op: CheckCommitAnswer,
    Sync.op: SyncAnswer,
}


def answer_keys(op: str | None) -> frozenset[str]:
    """The keys an answer to ``op`` may carry (an unknown operation's answer is an error)."""
    own = ANSWERS.get(op, ErrorAnswer) if op is not None else ErrorAnswer
    return frozenset(own.__annotations__) | frozenset(ErrorAnswer.__annotations__)


def serialize_answer(answer: Answer, op: str | None = None) -> str:
    """One answer to ``op`` as the JSON line the JVM reads; a key the operation's answer type does not
    define is refused (``op`` None: any operation's key is accepted)."""
    known = answer_keys(op) if op is not None else frozenset().union(*map(answer_keys, ANSWERS))
    unknown = sorted(set(answer) - known)
    if unknown:
        raise ProtocolError(f"rule service answer: unknown key {unknown[0]!r}")
    return json.dumps(answer, separators=(",", ":"))


def check_hello(request: Hello) -> HelloAnswer:
    """The service's side of the handshake: its protocol version, or a refusal naming both."""
    if request.protocol != PROTOCOL_VERSION:
        return {
            "error": (
                f"the icecompat driver speaks rule service protocol {request.protocol} but the rule "
                f"service (Python icecompat_writer) speaks {PROTOCOL_VERSION}: install the same "
                "icecompat_writer build for the driver's jar and for spark.icecompat.python"
            ),
            "protocol": PROTOCOL_VERSION,
        }
    return {"ok": True, "protocol": PROTOCOL_VERSION}
