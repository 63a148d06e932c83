"""Typed views of the two Delta log actions every part of the package reasons about.

Protocol and Metadata are kept close to their JSON form in the log (PROTOCOL.md "Protocol Evolution"
and "Change Metadata"): ``from_json`` takes the action's JSON object, ``to_json`` gives it back, so the
planner, the checker and the JVM shim exchange exactly what the log holds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from types import MappingProxyType
from typing import Protocol as TypingProtocol

import orjson

from icecompat_writer.schema import JsonDict, JsonObject, Schema, parse_schema

__all__ = ["Metadata", "Protocol", "TableState", "TableStateLike", "schema_json"]

# Writer version 7 / reader version 3 are the "table features" versions (PROTOCOL.md "Table Features").
FEATURES_READER_VERSION = 3
FEATURES_WRITER_VERSION = 7


@dataclass(frozen=True)
class Protocol:
    """A ``protocol`` action. ``reader_features``/``writer_features`` are None below versions 3/7."""

    min_reader_version: int = 1
    min_writer_version: int = 2
    reader_features: frozenset[str] | None = None
    writer_features: frozenset[str] | None = None

    @classmethod
    def from_json(cls, obj: JsonObject) -> Protocol:
        """Build from the ``protocol`` object; ValueError when its versions or features are not
        what the protocol says (integers; lists of feature names), so that a damaged log line is
        one error the reader can report, whatever shape the damage took."""
        if not isinstance(obj, Mapping):
            raise ValueError(f"protocol is not an object: {str(obj)[:80]}")
        return cls(
            min_reader_version=_version(obj, "minReaderVersion", 1),
            min_writer_version=_version(obj, "minWriterVersion", 2),
            reader_features=_features(obj, "readerFeatures"),
            writer_features=_features(obj, "writerFeatures"),
        )

    def to_json(self) -> JsonDict:
        out: JsonDict = {
            "minReaderVersion": self.min_reader_version,
            "minWriterVersion": self.min_writer_version,
        }
        if self.reader_features is not None:
            out["readerFeatures"] = sorted(self.reader_features)
        if self.writer_features is not None:
            out["writerFeatures"] = sorted(self.writer_features)
        return out

    def supports_writer_feature(self, name: str) -> bool:
        """Whether ``name`` is listed as a writer feature (only meaningful at writer version 7)."""
        return self.writer_features is not None and name in self.writer_features

    def supports_reader_feature(self, name: str) -> bool:
        """Whether ``name`` is listed as a reader feature (only meaningful at reader version 3)."""
        return self.reader_features is not None and name in self.reader_features


def _version(obj: JsonObject, key: str, default: int) -> int:
    value = obj.get(key, default)
    if isinstance(value, str | int | float):
        try:
            return int(value)
        except (ValueError, OverflowError):  # OverflowError: 1e400, JSON's infinity
            pass
    raise ValueError(f"protocol {key} {value!r} is not an integer") from None


def _features(obj: JsonObject, key: str) -> frozenset[str] | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, list | tuple | set | frozenset) or not all(isinstance(f, str) for f in value):
        raise ValueError(f"protocol {key} is not a list of feature names: {str(value)[:80]}")
    return frozenset(value)


def _object(obj: JsonObject, key: str) -> JsonObject:
    value = obj.get(key) or {}
    if not isinstance(value, Mapping):
        raise ValueError(f"metaData {key} is not an object: {str(value)[:80]}")
    return value


def _text(obj: JsonObject, key: str, default: str) -> str:
    value = obj.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise ValueError(f"metaData {key} {str(value)[:80]!r} is not a string")
    return value


def _optional_text(obj: JsonObject, key: str) -> str | None:
    value = obj.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"metaData {key} {str(value)[:80]!r} is not a string")
    return value


def _string_map(obj: JsonObject, key: str) -> dict[str, str]:
    """A map of strings; a null value (delta-rs writes them in ``configuration``) is kept as None
    (typed as the strings it stands among: readers ask with ``.get``, which answers None either way)."""
    value = _object(obj, key)
    out: dict[str, str] = {}
    for k, v in value.items():
        if not isinstance(k, str) or not (v is None or isinstance(v, str)):
            raise ValueError(f"metaData {key} is not a map of strings: {str(value)[:80]}")
        out[k] = v  # type: ignore[assignment]  # None kept, see above
    return out


@dataclass(frozen=True)
class Metadata:
    """A ``metaData`` action. ``schema`` is the parsed ``schemaString`` (Delta's struct JSON)."""

    schema_string: str
    partition_columns: tuple[str, ...] = ()
    configuration: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    id: str = ""
    name: str | None = None
    description: str | None = None
    format_provider: str = "parquet"
    format_options: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    created_time: int | None = None

    @classmethod
    def from_json(cls, obj: JsonObject) -> Metadata:
        """Build from the ``metaData`` object; ValueError naming the field when a field has another
        JSON type than the protocol gives it (as :meth:`Protocol.from_json`), so a damaged log line is
        reported as such rather than failing somewhere later as a programming error would."""
        if not isinstance(obj, Mapping):
            raise ValueError(f"metaData is not an object: {str(obj)[:80]}")
        fmt = _object(obj, "format")
        columns = obj.get("partitionColumns") or []
        if not isinstance(columns, list | tuple) or not all(isinstance(c, str) for c in columns):
            raise ValueError(f"metaData partitionColumns is not a list of names: {str(columns)[:80]}")
        created = obj.get("createdTime")
        if created is not None and (isinstance(created, bool) or not isinstance(created, int)):
            raise ValueError(f"metaData createdTime {created!r} is not an integer")
        return cls(
            # parsed on first use, where a schema of any wrong shape (a schemaString that is not a
            # string too) is a MalformedSchemaError
            schema_string=obj.get("schemaString", '{"type":"struct","fields":[]}'),  # type: ignore[arg-type]
            partition_columns=tuple(columns),
            configuration=MappingProxyType(_string_map(obj, "configuration")),
            id=_text(obj, "id", ""),
            name=_optional_text(obj, "name"),
            description=_optional_text(obj, "description"),
            format_provider=_text(fmt, "provider", "parquet"),
            format_options=MappingProxyType(_string_map(fmt, "options")),
            created_time=created,
        )

    def to_json(self) -> JsonDict:
        out: JsonDict = {
            "id": self.id,
            "format": {"provider": self.format_provider, "options": dict(self.format_options)},
            "schemaString": self.schema_string,
            "partitionColumns": list(self.partition_columns),
            "configuration": dict(self.configuration),
        }
        if self.name is not None:
            out["name"] = self.name
        if self.description is not None:
            out["description"] = self.description
        if self.created_time is not None:
            out["createdTime"] = self.created_time
        return out

    @cached_property
    def schema(self) -> object:
        """The schema as Delta's JSON struct, parsed on first use and shared by every later call (what
        the log holds, to be read as :attr:`schema_model`; a damaged log can hold anything here).

        Do not modify it: the instance is frozen and ``schema_string`` stays what the log holds.
        """
        schema: object = json.loads(self.schema_string)
        return schema

    @cached_property
    def schema_model(self) -> Schema:
        """The typed schema (:mod:`icecompat_writer.schema`), parsed once from :attr:`schema`."""
        return parse_schema(self.schema)

    def with_schema(self, schema: Schema) -> Metadata:
        """A copy with another schema (serialised compactly, as Delta writes it)."""
        return replace(self, schema_string=schema_json(schema))

    def with_configuration(self, configuration: Mapping[str, str]) -> Metadata:
        return replace(self, configuration=MappingProxyType(dict(configuration)))


def schema_json(schema: Schema) -> str:
    """``schema`` as compact JSON text, as Delta writes a ``schemaString``.

    The planner serialises the whole schema on every write that changes it; for 10,000 leaves the
    standard library takes ~15 ms where orjson takes under 1 ms, byte for byte the same text. What
    orjson will not write exactly (integers beyond 64 bits, non-string keys) goes through ``json``.
    A non-finite float in field metadata is written as ``null`` (``json`` would write the token
    ``NaN``, which is not JSON and which Delta's own reader refuses).
    """
    raw = schema.raw
    try:
        return orjson.dumps(raw).decode()
    except TypeError:
        return json.dumps(raw, separators=(",", ":"), ensure_ascii=False)


class TableStateLike(TypingProtocol):
    """Anything that knows a table's protocol and metadata (a snapshot, a plan's result, ...)."""

    @property
    def protocol(self) -> Protocol: ...

    @property
    def metadata(self) -> Metadata: ...


@dataclass(frozen=True)
class TableState:
    """A table's protocol and metadata at one version (``version`` None: not yet committed)."""

    protocol: Protocol
    metadata: Metadata
    version: int | None = None
