"""The Iceberg table metadata document (``v<N>.metadata.json``) as typed values, format v2 and v3.

Read with :meth:`TableMetadata.from_json`, changed through its methods or by applying update records
(:class:`AddSchema`, :class:`AddPartitionSpec`, :class:`AddSnapshot`, :class:`SetSnapshotRef`,
:class:`SetProperties`, ... in pyiceberg's manner: the table and its snapshot producers return them,
one transaction applies them, :meth:`TableMetadata.apply`), written with
:meth:`TableMetadata.to_json`. Field names follow the spec's "Table Metadata Fields" (``schemas``,
``partition-specs``, ``snapshots``, ``snapshot-log``, ``metadata-log``, ``refs``, ``properties``,
``next-row-id`` for v3). Keys this model does not know are kept and written back unchanged, so a
document round-trips. Schemas and sort orders stay in their JSON form: schemas are produced by
:mod:`.schema` in that form and compared in it, sort orders are only carried.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from icecompat_writer.errors import TableReadError
from icecompat_writer.schema import JsonDict, JsonObject

__all__ = [
    "MAIN_BRANCH",
    "METADATA_DIR",
    "PROP_DELTA_COMMIT",
    "PROP_DELTA_STATE",
    "PROP_DELTA_TABLE_ID",
    "PROP_DELTA_VERSION",
    "PROP_NAME_MAPPING",
    "VERSION_HINT",
    "AddPartitionSpec",
    "AddSchema",
    "AddSnapshot",
    "MetadataLogEntry",
    "MetadataUpdate",
    "PartitionSpec",
    "RaiseLastColumnId",
    "Schema",
    "SetCurrentSchema",
    "SetDefaultSpec",
    "SetProperties",
    "SetSnapshotRef",
    "Snapshot",
    "SnapshotLogEntry",
    "SnapshotRef",
    "SpecField",
    "TableMetadata",
]

METADATA_DIR = "metadata"
VERSION_HINT = "version-hint.text"
PROP_DELTA_VERSION = "icecompat.delta-version"
PROP_DELTA_TABLE_ID = "icecompat.delta-table-id"
PROP_NAME_MAPPING = "schema.name-mapping.default"
PROP_DELTA_COMMIT = "icecompat.delta-commit"
"""``sha256:<hex>`` of the Delta commit file of the converted version (``icecompat.delta-version``)."""
PROP_DELTA_STATE = "icecompat.delta-state"
"""The name, in ``metadata/``, of the file holding the Delta protocol and metadata in force at the
converted version (``{"protocol": ..., "metaData": ...}``, the log's JSON shapes)."""

MAIN_BRANCH = "main"


def _rest(obj: Mapping[str, Any], known: tuple[str, ...]) -> JsonDict:
    return {k: v for k, v in obj.items() if k not in known}


@dataclass
class Schema:
    """One entry of ``schemas``: its id and its JSON form (``{"type": "struct", "schema-id": ...}``)."""

    schema_id: int
    json: JsonDict

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Schema:
        return cls(int(obj["schema-id"]), dict(obj))

    def to_json(self) -> JsonDict:
        return dict(self.json)


@dataclass(frozen=True)
class SpecField:
    """One partition field: a transform of a source column, with its own field id."""

    name: str
    transform: str
    source_id: int
    field_id: int

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> SpecField:
        return cls(str(obj["name"]), str(obj["transform"]), int(obj["source-id"]), int(obj["field-id"]))

    def to_json(self) -> JsonDict:
        return {
            "name": self.name,
            "transform": self.transform,
            "source-id": self.source_id,
            "field-id": self.field_id,
        }


@dataclass(frozen=True)
class PartitionSpec:
    """One entry of ``partition-specs``."""

    spec_id: int
    fields: tuple[SpecField, ...]

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> PartitionSpec:
        return cls(int(obj["spec-id"]), tuple(SpecField.from_json(f) for f in obj.get("fields") or []))

    def fields_json(self) -> list[JsonDict]:
        return [f.to_json() for f in self.fields]

    def to_json(self) -> JsonDict:
        return {"spec-id": self.spec_id, "fields": self.fields_json()}


@dataclass
class Snapshot:
    """One entry of ``snapshots``. ``first_row_id``/``added_rows`` exist in v3 only."""

    snapshot_id: int
    sequence_number: int
    timestamp_ms: int
    manifest_list: str
    summary: dict[str, str]
    schema_id: int | None = None
    parent_snapshot_id: int | None = None
    first_row_id: int | None = None
    added_rows: int | None = None
    extra: JsonDict = field(default_factory=dict)

    _KNOWN = (
        "snapshot-id",
        "sequence-number",
        "timestamp-ms",
        "manifest-list",
        "summary",
        "schema-id",
        "parent-snapshot-id",
        "first-row-id",
        "added-rows",
    )

    @property
    def operation(self) -> str:
        return str(self.summary.get("operation", ""))

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Snapshot:
        def opt(key: str) -> int | None:
            value = obj.get(key)
            return None if value is None else int(value)

        return cls(
            snapshot_id=int(obj["snapshot-id"]),
            sequence_number=int(obj.get("sequence-number", 0)),
            timestamp_ms=int(obj["timestamp-ms"]),
            manifest_list=str(obj["manifest-list"]),
            summary={str(k): str(v) for k, v in (obj.get("summary") or {}).items()},
            schema_id=opt("schema-id"),
            parent_snapshot_id=opt("parent-snapshot-id"),
            first_row_id=opt("first-row-id"),
            added_rows=opt("added-rows"),
            extra=_rest(obj, cls._KNOWN),
        )

    def to_json(self) -> JsonDict:
        out: JsonDict = {
            "snapshot-id": self.snapshot_id,
            "sequence-number": self.sequence_number,
            "timestamp-ms": self.timestamp_ms,
            "manifest-list": self.manifest_list,
            "summary": dict(self.summary),
        }
        if self.schema_id is not None:
            out["schema-id"] = self.schema_id
        if self.parent_snapshot_id is not None:
            out["parent-snapshot-id"] = self.parent_snapshot_id
        if self.first_row_id is not None:
            out["first-row-id"] = self.first_row_id
        if self.added_rows is not None:
            out["added-rows"] = self.added_rows
        out.update(self.extra)
        return out


@dataclass(frozen=True)
class SnapshotLogEntry:
    timestamp_ms: int
    snapshot_id: int

    def to_json(self) -> JsonDict:
        return {"timestamp-ms": self.timestamp_ms, "snapshot-id": self.snapshot_id}


@dataclass(frozen=True)
class MetadataLogEntry:
    metadata_file: str
    timestamp_ms: int

    def to_json(self) -> JsonDict:
        return {"metadata-file": self.metadata_file, "timestamp-ms": self.timestamp_ms}


@dataclass
class SnapshotRef:
    """A named reference (``refs``): a branch or tag pointing at a snapshot."""

    snapshot_id: int
    type: str = "branch"
    extra: JsonDict = field(default_factory=dict)

    def to_json(self) -> JsonDict:
        return {"snapshot-id": self.snapshot_id, "type": self.type, **self.extra}


@dataclass
class TableMetadata:
    """A whole table metadata document."""

    format_version: int
    table_uuid: str
    location: str
    last_sequence_number: int = 0
    last_updated_ms: int = 0
    last_column_id: int = 0
    current_schema_id: int = 0
    schemas: list[Schema] = field(default_factory=list)
    default_spec_id: int = 0
    partition_specs: list[PartitionSpec] = field(default_factory=list)
    last_partition_id: int = 999
    default_sort_order_id: int = 0
    sort_orders: list[JsonDict] = field(default_factory=lambda: [{"order-id": 0, "fields": []}])
    properties: dict[str, str] = field(default_factory=dict)
    current_snapshot_id: int | None = None
    refs: dict[str, SnapshotRef] = field(default_factory=dict)
    snapshots: list[Snapshot] = field(default_factory=list)
    snapshot_log: list[SnapshotLogEntry] = field(default_factory=list)
    metadata_log: list[MetadataLogEntry] = field(default_factory=list)
    next_row_id: int | None = None
    extra: JsonDict = field(default_factory=dict)

    _KNOWN = (
        "format-version",
        "table-uuid",
        "location",
        "last-sequence-number",
        "last-updated-ms",
        "last-column-id",
        "current-schema-id",
        "schemas",
        "default-spec-id",
        "partition-specs",
        "last-partition-id",
        "default-sort-order-id",
        "sort-orders",
        "properties",
        "current-snapshot-id",
        "refs",
        "snapshots",
        "snapshot-log",
        "metadata-log",
        "next-row-id",
    )

    @classmethod
    def new(cls, format_version: int, table_uuid: str, location: str) -> TableMetadata:
        """An empty table: no schema, spec or snapshot yet; v3 starts row ids at 0."""
        return cls(
            format_version=format_version,
            table_uuid=table_uuid,
            location=location,
            next_row_id=0 if format_version >= 3 else None,
        )

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> TableMetadata:
        """Parse a v2/v3 document (TableReadError when a required field is missing or malformed)."""
        try:
            current = obj.get("current-snapshot-id")
            next_row_id = obj.get("next-row-id")
            return cls(
                format_version=int(obj.get("format-version", 2)),
                table_uuid=str(obj["table-uuid"]),
                location=str(obj["location"]),
                last_sequence_number=int(obj.get("last-sequence-number", 0)),
                last_updated_ms=int(obj.get("last-updated-ms", 0)),
                last_column_id=int(obj.get("last-column-id", 0)),
                current_schema_id=int(obj.get("current-schema-id", 0)),
                schemas=[Schema.from_json(s) for s in obj.get("schemas") or []],
                default_spec_id=int(obj.get("default-spec-id", 0)),
                partition_specs=[PartitionSpec.from_json(s) for s in obj.get("partition-specs") or []],
                last_partition_id=int(obj.get("last-partition-id", 999)),
                default_sort_order_id=int(obj.get("default-sort-order-id", 0)),
                sort_orders=[dict(s) for s in obj.get("sort-orders") or []],
                properties={str(k): str(v) for k, v in (obj.get("properties") or {}).items()},
                current_snapshot_id=None if current is None or int(current) == -1 else int(current),
                refs={
                    str(name): SnapshotRef(
                        int(ref["snapshot-id"]),
                        str(ref.get("type", "branch")),
                        _rest(ref, ("snapshot-id", "type")),
                    )
                    for name, ref in (obj.get("refs") or {}).items()
                },
                snapshots=[Snapshot.from_json(s) for s in obj.get("snapshots") or []],
                snapshot_log=[
                    SnapshotLogEntry(int(e["timestamp-ms"]), int(e["snapshot-id"]))
                    for e in obj.get("snapshot-log") or []
                ],
                metadata_log=[
                    MetadataLogEntry(str(e["metadata-file"]), int(e["timestamp-ms"]))
                    for e in obj.get("metadata-log") or []
                ],
                next_row_id=None if next_row_id is None else int(next_row_id),
                extra=_rest(obj, cls._KNOWN),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise TableReadError(f"malformed Iceberg table metadata: {type(err).__name__}: {err}") from err

    def to_json(self) -> JsonDict:
        out: JsonDict = {
            "format-version": self.format_version,
            "table-uuid": self.table_uuid,
            "location": self.location,
            "last-sequence-number": self.last_sequence_number,
            "last-updated-ms": self.last_updated_ms,
            "last-column-id": self.last_column_id,
            "current-schema-id": self.current_schema_id,
            "schemas": [s.to_json() for s in self.schemas],
            "default-spec-id": self.default_spec_id,
            "partition-specs": [s.to_json() for s in self.partition_specs],
            "last-partition-id": self.last_partition_id,
            "default-sort-order-id": self.default_sort_order_id,
            "sort-orders": [dict(s) for s in self.sort_orders],
            "properties": dict(self.properties),
            "current-snapshot-id": self.current_snapshot_id,
            "refs": {name: ref.to_json() for name, ref in self.refs.items()},
            "snapshots": [s.to_json() for s in self.snapshots],
            "snapshot-log": [e.to_json() for e in self.snapshot_log],
            "metadata-log": [e.to_json() for e in self.metadata_log],
        }
        if self.format_version >= 3 and self.next_row_id is not None:
            out["next-row-id"] = self.next_row_id
        out.update(self.extra)
        return out

    # -- lookups ---------------------------------------------------------------------------------

    def schema(self, schema_id: int) -> Schema:
        for s in self.schemas:
            if s.schema_id == schema_id:
                return s
        raise TableReadError(f"schema {schema_id} is not in the table metadata")

    def spec(self, spec_id: int) -> PartitionSpec:
        """A recorded partition spec by id (manifests keep the spec they were written with)."""
        for s in self.partition_specs:
            if s.spec_id == spec_id:
                return s
        raise TableReadError(f"partition spec {spec_id} is not in the table metadata")

    def snapshot(self, snapshot_id: int) -> Snapshot:
        for s in self.snapshots:
            if s.snapshot_id == snapshot_id:
                return s
        raise TableReadError(f"snapshot {snapshot_id} is not in the table metadata")

    def current_snapshot(self) -> Snapshot | None:
        return None if self.current_snapshot_id is None else self.snapshot(self.current_snapshot_id)

    def snapshot_ids(self) -> Iterator[int]:
        return (s.snapshot_id for s in self.snapshots)

    @property
    def last_snapshot_ms(self) -> int:
        return max((s.timestamp_ms for s in self.snapshots), default=0)

    # -- changes ---------------------------------------------------------------------------------

    def add_schema(self, schema_json: JsonObject) -> int:
        """Record a new schema (its ``schema-id`` is assigned here) and return the id."""
        new_id = max((s.schema_id for s in self.schemas), default=-1) + 1
        self.schemas.append(Schema(new_id, {**schema_json, "schema-id": new_id}))
        return new_id

    def add_spec(self, fields: tuple[SpecField, ...]) -> int:
        new_id = max((s.spec_id for s in self.partition_specs), default=-1) + 1
        self.partition_specs.append(PartitionSpec(new_id, fields))
        self.last_partition_id = max([self.last_partition_id, *(f.field_id for f in fields)])
        return new_id

    def add_snapshot(self, snapshot: Snapshot) -> None:
        """Append ``snapshot`` and make it the current one of the main branch (``snapshot-log`` too)."""
        self.apply((AddSnapshot(snapshot), SetSnapshotRef(snapshot.snapshot_id)))

    def apply(self, updates: Iterable[MetadataUpdate]) -> None:
        """Apply update records in order (what a snapshot producer returned)."""
        for update in updates:
            update.apply_to(self)


@dataclass(frozen=True)
class AddSchema:
    """A new schema (JSON form); it gets the next schema id, one above the highest recorded."""

    schema_json: JsonObject

    def apply_to(self, meta: TableMetadata) -> None:
        meta.add_schema(self.schema_json)


@dataclass(frozen=True)
class SetCurrentSchema:
    schema_id: int

    def apply_to(self, meta: TableMetadata) -> None:
        meta.current_schema_id = self.schema_id


@dataclass(frozen=True)
class AddPartitionSpec:
    """A new partition spec; it gets the next spec id, and ``last-partition-id`` covers its fields."""

    fields: tuple[SpecField, ...]

    def apply_to(self, meta: TableMetadata) -> None:
        meta.add_spec(self.fields)


@dataclass(frozen=True)
class SetDefaultSpec:
    spec_id: int

    def apply_to(self, meta: TableMetadata) -> None:
        meta.default_spec_id = self.spec_id


@dataclass(frozen=True)
class RaiseLastColumnId:
    """``last-column-id`` becomes at least ``column_id`` (it never goes down: ids are not reused)."""

    column_id: int

    def apply_to(self, meta: TableMetadata) -> None:
        meta.last_column_id = max(meta.last_column_id, self.column_id)


@dataclass(frozen=True)
class AddSnapshot:
    """A new snapshot: recorded, the last sequence number and (v3) the next row id advanced past it."""

    snapshot: Snapshot

    def apply_to(self, meta: TableMetadata) -> None:
        snapshot = self.snapshot
        meta.snapshots.append(snapshot)
        meta.last_sequence_number = max(meta.last_sequence_number, snapshot.sequence_number)
        if meta.format_version >= 3 and snapshot.first_row_id is not None:
            meta.next_row_id = snapshot.first_row_id + int(snapshot.added_rows or 0)


@dataclass(frozen=True)
class SetSnapshotRef:
    """Point the main branch at a recorded snapshot: it becomes current and enters ``snapshot-log``.

    The main branch is the only reference this table keeps (its history is Delta's), so the refs are
    replaced by it.
    """

    snapshot_id: int
    ref_name: str = MAIN_BRANCH

    def apply_to(self, meta: TableMetadata) -> None:
        if self.ref_name != MAIN_BRANCH:
            raise ValueError(f"only the {MAIN_BRANCH} branch is kept, not {self.ref_name!r}")
        snapshot = meta.snapshot(self.snapshot_id)
        meta.snapshot_log.append(SnapshotLogEntry(snapshot.timestamp_ms, snapshot.snapshot_id))
        meta.current_snapshot_id = snapshot.snapshot_id
        meta.refs = {MAIN_BRANCH: SnapshotRef(snapshot.snapshot_id, "branch")}


@dataclass(frozen=True)
class SetProperties:
    """Set table properties, in the order given (the document keeps insertion order)."""

    updates: tuple[tuple[str, str], ...]

    def apply_to(self, meta: TableMetadata) -> None:
        for key, value in self.updates:
            meta.properties[key] = value


MetadataUpdate = (
    AddSchema
    | SetCurrentSchema
    | AddPartitionSpec
    | SetDefaultSpec
    | RaiseLastColumnId
    | AddSnapshot
    | SetSnapshotRef
    | SetProperties
)
"""One change to the table metadata, as a record that says what it does before it is done."""
