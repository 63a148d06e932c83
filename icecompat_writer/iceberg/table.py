"""One Iceberg table being brought up to date: typed metadata, live files, and the Delta state in force.

:class:`IcebergTable` holds what every snapshot producer (:mod:`.producers`) works on: the table
metadata (:class:`.metadata.TableMetadata`), the current snapshot's manifests and live files
(:class:`.manifests.LiveFiles`), the run's manifest writer, the store settings every file goes
through (a :class:`~icecompat_writer.storage.FileIO`), and the Delta protocol/metadata of the version
being converted (its converted schema, partition spec and statistics settings). It also turns a commit's
Delta ``add`` actions into Iceberg ``data_file`` records (:meth:`new_files`), checking each file as it
goes. Snapshots are computed by :mod:`.producers` and applied and committed by :mod:`.transaction`.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from icecompat_writer import storage
from icecompat_writer.deltalog.actions import Metadata, Protocol
from icecompat_writer.deltalog.files import DeletionVectorDescriptor
from icecompat_writer.deltalog.paths import resolve_data_path
from icecompat_writer.errors import CompatViolation, TableReadError, Violation
from icecompat_writer.evidence.footers import read_object_footer
from icecompat_writer.schema import JsonDict
from icecompat_writer.storage import FileIO, Location

from .avro import DataFileRecord, PartitionField, avro_name, data_file_record
from .checks import rule_set_for, table_violations
from .locations import data_path_outside, outside_violation, uri
from .manifests import LiveFiles, ManifestWriter
from .metadata import (
    METADATA_DIR,
    PROP_DELTA_TABLE_ID,
    PROP_DELTA_VERSION,
    PROP_NAME_MAPPING,
    AddPartitionSpec,
    AddSchema,
    MetadataUpdate,
    RaiseLastColumnId,
    SetCurrentSchema,
    SetDefaultSpec,
    SetProperties,
    SpecField,
    TableMetadata,
)
from .schema import ConvertedSchema, TopColumn, violation
from .values import (
    DEFAULT_STRING_PREFIX_LENGTH,
    PartitionValueError,
    file_metrics,
    parse_partition_value,
    parse_stats,
)

__all__ = ["IcebergTable", "NewFile", "SnapshotInfo", "refusal_context", "refuse"]

_MASK63 = (1 << 63) - 1

_PartitionSource = tuple[PartitionField, TopColumn]
"""A partition field of the current spec and the top-level column it reads."""


@dataclass(frozen=True)
class SnapshotInfo:
    """One Iceberg snapshot written for one Delta version."""

    delta_version: int
    snapshot_id: int
    sequence_number: int
    operation: str
    added_files: int
    deleted_files: int


@dataclass
class NewFile:
    """A data file to add: its ``data_file`` record plus the Delta row-tracking fields and, when its
    ``add`` carries one, its deletion vector (with the path as the log writes it, to name it)."""

    data_file: DataFileRecord
    base_row_id: int | None
    row_commit_version: int | None
    delta_path: str = ""
    deletion_vector: DeletionVectorDescriptor | None = None

    @property
    def path(self) -> str:
        return str(self.data_file["file_path"])


def refuse(violations: Sequence[Violation], context: str) -> None:
    if violations:
        raise CompatViolation(violations, context)


def refusal_context(version: int, metadata: Metadata) -> str:
    """Where a refusal happened and which rules were applied (the reader needs both to act on it)."""
    return f"at Delta version {version} ({rule_set_for(metadata).reason})"


class IcebergTable:
    """The table metadata document plus everything a snapshot producer needs to add a snapshot."""

    def __init__(self, root: Location, metadata: TableMetadata, delta_table_id: str, *, io: FileIO) -> None:
        self.root = root
        self.io = io
        self.real_root = self.io.resolved(root)  # links resolved once (data_path_outside)
        self.root_uri = uri(root)
        self.real_dirs: dict[str, str] = {}  # directories resolved once per run (data_path_outside)
        self.checked_inside: frozenset[str] = frozenset()  # Delta paths this run's gate found inside
        self.meta_dir = root / METADATA_DIR
        self.fv = metadata.format_version
        self.metadata = metadata
        self.delta_table_id = delta_table_id
        self.writer = ManifestWriter(root, self.meta_dir, self.fv, io=self.io)
        self.files = LiveFiles(root, self.fv, self.partition_fields, io=self.io)
        self.new_snapshots: list[SnapshotInfo] = []
        self.schema: ConvertedSchema | None = None
        self.schema_id = -1
        self.spec_id = 0
        self.string_prefix = DEFAULT_STRING_PREFIX_LENGTH
        self.delta_metadata: Metadata | None = None
        self.protocol: Protocol | None = None

    # -- table-level state ---------------------------------------------------------------------

    @classmethod
    def fresh(cls, root: Location, format_version: int, metadata: Metadata, *, io: FileIO) -> IcebergTable:
        """An empty v2/v3 table; the Delta table id doubles as the Iceberg table uuid."""
        table_uuid = metadata.id
        try:
            table_uuid = str(uuid.UUID(table_uuid))
        except ValueError:
            table_uuid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"delta:{metadata.id}"))
        return cls(root, TableMetadata.new(format_version, table_uuid, uri(root)), metadata.id, io=io)

    def delta_state_updates(
        self, protocol: Protocol, metadata: Metadata, version: int
    ) -> tuple[MetadataUpdate, ...]:
        """Take the Delta protocol/metadata in force at ``version`` as the state new files are converted
        under, and return the metadata updates that record it (schema, partition spec, last column id,
        name mapping), to be applied before anything else is asked of the table; refuses a
        non-convertible one."""
        converted, violations = table_violations(protocol, metadata, self.fv)
        refuse(violations, refusal_context(version, metadata))
        assert converted is not None  # no violation means the schema was converted
        self.protocol, self.delta_metadata, self.schema = protocol, metadata, converted
        updates: list[MetadataUpdate] = []
        self.schema_id = self._schema_id_for(converted, updates)
        self.spec_id = self._spec_id_for(metadata.partition_columns, converted, updates)
        try:
            self.string_prefix = int(
                metadata.configuration.get(
                    "delta.dataSkippingStringPrefixLength", DEFAULT_STRING_PREFIX_LENGTH
                )
            )
        except ValueError:
            self.string_prefix = DEFAULT_STRING_PREFIX_LENGTH
        try:
            max_column_id = int(metadata.configuration.get("delta.columnMapping.maxColumnId", 0))
        except ValueError:
            max_column_id = 0
        name_mapping = json.dumps(converted.name_mapping, separators=(",", ":"))
        updates += [
            SetCurrentSchema(self.schema_id),
            SetDefaultSpec(self.spec_id),
            RaiseLastColumnId(max(converted.max_id, max_column_id)),
            SetProperties(((PROP_NAME_MAPPING, name_mapping),)),
        ]
        return tuple(updates)

    def set_delta_state(self, protocol: Protocol, metadata: Metadata, version: int) -> None:
        """:meth:`delta_state_updates`, applied at once (a table opened outside a transaction)."""
        self.metadata.apply(self.delta_state_updates(protocol, metadata, version))

    def _schema_id_for(self, converted: ConvertedSchema, updates: list[MetadataUpdate]) -> int:
        for s in self.metadata.schemas:
            if converted.same_as(s.json):
                return s.schema_id
        new_id = max((s.schema_id for s in self.metadata.schemas), default=-1) + 1
        updates.append(AddSchema(converted.to_json(new_id)))
        return new_id

    def _spec_id_for(
        self, partition_columns: Sequence[str], converted: ConvertedSchema, updates: list[MetadataUpdate]
    ) -> int:
        wanted = [(converted.top[name].field_id, name) for name in partition_columns]
        specs = self.metadata.partition_specs
        for spec in specs:
            have = [(f.source_id, f.name) for f in spec.fields]
            if have == wanted and all(f.transform == "identity" for f in spec.fields):
                return spec.spec_id
        # Partition field ids are reused for an equivalent field of any earlier spec (spec rule).
        known = {
            (f.source_id, f.name): f.field_id
            for spec in specs
            for f in spec.fields
            if f.transform == "identity"
        }
        last = self.metadata.last_partition_id
        fields = []
        for source_id, name in wanted:
            fid = known.get((source_id, name))
            if fid is None:
                last += 1
                fid = last
            fields.append(SpecField(name, "identity", source_id, fid))
        updates.append(AddPartitionSpec(tuple(fields)))  # last-partition-id rises to its new field ids
        return max((s.spec_id for s in specs), default=-1) + 1

    def partition_fields(self, spec_id: int) -> list[PartitionField]:
        """The spec's fields with result types from the current schema (types may have been widened)."""
        assert self.schema is not None
        out = []
        for f in self.metadata.spec(spec_id).fields:
            prim = self.schema.primitives.get(f.source_id)
            if prim is None:
                raise TableReadError(f"partition source column {f.source_id} is no longer in the schema")
            out.append(PartitionField(f.field_id, f.name, prim.iceberg_type))
        return out

    def current_schema_json(self) -> JsonDict:
        """The current schema as recorded, which every new manifest embeds in its Avro metadata."""
        try:
            return self.metadata.schema(self.schema_id).to_json()
        except TableReadError:
            raise TableReadError("current schema missing") from None

    def resume(self) -> None:
        """Take the current snapshot's manifests as the live files (their entries are read on demand)."""
        snap = self.metadata.current_snapshot()
        if snap is None:
            return
        s = snap.summary
        keys = (
            "total-data-files",
            "total-records",
            "total-files-size",
            "total-delete-files",
            "total-position-deletes",
        )
        known = all(s.get(k, "").isdigit() for k in keys)
        files, records, size, deletes, positions = (int(s[k]) for k in keys) if known else (0,) * 5
        totals = (files, records, size, deletes, positions)
        self.files = LiveFiles.read(
            self.root, self.fv, self.partition_fields, snap.manifest_list, totals, io=self.io
        )
        if not known:
            self.files.index()  # totals unknown: count them from the manifests

    # -- data files ------------------------------------------------------------------------------

    def file_uri(self, delta_path: str) -> str:
        """Iceberg's fully qualified location for a Delta path (relative paths are URI-encoded in the log)."""
        if self.io.remote:
            target = resolve_data_path(self.root, delta_path)  # inside the root: checked before
            if target is None:
                raise TableReadError(f"data file {delta_path} resolves outside the table root")
            return storage.iceberg_uri(target)
        # A local log path keeps its own spelling, and one outside the root (a remove) still names a URI.
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
        local_path = resolve_data_path(self.root, str(add["path"]))
        outside = data_path_outside(self.root, self.real_root, str(add["path"]), io=self.io)
        if local_path is None or outside is not None:
            return None
        try:
            return read_object_footer(local_path, io=self.io)[0].num_rows
        except (TableReadError, OSError, ValueError):
            return None

    def new_files(
        self, adds: Sequence[Mapping[str, Any]], version: int, problems: list[Violation] | None = None
    ) -> list[NewFile]:
        """``data_file`` records for one commit's adds; every problem of the commit is refused together.

        ``problems``: the adds are one batch of the commit's; their problems are appended there, for
        the caller to refuse with those of the other batches, instead of being refused here."""
        assert self.schema is not None
        sources = self._partition_sources()
        found: list[Violation] = [] if problems is None else problems
        out = [f for add in adds if (f := self._new_file(add, sources, found)) is not None]
        if problems is None:
            refuse(found, f"at Delta version {version}")
        return out

    def _new_file(
        self, add: Mapping[str, Any], sources: Sequence[_PartitionSource], problems: list[Violation]
    ) -> NewFile | None:
        """One add as a :class:`NewFile`, its problems appended to ``problems``; None when the file
        cannot be described at all (outside the root, no record count)."""
        assert self.schema is not None
        path = str(add["path"])
        refusal = self._placement_problem(add, path)
        if refusal is not None:
            problems.append(refusal)
            return None
        stats = parse_stats(add.get("stats"))
        records = self._record_count(add, stats)
        if records is None:
            problems.append(violation("ICEBERG-EMIT-NUM-RECORDS", "", file=path))
            return None
        partition, by_source = self._partition_values(add, path, sources, problems)
        lineage = self._row_lineage_problem(add, path)
        if lineage is not None:
            problems.append(lineage)
        metrics = file_metrics(stats, self.schema, records, by_source, self.string_prefix)
        df = data_file_record(
            file_path=self.file_uri(path),
            partition=partition,
            record_count=records,
            file_size=int(add.get("size") or 0),
            value_counts=metrics.value_counts,
            null_value_counts=metrics.null_value_counts,
            lower_bounds=metrics.lower_bounds,
            upper_bounds=metrics.upper_bounds,
        )
        base, drcv = add.get("baseRowId"), add.get("defaultRowCommitVersion")
        dv_json = add.get("deletionVector")
        return NewFile(
            df,
            None if base is None else int(base),
            None if drcv is None else int(drcv),
            path,
            DeletionVectorDescriptor.from_json(dv_json) if dv_json else None,
        )

    def _placement_problem(self, add: Mapping[str, Any], path: str) -> Violation | None:
        """Why the file of ``add`` cannot enter this table at all: it lies outside the root. None: it can."""
        outside = (
            None
            if path in self.checked_inside
            else data_path_outside(self.root, self.real_root, path, self.real_dirs, io=self.io)
        )
        if outside is not None:
            return outside_violation(path, outside)
        return None

    def _partition_sources(self) -> list[_PartitionSource]:
        """The current spec's fields, each with the column it reads (read once per commit)."""
        assert self.schema is not None
        columns = {c.field_id: c for c in self.schema.top.values()}
        fields = self.partition_fields(self.spec_id)
        spec_fields = self.metadata.spec(self.spec_id).fields
        return [(pf, columns[sf.source_id]) for pf, sf in zip(fields, spec_fields, strict=True)]

    def _partition_values(
        self,
        add: Mapping[str, Any],
        path: str,
        sources: Sequence[_PartitionSource],
        problems: list[Violation],
    ) -> tuple[dict[str, Any], dict[int, Any]]:
        """The Iceberg partition tuple of ``add`` (by Avro field name) and the same values by source
        field id (the statistics take them as bounds); a value that does not parse is a problem and
        left null."""
        pv = add.get("partitionValues") or {}
        partition: dict[str, Any] = {}
        by_source: dict[int, Any] = {}
        for pf, col in sources:
            text = pv.get(col.physical_name, pv.get(col.name))
            try:
                raw = parse_partition_value(text, pf.result_type)
            except PartitionValueError as err:
                problems.append(
                    violation("ICEBERG-EMIT-PARTITION-VALUE", col.name, observed=text, file=path, problem=err)
                )
                raw = None
            partition[avro_name(pf.name)] = raw
            by_source[col.field_id] = raw
        return partition, by_source

    def _row_lineage_problem(self, add: Mapping[str, Any], path: str) -> Violation | None:
        """A v3 table needs each file's first row id (Delta's ``baseRowId``) for row lineage."""
        if self.fv >= 3 and add.get("baseRowId") is None:
            return violation("ICEBERG-EMIT-ROW-LINEAGE", "", observed="baseRowId absent", file=path)
        return None

    # -- snapshots -------------------------------------------------------------------------------

    def snapshot_id_for(self, version: int) -> int:
        """A positive 63-bit id derived from (table, version): re-converting gives the same ids."""
        taken = set(self.metadata.snapshot_ids())
        digest = hashlib.sha256(f"{self.metadata.table_uuid}/{version}".encode()).digest()
        sid = int.from_bytes(digest[:8], "big") & _MASK63
        while sid == 0 or sid in taken:
            sid = (sid + 1) & _MASK63
        return sid

    def delta_version_update(self, version: int) -> SetProperties:
        """The properties that say which Delta version (of which Delta table) the metadata is at."""
        return SetProperties(((PROP_DELTA_VERSION, str(version)), (PROP_DELTA_TABLE_ID, self.delta_table_id)))
