"""Delta deletion vectors as Iceberg v2 position-delete files, without Spark.

The DV decoder is held to pyroaring's own serialization (array, bitmap and run containers, several
32-bit buckets). A hand-written v2 table then takes inline Delta DVs through the emitter's delete path
and its producers, as delta-spark's DELETE commits them (``remove`` + ``add`` of the same file): the
files are Parquet with the spec's schema and field ids, scoped to their data file, read back by
pyiceberg and DuckDB; a DV that stays is not written again; a replaced DV or a removed data file takes
its delete file out of the delete manifests. The table property ``icecompat.iceberg.format-version``
chooses the format, and disagreeing with an existing tree is refused naming the fix.
"""

from __future__ import annotations

import json
import random
import struct
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyroaring import BitMap

from icecompat_writer.deltalog.deletion_vectors import DV_MAGIC, frame_inline, z85_encode
from icecompat_writer.errors import CompatViolation
from icecompat_writer.iceberg import write_iceberg_metadata
from icecompat_writer.iceberg.deletes import deletion_vector_files
from icecompat_writer.iceberg.posdeletes import (
    FILE_PATH_FIELD_ID,
    POS_FIELD_ID,
    deleted_positions,
)
from icecompat_writer.iceberg.producers import producer_for

from . import test_synthetic as ts
from ._support import duckdb_rows, metadata_json, read_avro
from .test_producers import _commit, _ids, _open, _table

SEED = 20261128


def _portable(buckets: dict[int, list[int]]) -> bytes:
    """Delta's portable 64-bit roaring bitmap (bucket count, then key + 32-bit roaring bitmap each),
    with its magic in front: the bytes an inline DV holds."""
    out = struct.pack("<I", DV_MAGIC) + struct.pack("<Q", len(buckets))
    for key in sorted(buckets):
        bm = BitMap(buckets[key])
        bm.run_optimize()
        out += struct.pack("<I", key) + bm.serialize()
    return out


@pytest.mark.parametrize(
    "buckets",
    [
        {0: [0, 3, 65_535, 65_536, 200_000]},  # array containers
        {0: list(range(0, 140_000, 2))},  # bitmap containers (more than 4096 values each)
        {0: list(range(10, 70_000))},  # run containers
        {0: [7], 1: [0, 1, 2], 5: list(range(100, 5000))},  # several buckets, positions >= 2**32
        {0: sorted(random.Random(SEED).sample(range(1_000_000), 20_000))},  # a mix, seeded
        {},
    ],
    ids=["array", "bitmap", "run", "buckets", "mixed", "empty"],
)
def test_dv_positions_are_pyroaring_s(buckets: dict[int, list[int]]) -> None:
    expected = sorted((key << 32) | v for key, values in buckets.items() for v in set(values))
    assert deleted_positions(frame_inline(_portable(buckets))) == expected


def _inline(positions: list[int]) -> dict[str, Any]:
    data = _portable({0: positions})
    return {
        "storageType": "i",
        "pathOrInlineDv": z85_encode(data),
        "sizeInBytes": len(data),
        "cardinality": len(positions),
    }


def _readd(root: Path, name: str, positions: list[int] | None, data_change: bool = True) -> dict[str, Any]:
    """The ``add`` of the existing data file ``name`` with a DV of ``positions``."""
    add = ts._data_file(root, name, [(1, "a"), (2, "b"), (3, "c"), (4, "d")], True)["add"]
    add["dataChange"] = data_change
    if positions is not None:
        add["deletionVector"] = _inline(positions)
    return add


def _delete_entries(root: Path) -> list[dict[str, Any]]:
    """The live delete-file entries of the current snapshot (``data_file`` records)."""
    meta = metadata_json(root)
    snap = next(s for s in meta["snapshots"] if s["snapshot-id"] == meta["current-snapshot-id"])
    out = []
    for m in read_avro(snap["manifest-list"])[0]:
        if m["content"] == 1:
            out += [e["data_file"] for e in read_avro(m["manifest_path"])[0] if e["status"] != 2]
    return out


def _convert_dv(root: Path, version: int, add: dict[str, Any]) -> str:
    """One delta-spark-style commit (``remove`` + ``add`` of the same data file with its DV) through the
    emitter's delete path and the producer for its kind, committed as the next metadata file; the
    snapshot's operation."""
    table, previous = _open(root)
    files = table.new_files([add], version)
    deletes = deletion_vector_files(table, files, version, io=table.io)
    kind = producer_for(True, True, bool(add["dataChange"]), deletes=bool(deletes))
    producer = kind(
        table, delta_version=version, timestamp_ms=1_700_000_000_000 + version, delta_operation="DELETE"
    )
    producer.remove_files([f.path for f in files]).add_files(files).add_position_deletes(deletes)
    return _commit(table, previous, producer).info.operation


def test_dvs_become_scoped_position_delete_files_written_once(tmp_path: Path) -> None:
    _table(tmp_path)  # v2: a.parquet ids 1-4, b.parquet id 5
    a_uri = f"file://{tmp_path}/a.parquet"
    parquet_files = lambda: sorted((tmp_path / "metadata").glob("*.parquet"))  # noqa: E731

    assert _convert_dv(tmp_path, 1, _readd(tmp_path, "a.parquet", [2, 0])) == "overwrite"
    assert _ids(tmp_path) == [2, 4, 5]
    assert sorted(r["id"] for r in duckdb_rows(tmp_path)) == [2, 4, 5]
    (entry,) = _delete_entries(tmp_path)
    (written,) = parquet_files()
    assert entry["file_path"] == f"file://{written}" and entry["file_format"] == "PARQUET"
    assert (entry["content"], entry["record_count"], entry["referenced_data_file"]) == (1, 2, a_uri)
    bounds = {kv["key"]: kv["value"] for kv in entry["lower_bounds"]}
    assert bounds == {FILE_PATH_FIELD_ID: a_uri.encode(), POS_FIELD_ID: struct.pack("<q", 0)}
    assert {kv["key"]: kv["value"] for kv in entry["upper_bounds"]}[FILE_PATH_FIELD_ID] == a_uri.encode()
    rows = pq.read_table(written)
    assert rows.to_pylist() == [{"file_path": a_uri, "pos": 0}, {"file_path": a_uri, "pos": 2}]
    assert [(f.name, f.nullable, f.metadata) for f in rows.schema] == [
        ("file_path", False, {b"PARQUET:field_id": str(FILE_PATH_FIELD_ID).encode()}),
        ("pos", False, {b"PARQUET:field_id": str(POS_FIELD_ID).encode()}),
    ]
    seq = metadata_json(tmp_path)["snapshots"][-1]["sequence-number"]

    # The same file re-added with the DV it has (new statistics): the Parquet file is not written again,
    # its entry comes back under the new snapshot, so it still applies to the re-added data file.
    assert _convert_dv(tmp_path, 2, _readd(tmp_path, "a.parquet", [0, 2], data_change=False)) == "replace"
    assert _ids(tmp_path) == [2, 4, 5]
    assert parquet_files() == [written]
    (again,) = _delete_entries(tmp_path)
    assert again["file_path"] == entry["file_path"]
    assert metadata_json(tmp_path)["snapshots"][-1]["sequence-number"] > seq

    # A new DV replaces it: one live delete file, the old one out of the delete manifests.
    _convert_dv(tmp_path, 3, _readd(tmp_path, "a.parquet", [0, 2, 3]))
    assert _ids(tmp_path) == [2, 5]
    assert sorted(r["id"] for r in duckdb_rows(tmp_path)) == [2, 5]
    (replaced,) = _delete_entries(tmp_path)
    assert replaced["file_path"] != entry["file_path"] and replaced["record_count"] == 3
    summary = metadata_json(tmp_path)["snapshots"][-1]["summary"]
    assert (summary["total-delete-files"], summary["total-position-deletes"]) == ("1", "3")
    assert summary["removed-position-delete-files"] == "1"

    # The data file re-added without a DV (OPTIMIZE drops DVs by rewriting): no delete file stays.
    _convert_dv(tmp_path, 4, _readd(tmp_path, "a.parquet", None, data_change=False))
    assert _ids(tmp_path) == [1, 2, 3, 4, 5]
    assert _delete_entries(tmp_path) == []
    assert metadata_json(tmp_path)["snapshots"][-1]["summary"]["total-delete-files"] == "0"


def _compat_table(root: Path, conf: dict[str, str]) -> None:
    root.mkdir(exist_ok=True)
    ts._commit(
        root,
        0,
        ts.PROTOCOL_V7,
        ts._metadata(ts._mapped(ts.PLAIN_SCHEMA), {**ts.COMPAT, **conf}),
        ts._data_file(root, "a.parquet", [(1, "a")], True),
    )


def _set_property(root: Path, version: int, conf: dict[str, str]) -> None:
    ts._commit(root, version, ts._metadata(ts._mapped(ts.PLAIN_SCHEMA), {**ts.COMPAT, **conf}))


def test_the_table_property_chooses_the_format(tmp_path: Path) -> None:
    # v3 asked for by the property on a table without row tracking: the emitter's refusal, as for the flag
    root = tmp_path / "t"
    _compat_table(root, {"icecompat.iceberg.format-version": "3"})
    with pytest.raises(CompatViolation) as err:
        write_iceberg_metadata(root)
    assert err.value.rules == ["ICEBERG-EMIT-FORMAT-VERSION"]
    assert not (root / "metadata").exists()
    assert write_iceberg_metadata(root, format_version=2).format_version == 2  # the argument wins

    # a value that is no format: refused naming the property and the values it takes
    other = tmp_path / "bad"
    _compat_table(other, {"icecompat.iceberg.format-version": "4"})
    with pytest.raises(CompatViolation) as err:
        write_iceberg_metadata(other)
    assert err.value.rules == ["ICEBERG-EMIT-FORMAT-VERSION"]
    assert "`icecompat.iceberg.format-version` is `4`" in str(err.value)
    assert "to `2` or `3`" in str(err.value)


def test_a_property_that_disagrees_with_the_existing_tree_is_refused_naming_the_fix(tmp_path: Path) -> None:
    _compat_table(tmp_path, {"icecompat.iceberg.format-version": "2"})
    assert write_iceberg_metadata(tmp_path).format_version == 2
    before = sorted(p.name for p in (tmp_path / "metadata").iterdir())
    _set_property(tmp_path, 1, {"icecompat.iceberg.format-version": "3", "delta.enableRowTracking": "true"})
    with pytest.raises(CompatViolation) as err:
        write_iceberg_metadata(tmp_path)
    assert err.value.rules == ["ICEBERG-EMIT-FORMAT-VERSION"]
    text = str(err.value)
    assert "asks for format v3 and the existing Iceberg metadata is format v2" in text
    assert "set `icecompat.iceberg.format-version` to `2` (or unset it), or delete metadata/" in text
    assert sorted(p.name for p in (tmp_path / "metadata").iterdir()) == before

    # the fix: the property back at the tree's format
    _set_property(tmp_path, 2, {"icecompat.iceberg.format-version": "2"})
    result = write_iceberg_metadata(tmp_path)
    assert (result.format_version, result.delta_version) == (2, 2)
    assert json.loads(result.metadata_path.read_text())["format-version"] == 2
