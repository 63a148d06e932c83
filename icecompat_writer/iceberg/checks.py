"""What makes a Delta table version convertible, as Violations named ``ICEBERG-EMIT-*``.

These are the emitter's own pre-checks: the minimum without which the Iceberg metadata would be wrong
(columns that cannot be addressed by id, rows hidden by deletion vectors that Iceberg would show, row
ids that cannot be expressed). They do not replace the full IcebergCompat rule catalog; they are what
this emitter needs to refuse a table rather than write metadata that misreads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from icecompat_writer.deltalog.actions import Metadata, Protocol
from icecompat_writer.errors import Violation

from .schema import ConvertedSchema, convert_schema, violation

__all__ = [
    "COMPAT_PROPERTIES",
    "default_format_version",
    "row_tracking_enabled",
    "table_violations",
]

COMPAT_PROPERTIES = (
    "delta.enableIcebergCompatV2",
    "delta.enableIcebergCompatV3",
    "delta.enableIcebergWriterCompatV1",
)


def _true(conf: Mapping[str, str], key: str) -> bool:
    return str(conf.get(key, "")).strip().lower() == "true"


def row_tracking_enabled(metadata: Metadata) -> bool:
    """Row tracking on and not suspended: every file then has a ``baseRowId``."""
    conf = metadata.configuration
    return _true(conf, "delta.enableRowTracking") and not _true(conf, "delta.rowTrackingSuspended")


def default_format_version(metadata: Metadata) -> int:
    """Iceberg v3 for IcebergCompatV3 tables (they carry row tracking), v2 otherwise."""
    return 3 if _true(metadata.configuration, "delta.enableIcebergCompatV3") else 2


def table_violations(
    protocol: Protocol, metadata: Metadata, format_version: int
) -> tuple[ConvertedSchema, list[Violation]]:
    """Check one (protocol, metadata) pair; returns the converted schema and every violation."""
    conf = metadata.configuration
    out: list[Violation] = []
    if not any(_true(conf, key) for key in COMPAT_PROPERTIES):
        out.append(
            violation(
                "ICEBERG-EMIT-COMPAT",
                "",
                "no Iceberg compatibility feature is enabled, so nothing keeps the table's files "
                "readable as Iceberg",
                "set `delta.enableIcebergCompatV2` (or V3) to `true` together with column mapping",
                observed=", ".join(f"{k}={conf.get(k)}" for k in COMPAT_PROPERTIES if k in conf)
                or "none set",
                expected=" or ".join(COMPAT_PROPERTIES),
            )
        )
    mode = str(conf.get("delta.columnMapping.mode", "none")).strip().lower()
    if mode not in ("id", "name"):
        out.append(
            violation(
                "ICEBERG-EMIT-COLUMN-MAPPING",
                "",
                "column mapping is off, so the data files carry no field ids for Iceberg to resolve",
                "set `delta.columnMapping.mode` to `name` (existing tables) or `id` (new tables)",
                observed=mode,
                expected="id or name",
            )
        )
    if _true(conf, "delta.enableDeletionVectors"):
        out.append(
            violation(
                "ICEBERG-EMIT-DELETION-VECTORS",
                "",
                "deletion vectors are enabled; rows they delete would reappear in Iceberg, which this "
                "emitter cannot convert them for yet",
                "set `delta.enableDeletionVectors` to `false` and rewrite files that carry DVs "
                "(REORG TABLE ... APPLY (PURGE))",
                observed="true",
                expected="false",
            )
        )
    if format_version >= 3 and not row_tracking_enabled(metadata):
        out.append(
            violation(
                "ICEBERG-EMIT-FORMAT-VERSION",
                "",
                "Iceberg format v3 needs row lineage, which comes from Delta row tracking, and row "
                "tracking is not enabled",
                "emit format 2, or enable `delta.enableRowTracking` (IcebergCompatV3 does so)",
                observed="delta.enableRowTracking is not true",
                expected="true",
            )
        )
    converted, schema_violations = convert_schema(metadata.schema, format_version)
    out.extend(schema_violations)
    out.extend(_partition_violations(metadata, converted))
    return converted, out


def _partition_violations(metadata: Metadata, converted: ConvertedSchema) -> list[Violation]:
    out: list[Violation] = []
    for name in metadata.partition_columns:
        col = converted.top.get(name)
        if col is None:
            if _find(metadata.schema, name) is None:
                out.append(
                    violation(
                        "ICEBERG-EMIT-PARTITION-COLUMN",
                        name,
                        "the partition column is not a top-level column of the schema",
                        "repair the table metadata",
                    )
                )
            continue
        if not isinstance(col.iceberg_type, str):
            out.append(
                violation(
                    "ICEBERG-EMIT-PARTITION-COLUMN",
                    name,
                    "an identity partition needs a primitive column",
                    "partition by a primitive column",
                    observed=col.iceberg_type.get("type"),
                )
            )
    return out


def _find(schema: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    for f in schema.get("fields") or []:
        if f.get("name") == name:
            return dict(f)
    return None
