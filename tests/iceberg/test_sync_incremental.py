"""A sync reads what the commit adds, not the table; and it catches up after log clean-up.

What a run opens is seen where it happens, at the operating system: an audit hook records every
``open`` under the table's ``_delta_log``, so a run that replayed the log (checkpoint, old commits)
would show it.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from icecompat_writer.deltalog import read_snapshot
from icecompat_writer.errors import CompatViolation, IcebergSyncWarning
from icecompat_writer.iceberg import write_iceberg_metadata
from icecompat_writer.iceberg.emitter import PROP_DELTA_COMMIT, PROP_DELTA_STATE
from icecompat_writer.iceberg.verification import PROP_VERIFIED_FILES
from icecompat_writer.storage import io_for
from tests.cli.synthetic import build_table, stats, write_data_file
from tests.deltalog import logbuilder as lb

from ._support import latest_metadata, metadata_json, static_table

ROWS = 3
_opened: list[str] | None = None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and _opened is not None and args and isinstance(args[0], (str, bytes, Path)):
        name = args[0].decode() if isinstance(args[0], bytes) else str(args[0])
        if "/_delta_log/" in name:
            _opened.append(Path(name).name)


sys.addaudithook(_audit)


@contextmanager
def opened_log_files() -> Iterator[list[str]]:
    """Names of the ``_delta_log`` files opened inside the block."""
    global _opened
    _opened = []
    try:
        yield _opened
    finally:
        _opened = None


def _append(root: Path, metadata: dict[str, Any], version: int, first: int, n: int, *extra: Any) -> list[str]:
    """Commit ``version`` adding ``n`` new files (row ids from ``first * ROWS``); returns their names."""
    adds, names = [], []
    for i in range(first, first + n):
        name = f"part-{i:05d}-v{version}.c000.snappy.parquet"
        size = write_data_file(root / name, metadata, i * ROWS, ROWS)
        adds.append(
            lb.add(
                name, stats=stats(ROWS), size=size, base_row_id=i * ROWS, default_row_commit_version=version
            )
        )
        names.append(name)
    lb.LogBuilder(root).commit(version, [lb.commit_info("WRITE"), *extra, *adds])
    return names


def _checkpoint(root: Path, version: int) -> None:
    """A classic checkpoint at ``version`` (what Delta writes before its log clean-up)."""
    snap = read_snapshot(root, version, io=io_for(root))
    actions = [
        {"protocol": snap.protocol.to_json()},
        {"metaData": snap.metadata.to_json()},
        *({"add": a.to_json()} for a in snap.add_files),
    ]
    lb.LogBuilder(root).classic_checkpoint(version, actions)
    lb.LogBuilder(root).last_checkpoint({"version": version, "size": len(actions)})


def _commit_name(version: int) -> str:
    return f"{version:020d}.json"


def _delta_ids(root: Path) -> list[int]:
    """The ``id`` of every row of the Delta table (its live files' first column, the ids' physical one)."""
    ids: list[int] = []
    for add in read_snapshot(root, io=io_for(root)).add_files:
        ids.extend(pq.read_table(root / add.path).column(0).to_pylist())
    return sorted(ids)


def _iceberg_ids(root: Path) -> list[int]:
    return sorted(static_table(root).scan().to_arrow().column("id").to_pylist())


def test_a_sync_reads_only_the_new_commits(tmp_path: Path) -> None:
    metadata = build_table(tmp_path, "v3", files=4, rows_per_file=ROWS).metadata
    _append(tmp_path, metadata, 1, 4, 2)
    _checkpoint(tmp_path, 1)
    write_iceberg_metadata(tmp_path)
    new = _append(tmp_path, metadata, 2, 6, 3)
    _append(tmp_path, metadata, 3, 9, 1)
    with opened_log_files() as opened:
        result = write_iceberg_metadata(tmp_path)
    # the converted commit (to check that the log still holds it) and the two new ones, nothing older
    assert sorted(opened) == [_commit_name(1), _commit_name(2), _commit_name(3)]
    assert result.verification == "incremental"
    assert result.footers_read == len(new) + 1
    assert [(s.delta_version, s.operation, s.added_files) for s in result.snapshots] == [
        (2, "append", 3),
        (3, "append", 1),
    ]
    props = metadata_json(tmp_path)["properties"]
    assert props[PROP_VERIFIED_FILES] == "10"
    assert props[PROP_DELTA_COMMIT].startswith("sha256:")
    assert (tmp_path / "metadata" / props[PROP_DELTA_STATE]).is_file()
    assert _iceberg_ids(tmp_path) == _delta_ids(tmp_path)
    # nothing new: the same listing from the converted version, no write
    with opened_log_files() as opened:
        again = write_iceberg_metadata(tmp_path)
    assert not again.written and opened == [_commit_name(3)]


def test_the_state_file_is_written_only_when_the_delta_state_changes(tmp_path: Path) -> None:
    metadata = build_table(tmp_path, "v3", files=2, rows_per_file=ROWS).metadata
    write_iceberg_metadata(tmp_path)
    first = metadata_json(tmp_path)["properties"][PROP_DELTA_STATE]
    _append(tmp_path, metadata, 1, 2, 1)
    write_iceberg_metadata(tmp_path)
    assert metadata_json(tmp_path)["properties"][PROP_DELTA_STATE] == first
    changed = {**metadata, "configuration": {**metadata["configuration"], "owner.note": "x"}}
    lb.LogBuilder(tmp_path).commit(2, [lb.commit_info("SET TBLPROPERTIES"), {"metaData": changed}])
    result = write_iceberg_metadata(tmp_path)
    assert result.verification == "full (a new commit changes the protocol or the table metadata)"
    state = metadata_json(tmp_path)["properties"][PROP_DELTA_STATE]
    assert state != first
    doc = json.loads((tmp_path / "metadata" / state).read_text())
    assert doc["metaData"]["configuration"]["owner.note"] == "x"
    _append(tmp_path, changed, 3, 3, 1)
    assert write_iceberg_metadata(tmp_path).verification == "incremental"
    assert _iceberg_ids(tmp_path) == _delta_ids(tmp_path)


def _forget(root: Path, key: str) -> None:
    current = latest_metadata(root)
    doc = json.loads(current.read_text())
    del doc["properties"][key]
    current.write_text(json.dumps(doc))


@pytest.mark.parametrize("key", [PROP_DELTA_COMMIT, PROP_DELTA_STATE])
def test_metadata_without_the_record_replays_the_log_and_records_it(tmp_path: Path, key: str) -> None:
    """Metadata written before the record (or with part of it missing) is synced by replaying the log,
    with the same result, and the next sync reads only what is new again."""
    metadata = build_table(tmp_path, "v3", files=3, rows_per_file=ROWS).metadata
    write_iceberg_metadata(tmp_path)
    _forget(tmp_path, key)
    _append(tmp_path, metadata, 1, 3, 2)
    with opened_log_files() as opened:
        result = write_iceberg_metadata(tmp_path)
    assert _commit_name(0) in opened  # the replay read the whole log
    assert result.verification == "incremental"
    assert metadata_json(tmp_path)["properties"][key]
    _append(tmp_path, metadata, 2, 5, 1)
    with opened_log_files() as opened:
        write_iceberg_metadata(tmp_path)
    assert sorted(opened) == [_commit_name(1), _commit_name(2)]
    assert _iceberg_ids(tmp_path) == _delta_ids(tmp_path)


def test_a_rewritten_converted_commit_replays_the_log(tmp_path: Path) -> None:
    """The log no longer holds the commit the metadata was converted from (another table under the
    same root): the record is not trusted, and the replay refuses the other table's metadata."""
    build_table(tmp_path, "v3", files=2, rows_per_file=ROWS)
    write_iceberg_metadata(tmp_path)
    other = tmp_path.parent / "other"
    meta_other = build_table(other, "v3", files=2, rows_per_file=ROWS).metadata
    meta_other["id"] = "99999999-8888-7777-6666-555555555555"
    log = tmp_path / "_delta_log" / _commit_name(0)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    lines = [{"metaData": meta_other} if "metaData" in a else a for a in lines]
    log.write_text("".join(json.dumps(a) + "\n" for a in lines))
    _append(tmp_path, meta_other, 1, 2, 1)
    with pytest.raises(CompatViolation) as err:
        write_iceberg_metadata(tmp_path)
    assert "ICEBERG-EMIT-EXISTING-METADATA" in str(err.value)


def test_a_re_added_file_is_replaced_on_the_record_path(tmp_path: Path) -> None:
    """A recommit of a live file keeps its baseRowId (below next-row-id): the row-id proof fails, the
    sync reads the index and replaces the entry instead of listing the file twice."""
    table = build_table(tmp_path, "v3", files=4, rows_per_file=ROWS)
    write_iceberg_metadata(tmp_path)
    name = table.files[1]
    add = lb.add(name, stats=stats(ROWS), size=(tmp_path / name).stat().st_size, base_row_id=ROWS)
    add["add"]["defaultRowCommitVersion"] = 0
    lb.LogBuilder(tmp_path).commit(1, [lb.commit_info("WRITE"), add])
    with opened_log_files() as opened:
        result = write_iceberg_metadata(tmp_path)
    assert _commit_name(0) in opened and len(opened) == 2  # commits 0 (converted) and 1, no replay
    assert [(s.operation, s.added_files, s.deleted_files) for s in result.snapshots] == [("overwrite", 1, 1)]
    assert _iceberg_ids(tmp_path) == _delta_ids(tmp_path)
    assert metadata_json(tmp_path)["properties"][PROP_VERIFIED_FILES] == "4"


# The synthetic commits are dated 2023: retentions of a century keep their Iceberg history to look at.
CENTURY = {
    "delta.logRetentionDuration": "interval 36500 days",
    "delta.deletedFileRetentionDuration": "interval 36500 days",
}


def test_a_sync_after_log_clean_up_catches_up_in_one_snapshot(tmp_path: Path) -> None:
    table = build_table(tmp_path, "v3", files=4, rows_per_file=ROWS, properties=CENTURY)
    metadata = table.metadata
    write_iceberg_metadata(tmp_path)
    _append(tmp_path, metadata, 1, 4, 2)
    write_iceberg_metadata(tmp_path)
    before = metadata_json(tmp_path)
    # the sync stops; the table goes on: an append, a delete of an old file, another append
    _append(tmp_path, metadata, 2, 6, 2)
    lb.LogBuilder(tmp_path).commit(3, [lb.commit_info("DELETE"), lb.remove(table.files[0])])
    _append(tmp_path, metadata, 4, 8, 1)
    # a checkpoint, then Delta's log clean-up: every commit below it is deleted
    _checkpoint(tmp_path, 4)
    for v in range(4):
        (tmp_path / "_delta_log" / _commit_name(v)).unlink()
    with pytest.warns(IcebergSyncWarning, match=r"Delta commits 2\.\.3 .* cleaned up"):
        result = write_iceberg_metadata(tmp_path)
    assert [(s.delta_version, s.operation) for s in result.snapshots] == [(4, "overwrite")]
    after = metadata_json(tmp_path)
    assert after["table-uuid"] == before["table-uuid"]
    assert after["current-schema-id"] == before["current-schema-id"]
    assert len(after["schemas"]) == len(before["schemas"])
    # row lineage carries on: the counter ends where Delta's last assigned row id does
    assert before["next-row-id"] == 6 * ROWS and after["next-row-id"] == 9 * ROWS
    old_ids = {s["snapshot-id"] for s in before["snapshots"]}
    assert old_ids < {s["snapshot-id"] for s in after["snapshots"]}
    assert _iceberg_ids(tmp_path) == _delta_ids(tmp_path)
    tbl = static_table(tmp_path)
    assert len(tbl.snapshots()) == len(before["snapshots"]) + 1
    # the next sync reads only what is new again
    _append(tmp_path, metadata, 5, 9, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with opened_log_files() as opened:
            assert write_iceberg_metadata(tmp_path).verification == "incremental"
    assert sorted(opened) == [_commit_name(4), _commit_name(5)]
    assert _iceberg_ids(tmp_path) == _delta_ids(tmp_path)


@contextmanager
def opened_manifests() -> Iterator[list[str]]:
    """Names of the Iceberg manifests (not manifest lists) opened inside the block."""
    global _manifests
    _manifests = []
    try:
        yield _manifests
    finally:
        _manifests = None


_manifests: list[str] | None = None


def _audit_manifests(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and _manifests is not None and args and isinstance(args[0], (str, Path)):
        name = Path(str(args[0])).name
        if name.endswith(".avro") and not name.startswith("snap-"):
            _manifests.append(name)


sys.addaudithook(_audit_manifests)


@pytest.mark.parametrize("checksum", [True, False])
def test_an_append_to_a_v2_table_reads_no_manifest_when_the_checksum_counts_its_files(
    tmp_path: Path, checksum: bool
) -> None:
    """Iceberg v2 has no row ids to prove that an add is not a recommit of a live file: the live-file
    count of the new version (its ``.crc``) proves it as the replayed count did; without one, the sync
    reads the current manifests (still not the Delta log's past)."""
    table = build_table(tmp_path, "writer-v1", files=3, rows_per_file=ROWS)
    write_iceberg_metadata(tmp_path)
    assert metadata_json(tmp_path)["format-version"] == 2
    new = []
    for i in range(3, 5):
        name = f"part-{i:05d}-v1.c000.snappy.parquet"
        size = write_data_file(tmp_path / name, table.metadata, i * ROWS, ROWS)
        new.append(lb.add(name, stats=stats(ROWS), size=size))
    lb.LogBuilder(tmp_path).commit(1, [lb.commit_info("WRITE"), *new])
    if checksum:
        lb.LogBuilder(tmp_path).raw(
            _commit_name(1).replace(".json", ".crc"), json.dumps({"numFiles": 5}).encode()
        )
    with opened_manifests() as manifests:
        result = write_iceberg_metadata(tmp_path)
    assert result.verification == "incremental"
    assert [(s.operation, s.added_files) for s in result.snapshots] == [("append", 2)]
    assert bool(manifests) is not checksum
    assert _iceberg_ids(tmp_path) == _delta_ids(tmp_path)
