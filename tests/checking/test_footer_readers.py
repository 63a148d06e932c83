"""Where footers are read: this process's threads, or a Spark session's executors, with the same facts.

The unit tests run the executor side (``read_slice``) and the driver's side (``unpack``) in this
process, through pickle as Spark sends them; the integration test runs the same job on the shared
session's executors (local[2]); tests/guard/test_cluster.py runs it on a standalone cluster.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from icecompat_writer.checking.check import check_table
from icecompat_writer.cli.main import main
from icecompat_writer.deltalog import read_snapshot
from icecompat_writer.errors import SessionConfigError
from icecompat_writer.evidence.file_reads import (
    FooterJob,
    footer_reader,
    footers_read_by,
    read_in_threads,
    reads_here,
)
from icecompat_writer.evidence.live_files import footer_job, snapshot_facts
from icecompat_writer.jvm.footers import (
    DEFAULT_THRESHOLD,
    EXECUTORS_KEY,
    JOB_GROUP,
    THRESHOLD_KEY,
    ExecutorFooterReader,
    PinnedIO,
    parse_mode,
    parse_threshold,
    read_slice,
    unpack,
    use_executors,
)
from icecompat_writer.storage import LocalFileIO, ObjectStoreFileIO, StoreOptions, io_for, parse_location
from tests.cli.synthetic import build_table, stats
from tests.deltalog import logbuilder as lb


def _mixed_table(root: Path) -> Path:
    """Five good files and bad ones of every kind: missing, not Parquet, a directory."""
    extra = [
        lb.add("gone.parquet", stats=stats(3), size=500),
        lb.add("garbage.parquet", stats=stats(3), size=12),
        lb.add("adir.parquet", stats=stats(3), size=0),
    ]
    build_table(root, "writer-v1", files=5, extra_adds=extra)
    (root / "garbage.parquet").write_bytes(b"not parquet!")
    (root / "adir.parquet").mkdir()
    return root


def _job(root: Path) -> FooterJob:
    snapshot = read_snapshot(root, io=io_for(root))
    return footer_job(snapshot, snapshot.add_files)


# --- the choice: setting and threshold ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "files", "remote", "expected"),
    [
        ("auto", 0, True, False),
        ("auto", DEFAULT_THRESHOLD, True, False),
        ("auto", DEFAULT_THRESHOLD + 1, True, True),
        ("auto", 10_000_000, False, False),  # a local table: the driver's disk, no latency to hide
        ("true", 1, True, True),
        ("true", 1, False, True),
        ("false", 10_000_000, True, False),
    ],
)
def test_auto_sends_only_object_store_jobs_above_the_threshold(
    mode: str, files: int, remote: bool, expected: bool
) -> None:
    assert use_executors(mode, DEFAULT_THRESHOLD, files, remote) is expected


def test_settings_parse_and_malformed_ones_are_refused_naming_the_key() -> None:
    assert parse_mode(None) == parse_mode(" ") == "auto"
    assert parse_mode(" TRUE ") == "true"
    assert parse_threshold(None) == DEFAULT_THRESHOLD
    assert parse_threshold("2_000") == 2000
    with pytest.raises(SessionConfigError, match=EXECUTORS_KEY):
        parse_mode("yes")
    with pytest.raises(SessionConfigError, match=THRESHOLD_KEY):
        parse_threshold("-1")
    with pytest.raises(SessionConfigError, match=THRESHOLD_KEY):
        parse_threshold("many")


class _Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)


class _ConnectLike:
    """What a Spark Connect session offers here: settings, and no SparkContext."""

    def __init__(self, values: dict[str, str]) -> None:
        self.conf = _Conf(values)

    @property
    def sparkContext(self) -> Any:
        raise RuntimeError("Spark Connect has no SparkContext")


def test_the_session_setting_and_the_flag_choose_and_a_session_without_executors_reads_here() -> None:
    session = _ConnectLike({EXECUTORS_KEY: "auto", THRESHOLD_KEY: "3"})
    reader = ExecutorFooterReader.from_session(session)
    assert (reader.mode, reader.threshold) == ("auto", "3")
    assert ExecutorFooterReader.from_session(session, "true").mode == "true"  # the flag wins
    assert ExecutorFooterReader.from_session(_ConnectLike({})).mode is None  # unset: auto
    # above the threshold, but no SparkContext to run a job on: read in this process
    assert not reader.on_executors(4) and not reader.on_executors(3)
    assert reads_here(reader, 4, True) and reads_here(read_in_threads, 10_000_000, True)
    with pytest.raises(SessionConfigError, match=EXECUTORS_KEY):
        ExecutorFooterReader(session, "sometimes").on_executors(1)


def test_a_reader_installed_for_a_block_is_the_default_there_only(tmp_path: Path) -> None:
    seen: list[int] = []

    def counting(job: FooterJob) -> Any:
        seen.append(len(job.files))
        return read_in_threads(job)

    root = _mixed_table(tmp_path / "t")
    assert footer_reader() is read_in_threads
    with footers_read_by(counting):
        assert footer_reader() is counting
        facts = snapshot_facts(read_snapshot(root, io=io_for(root)))
    assert footer_reader() is read_in_threads and seen == [8]
    assert facts == snapshot_facts(read_snapshot(root, io=io_for(root)))


# --- the executor side and the driver's, through pickle -----------------------------------------------


def test_slices_read_as_tasks_give_exactly_the_reads_of_the_driver(tmp_path: Path) -> None:
    root = _mixed_table(tmp_path / "t")
    job = _job(root)
    here = list(read_in_threads(job))
    shipped = pickle.loads(pickle.dumps(job.with_files(())))
    files = list(job.files)
    slices = [
        pickle.loads(pickle.dumps(next(read_slice(shipped, files[i : i + 3]))))
        for i in range(0, len(files), 3)
    ]
    there = list(unpack(slices))
    assert there == here
    assert [type(f.key_value_metadata) for f, _ in there if f is not None] == [
        type(f.key_value_metadata) for f, _ in here if f is not None
    ]
    assert sum(f is not None for f, _ in here) == 5 and sum(p is not None for _, p in here) == 3
    # one schema tree for the table, however many slices it came in
    assert len({id(f.fields) for f, _ in there if f is not None}) == 1


def test_store_options_travel_resolved_and_are_never_printed() -> None:
    root = parse_location("s3a://lake/orders")
    keys = {"fs.s3a.access.key": "AKIAEXAMPLE", "fs.s3a.secret.key": "s3cr3t", "fs.s3a.endpoint": "h:1"}
    io = ObjectStoreFileIO(keys)
    pinned = pickle.loads(pickle.dumps(PinnedIO.of(io, root)))
    assert isinstance(pinned.options(root), StoreOptions)
    assert pinned.options(root / "a/b.parquet").as_dict() == io.options(root).as_dict()
    other = parse_location("s3a://elsewhere/x")
    assert pinned.options(other).as_dict() != io.options(other).as_dict()  # not this table's bucket
    assert "s3cr3t" not in repr(pinned) and "AKIA" not in repr(pinned)
    assert pinned.options(other).as_dict() == ObjectStoreFileIO({}).options(other).as_dict()
    assert isinstance(PinnedIO.of(io, Path("/tmp/t")), LocalFileIO)


# --- on the shared session's executors ------------------------------------------------------------------


def test_executors_read_the_same_facts_as_the_driver(spark: Any, tmp_path: Path) -> None:
    """A table delta-spark wrote, and the bad files of a synthetic one: both readers, equal facts."""
    written = str(tmp_path / "written")
    spark.range(0, 300, 1, 3).selectExpr("id", "CAST(id % 3 AS STRING) AS k").write.format("delta").save(
        written
    )
    mixed = _mixed_table(tmp_path / "mixed")
    sc = spark.sparkContext
    reader = ExecutorFooterReader(spark, "true")
    for root in (Path(written), mixed):
        before = set(sc.statusTracker().getJobIdsForGroup(JOB_GROUP))
        snapshot = read_snapshot(root, io=io_for(root))
        on_executors = snapshot_facts(snapshot, reader=reader, footer_counts=True)
        jobs = set(sc.statusTracker().getJobIdsForGroup(JOB_GROUP)) - before
        assert len(jobs) == 1  # one Spark job read them
        stages = [s for j in jobs for s in sc.statusTracker().getJobInfo(j).stageIds]
        tasks = sum(sc.statusTracker().getStageInfo(s).numCompletedTasks for s in stages)
        assert tasks == min(len(snapshot.add_files), sc.defaultParallelism * 4)
        assert on_executors == snapshot_facts(snapshot, reader=read_in_threads, footer_counts=True)
        assert on_executors.files_read >= 3
    assert check_table(mixed, footer_reader=reader) == check_table(mixed)
    auto = ExecutorFooterReader(spark, "auto", 1_000)
    assert not auto.on_executors(1_000) and auto.on_executors(1_001)
    assert not auto.on_executors(1_001, remote=False)
    assert reads_here(auto, 1_001, False) and not reads_here(auto, 1_001, True)
    assert not reads_here(reader, 1, False)  # true: local tables too


def test_the_executors_flag_reads_on_the_running_session_for_check_and_iceberg(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = build_table(tmp_path / "t", "writer-v1", files=3).root
    tracker = spark.sparkContext.statusTracker()
    docs = []
    for command in ("check", "iceberg"):
        before = set(tracker.getJobIdsForGroup(JOB_GROUP))
        code = main([command, str(root), "--executors", "--json"])
        out = capsys.readouterr()
        assert code == 0, out.err
        assert len(set(tracker.getJobIdsForGroup(JOB_GROUP)) - before) == 1  # one job read the footers
        docs.append(json.loads(out.out))
    assert docs[0]["compliant"] and docs[0]["files"]["footers_read"] == 3
    assert docs[1]["written"] and docs[1]["delta_version"] == 0
    assert not spark.sparkContext._jsc.sc().isStopped()  # the running session was used, not stopped


def test_executors_reach_s3_with_the_store_settings_of_the_driver(
    spark: Any, s3_server: Any, tmp_path: Path
) -> None:
    """The endpoint and keys exist only in the driver's FileIO: they reach the executors in the task."""
    root = _mixed_table(tmp_path / "t")
    bucket = s3_server.new_bucket("footers")
    s3_server.upload_dir(root, bucket, "t")
    io = ObjectStoreFileIO(
        {
            "fs.s3a.endpoint": s3_server.endpoint,
            "fs.s3a.access.key": s3_server.access_key,
            "fs.s3a.secret.key": s3_server.secret_key,
            "fs.s3a.endpoint.region": s3_server.region,
            "fs.s3a.path.style.access": "true",
            "fs.s3a.connection.ssl.enabled": "false",
        }
    )
    uri = f"s3a://{bucket}/t"
    reader = ExecutorFooterReader(spark, "true")
    on_executors = check_table(uri, io=io, footer_reader=reader)
    assert reader.tasks == min(8, spark.sparkContext.defaultParallelism * 4)
    assert on_executors == check_table(uri, io=io)
    assert on_executors.files_checked == 5 and len(on_executors.findings) == 3
