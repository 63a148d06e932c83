"""Time ``check_table(path, files="none")`` against delta-spark loading the same snapshot.

Not a test: run ``.venv/bin/python bench/bench_checker.py [--sizes 1000,10000,100000] [--runs 5]``.

For each size, a synthetic table log is built in a temporary directory (no data files: ``files="none"``
never opens one, and delta-spark does not open data files to list them): a classic checkpoint at
version 10 holding a compliant IcebergCompatV3 protocol and metadata (planned by ``plan("v3", ...)``)
and all but 27 of the AddFiles, then three JSON commits of ten AddFiles and one RemoveFile each, and
``_last_checkpoint``, as a table looks after log cleanup. Live AddFiles: exactly the size.

Both sides run in this one process with a warm JVM: each workload runs once untimed per size, then
``--runs`` timed rounds interleave the three workloads (checker, delta-spark ``inputFiles()``,
delta-spark ``DeltaLog.forTable(...).unsafeVolatileSnapshot().allFiles().count()`` through py4j), with
``DeltaLog.clearCache()`` before each delta-spark run so that every run rebuilds the snapshot instead of
returning a cached one. The table printed shows medians and the ratio of the checker's median to the
faster delta-spark median; the target is a ratio of at most 0.20 at 100,000 AddFiles.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from icecompat_writer.checking.check import check_table  # noqa: E402
from icecompat_writer.deltalog.actions import Metadata  # noqa: E402
from icecompat_writer.planning import plan  # noqa: E402
from tests.cli.synthetic import LOGICAL_SCHEMA  # noqa: E402
from tests.deltalog import logbuilder as lb  # noqa: E402

CHECKPOINT_VERSION = 10
COMMITS_AFTER = 3
ADDS_PER_COMMIT = 10
ROWS_PER_FILE = 1000
STATS = (
    '{"numRecords":1000,"minValues":{"col-1":0,"col-2":"a"},"maxValues":{"col-1":999,"col-2":"z"},'
    '"nullCount":{"col-1":0,"col-2":0,"col-3":0}}'
)


def compliant_state() -> tuple[dict[str, Any], dict[str, Any]]:
    """A v3 protocol and metadata exactly as a compat write would commit them."""
    logical = Metadata(
        schema_string=json.dumps(LOGICAL_SCHEMA, separators=(",", ":")),
        id="bench-0000-0000-0000-000000000000",
        created_time=1_700_000_000_000,
    )
    planned = plan("v3", logical)
    return planned.protocol.to_json(), planned.metadata.to_json()


def _add(i: int, version: int, size: int | None = None) -> dict[str, Any]:
    action = lb.add(
        data_path(i),
        stats=STATS,
        size=1_048_576 + i if size is None else size,
        base_row_id=i * ROWS_PER_FILE,
        default_row_commit_version=version,
    )
    return action


def data_path(i: int) -> str:
    """The log path of the i-th synthetic data file (256 subdirectories, as random prefixes spread them)."""
    return f"{i % 256:02x}/part-{i:06d}-0d0c6b1e-6c6f-4a8e-9a51-2f2b0a1c3d4e-c000.snappy.parquet"


def build(root: Path, live: int, *, with_data: bool = False) -> None:
    """The synthetic table log of ``live`` AddFiles (see the module docstring).

    ``with_data`` also puts a real, compliant Parquet file of ``ROWS_PER_FILE`` rows behind every live
    AddFile, for readers that open footers (the Iceberg emitter does): one file per subdirectory,
    hard-linked under each name that directory holds, so 100,000 files cost 256 files of disk.
    """
    protocol, metadata = compliant_state()
    in_checkpoint = live - COMMITS_AFTER * ADDS_PER_COMMIT + COMMITS_AFTER
    size: int | None = None
    if with_data:
        size = _write_templates(root, metadata)
    adds = [_add(i, CHECKPOINT_VERSION, size) for i in range(in_checkpoint)]
    b = lb.LogBuilder(root)
    b.classic_checkpoint(CHECKPOINT_VERSION, [{"protocol": protocol}, {"metaData": metadata}, *adds])
    b.last_checkpoint({"version": CHECKPOINT_VERSION, "size": in_checkpoint + 2})
    next_id = in_checkpoint
    for c in range(COMMITS_AFTER):
        version = CHECKPOINT_VERSION + 1 + c
        new = [_add(next_id + k, version, size) for k in range(ADDS_PER_COMMIT)]
        next_id += ADDS_PER_COMMIT
        b.commit(version, [lb.commit_info(), lb.remove(adds[c]["add"]["path"]), *new])
    if with_data:
        for i in range(next_id):
            target = root / data_path(i)
            if not target.exists():
                os.link(root / _template_path(i), target)


def _template_path(i: int) -> str:
    return f"{i % 256:02x}/template.parquet"


def _write_templates(root: Path, metadata: dict[str, Any]) -> int:
    """One compliant data file per subdirectory (hard links per inode are limited); returns its size.

    Every template holds the same rows, so the file is written once and its bytes copied into the
    other subdirectories: the same 256 files as writing each, without 255 more Parquet encodings.
    """
    from tests.cli.synthetic import write_data_file

    first = root / _template_path(0)
    size = write_data_file(first, metadata, 0, ROWS_PER_FILE)
    content = first.read_bytes()
    for d in range(1, 256):
        path = root / _template_path(d)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    return size


def median_of(samples: list[float]) -> float:
    return statistics.median(samples)


@dataclass(frozen=True)
class CheckerRow:
    """Medians (s) for one log size: the checker and both delta-spark ways of listing the snapshot."""

    size: int
    checker_s: float
    input_files_s: float
    all_files_s: float
    build_s: float

    @property
    def fastest_spark_s(self) -> float:
        return min(self.input_files_s, self.all_files_s)

    @property
    def ratio(self) -> float:
        """The checker's median over the faster delta-spark median (the target is <= 0.20 at 100,000)."""
        return self.checker_s / self.fastest_spark_s


def workloads(spark: Any) -> dict[str, Callable[[Path], int]]:
    """The three timed workloads; each returns the live file count it saw."""
    jvm = spark._jvm
    delta_log = jvm.org.apache.spark.sql.delta.DeltaLog

    def checker(path: Path) -> int:
        report = check_table(path, files="none")
        assert report.profile == "v3" and report.compliant, report.render_text()
        return report.files_total

    def spark_input_files(path: Path) -> int:
        delta_log.clearCache()
        return len(spark.read.format("delta").load(str(path)).inputFiles())

    def spark_all_files(path: Path) -> int:
        delta_log.clearCache()
        snapshot = delta_log.forTable(spark._jsparkSession, str(path)).unsafeVolatileSnapshot()
        return int(snapshot.allFiles().count())

    return {"checker": checker, "inputFiles": spark_input_files, "allFiles.count": spark_all_files}


def measure(
    spark: Any,
    sizes: list[int],
    runs: int,
    progress: Callable[[str], None] | None = None,
    warmup: int = 3,
) -> list[CheckerRow]:
    """Warm the JVM (``warmup`` rounds), then per size one untimed round and ``runs`` timed rounds.

    ``warmup=0``: neither the JVM warm-up nor the untimed round per size (the first timed round is cold).
    """
    say = progress or (lambda _msg: None)
    work = workloads(spark)
    # Warm the JVM (classes, JIT, Spark's planner) on a small table before anything is timed.
    if warmup:
        say(f"checker: JVM warm-up, {warmup} round(s) on a 500-AddFile table")
        with tempfile.TemporaryDirectory(prefix="bench_checker_warm_") as tmp:
            build(Path(tmp), 500)
            for fn in work.values():
                for _ in range(warmup):
                    fn(Path(tmp))

    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_checker_") as tmp:
        for size in sizes:
            root = Path(tmp) / f"t{size}"
            start = time.perf_counter()
            build(root, size)
            built = time.perf_counter() - start
            samples: dict[str, list[float]] = {name: [] for name in work}
            if warmup:
                say(f"checker: {size:,} AddFiles, warm-up round")
                for name, fn in work.items():  # untimed run per size: caches, page cache, JIT
                    assert fn(root) == size, f"{name} counted the wrong number of files"
            for run in range(runs):
                say(f"checker: {size:,} AddFiles, run {run + 1}/{runs}")
                for name, fn in work.items():
                    t0 = time.perf_counter()
                    count = fn(root)
                    samples[name].append(time.perf_counter() - t0)
                    assert count == size, f"{name} counted {count}, expected {size}"
            med = {name: median_of(s) for name, s in samples.items()}
            rows.append(CheckerRow(size, med["checker"], med["inputFiles"], med["allFiles.count"], built))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    import icecompat_writer

    spark = icecompat_writer.session("bench-checker")
    rows = measure(spark, sizes, args.runs)
    spark.stop()

    print(f"date: {dt.datetime.now().astimezone().isoformat(timespec='seconds')}")
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}, "
        f"Python {platform.python_version()}"
    )
    print(
        f"median of {args.runs} interleaved runs, JVM warm, "
        "DeltaLog cache cleared before each delta-spark run"
    )
    print()
    print(
        "| AddFiles | checker (files=none) | delta-spark inputFiles() "
        "| delta-spark allFiles().count() | ratio |"
    )
    print("| ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(
            f"| {r.size:,} | {r.checker_s:.3f} s | {r.input_files_s:.3f} s | "
            f"{r.all_files_s:.3f} s | {r.ratio:.2f} |"
        )
    print()
    print("ratio: checker median / the faster delta-spark median; target at 100,000: <= 0.20")
    last = rows[-1]
    if last.size >= 100_000:
        print(
            f"target {'met' if last.ratio <= 0.20 else 'MISSED'} at {last.size:,} AddFiles "
            f"(ratio {last.ratio:.2f})"
        )


if __name__ == "__main__":
    main()
