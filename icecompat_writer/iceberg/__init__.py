"""Iceberg metadata for compliant Delta tables: written next to ``_delta_log``, no data rewritten.

``write_iceberg_metadata(table_root)`` writes ``metadata/v<N>.metadata.json``, manifest lists, manifests
and ``version-hint.text`` under the table root, so file-system Iceberg readers (pyiceberg's
``StaticTable``, DuckDB's ``iceberg_scan``) read the same Parquet files Delta does. See docs/iceberg.md.
"""

from __future__ import annotations

from .cli import add_arguments, main, run
from .emitter import (
    METADATA_DIR,
    PROP_DELTA_TABLE_ID,
    PROP_DELTA_VERSION,
    PROP_NAME_MAPPING,
    IcebergResult,
    SnapshotInfo,
    write_iceberg_metadata,
)

__all__ = [
    "METADATA_DIR",
    "PROP_DELTA_TABLE_ID",
    "PROP_DELTA_VERSION",
    "PROP_NAME_MAPPING",
    "IcebergResult",
    "SnapshotInfo",
    "add_arguments",
    "main",
    "run",
    "write_iceberg_metadata",
]
