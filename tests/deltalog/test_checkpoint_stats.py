"""Checkpoints that keep statistics only as structs, or none at all (no Spark).

A checkpoint written with ``delta.checkpoint.writeStatsAsJson=false`` has ``add.stats_parsed`` (and
``add.partitionValues_parsed``) where a commit has the ``stats`` string; with
``writeStatsAsStruct=false`` too it keeps no statistics. The snapshot must read each file's stats as
its commit wrote them, from the struct, else from the commit, and say which files' counts are lost.
The expected stats are written here in delta-spark's JSON format (checked against delta-spark 4.4 in
tests/deltalog/test_foreign_tables.py).
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icecompat_writer.checking.check import NUM_RECORDS_FROM_FOOTERS, check_table
from icecompat_writer.deltalog import FindingCode, read_snapshot
from icecompat_writer.deltalog.parsed import render_partition_values, render_stats
from icecompat_writer.deltalog.readers import COLUMNAR_MIN_LINES
from icecompat_writer.storage import io_for
from tests.deltalog import logbuilder as lb


def field(name: str, type_: Any, physical: str) -> dict[str, Any]:
    return {
        "name": name,
        "type": type_,
        "nullable": True,
        "metadata": {"delta.columnMapping.id": 1, "delta.columnMapping.physicalName": physical},
    }


SCHEMA = {
    "type": "struct",
    "fields": [
        field("id", "long", "col-id"),
        field("s", "string", "col-s"),
        field("ts", "timestamp", "col-ts"),
        field("ntz", "timestamp_ntz", "col-ntz"),
        field("dec", "decimal(10,2)", "col-dec"),
        field("f", "double", "col-f"),
        field("n", {"type": "struct", "fields": [field("q", "integer", "col-q")]}, "col-n"),
        field("p", "date", "col-p"),
    ],
}
CONFIG = {"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "9"}

VALUES = pa.struct(
    [
        ("col-id", pa.int64()),
        ("col-s", pa.string()),
        ("col-ts", pa.timestamp("ns")),  # delta-spark writes checkpoint timestamps as INT96
        ("col-ntz", pa.timestamp("us")),
        ("col-dec", pa.decimal128(10, 2)),
        ("col-f", pa.float64()),
        ("col-n", pa.struct([("col-q", pa.int32())])),
    ]
)
COUNTS = pa.struct(
    [(f.name, pa.struct([("col-q", pa.int64())]) if f.name == "col-n" else pa.int64()) for f in VALUES]
)
STATS_PARSED = pa.struct(
    [("numRecords", pa.int64()), ("minValues", VALUES), ("maxValues", VALUES), ("nullCount", COUNTS)]
)
PV_PARSED = pa.struct([("col-p", pa.date32())])

# Two files: their stats as delta-spark writes them in a commit, and the same values as structs.
FILES: list[tuple[str, str, dict[str, Any], str | None]] = [
    (
        "col-p=2024-01-01/a.parquet",
        '{"numRecords":2,"minValues":{"col-id":0,"col-s":"a\\"b","col-ts":"2024-01-01T00:00:00.000Z",'
        '"col-ntz":"2024-01-01T10:00:00.000","col-dec":0.00,"col-f":"NaN","col-n":{"col-q":1}},'
        '"maxValues":{"col-id":1,"col-s":"zé","col-ts":"2024-01-01T00:00:01.123Z",'
        '"col-ntz":"2024-01-01T10:00:00.000","col-dec":1.50,"col-f":2.5,"col-n":{"col-q":2}},'
        '"nullCount":{"col-id":0,"col-s":0,"col-ts":0,"col-ntz":0,"col-dec":0,"col-f":0,"col-n":{"col-q":0}}}',
        {
            "numRecords": 2,
            "minValues": {
                "col-id": 0,
                "col-s": 'a"b',
                "col-ts": dt.datetime(2024, 1, 1),
                "col-ntz": dt.datetime(2024, 1, 1, 10),
                "col-dec": Decimal("0.00"),
                "col-f": float("nan"),
                "col-n": {"col-q": 1},
            },
            "maxValues": {
                "col-id": 1,
                "col-s": "zé",
                "col-ts": dt.datetime(2024, 1, 1, 0, 0, 1, 123456),
                "col-ntz": dt.datetime(2024, 1, 1, 10),
                "col-dec": Decimal("1.50"),
                "col-f": 2.5,
                "col-n": {"col-q": 2},
            },
            "nullCount": {
                "col-id": 0,
                "col-s": 0,
                "col-ts": 0,
                "col-ntz": 0,
                "col-dec": 0,
                "col-f": 0,
                "col-n": {"col-q": 0},
            },
        },
        "2024-01-01",
    ),
    (
        "col-p=__HIVE_DEFAULT_PARTITION__/b.parquet",
        '{"numRecords":1,"minValues":{"col-id":5},"maxValues":{"col-id":5},'
        '"nullCount":{"col-id":0,"col-s":1,"col-ts":1,"col-ntz":1,"col-dec":1,"col-f":1,"col-n":{"col-q":1}}}',
        {
            "numRecords": 1,
            "minValues": {"col-id": 5},
            "maxValues": {"col-id": 5},
            "nullCount": {
                "col-id": 0,
                "col-s": 1,
                "col-ts": 1,
                "col-ntz": 1,
                "col-dec": 1,
                "col-f": 1,
                "col-n": {"col-q": 1},
            },
        },
        None,
    ),
]


def stats_equal(ours: str | None, theirs: str) -> bool:
    """JSON stats equal as values (NaN is the string "NaN" in both)."""
    return ours is not None and json.loads(ours, parse_float=Decimal) == json.loads(
        theirs, parse_float=Decimal
    )


def write_data_files(root: Path) -> None:
    """Real Parquet files holding each file's row count (the footer is what the checker reads)."""
    for path, _, parsed, _ in FILES:
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"col-id": pa.array(range(parsed["numRecords"]), pa.int64())}), target)


def build(root: Path, *, stats_struct: bool, keep_commit: bool) -> None:
    """Commit 0 (adds with JSON stats), then a checkpoint at 0 without the JSON form: with
    ``stats_parsed`` and ``partitionValues_parsed`` (``stats_struct``) or with no statistics at all."""
    b = lb.LogBuilder(root)
    write_data_files(root)
    schema_string = json.dumps(SCHEMA)
    actions = [
        lb.protocol(2, 5),
        lb.metadata(CONFIG, partition_columns=["p"], schema_string=schema_string),
        *(
            lb.add(path, stats=stats, partition_values={"col-p": p}, size=(root / path).stat().st_size)
            for path, stats, _, p in FILES
        ),
    ]
    b.commit(0, actions)
    add_fields = [
        f for f in lb.ADD_TYPE if f.name not in ("stats", "partitionValues" if stats_struct else "")
    ]
    if stats_struct:
        add_fields += [pa.field("partitionValues_parsed", PV_PARSED), pa.field("stats_parsed", STATS_PARSED)]
    schema = pa.schema(
        [pa.field("add", pa.struct(add_fields)) if f.name == "add" else f for f in lb.V1_CHECKPOINT_SCHEMA]
    )
    rows: list[dict[str, Any]] = [actions[0], actions[1]]
    for (_, _, parsed, p), a in zip(FILES, actions[2:], strict=True):
        add = {k: v for k, v in a["add"].items() if k != "stats"}
        if stats_struct:
            del add["partitionValues"]
            add["stats_parsed"] = parsed
            add["partitionValues_parsed"] = {"col-p": None if p is None else dt.date.fromisoformat(p)}
        rows.append({"add": add})
    lb.write_checkpoint_parquet(root / "_delta_log" / f"{0:020d}.checkpoint.parquet", rows, schema)
    if not keep_commit:
        (root / "_delta_log" / f"{0:020d}.json").unlink()


@pytest.mark.parametrize("keep_commit", [True, False], ids=["with commit", "commit cleaned up"])
def test_stats_and_partition_values_are_rendered_from_the_structs(tmp_path: Path, keep_commit: bool) -> None:
    build(tmp_path, stats_struct=True, keep_commit=keep_commit)
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    assert snap.checkpoint_version == 0 and snap.findings == ()
    by_path = {a.path: a for a in snap.add_files}
    for path, stats, parsed, p in FILES:
        add = by_path[path]
        assert stats_equal(add.stats, stats), (add.stats, stats)
        assert add.num_records == parsed["numRecords"]
        assert dict(add.partition_values) == {"col-p": p}
    assert snap.stats_lost == frozenset()


def test_stats_dropped_by_the_checkpoint_are_taken_from_the_commits(tmp_path: Path) -> None:
    build(tmp_path, stats_struct=False, keep_commit=True)
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    assert [f.code for f in snap.findings] == [FindingCode.STATS_FROM_COMMITS]
    assert "no statistics for 2 live file(s)" in snap.findings[0].message
    for add, (_, stats, parsed, _) in zip(snap.add_files, FILES, strict=True):
        assert add.stats == stats and add.num_records == parsed["numRecords"]
    assert snap.stats_lost == frozenset()
    report = check_table(tmp_path, "v3", files="none")
    assert not [v for v in report.violations if v.rule == "ICV3-NUM-RECORDS"]
    assert [f.code for f in report.findings] == ["stats_from_commits"]
    assert report.findings[0].severity.value == "warning"


def test_counts_lost_with_the_commits_come_from_the_footers(tmp_path: Path) -> None:
    build(tmp_path, stats_struct=False, keep_commit=False)
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    assert snap.findings == ()
    assert [a.num_records for a in snap.add_files] == [None, None]
    assert snap.stats_lost == {path for path, *_ in FILES}
    report = check_table(tmp_path, "v3", files="none")
    assert not [v for v in report.violations if v.rule == "ICV3-NUM-RECORDS"]
    (finding,) = report.findings
    assert finding.code == NUM_RECORDS_FROM_FOOTERS and finding.severity.value == "warning"
    assert "2 live file(s)" in finding.message and "Parquet footers" in finding.message
    assert report.files_checked == 2  # read for their counts although files="none"
    # a footer that cannot be read gives no count: the file is stats-less, and unreadable
    (tmp_path / FILES[1][0]).write_bytes(b"not parquet")
    report = check_table(tmp_path, "v3", files="none")
    assert [
        violation.values["file"] for violation in report.violations if violation.rule == "ICV3-NUM-RECORDS"
    ] == [FILES[1][0]]


def test_a_commit_that_wrote_no_stats_is_not_excused_by_the_footer(tmp_path: Path) -> None:
    build(tmp_path, stats_struct=False, keep_commit=True)
    commit = tmp_path / "_delta_log" / f"{0:020d}.json"
    lines = [json.loads(line) for line in commit.read_text().splitlines()]
    for line in lines:
        line.get("add", {}).pop("stats", None)
    commit.write_text("".join(json.dumps(line) + "\n" for line in lines))
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    assert snap.stats_lost == frozenset() and [a.num_records for a in snap.add_files] == [None, None]
    report = check_table(tmp_path, "v3", files="all")
    flagged = sorted(v.values["file"] for v in report.violations if v.rule == "ICV3-NUM-RECORDS")
    assert flagged == sorted(path for path, *_ in FILES)


def test_rendering_keeps_nulls_out_and_numrecords_first() -> None:
    parsed = pa.array(
        [{"nullCount": {"col-id": 0}, "numRecords": 3, "tightBounds": False}, None],
        pa.struct(
            [
                ("nullCount", pa.struct([("col-id", pa.int64())])),
                ("numRecords", pa.int64()),
                ("tightBounds", pa.bool_()),
            ]
        ),
    )
    assert render_stats(parsed, {}).to_pylist() == [
        '{"numRecords":3,"nullCount":{"col-id":0},"tightBounds":false}',
        None,
    ]
    values = pa.array(
        [{"t": dt.datetime(2024, 5, 6, 7, 8, 9, 123456), "z": dt.datetime(2024, 5, 6), "b": True}, None],
        pa.struct([("t", pa.timestamp("us", tz="UTC")), ("z", pa.timestamp("us")), ("b", pa.bool_())]),
    )
    rendered = render_partition_values(values, {"t": "timestamp", "z": "timestamp_ntz", "b": "boolean"})
    assert rendered is not None
    assert rendered.to_pylist() == [
        [("t", "2024-05-06T07:08:09.123456Z"), ("z", "2024-05-06 00:00:00.000000"), ("b", "true")],
        None,
    ]


@pytest.mark.parametrize("copies", [1, COLUMNAR_MIN_LINES], ids=["few adds", "many adds (columnar reader)"])
def test_stats_parsed_in_a_json_v2_checkpoint_is_read(tmp_path: Path, copies: int) -> None:
    """A JSON top-level V2 checkpoint holding the adds with ``stats_parsed`` objects and no ``stats``:
    each file's stats are those its commit wrote, however many adds the file has."""
    build(tmp_path, stats_struct=False, keep_commit=True)
    commit = tmp_path / "_delta_log" / f"{0:020d}.json"
    actions = [json.loads(line) for line in commit.read_text().splitlines()]
    non_file = [a for a in actions if "add" not in a and "commitInfo" not in a]
    adds = []
    expected = {}
    for i in range(copies):
        for a in (a for a in actions if "add" in a):
            add = dict(a["add"], path=f"{i}/{a['add']['path']}")
            expected[add["path"]] = add.pop("stats")
            add["stats_parsed"] = json.loads(expected[add["path"]])
            adds.append({"add": add})
    for p in tmp_path.glob("_delta_log/*.checkpoint.parquet"):
        p.unlink()
    lb.LogBuilder(tmp_path).v2_checkpoint(0, non_file, adds, file_format="json")
    commit.unlink()
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    assert snap.findings == () and snap.stats_lost == frozenset()
    assert len(snap.add_files) == 2 * copies
    for add in snap.add_files:
        assert stats_equal(add.stats, expected[add.path]), (add.path, add.stats)
        assert add.num_records == json.loads(expected[add.path])["numRecords"]
