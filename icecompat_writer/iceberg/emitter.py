"""Iceberg metadata written next to a Delta log, pointing at the same Parquet files.

One Iceberg snapshot per Delta version: appends become ``append`` snapshots (a new manifest, earlier
manifests reused), removes become ``delete``/``overwrite`` snapshots whose touched manifests are
rewritten with ``DELETED`` entries, and rearrangements with ``dataChange=false`` are ``replace``. The
Iceberg sequence number of a snapshot is its Delta version, so Iceberg's ``_last_updated_sequence_number``
and Delta's row commit version are the same number.

Conversion is incremental: the metadata records the last converted Delta version in the table property
``icecompat.delta-version``, and a later run reads its own manifests back and adds snapshots on top,
writing ``v<N+1>.metadata.json``. Nothing under the table root other than ``metadata/`` is written, and
no data file is touched.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from icecompat_writer import storage
from icecompat_writer.checking.footers import file_facts, read_object_footer
from icecompat_writer.deltalog import read_snapshot
from icecompat_writer.deltalog.actions import Metadata, Protocol
from icecompat_writer.deltalog.deletion_vectors import read_deletion_vectors
from icecompat_writer.deltalog.files import DeletionVectorDescriptor
from icecompat_writer.deltalog.paths import resolve_data_path, table_root_path
from icecompat_writer.errors import CompatViolation, ConcurrentWriteError, TableReadError, Violation
from icecompat_writer.schema import iceberg_decimal_params
from icecompat_writer.storage import Location, ObjectPath

from . import _delta
from .avro import (
    PartitionField,
    avro_name,
    data_file_record,
    deletion_vector_record,
    read_avro,
    write_manifest,
    write_manifest_list,
)
from .checks import default_format_version, rule_set_for, table_violations
from .puffin import PuffinWriter
from .schema import ConvertedSchema, violation
from .values import (
    DEFAULT_STRING_PREFIX_LENGTH,
    PartitionValueError,
    file_metrics,
    parse_partition_value,
    parse_stats,
    serialize,
    to_raw,
)

__all__ = [
    "METADATA_DIR",
    "PROP_DELTA_TABLE_ID",
    "PROP_DELTA_VERSION",
    "PROP_NAME_MAPPING",
    "IcebergResult",
    "SnapshotInfo",
    "write_iceberg_metadata",
]

METADATA_DIR = "metadata"
VERSION_HINT = "version-hint.text"
PROP_DELTA_VERSION = "icecompat.delta-version"
PROP_DELTA_TABLE_ID = "icecompat.delta-table-id"
PROP_NAME_MAPPING = "schema.name-mapping.default"

EXISTING, ADDED, DELETED = 0, 1, 2
DATA, POSITION_DELETES = 0, 1  # manifest / data_file content
_MASK63 = (1 << 63) - 1


@dataclass(frozen=True)
class SnapshotInfo:
    """One Iceberg snapshot written for one Delta version."""

    delta_version: int
    snapshot_id: int
    sequence_number: int
    operation: str
    added_files: int
    deleted_files: int


@dataclass(frozen=True)
class IcebergResult:
    """What a run of :func:`write_iceberg_metadata` left behind.

    ``written`` is False when the Iceberg metadata was already up to date with the Delta log; then
    ``snapshots`` is empty and ``metadata_path`` is the existing current metadata file.
    """

    table_root: Location
    metadata_path: Location
    metadata_version: int
    format_version: int
    delta_version: int
    snapshots: tuple[SnapshotInfo, ...]
    written: bool

    def summary(self) -> str:
        """A few human-readable lines for the command line."""
        if not self.written:
            return f"Iceberg metadata already at Delta version {self.delta_version}: {self.metadata_path}"
        lines = [
            f"wrote {self.metadata_path} (Iceberg format v{self.format_version}, "
            f"{len(self.snapshots)} new snapshot(s), up to Delta version {self.delta_version})"
        ]
        for s in self.snapshots:
            lines.append(
                f"  Delta v{s.delta_version} -> snapshot {s.snapshot_id} ({s.operation}, "
                f"+{s.added_files}/-{s.deleted_files} files)"
            )
        return "\n".join(lines)


@dataclass
class _Entry:
    """A manifest entry with every inherited value resolved (so it can be re-written explicitly)."""

    status: int
    snapshot_id: int
    sequence_number: int
    file_sequence_number: int
    data_file: dict[str, Any]


@dataclass
class _Manifest:
    record: dict[str, Any]
    entries: list[_Entry] | None = None

    @property
    def uri(self) -> str:
        return str(self.record["manifest_path"])


@dataclass
class _NewFile:
    """A data file to add: its ``data_file`` record plus the Delta row-tracking fields and its DV."""

    data_file: dict[str, Any]
    base_row_id: int | None
    row_commit_version: int | None
    delta_path: str = ""
    deletion_vector: DeletionVectorDescriptor | None = None


def _uri(path: Location) -> str:
    """A fully qualified location (Iceberg v2/v3 need the scheme), not percent-encoded: ``file://``
    locally, ``s3://`` for an ``s3a``/``s3n`` table (what Iceberg readers expect), else the table's."""
    return storage.iceberg_uri(path)


def _local(uri: str, root: Location) -> Location:
    """The location of a file named in metadata written by :func:`_uri` (no percent-decoding, as written).

    On an object store the URI must name the table's own bucket (container); ``s3://`` is read back
    through the table's own scheme (``s3a``), so the same credentials apply.
    """
    if isinstance(root, Path):
        if uri.startswith("file://"):
            return Path(uri[len("file://") :])
        if uri.startswith("file:"):
            return Path(uri[len("file:") :])
        if "://" in uri:
            raise TableReadError(f"cannot read {uri}: the table is local, the metadata names another store")
        return Path(uri)
    try:
        loc = storage.parse_location(uri.replace("%", "%25"))
    except TableReadError:
        loc = None
    if not isinstance(loc, ObjectPath) or (loc.family, loc.authority) != (root.family, root.authority):
        raise TableReadError(f"cannot read {uri}: it is not in the table's bucket ({root})")
    return ObjectPath(root.scheme, root.authority, loc.key)


def _inside(path: str, real_root: str) -> bool:
    return path.startswith(real_root.rstrip("/") + "/")


def _data_path_outside(root: Location, real_root: str, delta_path: str) -> str | None:
    """Why a data file's path leaves the table root (lexically, or through a symbolic link), else None.

    The emitter never opens such a file, and never lets Iceberg metadata point at it: an Iceberg reader
    would read it as this table's data.
    """
    local = resolve_data_path(root, delta_path)
    if local is None:
        return "resolves outside the table root"
    if not isinstance(local, Path):
        return None  # an object store has no links: the lexical check is the whole check
    real = os.path.realpath(local)
    if not _inside(real, real_root):
        return f"is a symbolic link (or lies under one) leading outside the table root, to {real}"
    return None


def _outside_violation(delta_path: str, reason: str) -> Violation:
    return violation(
        "ICEBERG-EMIT-OUTSIDE-ROOT",
        "",
        f"data file {delta_path} {reason}; it was not opened",
        "keep every data file under the table root (no absolute paths, `..` or links elsewhere)",
        observed=delta_path,
    )


def _owned(root: Location, path: Location, what: str) -> Location:
    """``path`` when it (symbolic links resolved) is inside ``root/metadata``; refused otherwise.

    The emitter reads and writes nothing but its own tree: a ``metadata`` directory that is a link to
    another place, or metadata naming files elsewhere, would make it read or write outside the table.
    """
    meta_dir = root / METADATA_DIR
    if isinstance(path, ObjectPath) and isinstance(meta_dir, ObjectPath):
        if path.is_under(meta_dir):
            return path
        raise CompatViolation(
            [
                violation(
                    "ICEBERG-EMIT-OUTSIDE-ROOT",
                    "",
                    f"{what} {path} is outside the table's {METADATA_DIR}/ prefix; nothing was read or "
                    "written there",
                    f"keep the Iceberg tree in {meta_dir}",
                    observed=str(path),
                )
            ]
        )
    assert isinstance(path, Path) and isinstance(meta_dir, Path)
    meta_real = os.path.realpath(meta_dir)
    real = os.path.realpath(path)
    if not _inside(meta_real, os.path.realpath(root)):
        problem = f"the {METADATA_DIR} directory {meta_dir} leads outside the table root (to {meta_real})"
        real = meta_real
    elif not _inside(real, meta_real):
        problem = f"{what} {path} leads outside the table's {METADATA_DIR}/ directory (to {real})"
    else:
        return path
    raise CompatViolation(
        [
            violation(
                "ICEBERG-EMIT-OUTSIDE-ROOT",
                "",
                problem + "; nothing was read or written there",
                f"remove the link: the Iceberg tree is kept in {meta_dir} itself",
                observed=real,
            )
        ]
    )


def _refuse(violations: Sequence[Violation], context: str) -> None:
    if violations:
        raise CompatViolation(violations, context)


def _context(version: int, metadata: Metadata) -> str:
    """Where a refusal happened and which rules were applied (the reader needs both to act on it)."""
    return f"at Delta version {version} ({rule_set_for(metadata).reason})"


def _partition_avro_value(raw: Any, iceberg_type: str) -> Any:
    """Raw partition value in the form fastavro encodes for the partition field's Avro type."""
    params = iceberg_decimal_params(iceberg_type)
    if raw is not None and params is not None:
        return Decimal(raw).quantize(Decimal(1).scaleb(-params[1]))
    return raw


def _summaries(entries: Iterable[_Entry], fields: Sequence[PartitionField]) -> list[dict[str, Any]]:
    """``field_summary`` per partition field over the manifest's entries."""
    out = []
    entries = list(entries)
    for pf in fields:
        key = avro_name(pf.name)
        values = [e.data_file["partition"].get(key) for e in entries]
        contains_null = any(v is None for v in values)
        is_float = pf.result_type in ("float", "double")
        contains_nan = any(isinstance(v, float) and math.isnan(v) for v in values)
        present = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
        lo = hi = None
        if present:
            lo = serialize(min(present), pf.result_type)
            hi = serialize(max(present), pf.result_type)
            if is_float and min(present) == 0.0:
                lo = serialize(-0.0, pf.result_type)
            if is_float and max(present) == 0.0:
                hi = serialize(0.0, pf.result_type)
        out.append(
            {
                "contains_null": contains_null,
                "contains_nan": contains_nan if is_float else False,
                "lower_bound": lo,
                "upper_bound": hi,
            }
        )
    return out


class _Emitter:
    """Builds snapshots onto one table metadata document, then commits it as the next version."""

    def __init__(
        self, root: Location, format_version: int, meta: dict[str, Any], delta_table_id: str
    ) -> None:
        self.root = root
        self.real_root = os.path.realpath(root) if isinstance(root, Path) else root.uri
        self.root_uri = _uri(root)
        self.meta_dir = root / METADATA_DIR
        self.fv = format_version
        self.meta = meta
        self.delta_table_id = delta_table_id
        self.run_id = uuid.uuid4().hex
        self.manifest_counter = 0
        self.written: list[Location] = []
        self.manifests: list[_Manifest] = []
        self.live: dict[str, _Manifest] = {}
        # Deletion vectors (format v3): delete manifests, and the one live DV per data file location.
        self.dv_manifests: list[_Manifest] = []
        self.live_dvs: dict[str, _Manifest] = {}
        self.dv_counts: dict[str, int] = {}
        self.puffin_counter = 0
        self.live_sizes: dict[str, tuple[int, int]] = {}
        self.new_snapshots: list[SnapshotInfo] = []
        self.schema: ConvertedSchema | None = None
        self.schema_id = -1
        self.spec_id = 0
        self.string_prefix = DEFAULT_STRING_PREFIX_LENGTH
        self.metadata: Metadata | None = None
        self.protocol: Protocol | None = None

    # -- table-level state ---------------------------------------------------------------------

    @classmethod
    def fresh(cls, root: Location, format_version: int, metadata: Metadata) -> _Emitter:
        """An empty v2/v3 table document; the Delta table id doubles as the Iceberg table uuid."""
        table_uuid = metadata.id
        try:
            table_uuid = str(uuid.UUID(table_uuid))
        except ValueError:
            table_uuid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"delta:{metadata.id}"))
        meta: dict[str, Any] = {
            "format-version": format_version,
            "table-uuid": table_uuid,
            "location": _uri(root),
            "last-sequence-number": 0,
            "last-updated-ms": 0,
            "last-column-id": 0,
            "current-schema-id": 0,
            "schemas": [],
            "default-spec-id": 0,
            "partition-specs": [],
            "last-partition-id": 999,
            "default-sort-order-id": 0,
            "sort-orders": [{"order-id": 0, "fields": []}],
            "properties": {},
            "current-snapshot-id": None,
            "refs": {},
            "snapshots": [],
            "snapshot-log": [],
            "metadata-log": [],
        }
        if format_version >= 3:
            meta["next-row-id"] = 0
        return cls(root, format_version, meta, metadata.id)

    def set_delta_state(self, protocol: Protocol, metadata: Metadata, version: int) -> None:
        """Adopt the Delta protocol/metadata in force at ``version``; refuses a non-convertible one."""
        converted, violations = table_violations(protocol, metadata, self.fv)
        _refuse(violations, _context(version, metadata))
        assert converted is not None  # no violation means the schema was converted
        self.protocol, self.metadata, self.schema = protocol, metadata, converted
        self.schema_id = self._schema_id_for(converted)
        self.spec_id = self._spec_id_for(metadata.partition_columns, converted)
        try:
            self.string_prefix = int(
                metadata.configuration.get(
                    "delta.dataSkippingStringPrefixLength", DEFAULT_STRING_PREFIX_LENGTH
                )
            )
        except ValueError:
            self.string_prefix = DEFAULT_STRING_PREFIX_LENGTH
        self.meta["current-schema-id"] = self.schema_id
        self.meta["default-spec-id"] = self.spec_id
        try:
            max_column_id = int(metadata.configuration.get("delta.columnMapping.maxColumnId", 0))
        except ValueError:
            max_column_id = 0
        self.meta["last-column-id"] = max(int(self.meta["last-column-id"]), converted.max_id, max_column_id)
        props = self.meta.setdefault("properties", {})
        props[PROP_NAME_MAPPING] = json.dumps(converted.name_mapping, separators=(",", ":"))

    def _schema_id_for(self, converted: ConvertedSchema) -> int:
        for s in self.meta["schemas"]:
            if converted.same_as(s):
                return int(s["schema-id"])
        new_id = max((int(s["schema-id"]) for s in self.meta["schemas"]), default=-1) + 1
        self.meta["schemas"].append(converted.to_json(new_id))
        return new_id

    def _spec_id_for(self, partition_columns: Sequence[str], converted: ConvertedSchema) -> int:
        wanted = [(converted.top[name].field_id, name) for name in partition_columns]
        specs = self.meta["partition-specs"]
        for spec in specs:
            have = [(int(f["source-id"]), str(f["name"])) for f in spec["fields"]]
            if have == wanted and all(f["transform"] == "identity" for f in spec["fields"]):
                return int(spec["spec-id"])
        # Partition field ids are reused for an equivalent field of any earlier spec (spec rule).
        known = {
            (int(f["source-id"]), str(f["name"])): int(f["field-id"])
            for spec in specs
            for f in spec["fields"]
            if f["transform"] == "identity"
        }
        last = int(self.meta["last-partition-id"])
        fields = []
        for source_id, name in wanted:
            fid = known.get((source_id, name))
            if fid is None:
                last += 1
                fid = last
            fields.append({"name": name, "transform": "identity", "source-id": source_id, "field-id": fid})
        self.meta["last-partition-id"] = max(last, int(self.meta["last-partition-id"]))
        new_id = max((int(s["spec-id"]) for s in specs), default=-1) + 1
        specs.append({"spec-id": new_id, "fields": fields})
        return new_id

    def _spec(self, spec_id: int) -> dict[str, Any]:
        """A recorded partition spec by id (manifests keep the spec they were written with)."""
        for spec in self.meta["partition-specs"]:
            if int(spec["spec-id"]) == spec_id:
                return dict(spec)
        raise TableReadError(f"partition spec {spec_id} is not in the table metadata")

    def _partition_fields(self, spec_id: int) -> list[PartitionField]:
        """The spec's fields with result types from the current schema (types may have been widened)."""
        assert self.schema is not None
        out = []
        for f in self._spec(spec_id)["fields"]:
            prim = self.schema.primitives.get(int(f["source-id"]))
            if prim is None:
                raise TableReadError(f"partition source column {f['source-id']} is no longer in the schema")
            out.append(PartitionField(int(f["field-id"]), str(f["name"]), prim.iceberg_type))
        return out

    def _current_schema_json(self) -> dict[str, Any]:
        """The current schema as recorded, which every new manifest embeds in its Avro metadata."""
        for s in self.meta["schemas"]:
            if int(s["schema-id"]) == self.schema_id:
                return dict(s)
        raise TableReadError("current schema missing")

    # -- reading our own manifests back --------------------------------------------------------

    def resume(self) -> None:
        """Rebuild the live-file index from the current snapshot's manifests."""
        current = self.meta.get("current-snapshot-id")
        if current is None or current == -1:
            return
        snap = next((s for s in self.meta["snapshots"] if s["snapshot-id"] == current), None)
        if snap is None:
            raise TableReadError(f"current snapshot {current} is not in the table metadata")
        records, _ = read_avro(_owned(self.root, _local(snap["manifest-list"], self.root), "manifest list"))
        manifests = [_Manifest(dict(r)) for r in records]
        self.manifests = [m for m in manifests if int(m.record.get("content") or 0) == DATA]
        self.dv_manifests = [m for m in manifests if int(m.record.get("content") or 0) == POSITION_DELETES]
        for m in self.dv_manifests:
            for e in self._entries(m):
                if e.status != DELETED:
                    target = str(e.data_file["referenced_data_file"])
                    self.live_dvs[target] = m
                    self.dv_counts[target] = int(e.data_file["record_count"])
        for m in self.manifests:
            for e in self._entries(m):
                if e.status != DELETED:
                    path = str(e.data_file["file_path"])
                    self.live[path] = m
                    self.live_sizes[path] = (
                        int(e.data_file["record_count"]),
                        int(e.data_file["file_size_in_bytes"]),
                    )

    def _entries(self, m: _Manifest) -> list[_Entry]:
        """Entries of a manifest, inherited snapshot ids, sequence numbers and first row ids resolved."""
        if m.entries is not None:
            return m.entries
        records, _ = read_avro(_owned(self.root, _local(m.uri, self.root), "manifest"))
        types = {
            avro_name(p.name): p.result_type
            for p in self._partition_fields(int(m.record["partition_spec_id"]))
        }
        next_id = m.record.get("first_row_id")
        out = []
        for r in records:
            status = int(r["status"])
            inherit = status == ADDED or int(m.record["sequence_number"]) == 0
            seq = r.get("sequence_number")
            fseq = r.get("file_sequence_number")
            df = dict(r["data_file"])
            df["partition"] = {k: to_raw(v, types.get(k, "")) for k, v in (df.get("partition") or {}).items()}
            if self.fv >= 3:
                first = df.get("first_row_id")
                if first is None and next_id is not None:
                    first = int(next_id)
                    next_id = int(next_id) + int(df["record_count"])
                df["first_row_id"] = first
            out.append(
                _Entry(
                    status=status,
                    snapshot_id=int(
                        r["snapshot_id"]
                        if r.get("snapshot_id") is not None
                        else m.record["added_snapshot_id"]
                    ),
                    sequence_number=int(
                        seq if seq is not None or not inherit else m.record["sequence_number"]
                    ),
                    file_sequence_number=int(
                        fseq if fseq is not None or not inherit else m.record["sequence_number"]
                    ),
                    data_file=df,
                )
            )
        m.entries = out
        return out

    # -- data files ------------------------------------------------------------------------------

    def _file_uri(self, delta_path: str) -> str:
        """Iceberg's fully qualified location for a Delta path (relative paths are URI-encoded in the log)."""
        if isinstance(self.root, ObjectPath):
            target = resolve_data_path(self.root, delta_path)  # inside the root: checked before
            if target is None:
                raise TableReadError(f"data file {delta_path} resolves outside the table root")
            return storage.iceberg_uri(target)
        parts = urlsplit(delta_path)
        if parts.scheme and len(parts.scheme) > 1:
            if parts.scheme == "file":
                return "file://" + unquote(parts.path)
            return delta_path
        decoded = unquote(delta_path)
        if decoded.startswith("/"):
            return "file://" + os.path.normpath(decoded)
        return self.root_uri + "/" + decoded

    def _record_count(self, add: Mapping[str, Any], stats: Mapping[str, Any] | None) -> int | None:
        """``numRecords``, else the Parquet footer's row count (Iceberg requires a record count)."""
        value = (stats or {}).get("numRecords")
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
        local = resolve_data_path(self.root, str(add["path"]))
        if local is None or _data_path_outside(self.root, self.real_root, str(add["path"])) is not None:
            return None
        if isinstance(local, ObjectPath):
            try:
                return read_object_footer(local)[0].num_rows
            except TableReadError:
                return None
        try:
            import pyarrow.parquet as pq

            return int(pq.read_metadata(storage.parquet_source(local)).num_rows)
        except (OSError, ValueError):
            return None

    def _new_files(self, adds: Sequence[Mapping[str, Any]], version: int) -> list[_NewFile]:
        """``data_file`` records for one commit's adds; every problem of the commit is refused together."""
        assert self.schema is not None
        problems: list[Violation] = []
        fields = self._partition_fields(self.spec_id)
        spec_fields = self._spec(self.spec_id)["fields"]
        columns = {c.field_id: c for c in self.schema.top.values()}
        out: list[_NewFile] = []
        for add in adds:
            path = str(add["path"])
            outside = _data_path_outside(self.root, self.real_root, path)
            if outside is not None:
                problems.append(_outside_violation(path, outside))
                continue
            dv_json = add.get("deletionVector")
            if dv_json and self.fv < 3:
                problems.append(
                    violation(
                        "ICEBERG-EMIT-DELETION-VECTORS",
                        "",
                        f"data file {path} has a deletion vector and Iceberg format v2 has none: Iceberg "
                        "would return the rows it deletes",
                        "emit Iceberg format 3, or purge deletion vectors (REORG TABLE ... APPLY (PURGE)) "
                        "and disable them",
                        observed="deletionVector present",
                        expected="none",
                    )
                )
                continue
            stats = parse_stats(add.get("stats"))
            records = self._record_count(add, stats)
            if records is None:
                problems.append(
                    violation(
                        "ICEBERG-EMIT-NUM-RECORDS",
                        "",
                        f"data file {path} has no numRecords statistic and its footer cannot be read",
                        "recompute statistics for the table (IcebergCompat requires numRecords)",
                    )
                )
                continue
            pv = add.get("partitionValues") or {}
            partition: dict[str, Any] = {}
            by_source: dict[int, Any] = {}
            for pf, sf in zip(fields, spec_fields, strict=True):
                col = columns[int(sf["source-id"])]
                text = pv.get(col.physical_name, pv.get(col.name))
                try:
                    raw = parse_partition_value(text, pf.result_type)
                except PartitionValueError as err:
                    problems.append(
                        violation(
                            "ICEBERG-EMIT-PARTITION-VALUE",
                            col.name,
                            f"partition value of {path} cannot be converted: {err}",
                            "rewrite the file's partition with a writer that records UTC ISO-8601 values",
                            observed=text,
                        )
                    )
                    raw = None
                partition[avro_name(pf.name)] = raw
                by_source[col.field_id] = raw
            base = add.get("baseRowId")
            if self.fv >= 3 and base is None:
                problems.append(
                    violation(
                        "ICEBERG-EMIT-ROW-LINEAGE",
                        "",
                        f"data file {path} has no baseRowId, so its Iceberg row ids cannot match Delta's",
                        "enable row tracking and backfill it, or emit Iceberg format 2",
                        observed="baseRowId absent",
                    )
                )
            metrics = file_metrics(stats, self.schema, records, by_source, self.string_prefix)
            df = data_file_record(
                file_path=self._file_uri(path),
                partition=partition,
                record_count=records,
                file_size=int(add.get("size") or 0),
                value_counts=metrics.value_counts,
                null_value_counts=metrics.null_value_counts,
                lower_bounds=metrics.lower_bounds,
                upper_bounds=metrics.upper_bounds,
            )
            drcv = add.get("defaultRowCommitVersion")
            out.append(
                _NewFile(
                    df,
                    None if base is None else int(base),
                    None if drcv is None else int(drcv),
                    path,
                    DeletionVectorDescriptor.from_json(dv_json) if dv_json else None,
                )
            )
        _refuse(problems, f"at Delta version {version}")
        return out

    # -- manifests -------------------------------------------------------------------------------

    def _manifest_path(self) -> Location:
        """A fresh manifest file name; the run id keeps concurrent or failed runs from colliding."""
        self.manifest_counter += 1
        return self.meta_dir / f"{self.run_id}-m{self.manifest_counter}.avro"

    def _write_manifest(
        self,
        entries: list[_Entry],
        spec_id: int,
        *,
        snapshot_id: int,
        sequence_number: int,
        explicit: list[dict[str, Any]],
        content: int = DATA,
    ) -> _Manifest:
        """Write ``explicit`` (avro-shaped entries) and describe the file by the resolved ``entries``."""
        fields = self._partition_fields(spec_id)
        types = {avro_name(p.name): p.result_type for p in fields}
        rows = []
        for rec in explicit:
            df = dict(rec["data_file"])
            df["partition"] = {k: _partition_avro_value(v, types[k]) for k, v in df["partition"].items()}
            rows.append({**rec, "data_file": df})
        path = self._manifest_path()
        spec = self._spec(spec_id)
        length = write_manifest(
            path,
            rows,
            partition=fields,
            partition_spec_json=spec["fields"],
            spec_id=spec_id,
            schema_json=self._current_schema_json(),
            format_version=self.fv,
            content="deletes" if content == POSITION_DELETES else "data",
        )
        self.written.append(path)
        live = [e for e in entries if e.status != DELETED]
        counts = {s: [e for e in entries if e.status == s] for s in (ADDED, EXISTING, DELETED)}
        record = {
            "manifest_path": _uri(path),
            "manifest_length": length,
            "partition_spec_id": spec_id,
            "content": content,
            "sequence_number": sequence_number,
            "min_sequence_number": min((e.sequence_number for e in live), default=sequence_number),
            "added_snapshot_id": snapshot_id,
            "added_files_count": len(counts[ADDED]),
            "existing_files_count": len(counts[EXISTING]),
            "deleted_files_count": len(counts[DELETED]),
            "added_rows_count": sum(int(e.data_file["record_count"]) for e in counts[ADDED]),
            "existing_rows_count": sum(int(e.data_file["record_count"]) for e in counts[EXISTING]),
            "deleted_rows_count": sum(int(e.data_file["record_count"]) for e in counts[DELETED]),
            "partitions": _summaries(entries, fields),
            "key_metadata": None,
            "first_row_id": None,
        }
        return _Manifest(record, entries)

    def _rewrite(
        self, m: _Manifest, removed: set[str], snapshot_id: int, seq: int, key: str = "file_path"
    ) -> _Manifest:
        """Copy a manifest with ``removed`` files marked DELETED and the rest EXISTING, all explicit.

        ``key`` is the ``data_file`` field ``removed`` names: the file's own path, or for a delete
        manifest the data file a deletion vector references."""
        entries: list[_Entry] = []
        for e in self._entries(m):
            if e.status == DELETED:
                continue  # deletes of earlier snapshots are not carried forward
            gone = e.data_file[key] in removed
            entries.append(
                _Entry(
                    status=DELETED if gone else EXISTING,
                    snapshot_id=snapshot_id if gone else e.snapshot_id,
                    sequence_number=e.sequence_number,
                    file_sequence_number=e.file_sequence_number,
                    data_file=dict(e.data_file),
                )
            )
        explicit = [
            {
                "status": e.status,
                "snapshot_id": e.snapshot_id,
                "sequence_number": e.sequence_number,
                "file_sequence_number": e.file_sequence_number,
                "data_file": e.data_file,
            }
            for e in entries
        ]
        return self._write_manifest(
            entries,
            int(m.record["partition_spec_id"]),
            snapshot_id=snapshot_id,
            sequence_number=seq,
            explicit=explicit,
            content=int(m.record.get("content") or 0),
        )

    # -- deletion vectors ------------------------------------------------------------------------

    def _puffin_path(self) -> Location:
        """A fresh Puffin file name in the metadata tree (Delta's own DV files are never referenced)."""
        self.puffin_counter += 1
        return self.meta_dir / f"{self.run_id}-dv{self.puffin_counter}.puffin"

    def _deletion_vectors(
        self, new_files: Sequence[_NewFile], removed: set[str], snapshot_id: int, seq: int
    ) -> tuple[list[_Manifest], dict[str, str]]:
        """The delete manifests of the snapshot, and its summary's DV counts.

        A data file that leaves the snapshot (removed, or re-added with new statistics or a new DV)
        takes its DV with it; every added file with a DV gets one, read from Delta, verified, and
        written with the snapshot's other new DVs into one Puffin file. So a data file has at most one
        DV per snapshot, and the DV's data sequence number (the snapshot's) is never below its data
        file's. Delete manifests that lose no DV are kept as they are.
        """
        gone = {uri for uri in removed if uri in self.live_dvs}
        fresh = [f for f in new_files if f.deletion_vector is not None]
        if not gone and not fresh:
            return list(self.dv_manifests), {}
        added: list[_Manifest] = []
        if fresh:
            read = read_deletion_vectors(
                self.root, [(f.delta_path, f.deletion_vector) for f in fresh if f.deletion_vector]
            )
            _refuse(
                [
                    violation(
                        "ICEBERG-EMIT-DELETION-VECTOR-READ",
                        "",
                        f"data file {p.data_path}: {p.message}",
                        "repair or restore the deletion vector file (`icecompat check TABLE` lists every "
                        "one), or rewrite the data file (REORG TABLE ... APPLY (PURGE))",
                        observed=p.kind,
                    )
                    for p in read.problems
                ],
                f"at Delta version {seq}",
            )
            puffin = PuffinWriter()
            placed = [
                (f, puffin.add_deletion_vector(
                    str(f.data_file["file_path"]),
                    read.vectors[f.delta_path].blob,
                    read.vectors[f.delta_path].cardinality,
                ))
                for f in fresh
            ]  # fmt: skip
            path = self._puffin_path()
            self.written.append(path)
            size = puffin.write(path)
            entries, explicit = [], []
            for f, blob in placed:
                df = deletion_vector_record(
                    puffin_path=_uri(path),
                    puffin_size=size,
                    partition=f.data_file["partition"],
                    referenced_data_file=blob.referenced_data_file,
                    offset=blob.offset,
                    length=blob.length,
                    cardinality=blob.cardinality,
                )
                explicit.append(
                    {
                        "status": ADDED,
                        "snapshot_id": snapshot_id,
                        "sequence_number": None,
                        "file_sequence_number": None,
                        "data_file": df,
                    }
                )
                entries.append(_Entry(ADDED, snapshot_id, seq, seq, df))
            added.append(
                self._write_manifest(
                    entries,
                    self.spec_id,
                    snapshot_id=snapshot_id,
                    sequence_number=seq,
                    explicit=explicit,
                    content=POSITION_DELETES,
                )
            )
        live_by_manifest: dict[int, list[str]] = {}
        for target, owner in self.live_dvs.items():
            live_by_manifest.setdefault(id(owner), []).append(target)
        kept: list[_Manifest] = []
        rewritten: list[_Manifest] = []
        for m in self.dv_manifests:
            live_here = live_by_manifest.get(id(m), [])
            if not live_here:
                continue
            if gone.intersection(live_here):
                rewritten.append(self._rewrite(m, gone, snapshot_id, seq, key="referenced_data_file"))
            else:
                kept.append(m)
        removed_dvs = [self.dv_counts.pop(target) for target in gone]
        for target in gone:
            self.live_dvs.pop(target)
        for m in added + rewritten:
            for e in m.entries or []:
                if e.status != DELETED:
                    target = str(e.data_file["referenced_data_file"])
                    self.live_dvs[target] = m
                    self.dv_counts[target] = int(e.data_file["record_count"])
        self.dv_manifests = added + rewritten + kept
        summary = {
            "added-delete-files": str(len(fresh)),
            "added-position-delete-files": str(len(fresh)),
            "added-dvs": str(len(fresh)),
            "added-position-deletes": str(
                sum(int(e.data_file["record_count"]) for m in added for e in m.entries or [])
            ),
            "removed-delete-files": str(len(removed_dvs)),
            "removed-position-delete-files": str(len(removed_dvs)),
            "removed-dvs": str(len(removed_dvs)),
            "removed-position-deletes": str(sum(removed_dvs)),
        }
        return self.dv_manifests, summary

    # -- snapshots -------------------------------------------------------------------------------

    def _snapshot_id(self, version: int) -> int:
        """A positive 63-bit id derived from (table, version): re-converting gives the same ids."""
        taken = {int(s["snapshot-id"]) for s in self.meta["snapshots"]}
        digest = hashlib.sha256(f"{self.meta['table-uuid']}/{version}".encode()).digest()
        sid = int.from_bytes(digest[:8], "big") & _MASK63
        while sid == 0 or sid in taken:
            sid = (sid + 1) & _MASK63
        return sid

    def add_snapshot(
        self,
        version: int,
        timestamp_ms: int,
        delta_operation: str | None,
        removes: Iterable[str],
        adds: Sequence[Mapping[str, Any]],
        data_change: bool,
    ) -> None:
        """Append the snapshot for one Delta version (``removes``/``adds``: Delta paths of the commit)."""
        new_files = self._new_files(adds, version)
        added_paths = {f.data_file["file_path"] for f in new_files}
        removed = {self._file_uri(p) for p in removes}
        # A file re-added while live (new statistics, same data) is replaced: old entry deleted, new added.
        removed = {p for p in removed | (added_paths & set(self.live)) if p in self.live}
        snapshot_id = self._snapshot_id(version)
        seq = version
        parent = self.meta.get("current-snapshot-id")
        first_row_id = int(self.meta.get("next-row-id", 0)) if self.fv >= 3 else None

        # New data manifests: for v3, runs of files whose Delta baseRowIds are contiguous get a manifest
        # each, so that Iceberg's first_row_id inheritance reproduces exactly Delta's row ids.
        groups: list[tuple[int | None, list[_NewFile]]] = []
        if self.fv >= 3:
            assert first_row_id is not None
            fresh = sorted(
                (f for f in new_files if f.base_row_id is not None and f.base_row_id >= first_row_id),
                key=lambda f: int(f.base_row_id or 0),
            )
            fresh_ids = {id(f) for f in fresh}
            older = [f for f in new_files if id(f) not in fresh_ids]
            # Where the current run's row ids end, kept as it grows: summing the run's record counts
            # for every file made grouping quadratic (minutes at 100,000 files in one commit).
            run_end: int | None = None
            for f in fresh:
                base = int(f.base_row_id or 0)
                if groups and run_end == base:
                    groups[-1][1].append(f)
                else:
                    groups.append((base, [f]))
                run_end = base + int(f.data_file["record_count"])
            if older:
                groups.append((None, older))
        elif new_files:
            groups.append((None, new_files))

        added_manifests: list[_Manifest] = []
        for run_start, files in groups:
            entries, explicit = [], []
            for f in files:
                data_seq = f.row_commit_version if f.row_commit_version is not None else seq
                data_seq = min(data_seq, seq)
                df = dict(f.data_file)
                resolved_first = f.base_row_id if self.fv >= 3 else None
                df["first_row_id"] = None if run_start is not None else resolved_first
                explicit.append(
                    {
                        "status": ADDED,
                        "snapshot_id": snapshot_id,
                        "sequence_number": None if data_seq == seq else data_seq,
                        "file_sequence_number": None,
                        "data_file": df,
                    }
                )
                entries.append(
                    _Entry(ADDED, snapshot_id, data_seq, seq, {**df, "first_row_id": resolved_first})
                )
            m = self._write_manifest(
                entries, self.spec_id, snapshot_id=snapshot_id, sequence_number=seq, explicit=explicit
            )
            m.record["first_row_id"] = run_start
            added_manifests.append(m)

        rewritten: list[_Manifest] = []
        kept: list[_Manifest] = []
        live_by_manifest: dict[int, list[str]] = {}
        for p, owner in self.live.items():
            live_by_manifest.setdefault(id(owner), []).append(p)
        for m in self.manifests:
            live_here = live_by_manifest.get(id(m), [])
            if not live_here:
                continue  # nothing live any more: the manifest leaves the table
            if removed.intersection(live_here):
                rewritten.append(self._rewrite(m, removed, snapshot_id, seq))
            else:
                kept.append(m)

        ordered = added_manifests + rewritten
        next_row_id = first_row_id
        if self.fv >= 3:
            cursor = int(first_row_id or 0)
            for m in ordered:
                if m.record["first_row_id"] is None:
                    m.record["first_row_id"] = cursor
                else:
                    cursor = int(m.record["first_row_id"]) + int(m.record["added_rows_count"])
            next_row_id = cursor
        dv_manifests, dv_summary = self._deletion_vectors(new_files, removed, snapshot_id, seq)
        manifests = ordered + kept + dv_manifests

        list_path = self.meta_dir / f"snap-{snapshot_id}-1-{self.run_id}.avro"
        write_manifest_list(
            list_path,
            [m.record for m in manifests],
            snapshot_id=snapshot_id,
            parent_snapshot_id=parent,
            sequence_number=seq,
            format_version=self.fv,
            first_row_id=first_row_id,
        )
        self.written.append(list_path)

        # Book-keeping: live files, totals.
        removed_sizes = [self.live_sizes[p] for p in removed]
        for p in removed:
            self.live.pop(p, None)
            self.live_sizes.pop(p, None)
        for m in added_manifests:
            for e in m.entries or []:
                p = str(e.data_file["file_path"])
                self.live[p] = m
                self.live_sizes[p] = (
                    int(e.data_file["record_count"]),
                    int(e.data_file["file_size_in_bytes"]),
                )
        for m in rewritten:
            for e in m.entries or []:
                if e.status != DELETED:
                    self.live[str(e.data_file["file_path"])] = m
        self.manifests = manifests

        if new_files and removed:
            operation = "overwrite" if data_change else "replace"
        elif removed:
            operation = "delete" if data_change else "replace"
        else:
            operation = "append"
        added_records = sum(int(f.data_file["record_count"]) for f in new_files)
        summary = {
            "operation": operation,
            "added-data-files": str(len(new_files)),
            "deleted-data-files": str(len(removed)),
            "added-records": str(added_records),
            "deleted-records": str(sum(r for r, _ in removed_sizes)),
            "added-files-size": str(sum(int(f.data_file["file_size_in_bytes"]) for f in new_files)),
            "removed-files-size": str(sum(s for _, s in removed_sizes)),
            "total-data-files": str(len(self.live_sizes)),
            "total-records": str(sum(r for r, _ in self.live_sizes.values())),
            "total-files-size": str(sum(s for _, s in self.live_sizes.values())),
            **dv_summary,
            "total-delete-files": str(len(self.dv_counts)),
            "total-position-deletes": str(sum(self.dv_counts.values())),
            "total-equality-deletes": "0",
            "icecompat.delta-version": str(version),
        }
        if delta_operation:
            summary["icecompat.delta-operation"] = delta_operation
        last_ts = max((int(s["timestamp-ms"]) for s in self.meta["snapshots"]), default=0)
        timestamp_ms = max(int(timestamp_ms), last_ts)
        snapshot: dict[str, Any] = {
            "snapshot-id": snapshot_id,
            "sequence-number": seq,
            "timestamp-ms": timestamp_ms,
            "manifest-list": _uri(list_path),
            "summary": summary,
            "schema-id": self.schema_id,
        }
        if parent is not None:
            snapshot["parent-snapshot-id"] = parent
        if self.fv >= 3:
            snapshot["first-row-id"] = first_row_id
            snapshot["added-rows"] = int(next_row_id or 0) - int(first_row_id or 0)
            self.meta["next-row-id"] = next_row_id
        self.meta["snapshots"].append(snapshot)
        self.meta.setdefault("snapshot-log", []).append(
            {"timestamp-ms": timestamp_ms, "snapshot-id": snapshot_id}
        )
        self.meta["current-snapshot-id"] = snapshot_id
        self.meta["refs"] = {"main": {"snapshot-id": snapshot_id, "type": "branch"}}
        self.meta["last-sequence-number"] = max(int(self.meta["last-sequence-number"]), seq)
        self.meta["properties"][PROP_DELTA_VERSION] = str(version)
        self.meta["properties"][PROP_DELTA_TABLE_ID] = self.delta_table_id
        self.new_snapshots.append(
            SnapshotInfo(version, snapshot_id, seq, operation, len(new_files), len(removed))
        )

    # -- commit ----------------------------------------------------------------------------------

    def commit(self, previous: tuple[int, Location] | None) -> tuple[int, Location]:
        """Write ``v<N+1>.metadata.json`` (create-if-absent) and the version hint.

        The create fails when the name exists, on every store (a local ``link``, S3
        ``If-None-Match: *``, GCS ``ifGenerationMatch=0``, Azure ``If-None-Match: *``): of two runs
        racing for one version exactly one commits, the other raises ConcurrentWriteError.
        """
        version = 1 if previous is None else previous[0] + 1
        last_ts = max((int(s["timestamp-ms"]) for s in self.meta["snapshots"]), default=0)
        now = int(time.time() * 1000)
        if previous is not None:
            self.meta.setdefault("metadata-log", []).append(
                {"metadata-file": _uri(previous[1]), "timestamp-ms": int(self.meta["last-updated-ms"])}
            )
        self.meta["last-updated-ms"] = max(now, last_ts, int(self.meta["last-updated-ms"]))
        target = self.meta_dir / f"v{version}.metadata.json"
        if not storage.create_if_absent(target, json.dumps(self.meta, indent=2).encode("utf-8")):
            raise ConcurrentWriteError(
                f"{target} appeared while converting: another conversion committed first; run it again"
            )
        storage.write_bytes(self.meta_dir / VERSION_HINT, str(version).encode("utf-8"))
        return version, target

    def discard(self) -> None:
        """Remove the Avro files of a run that did not commit (they are referenced by nothing)."""
        storage.delete_files(self.written)


# ---------------------------------------------------------------------------------------------------


def _existing_metadata(meta_dir: Location) -> tuple[int, Location] | None:
    """The highest ``v<N>.metadata.json`` in ``metadata/`` (the hint file may lag behind): one listing."""
    if isinstance(meta_dir, Path) and not meta_dir.is_dir():
        return None
    try:
        listed = [e.location for e in storage.list_files(meta_dir)]
    except (FileNotFoundError, NotADirectoryError):
        return None
    best: tuple[int, Location] | None = None
    for p in listed:
        name = p.name
        if name.startswith("v") and name.endswith(".metadata.json") and name[1:-14].isdigit():
            n = int(name[1:-14])
            if best is None or n > best[0]:
                best = (n, p)
    return best


def _gate(root: Location, version: int, format_version: int) -> None:
    """Refuse a table whose version ``version`` breaks the catalog rules it is held to, or the emitter's.

    This is where the live data files are checked (their footers read: field ids, INT64 timestamps,
    materialised partition columns, ``numRecords``), exactly as ``icecompat check`` checks them, so
    the emitter never writes Iceberg metadata for a table the checker calls non-compliant.
    """
    snap = read_snapshot(root, version)
    real_root = os.path.realpath(snap.table_root) if isinstance(snap.table_root, Path) else ""
    outside: list[Violation] = []
    facts = []
    if isinstance(snap.table_root, ObjectPath):
        # one listing of the table, then one ranged read per footer in a bounded pool (the checker's path)
        from icecompat_writer.checking.check import snapshot_facts

        facts = list(snapshot_facts(snap, files="all", every_file=True).facts)
    for add in snap.add_files:
        reason = _data_path_outside(snap.table_root, real_root, add.path)
        if reason is not None:
            outside.append(_outside_violation(add.path, reason))
        if not isinstance(snap.table_root, ObjectPath):
            facts.append(file_facts(snap.table_root, add, read_footer=reason is None))
    _, problems = table_violations(snap.protocol, snap.metadata, format_version, facts)
    _refuse([*outside, *problems], _context(version, snap.metadata))


def _first_version(root: Location, latest: int, fv_request: int | None) -> tuple[int, _delta.DeltaState, int]:
    """Where a first conversion starts: the oldest version from which every later one is convertible.

    A table that became compliant at some version (column mapping and IcebergCompat enabled later) is
    converted from there on; earlier versions have no field ids and cannot be expressed in Iceberg.
    History the log no longer has (commits cleaned up behind a checkpoint) starts at the oldest version
    the log can still reconstruct. Returns (start version, state at start, format version).
    """
    versions = _delta.commit_versions(root)
    first = versions[0]
    if versions != list(range(first, latest + 1)):
        missing = sorted(set(range(first, latest + 1)) - set(versions))
        raise TableReadError(f"the Delta log of {root} misses commits {missing[:10]}")
    base: _delta.DeltaState | None = None
    for version in versions:
        try:
            base = _delta.state_at(root, version)
            break
        except TableReadError:
            continue  # this version cannot be reconstructed (no checkpoint before it): try the next
    if base is None:
        raise TableReadError(f"no version of the Delta log of {root} can be reconstructed")
    changes: list[tuple[int, Protocol, Metadata]] = [(base.version, base.protocol, base.metadata)]
    protocol, metadata = base.protocol, base.metadata
    for commit in _delta.iter_commits(root, base.version + 1, latest):
        if not commit.changes_table:
            continue
        for kind, obj in commit.actions:
            if kind == "protocol":
                protocol = Protocol.from_json(obj)
            elif kind == "metaData":
                metadata = Metadata.from_json(obj)
        changes.append((commit.version, protocol, metadata))
    fv = fv_request if fv_request is not None else default_format_version(changes[-1][2])
    _gate(root, latest, fv)
    start = changes[0][0]
    for i in range(len(changes) - 1, -1, -1):
        _, protocol, metadata = changes[i]
        _, problems = table_violations(protocol, metadata, fv)
        if problems:
            if i == len(changes) - 1:  # cannot happen after the gate; kept so no path skips the check
                raise CompatViolation(problems, _context(latest, metadata))
            start = changes[i + 1][0]
            break
    state = base if start == base.version else _delta.state_at(root, start)
    return start, state, fv


def write_iceberg_metadata(
    table_root: str | os.PathLike[str], format_version: int | None = None
) -> IcebergResult:
    """Write (or bring up to date) Iceberg metadata for the Delta table at ``table_root``.

    ``format_version`` is 2 or 3; by default an existing Iceberg tree keeps its version, and a new one
    is v3 for IcebergCompatV3 tables, v2 otherwise. Raises :class:`CompatViolation` when the table is
    not compliant with the rules it is held to (the catalog's rule ids for its declared profile, see
    :mod:`.checks`) or cannot be converted faithfully (``ICEBERG-EMIT-*``), :class:`TableReadError`
    when the log cannot be read, :class:`ConcurrentWriteError` when another run committed first.
    """
    if format_version is not None and format_version not in (2, 3):
        raise ValueError(f"format_version must be 2 or 3, not {format_version!r}")
    root = table_root_path(os.fspath(table_root))
    versions = _delta.commit_versions(root)
    latest = versions[-1]
    meta_dir = root / METADATA_DIR
    if isinstance(meta_dir, Path) and (meta_dir.is_symlink() or meta_dir.exists()):
        _owned(root, meta_dir / VERSION_HINT, "the version hint")
    previous = _existing_metadata(meta_dir)
    if previous is not None:
        _owned(root, previous[1], "the metadata file")

    if previous is None:
        start, state, fv = _first_version(root, latest, format_version)
        emitter = _Emitter.fresh(root, fv, state.metadata)
        first_commit = _delta.load_commit(root, start)
        emitter.set_delta_state(state.protocol, state.metadata, start)
        created_dir = isinstance(meta_dir, Path) and not meta_dir.exists()
        if isinstance(meta_dir, Path):
            meta_dir.mkdir(exist_ok=True)
        try:
            emitter.add_snapshot(
                start, first_commit.timestamp_ms, first_commit.operation, (), list(state.adds.values()), True
            )
            _convert_commits(emitter, root, start + 1, latest, state.protocol, state.metadata)
            number, path = emitter.commit(None)
        except BaseException:
            emitter.discard()
            if created_dir and isinstance(meta_dir, Path) and not any(meta_dir.iterdir()):
                meta_dir.rmdir()
            raise
        return _result(root, emitter, number, path, latest)

    meta = json.loads(storage.read_bytes(previous[1]).decode("utf-8"))
    props = meta.get("properties") or {}
    converted = props.get(PROP_DELTA_VERSION)
    state = _delta.state_at(root, latest)
    problems: list[Violation] = []
    if converted is None or not str(converted).isdigit():
        problems.append(
            violation(
                "ICEBERG-EMIT-EXISTING-METADATA",
                "",
                f"{previous[1]} was not written by this emitter (no `{PROP_DELTA_VERSION}` property)",
                "move the existing metadata/ directory away; the emitter does not adopt foreign trees",
            )
        )
    elif props.get(PROP_DELTA_TABLE_ID) != state.metadata.id:
        problems.append(
            violation(
                "ICEBERG-EMIT-EXISTING-METADATA",
                "",
                "the Iceberg metadata belongs to another Delta table (the table was re-created here)",
                "delete the metadata/ directory and convert again",
                observed=props.get(PROP_DELTA_TABLE_ID),
                expected=state.metadata.id,
            )
        )
    fv = int(meta.get("format-version", 2))
    if format_version is not None and format_version != fv:
        problems.append(
            violation(
                "ICEBERG-EMIT-FORMAT-VERSION",
                "",
                f"the existing Iceberg metadata is format v{fv}; an existing tree is not re-versioned",
                "omit --format-version, or delete metadata/ and convert again",
                observed=format_version,
                expected=fv,
            )
        )
    _refuse(problems, "")
    last = int(str(converted))
    if last > latest:
        raise TableReadError(f"Iceberg metadata is at Delta version {last} but the log ends at {latest}")
    if last == latest:
        return IcebergResult(root, previous[1], previous[0], fv, latest, (), written=False)
    if last + 1 < versions[0]:
        raise CompatViolation(
            [
                violation(
                    "ICEBERG-EMIT-HISTORY",
                    "",
                    f"Delta commits {last + 1}..{versions[0] - 1} were cleaned up before they were converted",
                    "delete metadata/ and convert again from the current state",
                )
            ]
        )
    _gate(root, latest, fv)
    base = _delta.state_at(root, last)
    emitter = _Emitter(root, fv, meta, base.metadata.id)
    emitter.set_delta_state(base.protocol, base.metadata, last)
    emitter.resume()
    try:
        _convert_commits(emitter, root, last + 1, latest, base.protocol, base.metadata)
        number, path = emitter.commit(previous)
    except BaseException:
        emitter.discard()
        raise
    return _result(root, emitter, number, path, latest)


def _convert_commits(
    emitter: _Emitter, root: Location, start: int, end: int, protocol: Protocol, metadata: Metadata
) -> None:
    """One snapshot per commit ``start..end``; protocol/metadata changes are checked as they come."""
    for commit in _delta.iter_commits(root, start, end):
        changed = False
        for kind, obj in commit.actions:
            if kind == "protocol":
                protocol, changed = Protocol.from_json(obj), True
            elif kind == "metaData":
                metadata, changed = Metadata.from_json(obj), True
        if changed:
            emitter.set_delta_state(protocol, metadata, commit.version)
        adds: dict[str, dict[str, Any]] = {}
        for obj in commit.of_kind("add"):
            adds[str(obj["path"])] = obj
        removes = [str(o["path"]) for o in commit.of_kind("remove") if str(o["path"]) not in adds]
        file_actions = list(adds.values()) + commit.of_kind("remove")
        data_change = not file_actions or any(bool(a.get("dataChange", True)) for a in file_actions)
        emitter.add_snapshot(
            commit.version, commit.timestamp_ms, commit.operation, removes, list(adds.values()), data_change
        )


def _result(root: Location, emitter: _Emitter, number: int, path: Location, latest: int) -> IcebergResult:
    """The public result of a run that committed."""
    return IcebergResult(
        table_root=root,
        metadata_path=path,
        metadata_version=number,
        format_version=emitter.fv,
        delta_version=latest,
        snapshots=tuple(emitter.new_snapshots),
        written=True,
    )
