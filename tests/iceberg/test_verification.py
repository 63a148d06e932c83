"""What a sync reads: only the new commits' files when the verification record holds, everything otherwise.

Footer reads are counted where they happen, at the operating system: an audit hook records every
``open`` of a Parquet file under the table (the footer reader opens each file it checks). Old files are
also damaged after the first conversion, so a run that re-read them would refuse the table.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icecompat_writer.checking.check import NUM_RECORDS_FROM_FOOTERS, check_table
from icecompat_writer.errors import CompatViolation
from icecompat_writer.iceberg import write_iceberg_metadata
from icecompat_writer.iceberg.verification import (
    PROP_VERIFIED_FILES,
    PROP_VERIFIED_RULES,
    PROP_VERIFIED_VERSION,
)
from tests.cli.synthetic import build_table, stats, write_data_file
from tests.deltalog import logbuilder as lb

from ._support import latest_metadata, metadata_json, static_table

ROWS = 3
_opened: list[str] | None = None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and _opened is not None and args and isinstance(args[0], (str, bytes, Path)):
        name = args[0].decode() if isinstance(args[0], bytes) else str(args[0])
        if name.endswith(".parquet"):
            _opened.append(name)


sys.addaudithook(_audit)


@contextmanager
def opened_parquet() -> Iterator[list[str]]:
    """Names of the Parquet files opened inside the block."""
    global _opened
    _opened = []
    try:
        yield _opened
    finally:
        _opened = None


def _table(root: Path, files: int = 12) -> dict[str, Any]:
    return build_table(root, "v3", files=files, rows_per_file=ROWS).metadata


def _append(root: Path, metadata: dict[str, Any], version: int, first: int, n: int) -> list[str]:
    """Commit ``version`` adding ``n`` new files (rows from ``first * ROWS``); returns their names."""
    adds, names = [], []
    for i in range(first, first + n):
        name = f"part-{i:05d}-v{version}.c000.snappy.parquet"
        size = write_data_file(root / name, metadata, i * ROWS, ROWS)
        add = lb.add(
            name, stats=stats(ROWS), size=size, base_row_id=i * ROWS, default_row_commit_version=version
        )
        adds.append(add)
        names.append(name)
    lb.LogBuilder(root).commit(version, [lb.commit_info("WRITE"), *adds])
    return names


def _damage(path: Path) -> None:
    """Rewrite the file without Parquet field ids: a footer check of it fails (a field-id rule)."""
    table = pq.read_table(path)
    plain = pa.schema([pa.field(f.name, f.type) for f in table.schema])
    pq.write_table(table.cast(plain), path)


def test_first_conversion_verifies_every_file_and_records_it(tmp_path: Path) -> None:
    _table(tmp_path)
    with opened_parquet() as opened:
        result = write_iceberg_metadata(tmp_path)
    assert result.verification == "full (first conversion)"
    assert result.footers_read == 12
    assert {Path(p).name for p in opened} == {
        f"part-{i:05d}-synthetic.c000.snappy.parquet" for i in range(12)
    }
    props = metadata_json(tmp_path)["properties"]
    assert props[PROP_VERIFIED_VERSION] == "0"
    assert props[PROP_VERIFIED_RULES] == "v3/v3"
    assert props[PROP_VERIFIED_FILES] == "12"


def test_incremental_sync_opens_only_the_new_files(tmp_path: Path) -> None:
    metadata = _table(tmp_path)
    write_iceberg_metadata(tmp_path)
    for i in range(12):  # the old files no longer pass: a run reading one would refuse the table
        _damage(tmp_path / f"part-{i:05d}-synthetic.c000.snappy.parquet")
    new = _append(tmp_path, metadata, 1, 12, 3)
    with opened_parquet() as opened:
        result = write_iceberg_metadata(tmp_path)
    assert result.verification == "incremental"
    assert result.footers_read == 3
    assert sorted(Path(p).name for p in opened) == sorted(new)
    assert [s.operation for s in result.snapshots] == ["append"]
    props = metadata_json(tmp_path)["properties"]
    assert (props[PROP_VERIFIED_VERSION], props[PROP_VERIFIED_FILES]) == ("1", "15")
    plan = static_table(tmp_path).scan().plan_files()
    assert len(plan) == 15
    assert sum(t.file.record_count for t in plan) == 15 * ROWS


def _tamper_missing(props: dict[str, str]) -> None:
    del props[PROP_VERIFIED_FILES]


def _tamper_count(props: dict[str, str]) -> None:
    props[PROP_VERIFIED_FILES] = "11"


def _tamper_version(props: dict[str, str]) -> None:
    props[PROP_VERIFIED_VERSION] = "7"


def _tamper_rules(props: dict[str, str]) -> None:
    props[PROP_VERIFIED_RULES] = "writer-v1/v3"


@pytest.mark.parametrize(
    ("tamper", "reason"),
    [
        (_tamper_missing, "no verification record"),
        (_tamper_count, "counts 11 live files"),
        (_tamper_version, "names Delta version 7"),
        (_tamper_rules, "verified under writer-v1/v3"),
    ],
)
def test_a_missing_or_tampered_record_falls_back_to_full_verification(
    tmp_path: Path, tamper: Any, reason: str
) -> None:
    metadata = _table(tmp_path)
    write_iceberg_metadata(tmp_path)
    current = latest_metadata(tmp_path)
    doc = json.loads(current.read_text())
    tamper(doc["properties"])
    current.write_text(json.dumps(doc))
    _append(tmp_path, metadata, 1, 12, 2)

    # Undamaged: the full check passes and reads every live file.
    with opened_parquet() as opened:
        result = write_iceberg_metadata(tmp_path)
    assert result.verification.startswith("full (") and reason in result.verification
    assert result.footers_read == 14
    assert len({Path(p).name for p in opened}) == 14


def test_full_fallback_rereads_old_files_and_refuses_a_damaged_one(tmp_path: Path) -> None:
    metadata = _table(tmp_path)
    write_iceberg_metadata(tmp_path)
    current = latest_metadata(tmp_path)
    doc = json.loads(current.read_text())
    del doc["properties"][PROP_VERIFIED_VERSION]
    current.write_text(json.dumps(doc))
    damaged = "part-00004-synthetic.c000.snappy.parquet"
    _damage(tmp_path / damaged)
    _append(tmp_path, metadata, 1, 12, 2)
    before = sorted(p.name for p in (tmp_path / "metadata").iterdir())
    with pytest.raises(CompatViolation) as err:
        write_iceberg_metadata(tmp_path)
    assert damaged in str(err.value)
    assert sorted(p.name for p in (tmp_path / "metadata").iterdir()) == before


def test_a_metadata_change_is_verified_in_full(tmp_path: Path) -> None:
    metadata = _table(tmp_path)
    write_iceberg_metadata(tmp_path)
    changed = {**metadata, "configuration": {**metadata["configuration"], "owner.note": "x"}}
    lb.LogBuilder(tmp_path).commit(1, [lb.commit_info("SET TBLPROPERTIES"), {"metaData": changed}])
    result = write_iceberg_metadata(tmp_path)
    assert result.verification == "full (a new commit changes the protocol or the table metadata)"
    assert result.footers_read == 12
    assert [s.operation for s in result.snapshots] == ["append"]
    assert result.snapshots[0].added_files == 0
    # the next plain append is incremental again
    _append(tmp_path, changed, 2, 12, 1)
    assert write_iceberg_metadata(tmp_path).verification == "incremental"


def test_a_re_added_file_is_replaced_not_duplicated(tmp_path: Path) -> None:
    """A re-add of a live file (new statistics) in an incremental run: the count check sees it."""
    table = build_table(tmp_path, "v3", files=4, rows_per_file=ROWS)
    write_iceberg_metadata(tmp_path)
    name = table.files[1]
    add = lb.add(name, stats=stats(ROWS), size=(tmp_path / name).stat().st_size, base_row_id=ROWS)
    add["add"]["defaultRowCommitVersion"] = 0
    add["add"]["dataChange"] = False
    lb.LogBuilder(tmp_path).commit(1, [lb.commit_info("COMPUTE STATS"), add])
    result = write_iceberg_metadata(tmp_path)
    assert result.verification == "incremental"
    assert [(s.operation, s.added_files, s.deleted_files) for s in result.snapshots] == [("replace", 1, 1)]
    plan = static_table(tmp_path).scan().plan_files()
    assert sorted(Path(t.file.file_path).name for t in plan) == sorted(table.files)
    assert metadata_json(tmp_path)["properties"][PROP_VERIFIED_FILES] == "4"


def test_a_table_whose_adding_commit_is_gone_converts_with_footer_counts(tmp_path: Path) -> None:
    """A checkpoint that keeps no statistics, the commit that added the files cleaned up: the gate
    counts the footers as the checker does (a warning there), so the table converts with true counts."""
    table = build_table(tmp_path, "v3", files=2, rows_per_file=ROWS)
    commit = tmp_path / "_delta_log" / f"{0:020d}.json"
    actions = [json.loads(line) for line in commit.read_text().splitlines()]
    rows = [a for a in actions if "commitInfo" not in a]
    for a in rows:
        a.get("add", {}).pop("stats", None)
    # the checkpoint's add struct has no stats column at all (writeStatsAsJson and -AsStruct false)
    add_type = pa.struct([f for f in lb.ADD_TYPE if f.name != "stats"])
    schema = pa.schema([pa.field("add", add_type) if f.name == "add" else f for f in lb.V1_CHECKPOINT_SCHEMA])
    # a later commit, the checkpoint at it, and log clean-up removed the commit that added the files
    lb.LogBuilder(tmp_path).commit(1, [lb.commit_info("SET TBLPROPERTIES"), lb.txn("app", 1)])
    rows.append(lb.txn("app", 1))
    lb.write_checkpoint_parquet(tmp_path / "_delta_log" / f"{1:020d}.checkpoint.parquet", rows, schema)
    commit.unlink()
    report = check_table(tmp_path, "v3")
    assert not report.violations, report.violations
    assert [f.code for f in report.findings] == [NUM_RECORDS_FROM_FOOTERS]
    result = write_iceberg_metadata(tmp_path)
    assert result.verification == "full (first conversion)"
    plan = static_table(tmp_path).scan().plan_files()
    assert sorted(t.file.file_path.rsplit("/", 1)[1] for t in plan) == sorted(table.files)
    assert [t.file.record_count for t in plan] == [ROWS, ROWS]
    assert static_table(tmp_path).scan().to_arrow().num_rows == 2 * ROWS
