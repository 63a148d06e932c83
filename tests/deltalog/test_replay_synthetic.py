"""Log replay on logs written by hand: the shapes Spark rarely writes, and damage."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from icecompat_writer.deltalog import (
    FindingCode,
    Snapshot,
    list_versions,
    read_commit,
    read_snapshot,
    readers,
)
from icecompat_writer.deltalog import replay as replay_module
from icecompat_writer.errors import TableReadError
from icecompat_writer.storage import FileIO, io_for

from . import logbuilder as lb


def paths(snap: Snapshot) -> set[str]:
    return {a.path for a in snap.add_files}


def codes(snap: Snapshot) -> list[FindingCode]:
    return [f.code for f in snap.findings]


def start(root: Path, *extra: dict) -> lb.LogBuilder:
    b = lb.LogBuilder(root)
    b.commit(0, [lb.commit_info("CREATE TABLE"), lb.protocol(), lb.metadata(), *extra])
    return b


# --- reconciliation ------------------------------------------------------------------------------


def test_adds_removes_protocol_metadata_latest_win(tmp_path: Path) -> None:
    b = start(tmp_path, lb.add("a.parquet"), lb.add("b.parquet"))
    b.commit(1, [lb.commit_info(), lb.remove("a.parquet"), lb.add("c.parquet", num_records=3)])
    b.commit(
        2,
        [
            lb.commit_info(),
            lb.protocol(1, 4),
            lb.metadata(configuration={"k": "v"}),
            lb.add("a.parquet", num_records=7),  # re-added after its removal
        ],
    )
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    assert snap.version == 2
    assert paths(snap) == {"a.parquet", "b.parquet", "c.parquet"}
    assert snap.protocol.min_writer_version == 4
    assert dict(snap.metadata.configuration) == {"k": "v"}
    by_path = {a.path: a for a in snap.add_files}
    assert by_path["a.parquet"].num_records == 7
    assert by_path["c.parquet"].num_records == 3
    assert snap.findings == ()
    assert snap.checkpoint_version is None


def test_re_adding_a_file_replaces_its_stats(tmp_path: Path) -> None:
    b = start(tmp_path, lb.add("a.parquet", num_records=1))
    b.commit(1, [lb.add("a.parquet", num_records=2, tags={"t": "x"}, data_change=False)])
    (a,) = read_snapshot(tmp_path, io=io_for(tmp_path)).add_files
    assert (a.num_records, dict(a.tags or {}), a.data_change) == (2, {"t": "x"}, False)


def test_deletion_vectors_key_logical_files(tmp_path: Path) -> None:
    dv1, dv2 = lb.dv("dvOne_______________", offset=1), lb.dv("dvTwo_______________", offset=9)
    b = start(tmp_path, lb.add("a.parquet"), lb.add("b.parquet"))
    # DELETE with a DV: the file is re-added with a DV, its DV-less version removed
    b.commit(1, [lb.add("a.parquet", deletion_vector=dv1), lb.remove("a.parquet")])
    # a second DELETE replaces the DV
    b.commit(2, [lb.remove("a.parquet", deletion_vector=dv1), lb.add("a.parquet", deletion_vector=dv2)])
    # removing b with a DV that it never had leaves the DV-less b alive
    b.commit(3, [lb.remove("b.parquet", deletion_vector=dv1)])
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    keys = {a.key for a in snap.add_files}
    assert keys == {("a.parquet", "udvTwo_______________@9"), ("b.parquet", None)}
    a = next(a for a in snap.add_files if a.path == "a.parquet")
    assert a.deletion_vector is not None
    assert (a.deletion_vector.storage_type, a.deletion_vector.offset, a.deletion_vector.cardinality) == (
        "u",
        9,
        1,
    )


def test_inline_dv_unique_id_has_no_offset(tmp_path: Path) -> None:
    inline = {
        "storageType": "i",
        "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L",
        "sizeInBytes": 40,
        "cardinality": 6,
    }
    start(tmp_path, lb.add("a.parquet", deletion_vector=inline))
    (a,) = read_snapshot(tmp_path, io=io_for(tmp_path)).add_files
    assert a.dv_unique_id == "i" + inline["pathOrInlineDv"]


def test_txn_latest_per_app_wins_even_when_lower(tmp_path: Path) -> None:
    b = start(tmp_path, lb.txn("app-a", 5), lb.txn("app-b", 1))
    b.commit(1, [lb.txn("app-a", 3)])  # the protocol does not require monotonic versions
    assert dict(read_snapshot(tmp_path, io=io_for(tmp_path)).txns) == {"app-a": 3, "app-b": 1}


def test_domain_metadata_latest_wins_and_removed_drops(tmp_path: Path) -> None:
    b = start(tmp_path, lb.domain("delta.rowTracking", '{"rowIdHighWaterMark":9}'), lb.domain("user.x", "1"))
    b.commit(
        1,
        [lb.domain("delta.rowTracking", '{"rowIdHighWaterMark":19}'), lb.domain("user.x", "1", removed=True)],
    )
    b.commit(2, [lb.domain("user.y", "2")])
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    assert dict(snap.domain_metadata) == {"delta.rowTracking": '{"rowIdHighWaterMark":19}', "user.y": "2"}
    assert dict(read_snapshot(tmp_path, version=0, io=io_for(tmp_path)).domain_metadata) == {
        "delta.rowTracking": '{"rowIdHighWaterMark":9}',
        "user.x": "1",
    }


def test_row_tracking_and_clustering_fields(tmp_path: Path) -> None:
    start(
        tmp_path,
        lb.add("a.parquet", base_row_id=100, default_row_commit_version=3, clustering_provider="liquid"),
    )
    (a,) = read_snapshot(tmp_path, io=io_for(tmp_path)).add_files
    assert (a.base_row_id, a.default_row_commit_version, a.clustering_provider) == (100, 3, "liquid")


def test_time_travel(tmp_path: Path) -> None:
    b = start(tmp_path, lb.add("a.parquet"))
    b.commit(1, [lb.add("b.parquet")])
    b.commit(2, [lb.remove("a.parquet")])
    assert paths(read_snapshot(tmp_path, version=0, io=io_for(tmp_path))) == {"a.parquet"}
    assert paths(read_snapshot(tmp_path, version=1, io=io_for(tmp_path))) == {"a.parquet", "b.parquet"}
    assert paths(read_snapshot(tmp_path, version=2, io=io_for(tmp_path))) == {"b.parquet"}


def test_in_commit_timestamp_of_the_snapshot_version(tmp_path: Path) -> None:
    b = lb.LogBuilder(tmp_path)
    b.commit(0, [lb.commit_info("CREATE", ict=1000), lb.protocol(), lb.metadata()])
    b.commit(1, [lb.commit_info("WRITE", ict=2000), lb.add("a.parquet")])
    b.classic_checkpoint(1, [lb.protocol(), lb.metadata(), lb.add("a.parquet")])
    assert (
        read_snapshot(tmp_path, io=io_for(tmp_path)).in_commit_timestamp == 2000
    )  # read from commit 1 despite the checkpoint
    assert read_snapshot(tmp_path, version=0, io=io_for(tmp_path)).in_commit_timestamp == 1000
    assert read_snapshot(tmp_path, io=io_for(tmp_path)).checkpoint_version == 1


def test_no_in_commit_timestamp_without_one(tmp_path: Path) -> None:
    start(tmp_path)
    assert read_snapshot(tmp_path, io=io_for(tmp_path)).in_commit_timestamp is None


# --- errors --------------------------------------------------------------------------------------


def test_missing_delta_log_is_table_read_error(tmp_path: Path) -> None:
    with pytest.raises(TableReadError, match="not a Delta table"):
        read_snapshot(tmp_path, io=io_for(tmp_path))


def test_empty_delta_log_is_table_read_error(tmp_path: Path) -> None:
    (tmp_path / "_delta_log").mkdir()
    (tmp_path / "_delta_log" / "_last_checkpoint").write_text('{"version": 3}')
    with pytest.raises(TableReadError, match="no commit or checkpoint"):
        read_snapshot(tmp_path, io=io_for(tmp_path))


def test_version_beyond_latest_is_table_read_error(tmp_path: Path) -> None:
    start(tmp_path)
    with pytest.raises(TableReadError, match="version 5 does not exist; the latest version is 0"):
        read_snapshot(tmp_path, version=5, io=io_for(tmp_path))
    with pytest.raises(TableReadError, match="invalid table version"):
        read_snapshot(tmp_path, version=-1, io=io_for(tmp_path))


def test_cleaned_up_version_is_table_read_error(tmp_path: Path) -> None:
    b = lb.LogBuilder(tmp_path)
    b.classic_checkpoint(5, [lb.protocol(), lb.metadata(), lb.add("a.parquet")])
    b.commit(5, [lb.add("a.parquet")])
    b.commit(6, [lb.add("b.parquet")])
    assert paths(read_snapshot(tmp_path, io=io_for(tmp_path))) == {"a.parquet", "b.parquet"}
    with pytest.raises(TableReadError, match="version 3 cannot be read"):
        read_snapshot(tmp_path, version=3, io=io_for(tmp_path))


def test_log_not_starting_at_zero_without_checkpoint_is_table_read_error(tmp_path: Path) -> None:
    b = lb.LogBuilder(tmp_path)
    b.commit(3, [lb.protocol(), lb.metadata()])
    with pytest.raises(TableReadError, match="no checkpoint at or below it"):
        read_snapshot(tmp_path, io=io_for(tmp_path))


def test_no_metadata_at_all_is_table_read_error(tmp_path: Path) -> None:
    b = lb.LogBuilder(tmp_path)
    b.raw("00000000000000000000.json", b'{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}\n{"metaDa')
    with pytest.raises(TableReadError, match="no metaData action survived"):
        read_snapshot(tmp_path, io=io_for(tmp_path))


def test_table_root_as_file_uri_and_string(tmp_path: Path) -> None:
    start(tmp_path, lb.add("a.parquet"))
    assert read_snapshot(f"file://{tmp_path}", io=io_for(f"file://{tmp_path}")).table_root == tmp_path
    assert read_snapshot(str(tmp_path), io=io_for(str(tmp_path))).version == 0


# --- damage --------------------------------------------------------------------------------------


def test_corrupt_line_is_a_finding_and_the_rest_is_read(tmp_path: Path) -> None:
    b = start(tmp_path, lb.add("a.parquet"))
    good = json.dumps(lb.add("c.parquet")).encode()
    b.raw("00000000000000000001.json", b'{"add":{"path":"b.parq\n' + good + b"\n[1,2]\n")
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    assert paths(snap) == {"a.parquet", "c.parquet"}
    corrupt = snap.findings_of(FindingCode.CORRUPT_LINE)
    assert [(f.file, f.line) for f in corrupt] == [
        ("_delta_log/00000000000000000001.json", 1),
        ("_delta_log/00000000000000000001.json", 3),
    ]


def test_truncated_last_line_is_reported_as_truncated(tmp_path: Path) -> None:
    b = start(tmp_path, lb.add("a.parquet"))
    full = json.dumps(lb.add("b.parquet")).encode()
    b.raw("00000000000000000001.json", json.dumps(lb.add("c.parquet")).encode() + b"\n" + full[:-7])
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    assert paths(snap) == {"a.parquet", "c.parquet"}
    (finding,) = snap.findings
    assert finding.code is FindingCode.CORRUPT_LINE
    assert "truncated" in finding.message and finding.line == 2


def test_invalid_actions_are_findings(tmp_path: Path) -> None:
    start(
        tmp_path,
        {"add": {"size": 3}},
        {"remove": {"path": 7}},
        {"txn": {"appId": "x"}},
        {"domainMetadata": {"configuration": "{}"}},
        {"add": "not an object"},
        lb.add("ok.parquet"),
    )
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    assert paths(snap) == {"ok.parquet"}
    assert codes(snap).count(FindingCode.INVALID_ACTION) == 5


DEEP = b"[" * 100_000 + b"]" * 100_000  # deeper than json.loads can recurse (3.13 decodes 5,000 levels)


def test_a_line_nested_too_deeply_is_a_corrupt_line(tmp_path: Path) -> None:
    b = start(tmp_path, lb.add("a.parquet"))
    b.raw("00000000000000000001.json", DEEP + b"\n" + json.dumps(lb.add("b.parquet")).encode() + b"\n")
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    assert paths(snap) == {"a.parquet", "b.parquet"}
    (finding,) = snap.findings
    assert finding.code is FindingCode.CORRUPT_LINE and finding.line == 1
    assert "nested too deeply" in finding.message


@pytest.mark.parametrize(
    "add",
    [
        {**lb.add("x.parquet")["add"], "size": float("inf")},
        {**lb.add("x.parquet")["add"], "modificationTime": float("-inf")},
        {**lb.add("x.parquet")["add"], "deletionVector": {**lb.dv("ab"), "offset": float("inf")}},
    ],
    ids=["size", "modification-time", "dv-offset"],
)
def test_an_add_with_an_infinite_number_is_an_invalid_action(tmp_path: Path, add: dict) -> None:
    start(tmp_path, lb.add("a.parquet"), {"add": add})  # json.dumps writes Infinity
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    assert paths(snap) == {"a.parquet"}
    assert codes(snap) == [FindingCode.INVALID_ACTION]


def test_stats_nested_too_deeply_are_unparseable(tmp_path: Path) -> None:
    start(tmp_path, lb.add("a.parquet", stats=DEEP.decode()))
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    assert snap.add_files[0].num_records is None
    assert codes(snap) == [FindingCode.UNPARSEABLE_STATS]


@pytest.mark.parametrize(
    "protocol",
    [
        {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": [{}], "writerFeatures": []},
        {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": True, "writerFeatures": []},
        {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": "columnMapping"},
        {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": [], "writerFeatures": [1]},
        {"minReaderVersion": float("inf"), "minWriterVersion": 7},
        {"minReaderVersion": 1, "minWriterVersion": float("nan")},
        {"minReaderVersion": [3], "minWriterVersion": 7},
    ],
    ids=[
        "feature-an-object",
        "features-a-bool",
        "features-a-string",
        "feature-a-number",
        "reader-version-infinite",
        "writer-version-nan",
        "reader-version-a-list",
    ],
)
def test_a_malformed_protocol_is_an_invalid_action_and_the_previous_one_stays(
    tmp_path: Path, protocol: dict
) -> None:
    b = start(tmp_path, lb.add("a.parquet"))
    b.commit(1, [{"protocol": protocol}, lb.add("b.parquet")])
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    assert snap.protocol == read_snapshot(tmp_path, version=0, io=io_for(tmp_path)).protocol
    assert paths(snap) == {"a.parquet", "b.parquet"}
    (finding,) = snap.findings
    assert finding.code is FindingCode.INVALID_ACTION and "protocol" in finding.message


def test_unparseable_stats_are_a_finding(tmp_path: Path) -> None:
    start(tmp_path, lb.add("a.parquet", stats="{not json"), lb.add("b.parquet", stats='{"minValues":{}}'))
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    assert {a.path: a.num_records for a in snap.add_files} == {"a.parquet": None, "b.parquet": None}
    assert codes(snap) == [FindingCode.UNPARSEABLE_STATS]


def test_missing_middle_commit_is_a_finding(tmp_path: Path) -> None:
    b = start(tmp_path, lb.add("a.parquet"))
    b.commit(2, [lb.add("c.parquet")])
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    assert paths(snap) == {"a.parquet", "c.parquet"}
    (finding,) = snap.findings
    assert finding.code is FindingCode.MISSING_COMMIT and "version 1 " in finding.message


def test_missing_commits_are_reported_as_ranges(tmp_path: Path) -> None:
    b = start(tmp_path, lb.add("a.parquet"))
    b.commit(3, [lb.add("b.parquet")])
    b.commit(5, [lb.add("c.parquet")])
    b.commit(10**12, [lb.commit_info()])  # a stray name: one range, found without walking to it
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    assert snap.version == 10**12 and paths(snap) == {"a.parquet", "b.parquet", "c.parquet"}
    assert [f.message.split(" missing")[0] for f in snap.findings] == [
        "versions 1..2",
        "version 4",
        f"versions 6..{10**12 - 1}",
    ]
    assert {f.code for f in snap.findings} == {FindingCode.MISSING_COMMIT}


@pytest.mark.parametrize("unreadable", [False, True], ids=["damaged", "unreadable"])
def test_a_compaction_claiming_a_huge_range_is_not_walked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unreadable: bool
) -> None:
    b = start(tmp_path, lb.add("a.parquet"))
    b.commit(1, [lb.add("b.parquet")])
    b.commit(10**12, [lb.commit_info()])
    b.raw(f"{1:020d}.{10**12 - 1:020d}.compacted.json", b'{"add":{"path":"c.parq\n')
    if unreadable:
        read = replay_module.read_json_actions

        def refuse(path: Path, display: str, *, io: FileIO) -> Any:
            if "compacted" in path.name:
                raise OSError("permission denied")
            return read(path, display, io=io)

        monkeypatch.setattr(replay_module, "read_json_actions", refuse)
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    if unreadable:  # what the commits still say is used, and the gaps are named as ranges
        assert paths(snap) == {"a.parquet", "b.parquet"}
        (finding,) = snap.findings
        assert finding.code is FindingCode.UNREADABLE_FILE
        assert f"versions 2..{10**12 - 1} have no commit file" in finding.message
    else:  # a damaged compaction whose commits are gone is read for what it holds
        assert paths(snap) == {"a.parquet"}
        assert codes(snap) == [FindingCode.CORRUPT_LINE]


# --- compaction files ----------------------------------------------------------------------------


def _log_with_compaction(root: Path) -> lb.LogBuilder:
    b = start(root, lb.add("f1"))
    b.commit(1, [lb.commit_info(), lb.add("f2"), lb.remove("f1")])
    b.commit(2, [lb.commit_info(), lb.add("f3"), lb.add("f4"), lb.txn("app", 4389)])
    b.commit(3, [lb.commit_info(), lb.remove("f3"), lb.txn("app", 4390)])
    b.commit(4, [lb.commit_info(), lb.add("f5")])
    b.compaction(1, 3, [lb.add("f2"), lb.add("f4"), lb.remove("f1"), lb.remove("f3"), lb.txn("app", 4390)])
    return b


def test_compaction_replaces_its_commits(tmp_path: Path) -> None:
    _log_with_compaction(tmp_path)
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    assert paths(snap) == {"f2", "f4", "f5"}
    assert dict(snap.txns) == {"app": 4390}
    assert snap.findings == ()


def test_missing_commit_covered_by_compaction(tmp_path: Path) -> None:
    b = _log_with_compaction(tmp_path)
    (b.log / "00000000000000000002.json").unlink()
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    assert paths(snap) == {"f2", "f4", "f5"}
    assert snap.findings == ()
    assert paths(read_snapshot(tmp_path, version=3, io=io_for(tmp_path))) == {
        "f2",
        "f4",
    }  # compaction ends at 3


def test_version_inside_a_compaction_without_its_commit_cannot_be_read(tmp_path: Path) -> None:
    b = _log_with_compaction(tmp_path)
    (b.log / "00000000000000000002.json").unlink()
    with pytest.raises(TableReadError, match="version 2 cannot be read"):
        read_snapshot(tmp_path, version=2, io=io_for(tmp_path))


def test_compaction_beyond_the_wanted_version_is_not_used(tmp_path: Path) -> None:
    _log_with_compaction(tmp_path)
    assert paths(read_snapshot(tmp_path, version=2, io=io_for(tmp_path))) == {"f2", "f3", "f4"}


def test_damaged_compaction_falls_back_to_the_commits(tmp_path: Path) -> None:
    b = _log_with_compaction(tmp_path)
    b.raw("00000000000000000001.00000000000000000003.compacted.json", b'{"add":{"path":"f2"}}\n{"add":')
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    assert paths(snap) == {"f2", "f4", "f5"}
    assert codes(snap) == [FindingCode.DAMAGED_COMPACTION]


# --- checkpoints ---------------------------------------------------------------------------------


def _checkpointed(root: Path) -> lb.LogBuilder:
    """Commits 0..3 and the same state as a checkpoint at 2: {a, b} at 2, {b, c} at 3."""
    b = start(root, lb.add("a.parquet"))
    b.commit(1, [lb.add("b.parquet"), lb.txn("app", 1)])
    b.commit(2, [lb.domain("user.d", "x")])
    b.commit(3, [lb.remove("a.parquet"), lb.add("c.parquet")])
    return b


CP_STATE = [
    lb.protocol(),
    lb.metadata(),
    lb.txn("app", 1),
    lb.domain("user.d", "x"),
    lb.add("a.parquet"),
    lb.add("b.parquet"),
    lb.remove("z.parquet"),
]


def _expect_state(snap: Snapshot, checkpoint_version: int | None) -> None:
    assert snap.version == 3
    assert paths(snap) == {"b.parquet", "c.parquet"}
    assert dict(snap.txns) == {"app": 1}
    assert dict(snap.domain_metadata) == {"user.d": "x"}
    assert snap.checkpoint_version == checkpoint_version


def test_classic_checkpoint_is_used(tmp_path: Path) -> None:
    b = _checkpointed(tmp_path)
    b.classic_checkpoint(2, CP_STATE)
    # prove the checkpoint is what is read: the commits before it are deleted
    for v in (0, 1):
        (b.log / f"{v:020d}.json").unlink()
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    _expect_state(snap, 2)
    assert snap.findings == ()


def test_multipart_checkpoint_is_used(tmp_path: Path) -> None:
    b = _checkpointed(tmp_path)
    b.multipart_checkpoint(2, [CP_STATE[:3], CP_STATE[3:5], CP_STATE[5:]])
    for v in (0, 1):
        (b.log / f"{v:020d}.json").unlink()
    _expect_state(read_snapshot(tmp_path, io=io_for(tmp_path)), 2)


def test_incomplete_multipart_checkpoint_is_skipped_with_a_finding(tmp_path: Path) -> None:
    b = _checkpointed(tmp_path)
    written = b.multipart_checkpoint(2, [CP_STATE[:3], CP_STATE[3:5], CP_STATE[5:]])
    written[1].unlink()
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    _expect_state(snap, None)
    (finding,) = snap.findings
    assert finding.code is FindingCode.INCOMPLETE_CHECKPOINT and "2 of 3 parts" in finding.message


def test_incomplete_newer_checkpoint_falls_back_to_older_complete_one(tmp_path: Path) -> None:
    b = _checkpointed(tmp_path)
    b.classic_checkpoint(
        1, [lb.protocol(), lb.metadata(), lb.txn("app", 1), lb.add("a.parquet"), lb.add("b.parquet")]
    )
    b.multipart_checkpoint(2, [CP_STATE[:3], CP_STATE[3:]])[0].unlink()
    (b.log / "00000000000000000000.json").unlink()
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    _expect_state(snap, 1)
    assert codes(snap) == [FindingCode.INCOMPLETE_CHECKPOINT]


@pytest.mark.parametrize("file_format", ["json", "parquet"])
@pytest.mark.parametrize("sidecars", [0, 2])
def test_v2_uuid_checkpoint(tmp_path: Path, file_format: str, sidecars: int) -> None:
    b = _checkpointed(tmp_path)
    non_file = [a for a in CP_STATE if "add" not in a and "remove" not in a]
    file_actions = [a for a in CP_STATE if "add" in a or "remove" in a]
    _, written = b.v2_checkpoint(2, non_file, file_actions, file_format=file_format, sidecars=sidecars)
    assert len(written) == sidecars
    for v in (0, 1):
        (b.log / f"{v:020d}.json").unlink()
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    _expect_state(snap, 2)
    assert snap.findings == ()


def test_v2_spec_classic_named_checkpoint_with_sidecars(tmp_path: Path) -> None:
    b = _checkpointed(tmp_path)
    non_file = [a for a in CP_STATE if "add" not in a and "remove" not in a]
    file_actions = [a for a in CP_STATE if "add" in a or "remove" in a]
    b.v2_checkpoint(2, non_file, file_actions, sidecars=2, classic_name=True)
    (b.log / "00000000000000000000.json").unlink()
    (b.log / "00000000000000000001.json").unlink()
    _expect_state(read_snapshot(tmp_path, io=io_for(tmp_path)), 2)


def test_missing_sidecar_falls_back_to_older_checkpoint_or_commits(tmp_path: Path) -> None:
    b = _checkpointed(tmp_path)
    non_file = [a for a in CP_STATE if "add" not in a and "remove" not in a]
    file_actions = [a for a in CP_STATE if "add" in a or "remove" in a]
    _, sidecars = b.v2_checkpoint(2, non_file, file_actions, sidecars=2)
    sidecars[0].unlink()
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    _expect_state(snap, None)  # replayed from version 0 instead
    (finding,) = snap.findings
    assert finding.code is FindingCode.UNREADABLE_SIDECAR


def test_a_sidecar_that_is_a_named_pipe_is_never_opened(tmp_path: Path) -> None:
    b = _checkpointed(tmp_path)
    non_file = [a for a in CP_STATE if "add" not in a and "remove" not in a]
    file_actions = [a for a in CP_STATE if "add" in a or "remove" in a]
    _, sidecars = b.v2_checkpoint(2, non_file, file_actions, sidecars=2)
    sidecars[0].unlink()
    os.mkfifo(sidecars[0])  # pyarrow would block opening it, in native code nothing interrupts
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    _expect_state(snap, None)
    (finding,) = snap.findings
    assert finding.code is FindingCode.UNREADABLE_SIDECAR and "named pipe" in finding.message


def test_a_last_checkpoint_that_is_a_named_pipe_is_never_opened(tmp_path: Path) -> None:
    b = _checkpointed(tmp_path)
    b.classic_checkpoint(2, CP_STATE)
    os.mkfifo(b.log / "_last_checkpoint")
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    _expect_state(snap, 2)
    (finding,) = snap.findings
    assert finding.code is FindingCode.UNREADABLE_LAST_CHECKPOINT and "named pipe" in finding.message


def test_log_files_that_are_not_regular_files_are_never_opened(tmp_path: Path) -> None:
    b = start(tmp_path, lb.add("a.parquet"))
    os.mkfifo(b.log / f"{1:020d}.json")  # not listed as a commit: reported as missing if needed
    (b.log / f"{2:020d}.json").mkdir()
    b.commit(3, [lb.add("d.parquet")])
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    assert paths(snap) == {"a.parquet", "d.parquet"}
    assert codes(snap) == [FindingCode.MISSING_COMMIT]
    # a file swapped for a pipe after the listing is refused when it is opened
    with pytest.raises(readers.NotRegularFileError, match="named pipe"):
        readers.read_json_actions(b.log / f"{1:020d}.json", "x", io=io_for(b.log))
    with pytest.raises(TableReadError, match="named pipe"):
        read_commit(tmp_path, 1, io=io_for(tmp_path))


def test_missing_sidecar_without_fallback_reads_what_is_left(tmp_path: Path) -> None:
    b = _checkpointed(tmp_path)
    non_file = [a for a in CP_STATE if "add" not in a and "remove" not in a]
    _, sidecars = b.v2_checkpoint(2, non_file, [lb.add("a.parquet"), lb.add("b.parquet")], sidecars=2)
    sidecars[0].unlink()  # holds a.parquet
    for v in (0, 1):
        (b.log / f"{v:020d}.json").unlink()
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    assert paths(snap) == {"b.parquet", "c.parquet"}
    assert codes(snap) == [FindingCode.UNREADABLE_SIDECAR]


def test_sidecar_path_outside_sidecars_dir_is_refused(tmp_path: Path) -> None:
    b = _checkpointed(tmp_path)
    b.raw(
        "00000000000000000002.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json",
        b"".join(
            json.dumps(a).encode() + b"\n"
            for a in [
                {"checkpointMetadata": {"version": 2}},
                lb.protocol(),
                lb.metadata(),
                {"sidecar": {"path": "../../../etc/passwd", "sizeInBytes": 1, "modificationTime": 0}},
            ]
        ),
    )
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    _expect_state(snap, None)
    assert codes(snap) == [FindingCode.UNREADABLE_SIDECAR]
    assert "not inside" in snap.findings[0].message


def test_corrupt_checkpoint_parquet_falls_back(tmp_path: Path) -> None:
    b = _checkpointed(tmp_path)
    b.classic_checkpoint(
        1, [lb.protocol(), lb.metadata(), lb.txn("app", 1), lb.add("a.parquet"), lb.add("b.parquet")]
    )
    cp2 = b.classic_checkpoint(2, CP_STATE)
    cp2.write_bytes(cp2.read_bytes()[:100])
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    _expect_state(snap, 1)
    assert codes(snap) == [FindingCode.UNREADABLE_CHECKPOINT]


def test_uuid_checkpoint_without_checkpoint_metadata_is_flagged_but_used(tmp_path: Path) -> None:
    b = _checkpointed(tmp_path)
    b.raw(
        "00000000000000000002.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json",
        b"".join(json.dumps(a).encode() + b"\n" for a in CP_STATE),
    )
    for v in (0, 1):
        (b.log / f"{v:020d}.json").unlink()
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    _expect_state(snap, 2)
    assert codes(snap) == [FindingCode.INVALID_CHECKPOINT]


def test_time_travel_never_uses_a_newer_checkpoint(tmp_path: Path) -> None:
    b = _checkpointed(tmp_path)
    b.classic_checkpoint(2, CP_STATE)
    snap = read_snapshot(tmp_path, version=1, io=io_for(tmp_path))
    assert (snap.checkpoint_version, paths(snap)) == (None, {"a.parquet", "b.parquet"})


# --- _last_checkpoint ----------------------------------------------------------------------------


def test_last_checkpoint_pointing_at_a_missing_checkpoint(tmp_path: Path) -> None:
    b = _checkpointed(tmp_path)
    b.classic_checkpoint(2, CP_STATE)
    b.last_checkpoint({"version": 3, "size": 7})
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    _expect_state(snap, 2)
    assert codes(snap) == [FindingCode.STALE_LAST_CHECKPOINT]


def test_last_checkpoint_older_than_the_newest_checkpoint_is_not_followed(tmp_path: Path) -> None:
    b = _checkpointed(tmp_path)
    b.classic_checkpoint(
        1, [lb.protocol(), lb.metadata(), lb.txn("app", 1), lb.add("a.parquet"), lb.add("b.parquet")]
    )
    b.classic_checkpoint(2, CP_STATE)
    b.last_checkpoint({"version": 1, "size": 5})
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    _expect_state(snap, 2)
    assert snap.findings == ()


def test_last_checkpoint_with_wrong_part_count(tmp_path: Path) -> None:
    b = _checkpointed(tmp_path)
    b.classic_checkpoint(2, CP_STATE)
    b.last_checkpoint({"version": 2, "size": 7, "parts": 3})
    assert codes(read_snapshot(tmp_path, io=io_for(tmp_path))) == [FindingCode.STALE_LAST_CHECKPOINT]


@pytest.mark.parametrize(
    "text", [b'{"version": 2, "si', b"[" * 5000 + b"]" * 5000], ids=["truncated", "nested-too-deeply"]
)
def test_unreadable_last_checkpoint(tmp_path: Path, text: bytes) -> None:
    b = _checkpointed(tmp_path)
    b.raw("_last_checkpoint", text)
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    _expect_state(snap, None)
    assert codes(snap) == [FindingCode.UNREADABLE_LAST_CHECKPOINT]


# --- paths ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad_path",
    ["../x.parquet", "/etc/passwd", "file:///tmp/x.parquet", "s3://bucket/key.parquet", "a/../../x.parquet"],
)
def test_add_paths_escaping_the_root_are_findings(tmp_path: Path, bad_path: str) -> None:
    start(tmp_path, lb.add("ok.parquet"), lb.add(bad_path))
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    assert paths(snap) == {"ok.parquet", bad_path}  # still part of the table state
    (finding,) = snap.findings
    assert finding.code is FindingCode.PATH_OUTSIDE_TABLE and bad_path in finding.message
    bad = next(a for a in snap.add_files if a.path == bad_path)
    assert snap.data_path(bad) is None


def test_absolute_dv_path_outside_the_root_is_a_finding(tmp_path: Path) -> None:
    outside = {
        "storageType": "p",
        "pathOrInlineDv": "s3://other/dv.bin",
        "offset": 1,
        "sizeInBytes": 4,
        "cardinality": 1,
    }
    start(tmp_path, lb.add("a.parquet", deletion_vector=outside))
    assert codes(read_snapshot(tmp_path, io=io_for(tmp_path))) == [FindingCode.PATH_OUTSIDE_TABLE]


def test_url_encoded_paths_with_spaces_and_unicode(tmp_path: Path) -> None:
    start(tmp_path, lb.add("p=a%20b/part%20one.parquet"), lb.add("p=na%C3%AFve%20%C3%BC/x.parquet"))
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    assert snap.findings == ()
    assert {snap.data_path(a) for a in snap.add_files} == {
        tmp_path / "p=a b" / "part one.parquet",
        tmp_path / "p=naïve ü" / "x.parquet",
    }


def test_absolute_path_inside_the_root_is_accepted(tmp_path: Path) -> None:
    start(tmp_path, lb.add(f"file://{tmp_path}/p%3D1/a.parquet"))
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    assert snap.findings == ()
    assert snap.data_path(snap.add_files[0]) == tmp_path / "p=1" / "a.parquet"


def test_catalog_managed_table_is_flagged(tmp_path: Path) -> None:
    start(tmp_path)
    b = lb.LogBuilder(tmp_path)
    b.commit(1, [lb.protocol(3, 7, ["catalogManaged"], ["catalogManaged"])])
    assert codes(read_snapshot(tmp_path, io=io_for(tmp_path))) == [FindingCode.CATALOG_MANAGED]


# --- list_versions / read_commit -----------------------------------------------------------------


def test_list_versions_and_read_commit(tmp_path: Path) -> None:
    b = _log_with_compaction(tmp_path)
    (b.log / "00000000000000000002.json").unlink()
    assert list_versions(tmp_path, io=io_for(tmp_path)) == [0, 1, 3, 4]
    actions = read_commit(tmp_path, 1, io=io_for(tmp_path))
    assert actions == [lb.commit_info(), lb.add("f2"), lb.remove("f1")]


def test_read_commit_errors(tmp_path: Path) -> None:
    with pytest.raises(TableReadError, match="not a Delta table"):
        read_commit(tmp_path, 0, io=io_for(tmp_path))
    b = start(tmp_path)
    with pytest.raises(TableReadError, match="commit 4 does not exist"):
        read_commit(tmp_path, 4, io=io_for(tmp_path))
    b.raw("00000000000000000001.json", b'{"add":\n')
    with pytest.raises(TableReadError, match="line 1 is not valid JSON"):
        read_commit(tmp_path, 1, io=io_for(tmp_path))
    with pytest.raises(TableReadError, match="not a Delta table"):
        list_versions(tmp_path / "missing", io=io_for(tmp_path / "missing"))


def test_reading_does_not_modify_the_log(tmp_path: Path) -> None:
    b = _checkpointed(tmp_path)
    b.classic_checkpoint(2, CP_STATE)
    before = {p.name: p.read_bytes() for p in b.log.iterdir()}
    read_snapshot(tmp_path, io=io_for(tmp_path))
    assert {p.name: p.read_bytes() for p in b.log.iterdir()} == before
