"""Facts about data files, as the file-level rules need them.

The checker builds these from AddFile actions and Parquet footers (pyarrow); the writer builds them
from the files it just wrote. The rules only ever see these records, never a file handle, so file-level
rules run the same way everywhere and never open anything themselves.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = ["DataFileFacts", "ParquetField", "ParquetFooter"]


@dataclass(frozen=True)
class ParquetField:
    """One node of a Parquet file's schema tree, as written in the file.

    ``name`` is the name in the file (a physical name under column mapping). Group nodes (structs, the
    LIST/MAP wrappers and their repeated ``list``/``key_value`` levels) have ``physical_type`` None and
    children; leaves have a physical type such as ``INT64``, ``INT96``, ``BYTE_ARRAY``.
    ``logical_type`` is the Parquet logical/converted type as text (e.g. ``Timestamp(isAdjustedToUTC=true,
    timeUnit=microseconds, ...)``, ``LIST``, ``MAP``) or None.
    """

    name: str
    field_id: int | None
    physical_type: str | None = None
    logical_type: str | None = None
    repetition: str | None = None
    children: tuple[ParquetField, ...] = ()

    def child(self, name: str) -> ParquetField | None:
        for c in self.children:
            if c.name == name:
                return c
        return None


@dataclass(frozen=True)
class ParquetFooter:
    """What a Parquet footer says: row count and the schema tree (top-level fields)."""

    num_rows: int
    fields: tuple[ParquetField, ...]
    created_by: str | None = None
    key_value_metadata: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def field(self, name: str) -> ParquetField | None:
        for f in self.fields:
            if f.name == name:
                return f
        return None


@dataclass(frozen=True)
class DataFileFacts:
    """One data file of a table: its AddFile's claims and, when read, its footer.

    ``partition_values`` are the AddFile's partitionValues (keys are physical column names under column
    mapping). ``num_records`` is the ``numRecords`` of the AddFile's stats, None when stats or the field
    are absent. ``footer`` is None when the footer was not read (``footer_error`` says why when reading
    failed).
    """

    path: str
    partition_values: Mapping[str, str | None] = field(default_factory=lambda: MappingProxyType({}))
    num_records: int | None = None
    has_stats: bool = False
    base_row_id: int | None = None
    default_row_commit_version: int | None = None
    has_deletion_vector: bool = False
    footer: ParquetFooter | None = None
    footer_error: str | None = None
