"""Writing synthetic Delta logs for tests and the replay benchmark.

Spark writes only healthy logs of the shapes it prefers; the reader must also handle what other
writers produce and what damage leaves behind. This builder writes commits, compaction files, classic,
multi-part and V2 checkpoints (JSON or Parquet, with sidecars) with the checkpoint schema of
PROTOCOL.md, so each case can be set up in a few lines.
"""

from __future__ import annotations

import json
import uuid as uuid_mod
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

STRING_MAP = pa.map_(pa.string(), pa.string())
DV_TYPE = pa.struct(
    [
        ("storageType", pa.string()),
        ("pathOrInlineDv", pa.string()),
        ("offset", pa.int32()),
        ("sizeInBytes", pa.int32()),
        ("cardinality", pa.int64()),
    ]
)
ADD_TYPE = pa.struct(
    [
        ("path", pa.string()),
        ("partitionValues", STRING_MAP),
        ("size", pa.int64()),
        ("modificationTime", pa.int64()),
        ("dataChange", pa.bool_()),
        ("stats", pa.string()),
        ("tags", STRING_MAP),
        ("deletionVector", DV_TYPE),
        ("baseRowId", pa.int64()),
        ("defaultRowCommitVersion", pa.int64()),
        ("clusteringProvider", pa.string()),
    ]
)
REMOVE_TYPE = pa.struct(
    [
        ("path", pa.string()),
        ("deletionTimestamp", pa.int64()),
        ("dataChange", pa.bool_()),
        ("deletionVector", DV_TYPE),
    ]
)
METADATA_TYPE = pa.struct(
    [
        ("id", pa.string()),
        ("name", pa.string()),
        ("description", pa.string()),
        ("format", pa.struct([("provider", pa.string()), ("options", STRING_MAP)])),
        ("schemaString", pa.string()),
        ("partitionColumns", pa.list_(pa.string())),
        ("configuration", STRING_MAP),
        ("createdTime", pa.int64()),
    ]
)
PROTOCOL_TYPE = pa.struct(
    [
        ("minReaderVersion", pa.int32()),
        ("minWriterVersion", pa.int32()),
        ("readerFeatures", pa.list_(pa.string())),
        ("writerFeatures", pa.list_(pa.string())),
    ]
)
TXN_TYPE = pa.struct([("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())])
DOMAIN_TYPE = pa.struct([("domain", pa.string()), ("configuration", pa.string()), ("removed", pa.bool_())])
CHECKPOINT_METADATA_TYPE = pa.struct([("version", pa.int64()), ("tags", STRING_MAP)])
SIDECAR_TYPE = pa.struct(
    [
        ("path", pa.string()),
        ("sizeInBytes", pa.int64()),
        ("modificationTime", pa.int64()),
        ("tags", STRING_MAP),
    ]
)
V1_CHECKPOINT_SCHEMA = pa.schema(
    [
        ("txn", TXN_TYPE),
        ("add", ADD_TYPE),
        ("remove", REMOVE_TYPE),
        ("metaData", METADATA_TYPE),
        ("protocol", PROTOCOL_TYPE),
        ("domainMetadata", DOMAIN_TYPE),
    ]
)
V2_CHECKPOINT_SCHEMA = pa.schema(
    [
        *V1_CHECKPOINT_SCHEMA,
        ("checkpointMetadata", CHECKPOINT_METADATA_TYPE),
        ("sidecar", SIDECAR_TYPE),
    ]
)
SIDECAR_SCHEMA = pa.schema([("add", ADD_TYPE), ("remove", REMOVE_TYPE)])

SCHEMA_STRING = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "p", "type": "string", "nullable": True, "metadata": {}},
        ],
    },
    separators=(",", ":"),
)


def protocol(
    reader: int = 1,
    writer: int = 2,
    reader_features: Sequence[str] | None = None,
    writer_features: Sequence[str] | None = None,
) -> dict[str, Any]:
    p: dict[str, Any] = {"minReaderVersion": reader, "minWriterVersion": writer}
    if reader_features is not None:
        p["readerFeatures"] = list(reader_features)
    if writer_features is not None:
        p["writerFeatures"] = list(writer_features)
    return {"protocol": p}


def metadata(
    configuration: Mapping[str, str] | None = None,
    partition_columns: Sequence[str] = (),
    schema_string: str = SCHEMA_STRING,
    table_id: str = "00000000-0000-0000-0000-000000000001",
) -> dict[str, Any]:
    return {
        "metaData": {
            "id": table_id,
            "format": {"provider": "parquet", "options": {}},
            "schemaString": schema_string,
            "partitionColumns": list(partition_columns),
            "configuration": dict(configuration or {}),
            "createdTime": 1_700_000_000_000,
        }
    }


def dv(
    path_or_inline: str = "ab^-aqEH.-t@S}K{vb[*k^", offset: int | None = 1, cardinality: int = 1
) -> dict[str, Any]:
    d: dict[str, Any] = {"storageType": "u", "pathOrInlineDv": path_or_inline}
    if offset is not None:
        d["offset"] = offset
    d["sizeInBytes"] = 34
    d["cardinality"] = cardinality
    return d


def add(
    path: str,
    *,
    num_records: int | None = 10,
    partition_values: Mapping[str, str | None] | None = None,
    deletion_vector: Mapping[str, Any] | None = None,
    size: int = 100,
    base_row_id: int | None = None,
    default_row_commit_version: int | None = None,
    tags: Mapping[str, str] | None = None,
    stats: str | None = None,
    data_change: bool = True,
    clustering_provider: str | None = None,
) -> dict[str, Any]:
    a: dict[str, Any] = {
        "path": path,
        "partitionValues": dict(partition_values or {}),
        "size": size,
        "modificationTime": 1_700_000_000_000,
        "dataChange": data_change,
    }
    if stats is not None:
        a["stats"] = stats
    elif num_records is not None:
        a["stats"] = json.dumps({"numRecords": num_records, "minValues": {"id": 0}, "maxValues": {"id": 9}})
    if tags is not None:
        a["tags"] = dict(tags)
    if deletion_vector is not None:
        a["deletionVector"] = dict(deletion_vector)
    if base_row_id is not None:
        a["baseRowId"] = base_row_id
    if default_row_commit_version is not None:
        a["defaultRowCommitVersion"] = default_row_commit_version
    if clustering_provider is not None:
        a["clusteringProvider"] = clustering_provider
    return {"add": a}


def remove(path: str, *, deletion_vector: Mapping[str, Any] | None = None) -> dict[str, Any]:
    r: dict[str, Any] = {"path": path, "deletionTimestamp": 1_700_000_000_001, "dataChange": True}
    if deletion_vector is not None:
        r["deletionVector"] = dict(deletion_vector)
    return {"remove": r}


def txn(app_id: str, version: int) -> dict[str, Any]:
    return {"txn": {"appId": app_id, "version": version, "lastUpdated": 1_700_000_000_000}}


def domain(name: str, configuration: str = "{}", removed: bool = False) -> dict[str, Any]:
    return {"domainMetadata": {"domain": name, "configuration": configuration, "removed": removed}}


def commit_info(operation: str = "WRITE", ict: int | None = None) -> dict[str, Any]:
    ci: dict[str, Any] = {"timestamp": 1_700_000_000_000, "operation": operation}
    if ict is not None:
        ci["inCommitTimestamp"] = ict
    return {"commitInfo": ci}


def _line(action: Mapping[str, Any]) -> bytes:
    return json.dumps(action, separators=(",", ":")).encode() + b"\n"


class LogBuilder:
    """Writes files into ``<root>/_delta_log``; every method returns the path it wrote."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.log = root / "_delta_log"
        self.log.mkdir(parents=True, exist_ok=True)

    def raw(self, name: str, data: bytes) -> Path:
        path = self.log / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return path

    def commit(self, version: int, actions: Iterable[Mapping[str, Any]]) -> Path:
        return self.raw(f"{version:020d}.json", b"".join(_line(a) for a in actions))

    def compaction(self, start: int, end: int, actions: Iterable[Mapping[str, Any]]) -> Path:
        return self.raw(f"{start:020d}.{end:020d}.compacted.json", b"".join(_line(a) for a in actions))

    def last_checkpoint(self, obj: Mapping[str, Any]) -> Path:
        return self.raw("_last_checkpoint", json.dumps(obj).encode())

    def classic_checkpoint(self, version: int, actions: Sequence[Mapping[str, Any]]) -> Path:
        path = self.log / f"{version:020d}.checkpoint.parquet"
        write_checkpoint_parquet(path, actions, V1_CHECKPOINT_SCHEMA)
        return path

    def multipart_checkpoint(self, version: int, parts: Sequence[Sequence[Mapping[str, Any]]]) -> list[Path]:
        out = []
        for i, actions in enumerate(parts, start=1):
            path = self.log / f"{version:020d}.checkpoint.{i:010d}.{len(parts):010d}.parquet"
            write_checkpoint_parquet(path, actions, V1_CHECKPOINT_SCHEMA)
            out.append(path)
        return out

    def v2_checkpoint(
        self,
        version: int,
        non_file: Sequence[Mapping[str, Any]],
        file_actions: Sequence[Mapping[str, Any]],
        *,
        file_format: str = "json",
        sidecars: int = 0,
        classic_name: bool = False,
        checkpoint_uuid: str | None = None,
    ) -> tuple[Path, list[Path]]:
        """A V2-spec checkpoint; with ``sidecars`` > 0 the file actions go into that many sidecars."""
        sidecar_paths: list[Path] = []
        top: list[Mapping[str, Any]] = [{"checkpointMetadata": {"version": version, "tags": {}}}, *non_file]
        if sidecars:
            chunk = max(1, -(-len(file_actions) // sidecars))
            for i in range(sidecars):
                part = file_actions[i * chunk : (i + 1) * chunk]
                name = f"{uuid_mod.uuid4()}.parquet"
                path = self.log / "_sidecars" / name
                path.parent.mkdir(parents=True, exist_ok=True)
                write_checkpoint_parquet(path, part, SIDECAR_SCHEMA)
                sidecar_paths.append(path)
                top.append(
                    {
                        "sidecar": {
                            "path": name,
                            "sizeInBytes": path.stat().st_size,
                            "modificationTime": 1_700_000_000_000,
                        }
                    }
                )
        else:
            top.extend(file_actions)
        if classic_name:
            name = f"{version:020d}.checkpoint.parquet"
            file_format = "parquet"
        else:
            name = f"{version:020d}.checkpoint.{checkpoint_uuid or uuid_mod.uuid4()}.{file_format}"
        path = self.log / name
        if file_format == "json":
            path.write_bytes(b"".join(_line(a) for a in top))
        else:
            write_checkpoint_parquet(path, top, V2_CHECKPOINT_SCHEMA)
        return path, sidecar_paths


def write_checkpoint_parquet(
    path: Path, actions: Sequence[Mapping[str, Any]], schema: pa.Schema, row_group_size: int | None = None
) -> None:
    """Write actions (``{"add": {...}}`` ...) as checkpoint rows: one action per row, others null."""
    names = schema.names
    columns: dict[str, list[Any]] = {n: [] for n in names}
    for action in actions:
        (name, value), *rest = action.items()
        assert not rest, "one action per row"
        for n in names:
            columns[n].append(value if n == name else None)
    table = pa.Table.from_pydict(columns, schema=schema)
    pq.write_table(table, path, row_group_size=row_group_size)
