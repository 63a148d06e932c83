"""What a compliant write costs: ``compat_write`` against delta-spark's own compat write and a plain one.

Used by ``bench.run`` (``bin/bench``). For each row count and layout (partitioned or not) the same
nested DataFrame is written by every arm of the profiles measured, interleaved in rounds (one untimed
warm-up round for cells up to 1,000,000 rows, then the timed ones), each run into a fresh table
directory that is deleted afterwards:

* ``compat_write <profile>``: ``compat_write(df, path, profile=...)``, everything included (planning,
  the held-open transaction, the data files, the footer verification of every new file, the commit);
* ``delta-spark <equivalent>``: ``df.write.format("delta")`` with the table properties and protocol
  features that ``plan(profile, ...)`` produces for this schema set by hand as writer options, so this
  arm is delta-spark's own compat write, the floor our write is compared with. For ``writer-v1`` the
  nearest native equivalent is IcebergCompatV2 with ``id`` column mapping: IcebergWriterCompatV1 is
  not a delta-spark feature (the shim's agent only teaches it to accept it);
* ``plain delta``: ``df.write.format("delta")`` without any of it, shared by all profiles.

The DataFrame is not cached: ``spark.range`` with a fixed number of partitions plus column
expressions is generated identically by every arm (a cached 10,000,000-row nested frame would not fit
the 1 GB local driver), so the generation cost is the same in every arm and the number of write tasks,
hence of files, is fixed without a shuffle. After every run the data files the commit added are counted
from the ``_delta_log``; every arm of a row count and layout must have written the same number.
"""

from __future__ import annotations

import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icecompat_writer.deltalog.actions import Metadata
from icecompat_writer.planning import plan

PLAIN = "plain delta"
# The table properties the planner sets that delta-spark computes itself, and the profile-only
# properties and features delta-spark has no native counterpart for.
NOT_SET_BY_HAND = {"delta.columnMapping.maxColumnId", "delta.enableIcebergWriterCompatV1"}
NON_NATIVE_FEATURES = {"icebergWriterCompatV1", "icebergWriterCompatV3"}
PARTITION_COLUMN = "part"
PARTITION_VALUES = 4
# Cells above this size run no warm-up round of their own: the JVM is warm from the smaller cells
# (the same arms, the same code paths), and a warm-up round of 10,000,000-row writes would add a
# fifth of the full run's time.
WARMUP_UP_TO_ROWS = 1_000_000


def nested_frame(spark: Any, rows: int, tasks: int) -> Any:
    """``rows`` rows of a nested schema (struct, array, map) in exactly ``min(tasks, rows)`` partitions."""
    from pyspark.sql import functions as F

    col = F.col("id")
    return spark.range(0, rows, 1, max(1, min(tasks, rows))).select(
        col,
        (col % PARTITION_VALUES).cast("int").alias(PARTITION_COLUMN),
        F.concat(F.lit("name-"), col.cast("string")).alias("name"),
        F.struct((col * 2).alias("a"), (col % 1000).cast("string").alias("b")).alias("s"),
        F.array(col, col + 1, col + 2).alias("arr"),
        F.create_map(F.concat(F.lit("k"), (col % 10).cast("string")), col.cast("double")).alias("m"),
    )


def native_options(profile: str, schema_json: str) -> dict[str, str]:
    """The writer options that make delta-spark commit what the planner plans for ``profile``.

    Taken from ``plan(profile, ...)`` itself (its configuration and its protocol's features), minus
    what delta-spark computes on its own (``maxColumnId``) and what it has no native feature for.
    """
    planned = plan(profile, Metadata(schema_string=schema_json, id="bench"))
    options = {k: v for k, v in planned.metadata.configuration.items() if k not in NOT_SET_BY_HAND}
    proto = planned.protocol
    features = set(proto.reader_features or ()) | set(proto.writer_features or ())
    for feature in sorted(features - NON_NATIVE_FEATURES):
        options[f"delta.feature.{feature}"] = "supported"
    return options


def native_label(options: dict[str, str]) -> str:
    """A short name for a hand-set compat arm: the IcebergCompat version and the mapping mode."""
    version = next((k.removeprefix("delta.enable") for k in options if "IcebergCompat" in k), "compat")
    return f"delta-spark {version} ({options.get('delta.columnMapping.mode', 'none')} mapping)"


def files_added(table: Path) -> int:
    """Data files added by the table's commits, counted from the JSON commits of ``_delta_log``."""
    count = 0
    for commit in sorted((table / "_delta_log").glob("*.json")):
        for line in commit.read_text(encoding="utf-8").splitlines():
            if line.strip() and "add" in json.loads(line):
                count += 1
    return count


@dataclass
class WriteCell:
    """One row count and layout: every arm's samples (s) and the file counts each run wrote."""

    rows: int
    partitioned: bool
    samples: dict[str, list[float]] = field(default_factory=dict)
    files: dict[str, set[int]] = field(default_factory=dict)

    def median(self, arm: str) -> float:
        return statistics.median(self.samples[arm])

    @property
    def arms(self) -> list[str]:
        return list(self.samples)

    @property
    def file_count(self) -> int:
        """The one file count every arm wrote (``equal_files`` checks there is one)."""
        counts = set().union(*self.files.values())
        return next(iter(counts))

    @property
    def equal_files(self) -> bool:
        return len(set().union(*self.files.values())) == 1


@dataclass
class WriteResults:
    """Everything the write section reports."""

    profiles: list[str]
    labels: dict[str, tuple[str, str]]  # profile -> (compat arm, hand-set arm)
    options: dict[str, dict[str, str]]  # profile -> the hand-set writer options
    cells: list[WriteCell]
    runs: int
    tasks: int


def measure(
    spark: Any,
    sizes: list[int],
    runs: int,
    profiles: list[str],
    *,
    tasks: int = 4,
    workdir: Path | None = None,
    progress: Callable[[str], None] | None = None,
    warmup: bool = True,
) -> WriteResults:
    """Time every arm for every size and layout: a warm-up round, then ``runs`` interleaved rounds.

    ``warmup=False``: no warm-up round in any cell (the first timed round pays the cold JVM).
    """
    from icecompat_writer import compat_write

    say = progress or (lambda _msg: None)
    schema_json = nested_frame(spark, 1, 1).schema.json()
    options = {p: native_options(p, schema_json) for p in profiles}
    labels = {p: (f"compat_write {p}", native_label(options[p])) for p in profiles}

    def arms(df: Any, parts: list[str] | None) -> dict[str, Callable[[Path], None]]:
        def compat(profile: str) -> Callable[[Path], None]:
            def write(path: Path) -> None:
                compat_write(df, str(path), profile=profile, partition_by=parts)

            return write

        def native(opts: dict[str, str] | None) -> Callable[[Path], None]:
            def write(path: Path) -> None:
                writer = df.write.format("delta").options(**(opts or {}))
                if parts:
                    writer = writer.partitionBy(*parts)
                writer.save(str(path))

            return write

        out: dict[str, Callable[[Path], None]] = {}
        for p in profiles:
            out[labels[p][0]] = compat(p)
            out[labels[p][1]] = native(options[p])
        out[PLAIN] = native(None)
        return out

    cells = []
    base = Path(tempfile.mkdtemp(prefix="bench_write_", dir=workdir))
    try:
        for rows in sizes:
            for partitioned in (False, True):
                df = nested_frame(spark, rows, tasks)
                parts = [PARTITION_COLUMN] if partitioned else None
                work = arms(df, parts)
                cell = WriteCell(rows, partitioned, {a: [] for a in work}, {a: set() for a in work})
                layout = "partitioned" if partitioned else "unpartitioned"
                first = 0 if warmup and rows <= WARMUP_UP_TO_ROWS else 1
                for round_ in range(first, runs + 1):
                    untimed = round_ == 0
                    say(
                        f"write: {rows:,} rows {layout}, "
                        + ("warm-up round" if untimed else f"run {round_}/{runs}")
                    )
                    for index, (arm, fn) in enumerate(work.items()):
                        path = base / f"t{rows}_{int(partitioned)}_{round_}_{index}"
                        t0 = time.perf_counter()
                        fn(path)
                        elapsed = time.perf_counter() - t0
                        cell.files[arm].add(files_added(path))
                        if not untimed:
                            cell.samples[arm].append(elapsed)
                        shutil.rmtree(path)
                assert cell.equal_files, f"arms wrote different file counts: {cell.files}"
                cells.append(cell)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return WriteResults(profiles, labels, options, cells, runs, tasks)


def profile_compat_write(
    spark: Any, profile: str, rows: int, tasks: int, top: int = 15, *, warmup: bool = True
) -> str:
    """cProfile of one ``compat_write`` (Python side): the functions with the most cumulative time,
    after one unprofiled write of the same frame (``warmup=False``: none).

    The JVM side is opaque to the profiler and shows as time inside py4j's socket reads, which is
    exactly the split that tells whether a fixed cost is ours (Python) or the JVM's.
    """
    import cProfile
    import io
    import pstats

    from icecompat_writer import compat_write

    df = nested_frame(spark, rows, tasks)
    with tempfile.TemporaryDirectory(prefix="bench_write_profile_") as tmp:
        if warmup:
            compat_write(df, f"{tmp}/warm", profile=profile)
        profiler = cProfile.Profile()
        profiler.enable()
        compat_write(df, f"{tmp}/t", profile=profile)
        profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("cumulative").print_stats(top)
    lines = out.getvalue().splitlines()
    start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
    keep = [line for line in lines if "function calls" in line]
    keep += [line.rstrip() for line in lines[start:] if line.strip()]
    return "\n".join(keep)
