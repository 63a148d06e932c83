"""Typed views of a live ``add`` action and its deletion vector descriptor.

Like Protocol and Metadata in actions.py, these stay close to the JSON form (PROTOCOL.md "Add File and
Remove File", "Deletion Vectors"): ``from_json`` takes the action's object as written in a commit (a
checkpoint row converted to the same shape reads the same way), ``to_json`` gives it back. Fields are
snake_case; ``stats`` is kept as the raw string the log holds, and only ``numRecords`` is parsed out,
because that is all the rules need and parsing full stats for 100,000 files would dominate replay.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from icecompat_writer.schema import JsonDict, JsonObject

__all__ = ["AddFile", "DeletionVectorDescriptor", "dv_unique_id", "parse_num_records"]

_EMPTY: Mapping[str, Any] = MappingProxyType({})
_NUM_RECORDS_PREFIX = re.compile(r'\{\s*"numRecords"\s*:\s*(-?\d+)\s*[,}]')


def dv_unique_id(dv: JsonObject | None) -> str | None:
    """The derived ``uniqueId`` of a deletion vector in JSON form (None: no DV).

    ``<storageType><pathOrInlineDv>`` plus ``@<offset>`` when an offset is present; this is the second
    half of a logical file's key during reconciliation.
    """
    if dv is None:
        return None
    offset = dv.get("offset")
    base = f"{dv.get('storageType', '')}{dv.get('pathOrInlineDv', '')}"
    return base if offset is None else f"{base}@{offset}"


def parse_num_records(stats: str | None) -> tuple[int | None, bool]:
    """``(numRecords, stats_parse_ok)`` of a raw stats string.

    ``stats_parse_ok`` is False only when a non-empty stats string is not a JSON object, which the
    snapshot reports as a finding; a missing string or a missing field is simply "unknown".
    """
    if not stats:
        return None, True
    # Writers put numRecords first; reading it off the prefix saves a full JSON parse per file.
    m = _NUM_RECORDS_PREFIX.match(stats)
    if m is not None:
        return int(m.group(1)), True
    try:
        parsed = json.loads(stats)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the decoder goes
        return None, False
    if not isinstance(parsed, dict):
        return None, False
    value = parsed.get("numRecords")
    if isinstance(value, bool) or not isinstance(value, int):
        return None, True
    return value, True


@dataclass(frozen=True, slots=True)
class DeletionVectorDescriptor:
    """A ``deletionVector`` struct: where the DV lives (``u`` relative, ``p`` absolute, ``i`` inline)."""

    storage_type: str
    path_or_inline_dv: str
    size_in_bytes: int
    cardinality: int
    offset: int | None = None
    max_row_index: int | None = None

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> DeletionVectorDescriptor:
        offset = obj.get("offset")
        max_row_index = obj.get("maxRowIndex")
        return cls(
            storage_type=str(obj.get("storageType", "")),
            path_or_inline_dv=str(obj.get("pathOrInlineDv", "")),
            size_in_bytes=int(obj.get("sizeInBytes") or 0),
            cardinality=int(obj.get("cardinality") or 0),
            offset=None if offset is None else int(offset),
            max_row_index=None if max_row_index is None else int(max_row_index),
        )

    def to_json(self) -> JsonDict:
        out: JsonDict = {
            "storageType": self.storage_type,
            "pathOrInlineDv": self.path_or_inline_dv,
        }
        if self.offset is not None:
            out["offset"] = self.offset
        out["sizeInBytes"] = self.size_in_bytes
        out["cardinality"] = self.cardinality
        if self.max_row_index is not None:
            out["maxRowIndex"] = self.max_row_index
        return out

    @property
    def unique_id(self) -> str:
        """PROTOCOL.md "Derived Fields": identifies this DV for the logical file's key."""
        base = f"{self.storage_type}{self.path_or_inline_dv}"
        return base if self.offset is None else f"{base}@{self.offset}"


@dataclass(frozen=True, slots=True)
class AddFile:
    """A live ``add`` action after reconciliation.

    ``path`` is exactly as written in the log (URI-encoded, relative or absolute): use
    :func:`~icecompat_writer.deltalog.paths.resolve_data_path` to get a local file. ``num_records`` is
    ``stats.numRecords`` (None when stats or the field are absent or unparseable).
    """

    path: str
    partition_values: Mapping[str, str | None] = field(default_factory=lambda: _EMPTY)
    size: int = 0
    modification_time: int = 0
    data_change: bool = True
    stats: str | None = None
    num_records: int | None = None
    tags: Mapping[str, str | None] | None = None
    deletion_vector: DeletionVectorDescriptor | None = None
    base_row_id: int | None = None
    default_row_commit_version: int | None = None
    clustering_provider: str | None = None

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> AddFile:
        """Build from the ``add`` object (the value under the ``add`` key, not the whole line)."""
        stats = obj.get("stats")
        num_records, _ = parse_num_records(stats)
        dv = obj.get("deletionVector")
        tags = obj.get("tags")
        pv = obj.get("partitionValues")
        base_row_id = obj.get("baseRowId")
        default_rcv = obj.get("defaultRowCommitVersion")
        return cls(
            path=obj["path"],
            partition_values=MappingProxyType(dict(pv)) if pv else _EMPTY,
            size=int(obj.get("size") or 0),
            modification_time=int(obj.get("modificationTime") or 0),
            data_change=bool(obj.get("dataChange", True)),
            stats=stats,
            num_records=num_records,
            tags=None if tags is None else MappingProxyType(dict(tags)),
            deletion_vector=None if dv is None else DeletionVectorDescriptor.from_json(dv),
            base_row_id=None if base_row_id is None else int(base_row_id),
            default_row_commit_version=None if default_rcv is None else int(default_rcv),
            clustering_provider=obj.get("clusteringProvider"),
        )

    def to_json(self) -> JsonDict:
        out: JsonDict = {
            "path": self.path,
            "partitionValues": dict(self.partition_values),
            "size": self.size,
            "modificationTime": self.modification_time,
            "dataChange": self.data_change,
        }
        if self.stats is not None:
            out["stats"] = self.stats
        if self.tags is not None:
            out["tags"] = dict(self.tags)
        if self.deletion_vector is not None:
            out["deletionVector"] = self.deletion_vector.to_json()
        if self.base_row_id is not None:
            out["baseRowId"] = self.base_row_id
        if self.default_row_commit_version is not None:
            out["defaultRowCommitVersion"] = self.default_row_commit_version
        if self.clustering_provider is not None:
            out["clusteringProvider"] = self.clustering_provider
        return out

    @property
    def dv_unique_id(self) -> str | None:
        return None if self.deletion_vector is None else self.deletion_vector.unique_id

    @property
    def key(self) -> tuple[str, str | None]:
        """The logical file's primary key: ``(path, deletionVector.uniqueId)``."""
        return (self.path, self.dv_unique_id)
