"""The columnar replay path reads exactly what the line-by-line path reads.

The reference is the reader with every file action taken as a dict (JSON lines through ``json.loads``,
checkpoint rows converted row by row) and reconciled like a dict keyed by the logical file. The
columnar path (pyarrow.json for JSON lines, Arrow casts for checkpoints, vectorized reconciliation,
AddFiles built on demand) must give the same live files in the same order with the same values, the
same findings, and fall back to the reference for anything it cannot represent exactly.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icecompat_writer.deltalog import LiveFiles, read_snapshot, readers
from icecompat_writer.deltalog.columnar import FILE_ACTIONS_SCHEMA, line_dv_key, line_rows, reconcile
from icecompat_writer.deltalog.paths import resolve_data_path_text
from icecompat_writer.storage import io_for

from . import logbuilder as lb
from .test_replay_model import histories, write_history

MANY = 12  # add lines per commit in these tests; the columnar JSON path is forced from 1 line


@contextmanager
def reading(mode: str) -> Iterator[None]:
    """``columnar``: every JSON file's file actions through pyarrow.json (when exact); ``lines``: the
    reference, every file action as a dict (JSON lines and checkpoint rows alike)."""
    saved_min, saved_cp = readers.COLUMNAR_MIN_LINES, readers.checkpoint_adds
    if mode == "columnar":
        readers.COLUMNAR_MIN_LINES = 1
    else:
        readers.COLUMNAR_MIN_LINES = 10**12
        readers.checkpoint_adds = lambda column: None  # type: ignore[assignment]
    try:
        yield
    finally:
        readers.COLUMNAR_MIN_LINES, readers.checkpoint_adds = saved_min, saved_cp


def view(root: Path, version: int | None = None) -> dict[str, Any]:
    """Everything a snapshot says, with map items in iteration order."""
    snap = read_snapshot(root, version, io=io_for(root))
    return {
        "version": snap.version,
        "protocol": snap.protocol,
        "metadata": snap.metadata,
        "files": [
            (
                a,
                list(a.partition_values.items()),
                None if a.tags is None else list(a.tags.items()),
            )
            for a in snap.add_files
        ],
        "txns": dict(snap.txns),
        "domains": dict(snap.domain_metadata),
        "commit_info": None if snap.commit_info is None else dict(snap.commit_info),
        "checkpoint_version": snap.checkpoint_version,
        "findings": snap.findings,
    }


def both(root: Path, version: int | None = None) -> dict[str, Any]:
    """The snapshot view, asserting both paths give it."""
    with reading("lines"):
        want = view(root, version)
    with reading("columnar"):
        got = view(root, version)
    assert got == want
    return got


def _adds(n: int, prefix: str = "f", **kwargs: Any) -> list[dict[str, Any]]:
    return [lb.add(f"{prefix}{i}.parquet", **kwargs) for i in range(n)]


def _table(root: Path, commit1: list[bytes], *, partitioned: bool = False) -> None:
    b = lb.LogBuilder(root)
    b.commit(0, [lb.protocol(), lb.metadata(partition_columns=["p"] if partitioned else [])])
    lines = [json.dumps(a, separators=(",", ":")).encode() + b"\n" for a in _adds(MANY)]
    b.raw(f"{1:020d}.json", b"".join(lines[: MANY // 2] + commit1 + lines[MANY // 2 :]))


# --- JSON lines ------------------------------------------------------------------------------------

# Lines that the columnar parse must read exactly as json.loads does, or refuse (then the file is read
# line by line). Each goes into a commit between ordinary add lines.
ODD_LINES: dict[str, list[bytes]] = {
    "ordinary": [],
    "corrupt": [b'{"add":{"path":"x.parquet",\n'],
    "truncated last line": [b'{"add":{"path":"x.parquet","size":1'],
    "not an object": [b"[1,2]\n"],
    "action not an object": [b'{"add":5}\n'],
    "add null": [b'{"add":null}\n'],
    "two objects on a line": [b'{"add":{"path":"x.parquet"}}{"add":{"path":"y.parquet"}}\n'],
    "duplicate key": [b'{"add":{"path":"x.parquet","path":"y.parquet","dataChange":true}}\n'],
    "duplicate action": [b'{"add":{"path":"x.parquet"},"add":{"path":"y.parquet"}}\n'],
    "add and remove on a line": [b'{"add":{"path":"x.parquet"},"remove":{"path":"f1.parquet"}}\n'],
    "add and commitInfo on a line": [b'{"add":{"path":"x.parquet"},"commitInfo":{"a":1}}\n'],
    "remove then add": [b'{"remove":{"path":"f1.parquet"}}\n', b'{"add":{"path":"f1.parquet"}}\n'],
    "add then remove": [b'{"add":{"path":"x.parquet"}}\n', b'{"remove":{"path":"x.parquet"}}\n'],
    "re-add keeps its place": [b'{"add":{"path":"f0.parquet","size":7,"dataChange":false}}\n'],
    "leading space": [b' {"add":{"path":"x.parquet","dataChange":true}}\n'],
    "add without path": [b'{"add":{"size":1,"dataChange":true}}\n'],
    "add with empty path": [b'{"add":{"path":"","dataChange":true}}\n'],
    "remove without path": [b'{"remove":{"deletionTimestamp":1}}\n'],
    "dataChange null": [b'{"add":{"path":"x.parquet","dataChange":null}}\n'],
    "dataChange absent": [b'{"add":{"path":"x.parquet"}}\n'],
    "dataChange a string": [b'{"add":{"path":"x.parquet","dataChange":"true"}}\n'],
    "size a string": [b'{"add":{"path":"x.parquet","size":"12","dataChange":true}}\n'],
    "size a float": [b'{"add":{"path":"x.parquet","size":12.0,"dataChange":true}}\n'],
    "size a bool": [b'{"add":{"path":"x.parquet","size":true,"dataChange":true}}\n'],
    "size beyond int64": [b'{"add":{"path":"x.parquet","size":99999999999999999999,"dataChange":true}}\n'],
    "size not a number": [b'{"add":{"path":"x.parquet","size":"big","dataChange":true}}\n'],
    "size null": [b'{"add":{"path":"x.parquet","size":null,"dataChange":true}}\n'],
    "stats an object": [b'{"add":{"path":"x.parquet","stats":{"numRecords":1},"dataChange":true}}\n'],
    "stats not JSON": [b'{"add":{"path":"x.parquet","stats":"nope","dataChange":true}}\n'],
    "stats a JSON list": [b'{"add":{"path":"x.parquet","stats":"[1]","dataChange":true}}\n'],
    "stats empty": [b'{"add":{"path":"x.parquet","stats":"","dataChange":true}}\n'],
    "numRecords not first": [
        b'{"add":{"path":"x.parquet","stats":"{\\"minValues\\":{},\\"numRecords\\":5}","dataChange":true}}\n'
    ],
    "numRecords huge": [
        b'{"add":{"path":"x.parquet","stats":"{\\"numRecords\\":123456789012345678901234}","dataChange":true}}\n'
    ],
    "numRecords a string": [
        b'{"add":{"path":"x.parquet","stats":"{\\"numRecords\\":\\"5\\"}","dataChange":true}}\n'
    ],
    "numRecords spaced": [
        b'{"add":{"path":"x.parquet","stats":"{ \\"numRecords\\" : 5 }","dataChange":true}}\n'
    ],
    "numRecords unicode digit": [
        b'{"add":{"path":"x.parquet","stats":"{\\"numRecords\\":1\\u0663}","dataChange":true}}\n'
    ],
    "numRecords negative zero": [
        b'{"add":{"path":"x.parquet","stats":"{\\"numRecords\\":-0}","dataChange":true}}\n'
    ],
    "partition value null": [
        b'{"add":{"path":"x.parquet","partitionValues":{"p":null},"dataChange":true}}\n'
    ],
    "partition value a number": [
        b'{"add":{"path":"x.parquet","partitionValues":{"p":1},"dataChange":true}}\n'
    ],
    "partition values absent": [b'{"add":{"path":"x.parquet","dataChange":true}}\n'],
    "partition values null": [b'{"add":{"path":"x.parquet","partitionValues":null,"dataChange":true}}\n'],
    "partition key missing": [
        b'{"add":{"path":"x.parquet","partitionValues":{"q":"1"},"dataChange":true}}\n'
    ],
    "partition values a string": [
        b'{"add":{"path":"x.parquet","partitionValues":"p=1","dataChange":true}}\n'
    ],
    "tags empty": [b'{"add":{"path":"x.parquet","tags":{},"dataChange":true}}\n'],
    "tags": [
        b'{"add":{"path":"x.parquet","tags":{"a":"1","b":"2"},"dataChange":true}}\n',
        b'{"add":{"path":"y.parquet","tags":{"a":"3","b":"4"},"dataChange":true}}\n',
    ],
    "tags null": [b'{"add":{"path":"x.parquet","tags":null,"dataChange":true}}\n'],
    "tags with a null value": [b'{"add":{"path":"x.parquet","tags":{"a":null},"dataChange":true}}\n'],
    "unknown field": [b'{"add":{"path":"x.parquet","future":{"x":[1,2]},"dataChange":true}}\n'],
    "unknown field of two types": [
        b'{"add":{"path":"x.parquet","future":1,"dataChange":true}}\n',
        b'{"add":{"path":"y.parquet","future":"a","dataChange":true}}\n',
    ],
    "deletion vector": [
        b'{"add":{"path":"f2.parquet","deletionVector":{"storageType":"u","pathOrInlineDv":"ab","offset":4,'
        b'"sizeInBytes":3,"cardinality":2},"dataChange":true}}\n',
        b'{"remove":{"path":"f2.parquet"}}\n',
    ],
    "deletion vector removed": [
        b'{"add":{"path":"x.parquet","deletionVector":{"storageType":"i","pathOrInlineDv":"ab",'
        b'"sizeInBytes":3,"cardinality":2,"maxRowIndex":9},"dataChange":true}}\n',
        b'{"remove":{"path":"x.parquet","deletionVector":{"storageType":"i","pathOrInlineDv":"ab"}}}\n',
    ],
    "deletion vector storageType null": [
        b'{"add":{"path":"x.parquet","deletionVector":{"storageType":null,"pathOrInlineDv":"ab"},'
        b'"dataChange":true}}\n'
    ],
    "deletion vector without pathOrInlineDv": [
        b'{"add":{"path":"x.parquet","deletionVector":{"storageType":"u"},"dataChange":true}}\n'
    ],
    "deletion vector offset a string": [
        b'{"add":{"path":"x.parquet","deletionVector":{"storageType":"u","pathOrInlineDv":"ab","offset":"1"},'
        b'"dataChange":true}}\n'
    ],
    "deletion vector not an object": [
        b'{"add":{"path":"x.parquet","deletionVector":"u","dataChange":true}}\n'
    ],
    "deletion vector outside the root": [
        b'{"add":{"path":"x.parquet","deletionVector":{"storageType":"p","pathOrInlineDv":"file:/etc/dv.bin"},'
        b'"dataChange":true}}\n'
    ],
    "deletion vector inside the root": [
        b'{"add":{"path":"x.parquet","deletionVector":{"storageType":"p","pathOrInlineDv":"dv.bin"},'
        b'"dataChange":true}}\n'
    ],
    "path outside": [
        b'{"add":{"path":"../x.parquet","dataChange":true}}\n',
        b'{"add":{"path":"/etc/passwd","dataChange":true}}\n',
        b'{"add":{"path":"s3://bucket/x.parquet","dataChange":true}}\n',
        b'{"add":{"path":"%2E%2E/y.parquet","dataChange":true}}\n',
        b'{"add":{"path":"a/../../z.parquet","dataChange":true}}\n',
    ],
    "paths that look odd but stay inside": [
        b'{"add":{"path":"a/./b.parquet","dataChange":true}}\n',
        b'{"add":{"path":"p=x%20y/c.parquet","dataChange":true}}\n',
        b'{"add":{"path":"a..b.parquet","dataChange":true}}\n',
        b'{"add":{"path":"dir/","dataChange":true}}\n',
        b'{"add":{"path":"back\\\\slash.parquet","dataChange":true}}\n',
    ],
    "path with NUL": [b'{"add":{"path":"a\\u0000b.parquet","dataChange":true}}\n'],
    "path with a lone surrogate": [b'{"add":{"path":"a\\udc80.parquet","dataChange":true}}\n'],
    "path not UTF-8": [b'{"add":{"path":"a\xff.parquet","dataChange":true}}\n'],
    "path with UTF-8": ['{"add":{"path":"na\u00efve/\u00fc.parquet","dataChange":true}}\n'.encode()],
    "path not a string": [b'{"add":{"path":5,"dataChange":true}}\n'],
    "NaN size": [b'{"add":{"path":"x.parquet","size":NaN,"dataChange":true}}\n'],
    "CRLF": [b'{"add":{"path":"x.parquet","dataChange":true}}\r\n'],
    "blank lines": [b"\n", b"   \n"],
    "carriage return inside": [b'{"add":{"path":"x.parquet","dataChange":true}}\r{"add":{"path":"y"}}\n'],
    "row tracking and clustering": [
        b'{"add":{"path":"x.parquet","baseRowId":5,"defaultRowCommitVersion":1,"clusteringProvider":"liquid",'
        b'"dataChange":true}}\n'
    ],
    "baseRowId a string": [b'{"add":{"path":"x.parquet","baseRowId":"5","dataChange":true}}\n'],
    # damage that once broke the reader (RecursionError, OverflowError) instead of being a finding
    "JSON nested too deeply": [b"[" * 5000 + b"]" * 5000 + b"\n"],
    "add nested too deeply": [b'{"add":{"path":"x.parquet","future":' + b"[" * 5000 + b"]" * 5000 + b"}}\n"],
    "size infinite": [b'{"add":{"path":"x.parquet","size":1e400,"dataChange":true}}\n'],
    "deletion vector offset infinite": [
        b'{"add":{"path":"x.parquet","deletionVector":{"storageType":"u","pathOrInlineDv":"ab","offset":1e400},'
        b'"dataChange":true}}\n'
    ],
    "stats nested too deeply": [
        b'{"add":{"path":"x.parquet","stats":"' + b"[" * 5000 + b"]" * 5000 + b'","dataChange":true}}\n'
    ],
    "txn and domain between adds": [
        json.dumps(lb.txn("app", 3)).encode() + b"\n",
        json.dumps(lb.domain("d", "{}")).encode() + b"\n",
        b'{"txn":{"appId":"bad"}}\n',
    ],
}


@pytest.mark.parametrize("case", sorted(ODD_LINES))
def test_json_lines_read_the_same_both_ways(tmp_path: Path, case: str) -> None:
    _table(tmp_path, ODD_LINES[case])
    both(tmp_path)


@pytest.mark.parametrize("case", ["ordinary", "partition value null", "partition key missing"])
def test_partitioned_json_lines_read_the_same_both_ways(tmp_path: Path, case: str) -> None:
    b = lb.LogBuilder(tmp_path)
    b.commit(0, [lb.protocol(), lb.metadata(partition_columns=["p", "q"])])
    adds = [
        lb.add(f"p={i % 3}/f{i}.parquet", partition_values={"p": str(i % 3), "q": "x"}) for i in range(MANY)
    ]
    lines = [json.dumps(a, separators=(",", ":")).encode() + b"\n" for a in adds]
    b.raw(f"{1:020d}.json", b"".join(lines + ODD_LINES[case]))
    got = both(tmp_path)
    assert got["files"][0][1] == [("p", "0"), ("q", "x")]


def test_the_columnar_path_is_taken_for_ordinary_lines(tmp_path: Path) -> None:
    _table(tmp_path, [b'{"remove":{"path":"f3.parquet"}}\n'])
    with reading("columnar"):
        read = readers.read_json_actions(tmp_path / "_delta_log" / f"{1:020d}.json", "x", io=io_for(tmp_path))
    assert read.files is not None and read.files.num_rows == MANY + 1
    assert read.actions == [] and read.findings == []


def test_a_damaged_line_sends_the_file_down_the_line_path(tmp_path: Path) -> None:
    _table(tmp_path, ODD_LINES["corrupt"])
    with reading("columnar"):
        read = readers.read_json_actions(tmp_path / "_delta_log" / f"{1:020d}.json", "x", io=io_for(tmp_path))
    assert read.files is None
    assert [f.line for f in read.findings] == [MANY // 2 + 1]


@pytest.mark.parametrize("case", ["ordinary", "corrupt", "dataChange null", "deletion vector"])
def test_compaction_and_v2_json_checkpoint_read_the_same_both_ways(tmp_path: Path, case: str) -> None:
    b = lb.LogBuilder(tmp_path)
    b.commit(0, [lb.protocol(), lb.metadata()])
    extra = [json.loads(line) for line in ODD_LINES[case] if _is_json_object(line)]
    b.commit(1, _adds(MANY))
    b.commit(2, [lb.remove("f1.parquet"), *extra])
    lines = [json.dumps(a).encode() + b"\n" for a in _adds(MANY, "g")] + ODD_LINES[case]
    b.raw(f"{1:020d}.{2:020d}.compacted.json", b"".join(lines))
    both(tmp_path)
    c = lb.LogBuilder(tmp_path / "v2")
    c.commit(0, [lb.protocol(), lb.metadata()])
    path, _ = c.v2_checkpoint(0, [lb.protocol(), lb.metadata()], [*_adds(MANY), lb.remove("gone.parquet")])
    path.write_bytes(path.read_bytes() + b"".join(ODD_LINES[case]))
    both(tmp_path / "v2")


def _is_json_object(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line), dict) and len(json.loads(line)) == 1
    except ValueError:
        return False


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_generated_histories_read_the_same_both_ways(h: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory(prefix="columnar_model_") as tmp:
        root = Path(tmp)
        write_history(root, h)
        both(root)
        both(root, h["travel"])


# --- checkpoint Parquet ----------------------------------------------------------------------------


def _checkpoint(root: Path, add_type: pa.DataType, rows: list[dict[str, Any] | None], **extra: Any) -> None:
    """A classic checkpoint at version 1 whose ``add`` column has ``add_type``."""
    b = lb.LogBuilder(root)
    b.commit(0, [lb.protocol(), lb.metadata()])
    schema = pa.schema([("add", add_type), ("protocol", lb.PROTOCOL_TYPE), ("metaData", lb.METADATA_TYPE)])
    n = len(rows) + 2
    table = pa.Table.from_pydict(
        {
            "add": [*rows, None, None],
            "protocol": [None] * len(rows) + [lb.protocol()["protocol"], None],
            "metaData": [None] * (n - 1) + [lb.metadata()["metaData"]],
        },
        schema=schema,
    )
    pq.write_table(table, root / "_delta_log" / f"{1:020d}.checkpoint.parquet", **extra)
    b.commit(2, [lb.add("f1.parquet", num_records=3), lb.remove("f2.parquet"), lb.add("new.parquet")])


def _row(i: int, **over: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "path": f"f{i}.parquet",
        "partitionValues": [("p", str(i))],
        "size": 100 + i,
        "modificationTime": 1,
        "dataChange": True,
        "stats": json.dumps({"numRecords": i}),
    }
    row.update(over)
    return row


def test_canonical_checkpoint_reads_the_same_both_ways(tmp_path: Path) -> None:
    rows: list[dict[str, Any] | None] = [_row(i) for i in range(MANY)]
    rows[3] = _row(
        3,
        deletionVector={
            "storageType": "u",
            "pathOrInlineDv": "ab",
            "offset": 1,
            "sizeInBytes": 3,
            "cardinality": 1,
        },
    )
    rows[4] = _row(4, tags=[("t", "v")], baseRowId=9, defaultRowCommitVersion=1, clusteringProvider="liquid")
    rows[5] = _row(5, stats=None, size=None, dataChange=None, partitionValues=None)
    rows[6] = _row(6, path=None)  # an add without a path is skipped
    rows[7] = None  # a row of another action
    rows[8] = _row(8, stats='{"minValues":{},"numRecords":8}')
    rows[9] = _row(9, stats="garbage", path="../outside.parquet")
    rows[10] = _row(1, size=7)  # a duplicate key: the first position, the last value
    rows[11] = _row(
        11,
        deletionVector={"storageType": "p", "pathOrInlineDv": "/etc/dv", "sizeInBytes": 3, "cardinality": 1},
    )
    _checkpoint(tmp_path, lb.ADD_TYPE, rows)
    got = both(tmp_path)
    adds = [a for a, _, _ in got["files"]]
    # f1 keeps its first place through a duplicate and a re-add; f2 is removed; new comes last
    assert [a.path for a in adds][:3] == ["f0.parquet", "f1.parquet", "f3.parquet"]
    assert adds[1].num_records == 3 and adds[-1].path == "new.parquet"


@pytest.mark.parametrize(
    ("changes", "values"),
    [
        ({"size": pa.int32(), "modificationTime": pa.uint32()}, {}),
        ({"path": pa.large_string(), "stats": pa.large_string()}, {}),
        ({"partitionValues": pa.map_(pa.large_string(), pa.large_string())}, {}),
        ({"partitionValues": pa.map_(pa.string(), pa.int64())}, {"partitionValues": [("p", 1)]}),
        ({"size": pa.string()}, {"size": "12"}),
        ({"dataChange": pa.string()}, {"dataChange": "yes"}),
        ({"size": pa.uint64()}, {"size": 2**64 - 1}),
        ({"stats": pa.null()}, {"stats": None}),
    ],
    ids=lambda x: repr(x)[:60],
)
def test_other_checkpoint_types_read_the_same_both_ways(
    tmp_path: Path, changes: dict[str, pa.DataType], values: dict[str, Any]
) -> None:
    """Types the canonical schema holds exactly are cast; the others are read as dicts, as before."""
    fields = [pa.field(f.name, changes.get(f.name, f.type)) for f in lb.ADD_TYPE]
    add_type = pa.struct([f for f in fields if f.name not in ("baseRowId", "clusteringProvider")])
    rows: list[dict[str, Any] | None] = [_row(i, **values) for i in range(MANY)]
    _checkpoint(tmp_path, add_type, rows)
    both(tmp_path)


def test_multipart_checkpoint_and_sidecars_read_the_same_both_ways(tmp_path: Path) -> None:
    adds = [lb.add(f"f{i}.parquet", num_records=i) for i in range(40)]
    b = lb.LogBuilder(tmp_path / "multi")
    b.commit(0, [lb.protocol(), lb.metadata()])
    b.multipart_checkpoint(
        0, [[lb.protocol(), lb.metadata(), *adds[:20]], [*adds[20:], lb.remove("zz.parquet")]]
    )
    b.commit(
        1,
        [lb.remove("f5.parquet"), lb.add("f5.parquet", num_records=99), lb.add("f0.parquet", num_records=7)],
    )
    both(tmp_path / "multi")
    c = lb.LogBuilder(tmp_path / "v2")
    c.commit(0, [lb.protocol(), lb.metadata()])
    c.v2_checkpoint(0, [lb.protocol(), lb.metadata()], adds, file_format="parquet", sidecars=3)
    both(tmp_path / "v2")


# --- reconciliation --------------------------------------------------------------------------------

ACTIONS = st.lists(
    st.tuples(
        st.sampled_from([1, 1, 0, None]),
        st.sampled_from(["a", "b", "c", "d\udc80"]),
        st.sampled_from([None, {"storageType": "u", "pathOrInlineDv": "x"}]),
    ),
    max_size=30,
)


@settings(max_examples=300, deadline=None)
@given(ACTIONS, st.integers(1, 5))
def test_reconcile_is_a_dict_keyed_by_logical_file(actions: list[tuple[Any, str, Any]], parts: int) -> None:
    model: dict[tuple[str, str], int] = {}
    for i, (kind, path, dv) in enumerate(actions):
        key = (path, line_dv_key(dv))
        if kind == 1:
            model[key] = i
        elif kind == 0:
            model.pop(key, None)
    size = max(1, -(-len(actions) // parts))
    batches = []
    for start in range(0, len(actions), size):
        chunk = actions[start : start + size]
        batch = line_rows(
            [0 if k is None else k for k, _, _ in chunk],
            [p for _, p, _ in chunk],
            [line_dv_key(d) for _, _, d in chunk],
            [start + j for j in range(len(chunk))],
        )
        kinds = pa.array([k for k, _, _ in chunk], pa.int8())
        keys = pc.if_else(kinds.is_valid(), batch.column("key_path"), pa.scalar(None, pa.binary()))
        batch = batch.set_column(0, FILE_ACTIONS_SCHEMA.field("kind"), kinds)
        batches.append(batch.set_column(1, FILE_ACTIONS_SCHEMA.field("key_path"), keys))
    live = reconcile(pa.Table.from_batches(batches, schema=FILE_ACTIONS_SCHEMA))
    assert live.column("raw").to_pylist() == list(model.values())


# --- the live files --------------------------------------------------------------------------------


def test_live_files_is_a_sequence_of_the_add_files(tmp_path: Path) -> None:
    rows: list[dict[str, Any] | None] = [_row(i) for i in range(MANY)]
    rows[2] = _row(2, stats=None)
    rows[3] = _row(
        3,
        deletionVector={
            "storageType": "p",
            "pathOrInlineDv": "/elsewhere/dv",
            "sizeInBytes": 1,
            "cardinality": 1,
        },
    )
    rows[4] = _row(4, path="../up.parquet")
    rows[5] = _row(5, stats='{"numRecords":"x"}')
    _checkpoint(tmp_path, lb.ADD_TYPE, rows)
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    files = snap.files
    assert isinstance(files, LiveFiles)
    fresh = read_snapshot(tmp_path, io=io_for(tmp_path)).files
    singles = [fresh[i] for i in range(len(fresh))]
    assert tuple(singles) == snap.add_files == tuple(files) == files[:]
    assert files[-1] == singles[-1] and len(files) == len(snap.add_files)
    with pytest.raises(IndexError):
        files[len(files)]
    assert read_snapshot(tmp_path, io=io_for(tmp_path)).files.get_many([5, 1]) == [singles[5], singles[1]]
    adds = snap.add_files
    assert files.missing_num_records() == [i for i, a in enumerate(adds) if a.num_records is None]
    assert files.with_deletion_vectors() == [i for i, a in enumerate(adds) if a.deletion_vector is not None]
    root = str(tmp_path)
    outside = [
        i
        for i, a in enumerate(adds)
        if resolve_data_path_text(root, a.path) is None
        or (
            a.deletion_vector is not None
            and a.deletion_vector.storage_type == "p"
            and resolve_data_path_text(root, a.deletion_vector.path_or_inline_dv) is None
        )
    ]
    assert files.outside_root() == outside and len(outside) == 2
    assert files == read_snapshot(tmp_path, io=io_for(tmp_path)).files
    assert repr(files) == f"LiveFiles({len(files)} files)"


def test_malformed_live_raw_add_is_left_out_and_indices_stay_right(tmp_path: Path) -> None:
    b = lb.LogBuilder(tmp_path)
    b.commit(0, [lb.protocol(), lb.metadata(), *_adds(3)])
    b.raw(
        f"{1:020d}.json",
        b'{"add":{"path":"bad.parquet","size":"big"}}\n{"add":{"path":"../out.parquet"}}\n'
        b'{"add":{"path":"nostats.parquet","size":1}}\n',
    )
    snap = both(tmp_path)
    paths = [a.path for a, _, _ in snap["files"]]
    assert paths == ["f0.parquet", "f1.parquet", "f2.parquet", "../out.parquet", "nostats.parquet"]
    files = read_snapshot(tmp_path, io=io_for(tmp_path)).files
    assert files.outside_root() == [3]
    assert files.missing_num_records() == [3, 4]
    assert [f.code.value for f in snap["findings"]] == ["invalid_action", "path_outside_table"]


def test_reconcile_with_many_runs_of_live_rows_takes_them() -> None:
    n = 2000
    paths = [f"f{i}" for i in range(n)] + [f"f{i}" for i in range(0, n, 2)] + ["f0"]
    kinds = [1] * n + [0] * (n // 2) + [1]
    batch = line_rows(kinds, paths, [""] * len(paths), list(range(len(paths))))
    live = reconcile(pa.Table.from_batches([batch], schema=FILE_ACTIONS_SCHEMA))
    assert live.column("raw").to_pylist() == [*range(1, n, 2), len(paths) - 1]
