"""Hand-written Delta logs for histories Spark makes slow to reach: upgrades, odd values, foreign trees."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icecompat_writer.errors import CompatViolation
from icecompat_writer.iceberg import write_iceberg_metadata

from ._support import duckdb_rows, metadata_json, normalise, static_table

PLAIN_SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "v", "type": "string", "nullable": True, "metadata": {}},
    ],
}


def _mapped(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema after enabling name-mode column mapping: physical names stay the old names."""
    fields = []
    for i, f in enumerate(schema["fields"], start=1):
        meta = {"delta.columnMapping.id": i, "delta.columnMapping.physicalName": f["name"]}
        fields.append({**f, "metadata": meta})
    return {"type": "struct", "fields": fields}


def _metadata(
    schema: dict[str, Any], conf: dict[str, str], partition_columns: list[str] | None = None
) -> dict:
    return {
        "metaData": {
            "id": "5b0c4d0e-8a52-4ef3-9a3c-5d5d2a4c7f10",
            "format": {"provider": "parquet", "options": {}},
            "schemaString": json.dumps(schema),
            "partitionColumns": partition_columns or [],
            "configuration": conf,
            "createdTime": 1_700_000_000_000,
        }
    }


def _commit(root: Path, version: int, *actions: dict[str, Any]) -> None:
    log = root / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    info = {"commitInfo": {"timestamp": 1_700_000_000_000 + version * 1000, "operation": "TEST"}}
    lines = [json.dumps(a) for a in (info, *actions)]
    (log / f"{version:020d}.json").write_text("\n".join(lines) + "\n")


def _data_file(root: Path, name: str, rows: list[tuple[int, str]], with_ids: bool) -> dict[str, Any]:
    fields = [pa.field("id", pa.int64()), pa.field("v", pa.string())]
    if with_ids:
        fields = [
            f.with_metadata({b"PARQUET:field_id": str(i).encode()}) for i, f in enumerate(fields, start=1)
        ]
    table = pa.table([[r[0] for r in rows], [r[1] for r in rows]], schema=pa.schema(fields))
    path = root / name
    pq.write_table(table, path)
    return {
        "add": {
            "path": name,
            "partitionValues": {},
            "size": path.stat().st_size,
            "modificationTime": 1_700_000_000_000,
            "dataChange": True,
            "stats": json.dumps({"numRecords": len(rows)}),
        }
    }


# delta-spark's own IcebergCompatV2 (no writer profile): held to IcebergCompatV2's catalog rules.
# The commits are dated 2023: Delta's retentions of a century keep their Iceberg history to look at.
COMPAT = {
    "delta.columnMapping.mode": "name",
    "delta.enableIcebergCompatV2": "true",
    "delta.columnMapping.maxColumnId": "2",
    "delta.logRetentionDuration": "interval 36500 days",
    "delta.deletedFileRetentionDuration": "interval 36500 days",
}
PROTOCOL_V7 = {
    "protocol": {
        "minReaderVersion": 2,
        "minWriterVersion": 7,
        "writerFeatures": ["columnMapping", "icebergCompatV2"],
    }
}


def _remove(name: str) -> dict[str, Any]:
    return {"remove": {"path": name, "deletionTimestamp": 1_700_000_000_000, "dataChange": True}}


def test_conversion_starts_where_the_table_became_compliant(tmp_path: Path) -> None:
    root = tmp_path / "upgraded"
    _commit(
        root, 0, {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}, _metadata(PLAIN_SCHEMA, {})
    )
    _commit(root, 1, _data_file(root, "a.parquet", [(1, "a"), (2, "b")], with_ids=False))
    _commit(root, 2, PROTOCOL_V7, _metadata(_mapped(PLAIN_SCHEMA), COMPAT))
    _commit(root, 3, _data_file(root, "b.parquet", [(3, "c")], with_ids=True))

    # a.parquet, written before column mapping, is still live and has no field ids: not compliant.
    with pytest.raises(CompatViolation) as err:
        write_iceberg_metadata(root)
    assert err.value.rules == ["ICV2-PARQUET-FIELD-IDS"]
    assert {v.profile for v in err.value.violations} == {"icebergCompatV2"}
    assert not (root / "metadata").exists()

    # Rewritten with ids (what `icecompat upgrade` does), the table converts from version 2 on.
    _commit(
        root, 4, _remove("a.parquet"), _data_file(root, "a2.parquet", [(1, "a"), (2, "b")], with_ids=True)
    )
    result = write_iceberg_metadata(root)
    assert [s.delta_version for s in result.snapshots] == [2, 3, 4]
    assert [s.added_files for s in result.snapshots] == [1, 1, 1]
    rows = [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}, {"id": 3, "v": "c"}]
    assert normalise(static_table(root).scan().to_arrow()) == rows
    assert duckdb_rows(root) == rows
    # The snapshot of version 3 still lists a.parquet, which has no field ids: pyiceberg resolves it
    # through the name mapping.
    table = static_table(root)
    v3 = table.metadata.snapshots[1]
    names = sorted(
        t.file.file_path.rsplit("/", 1)[-1] for t in table.scan(snapshot_id=v3.snapshot_id).plan_files()
    )
    assert names == ["a.parquet", "b.parquet"]
    assert normalise(table.scan(snapshot_id=v3.snapshot_id).to_arrow()) == rows
    assert json.loads(metadata_json(root)["properties"]["schema.name-mapping.default"]) == [
        {"field-id": 1, "names": ["id"]},
        {"field-id": 2, "names": ["v"]},
    ]


def test_missing_num_records_falls_back_to_the_footer(tmp_path: Path) -> None:
    root = tmp_path / "nostats"
    _commit(root, 0, PROTOCOL_V7, _metadata(_mapped(PLAIN_SCHEMA), COMPAT))
    add = _data_file(root, "a.parquet", [(1, "a"), (2, "b"), (3, "c")], with_ids=True)
    with_stats = json.loads(json.dumps(add))
    del add["add"]["stats"]
    _commit(root, 1, add)
    # A live file without numRecords breaks IcebergCompatV2: the catalog's rule refuses it.
    with pytest.raises(CompatViolation) as err:
        write_iceberg_metadata(root)
    assert err.value.rules == ["ICV2-NUM-RECORDS"]

    # Statistics recomputed (the same file re-added with stats, no data change): the table converts,
    # and the snapshot of version 1, whose entry had no statistic, takes the count from the footer.
    with_stats["add"]["dataChange"] = False
    _commit(root, 2, with_stats)
    result = write_iceberg_metadata(root)
    assert [s.operation for s in result.snapshots] == ["append", "append", "replace"]
    table = static_table(root)
    first_with_file = table.metadata.snapshots[1].snapshot_id
    (task,) = table.scan(snapshot_id=first_with_file).plan_files()
    assert task.file.record_count == 3
    (task,) = table.scan().plan_files()
    assert task.file.record_count == 3


def test_zone_less_timestamp_partition_values_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "tspart"
    schema = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}},
        ],
    }
    _commit(root, 0, PROTOCOL_V7, _metadata(_mapped(schema), COMPAT, ["ts"]))
    _commit(
        root,
        1,
        {
            "add": {
                "path": "x.parquet",
                "partitionValues": {"ts": "2024-01-01 10:00:00"},
                "size": 1,
                "modificationTime": 0,
                "dataChange": True,
                "stats": '{"numRecords":1}',
            }
        },
    )
    with pytest.raises(CompatViolation) as err:
        write_iceberg_metadata(root)
    assert err.value.rules == ["ICEBERG-EMIT-PARTITION-VALUE"]
    assert err.value.violations[0].path == "ts"
    assert not (root / "metadata").exists()  # nothing half-written is left behind


def test_foreign_iceberg_metadata_is_not_adopted(tmp_path: Path) -> None:
    root = tmp_path / "foreign"
    _commit(root, 0, PROTOCOL_V7, _metadata(_mapped(PLAIN_SCHEMA), COMPAT))
    (root / "metadata").mkdir()
    (root / "metadata" / "v1.metadata.json").write_text(json.dumps({"format-version": 2, "properties": {}}))
    with pytest.raises(CompatViolation) as err:
        write_iceberg_metadata(root)
    assert err.value.rules == ["ICEBERG-EMIT-EXISTING-METADATA"]
