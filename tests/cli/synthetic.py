"""Small compliant tables written without Spark: a Delta log plus real Parquet files with field ids.

Shared by the checker tests (tests/checking) and the CLI tests: they need tables whose every byte is
known, including hostile and damaged ones that no Spark writer would produce. The protocol and metadata
come from ``plan`` (the planner every compat write uses), the Parquet files are written with pyarrow
from the planned schema, so a table built here is compliant by construction and any change to it is
exactly the damage a test applies.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from icecompat_writer.deltalog.actions import Metadata
from icecompat_writer.planning import plan
from tests.deltalog import logbuilder as lb

FID = b"PARQUET:field_id"

LOGICAL_SCHEMA: dict[str, Any] = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "name", "type": "string", "nullable": True, "metadata": {}},
        {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}},
        {
            "name": "s",
            "type": {
                "type": "struct",
                "fields": [{"name": "x", "type": "integer", "nullable": True, "metadata": {}}],
            },
            "nullable": True,
            "metadata": {},
        },
        {
            "name": "l",
            "type": {"type": "array", "elementType": "integer", "containsNull": True},
            "nullable": True,
            "metadata": {},
        },
        {
            "name": "m",
            "type": {"type": "map", "keyType": "string", "valueType": "long", "valueContainsNull": True},
            "nullable": True,
            "metadata": {},
        },
    ],
}

_PRIMITIVES: dict[str, pa.DataType] = {
    "long": pa.int64(),
    "integer": pa.int32(),
    "string": pa.string(),
    "timestamp": pa.timestamp("us", tz="UTC"),
}


@dataclass
class SyntheticTable:
    """What was built: the root, the planned protocol/metadata and each data file's log path."""

    root: Path
    protocol: dict[str, Any]
    metadata: dict[str, Any]
    files: list[str]
    rows_per_file: int

    def data_path(self, log_path: str) -> Path:
        return self.root / log_path


def _fid(value: int | None) -> dict[bytes, bytes] | None:
    return None if value is None else {FID: str(value).encode()}


def _arrow_type(t: Any, key: str, nested: Mapping[str, int]) -> pa.DataType:
    """The Arrow type of a Delta type; ``key`` is the physical path nested ids are keyed by."""
    if isinstance(t, str):
        return _PRIMITIVES[t]
    if t["type"] == "struct":
        return pa.struct([_arrow_field(f) for f in t["fields"]])
    if t["type"] == "array":
        element = pa.field(
            "element",
            _arrow_type(t["elementType"], key + ".element", nested),
            metadata=_fid(nested.get(key + ".element")),
        )
        return pa.list_(element)
    if t["type"] == "map":
        k = pa.field(
            "key",
            _arrow_type(t["keyType"], key + ".key", nested),
            nullable=False,
            metadata=_fid(nested.get(key + ".key")),
        )
        v = pa.field(
            "value",
            _arrow_type(t["valueType"], key + ".value", nested),
            metadata=_fid(nested.get(key + ".value")),
        )
        return pa.map_(k, v)
    raise ValueError(f"unsupported type {t!r}")


def _arrow_field(f: Mapping[str, Any]) -> pa.Field:
    md = f["metadata"]
    physical = md["delta.columnMapping.physicalName"]
    nested = md.get("delta.columnMapping.nested.ids") or {}
    return pa.field(
        physical,
        _arrow_type(f["type"], physical, nested),
        metadata=_fid(int(md["delta.columnMapping.id"])),
    )


def arrow_schema(metadata: Mapping[str, Any]) -> pa.Schema:
    """The Parquet schema a compliant writer uses: physical names, every node with its field id."""
    return pa.schema([_arrow_field(f) for f in json.loads(metadata["schemaString"])["fields"]])


def rows(start: int, n: int) -> list[dict[str, Any]]:
    """Rows in the planned schema (keyed by logical name; see :func:`write_data_file`)."""
    return [
        {"id": i, "name": f"n{i}", "ts": 1_700_000_000_000_000 + i, "s": {"x": i}, "l": [i], "m": [("k", i)]}
        for i in range(start, start + n)
    ]


def write_data_file(path: Path, metadata: Mapping[str, Any], start: int, n: int) -> int:
    """Write ``n`` rows as a compliant Parquet file; returns its size in bytes."""
    schema = arrow_schema(metadata)
    logical = [f["name"] for f in json.loads(metadata["schemaString"])["fields"]]
    records = rows(start, n)
    data = {phys: [r[name] for r in records] for phys, name in zip(schema.names, logical, strict=True)}
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pydict(data, schema=schema), path)
    return path.stat().st_size


def stats(num_records: int) -> str:
    return json.dumps({"numRecords": num_records, "minValues": {}, "maxValues": {}, "nullCount": {}})


def build_table(
    root: Path,
    profile: str = "v3",
    *,
    files: int = 2,
    rows_per_file: int = 3,
    extra_adds: Sequence[Mapping[str, Any]] = (),
    properties: Mapping[str, str] | None = None,
) -> SyntheticTable:
    """A compliant table of ``profile`` in one commit: ``files`` data files plus ``extra_adds``.

    ``extra_adds`` are raw ``{"add": ...}`` actions appended to the same commit (hostile paths,
    files that do not exist, ...).
    """
    logical = Metadata(
        schema_string=json.dumps(LOGICAL_SCHEMA, separators=(",", ":")),
        configuration=dict(properties or {}),
        id="11111111-2222-3333-4444-555555555555",
        created_time=1_700_000_000_000,
    )
    planned = plan(profile, logical)
    protocol = planned.protocol.to_json()
    metadata = planned.metadata.to_json()
    adds: list[dict[str, Any]] = []
    paths: list[str] = []
    for i in range(files):
        name = f"part-{i:05d}-synthetic.c000.snappy.parquet"
        size = write_data_file(root / name, metadata, i * rows_per_file, rows_per_file)
        add = lb.add(name, stats=stats(rows_per_file), size=size)
        add["add"]["baseRowId"] = i * rows_per_file
        add["add"]["defaultRowCommitVersion"] = 0
        adds.append(add)
        paths.append(name)
    b = lb.LogBuilder(root)
    b.commit(
        0,
        [
            lb.commit_info("CREATE TABLE AS SELECT"),
            {"protocol": protocol},
            {"metaData": metadata},
            *adds,
            *extra_adds,
        ],
    )
    return SyntheticTable(root, protocol, metadata, paths, rows_per_file)
