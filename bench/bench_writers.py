"""Many writers in one driver: concurrent streams of small guarded and synced commits, each into its
own table, against the same streams into delta-spark's own IcebergCompatV3 tables with the guard off.

Runnable alone: ``python -m bench.bench_writers [--streams 8,16] [--files N] [--seconds S] [--rounds R]``
prints the section's markdown; ``bin/bench`` runs it as a section. A stream is a Python thread of the
driver looping ``INSERT INTO delta.`<its table>` (id, name) VALUES (...)`` (one row, one task, one
Delta commit) until the window closes. Three arms, each a window of ``--seconds`` with every stream
writing at once:

- ``guard off``: ``spark.icecompat.guard.enabled=false``; the tables have IcebergCompatV3 enabled and
  no ``delta.universalFormat.enabledFormats`` (delta-spark enforces IcebergCompatV3 itself, nothing
  converts to Iceberg);
- ``sync=commit``: the guard on (metadata hook, commit check with the new file's footer) and the tables
  asking for Iceberg: every ``INSERT`` returns after its sync (the default);
- ``sync=async``: the same tables with ``spark.icecompat.iceberg.sync=async``: the ``INSERT`` returns
  once its commit is final, the sync is queued; after the window, ``await_syncs`` waits for the queue
  (its time is reported, and the window's rate counts only the commits).

The arms alternate (``guard off``, ``commit``, ``async``) round after round, every stream count on
the same tables (the first ``n`` of them). Every table starts as ``bench_checker.build`` makes it:
``--files`` live AddFiles in a classic checkpoint plus three commits, a compliant v3 log; the synced
tables get a real Parquet file behind every AddFile (hard links of one template per subdirectory) for
their first Iceberg conversion, the only step that reads old files (a small commit's check and sync
read the new file's footer and the new commits only); the guard-off tables need none. Every table
also gets the checksum file delta-spark writes beside its own commits (see :func:`prepare`) and the
same ``delta.checkpointInterval`` (``CHECKPOINT_INTERVAL``). After every window the synced tables are
checked: no sync failed and Iceberg holds every Delta version.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``bench`` and the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from icecompat_writer.deltalog import read_snapshot
from icecompat_writer.iceberg import write_iceberg_metadata
from icecompat_writer.storage import io_for
from tests.deltalog import logbuilder as lb

from .bench_checker import CHECKPOINT_VERSION, COMMITS_AFTER, build, compliant_state

GUARD_OFF = "guard off"
COMMIT = "sync=commit"
ASYNC = "sync=async"
ARMS = (GUARD_OFF, COMMIT, ASYNC)
ENABLED_KEY = "spark.icecompat.guard.enabled"
SYNC_KEY = "spark.icecompat.iceberg.sync"
TARGET = 0.9  # guarded and synced commits per minute over guard off
# Delta's checkpoint every 10 commits rewrites every live file's state: with 8 tables of 5,000 files
# on 2 loaded cores one took 4 minutes, so windows of a minute would time Delta's checkpoint writer,
# not the commit path. Both arms' tables get the same, longer interval.
CHECKPOINT_INTERVAL = 1000


@dataclass
class Window:
    """One arm's window at one stream count: commits that landed and the wall time they took."""

    arm: str
    streams: int
    commits: int
    seconds: float
    per_stream: list[int]
    drain_s: float = 0.0  # async: await_syncs after the window
    load: str = ""
    sync_ms: float = 0.0  # synced arms: the median sync's wall time, as the guard measured it

    @property
    def per_minute(self) -> float:
        return self.commits / self.seconds * 60


@dataclass
class WritersRun:
    files: int
    seconds: float
    windows: list[Window] = field(default_factory=list)
    sync_processes: str = ""
    checkpoint_interval: int | None = None

    def rate(self, arm: str, streams: int) -> float:
        """Commits per minute over every window of the arm (total commits over total time)."""
        ws = [w for w in self.windows if w.arm == arm and w.streams == streams]
        return sum(w.commits for w in ws) / sum(w.seconds for w in ws) * 60

    def ratios(self, arm: str, streams: int) -> list[float]:
        """Per round: the arm's rate over the guard-off window of the same round."""
        off = [w for w in self.windows if w.arm == GUARD_OFF and w.streams == streams]
        on = [w for w in self.windows if w.arm == arm and w.streams == streams]
        return [a.per_minute / b.per_minute for a, b in zip(on, off, strict=False)]

    def streams(self) -> list[int]:
        return sorted({w.streams for w in self.windows})


def _load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def _latest(root: Path) -> int:
    return max(int(p.name[:20]) for p in (root / "_delta_log").glob("*.json"))


def _converted(root: Path) -> int:
    files = sorted((root / "metadata").glob("v*.metadata.json"), key=lambda p: int(p.name[1:].split(".")[0]))
    return int(json.loads(files[-1].read_text())["properties"]["icecompat.delta-version"])


def prepare(root: Path, files: int, *, synced: bool, checkpoint_interval: int | None = None) -> None:
    """``bench_checker.build``'s log of ``files`` live files plus one commit, with the checksum file
    delta-spark writes beside every commit of its own tables.

    The commit names the materialized row-tracking columns (delta-spark writes them into every
    row-tracking table's metadata and needs them for a write; the synthetic log leaves them out),
    records the row-ID high-water mark as the ``delta.rowTracking`` domain, and, for a synced table,
    asks for Iceberg. The checksum (``<version>.crc``: file count and size, protocol, metadata, the
    domains) is what lets every later commit read the snapshot's protocol, metadata and high-water
    mark without rebuilding the state of all its files (see "The per-commit cost of a v3 table" in
    docs/benchmarks.md); a log without it makes every small commit replay the checkpoint. A synced
    table then gets its first conversion here, in this process, as ``icecompat iceberg`` makes it.
    ``checkpoint_interval`` sets ``delta.checkpointInterval`` (None: Delta's default, 10).
    """
    build(root, files, with_data=synced)
    protocol, metadata = compliant_state()
    conf = {
        **metadata["configuration"],
        "delta.rowTracking.materializedRowIdColumnName": "_row-id-col-bench",
        "delta.rowTracking.materializedRowCommitVersionColumnName": "_row-commit-version-col-bench",
    }
    if synced:
        conf["delta.universalFormat.enabledFormats"] = "iceberg"
    if checkpoint_interval is not None:
        conf["delta.checkpointInterval"] = str(checkpoint_interval)
    metadata["configuration"] = conf
    live = read_snapshot(root, io=io_for(root)).add_files
    high = max((a.base_row_id or 0) + (a.num_records or 0) for a in live) - 1
    domain = {
        "domain": "delta.rowTracking",
        "configuration": json.dumps({"rowIdHighWaterMark": high}, separators=(",", ":")),
        "removed": False,
    }
    version = CHECKPOINT_VERSION + COMMITS_AFTER + 1
    b = lb.LogBuilder(root)
    b.commit(version, [lb.commit_info(), {"metaData": metadata}, {"domainMetadata": domain}])
    crc = {
        "tableSizeBytes": sum(a.size for a in live),
        "numFiles": len(live),
        "numMetadata": 1,
        "numProtocol": 1,
        "setTransactions": [],
        "domainMetadata": [domain],
        "metadata": metadata,
        "protocol": protocol,
    }
    (root / "_delta_log" / f"{version:020d}.crc").write_text(json.dumps(crc), encoding="utf-8")
    if synced:
        write_iceberg_metadata(root)


def _stream(spark: Any, root: Path, stop: float, counts: list[int], slot: int, errors: list[str]) -> None:
    n = 0
    try:
        while n == 0 or time.perf_counter() < stop:  # at least one commit (the warm-up's)
            spark.sql(f"INSERT INTO delta.`{root}` (id, name) VALUES ({10_000_000 + n}, 'w{slot}')")
            n += 1
            counts[slot] = n
    except Exception as e:  # recorded: the window fails below
        errors.append(f"{root}: {type(e).__name__}: {e}")


def window(spark: Any, arm: str, tables: list[Path], seconds: float) -> Window:
    """Every table's stream at once for ``seconds``; returns when the last stream's commit landed."""
    from icecompat_writer.jvm.bridge import await_syncs, guard_iceberg_syncs

    spark.conf.set(ENABLED_KEY, "false" if arm == GUARD_OFF else "true")
    spark.conf.set(SYNC_KEY, "async" if arm == ASYNC else "commit")
    counts = [0] * len(tables)
    errors: list[str] = []
    start = time.perf_counter()
    threads = [
        threading.Thread(target=_stream, args=(spark, t, start + seconds, counts, i, errors), daemon=True)
        for i, t in enumerate(tables)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    load = _load()
    drain = 0.0
    done: list[dict[str, Any]] = []
    if arm == ASYNC:
        t0 = time.perf_counter()
        done = await_syncs(spark, timeout=1800)
        drain = time.perf_counter() - t0
    elif arm == COMMIT:
        done = guard_iceberg_syncs(spark, drain=True)
    spark.conf.set(SYNC_KEY, "commit")
    spark.conf.set(ENABLED_KEY, "true")
    assert not errors, errors
    failed = [s for s in done if "error" in s]
    assert not failed, failed[:3]
    sync_ms = statistics.median(s["millis"] for s in done) if done else 0.0
    return Window(arm, len(tables), sum(counts), elapsed, counts, drain, load, sync_ms)


def _check_synced(tables: list[Path]) -> None:
    """Iceberg holds every table's newest Delta version."""
    for t in tables:
        assert _converted(t) == _latest(t), (t, _converted(t), _latest(t))


def measure(
    spark: Any,
    streams: list[int],
    files: int,
    seconds: float,
    rounds: int,
    *,
    checkpoint_interval: int | None = CHECKPOINT_INTERVAL,
    warmup: bool = True,
    workdir: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> WritersRun:
    """Build ``max(streams)`` tables per kind, then (after an untimed round of one commit per table
    and arm, unless ``warmup`` is false) ``rounds`` rounds of the three arms per stream count."""
    from icecompat_writer.jvm.bridge import guard_iceberg_syncs

    say = progress or (lambda _msg: None)
    run = WritersRun(files, seconds, checkpoint_interval=checkpoint_interval)
    run.sync_processes = spark.conf.get("spark.icecompat.iceberg.syncProcesses", "2 (default)")
    most = max(streams)
    with tempfile.TemporaryDirectory(prefix="bench_writers_", dir=workdir) as tmp:
        base = Path(tmp)
        off = [base / f"off{i}" for i in range(most)]
        synced = [base / f"synced{i}" for i in range(most)]
        say(f"writers: building {most} + {most} tables of {files:,} files")
        for root in off:
            prepare(root, files, synced=False, checkpoint_interval=checkpoint_interval)
        for i, root in enumerate(synced):
            prepare(root, files, synced=True, checkpoint_interval=checkpoint_interval)
            say(f"writers: synced table {i + 1}/{most} converted")
        guard_iceberg_syncs(spark, drain=True)
        for arm in ARMS if warmup else ():  # untimed: every table's first commit of the session
            window(spark, arm, off if arm == GUARD_OFF else synced, 0.0)
        if warmup:
            say(f"writers: warm-up round done (load {_load()})")
        for n in streams:
            for r in range(rounds):
                for arm in ARMS:
                    tables = (off if arm == GUARD_OFF else synced)[:n]
                    w = window(spark, arm, tables, seconds)
                    run.windows.append(w)
                    if arm != GUARD_OFF:
                        _check_synced(tables)
                    say(
                        f"writers: {n} streams, round {r + 1}/{rounds}, {arm}: {w.commits} commits in "
                        f"{w.seconds:.1f} s = {w.per_minute:.1f}/min"
                        + (f", median sync {w.sync_ms:.0f} ms" if arm != GUARD_OFF else "")
                        + (f", queue drained in {w.drain_s:.1f} s" if arm == ASYNC else "")
                        + f" (load {w.load})"
                    )
    return run


def targets(run: WritersRun) -> list[tuple[str, str, str, bool | None]]:
    out = []
    for n in run.streams():
        base = run.rate(GUARD_OFF, n)
        for arm in (COMMIT, ASYNC):
            ratio = run.rate(arm, n) / base
            out.append(
                (
                    f"{n} writers in one driver, guarded, {arm}: commits per minute",
                    f"{ratio:.2f}x guard off",
                    f">= {TARGET}x",
                    ratio >= TARGET,
                )
            )
    return out


def section(run: WritersRun) -> list[str]:
    lines = [
        "## Many writers in one driver",
        "",
        f"`bench/bench_writers.py`: {', '.join(str(n) for n in run.streams())} streams (threads of one "
        "driver, each a loop of 1-row `INSERT`s into its own table) for windows of "
        f"{run.seconds:.0f} s, three arms alternating round after round: `{GUARD_OFF}` (delta-spark's "
        f"own IcebergCompatV3 tables, `{ENABLED_KEY}=false`), and the guard on with tables asking for "
        f"Iceberg, `{SYNC_KEY}=commit` and `=async`. Every table starts with {run.files:,} live files "
        "(`bench_checker.build`'s log; Parquet files behind them for the synced tables' first "
        f"conversion), `delta.checkpointInterval` {run.checkpoint_interval or 'Delta default'} on both "
        f"arms' tables. Sync processes: {run.sync_processes}. Rate: commits that landed over the "
        "window's wall time (until the last stream's commit returned); async's queue drain after the "
        "window is shown, not counted.",
        "",
        "| streams | arm | round | commits | seconds | commits/min | vs guard off | per stream "
        "| median sync | async drain | load average |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | --- |",
    ]
    for n in run.streams():
        off = [w for w in run.windows if w.arm == GUARD_OFF and w.streams == n]
        for arm in ARMS:
            ws = [w for w in run.windows if w.arm == arm and w.streams == n]
            for r, w in enumerate(ws):
                vs = "" if arm == GUARD_OFF else f"{w.per_minute / off[r].per_minute:.2f}"
                spread = f"{min(w.per_stream)}-{max(w.per_stream)}"
                drain = f"{w.drain_s:.1f} s" if arm == ASYNC else ""
                sync = f"{w.sync_ms:.0f} ms" if arm != GUARD_OFF else ""
                lines.append(
                    f"| {n} | {arm} | {r + 1} | {w.commits} | {w.seconds:.1f} | {w.per_minute:.1f} | {vs} "
                    f"| {spread} | {sync} | {drain} | {w.load} |"
                )
    lines += ["", "| streams | arm | commits/min (all rounds) | vs guard off | median of round ratios |"]
    lines += ["| ---: | --- | ---: | ---: | ---: |"]
    for n in run.streams():
        base = run.rate(GUARD_OFF, n)
        for arm in ARMS:
            rate = run.rate(arm, n)
            ratios = run.ratios(arm, n)
            med = "" if arm == GUARD_OFF or not ratios else f"{statistics.median(ratios):.2f}"
            lines.append(f"| {n} | {arm} | {rate:.1f} | {rate / base:.2f} | {med} |")
    return [*lines, ""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", default="8,16")
    parser.add_argument("--files", type=int, default=10_000, help="live files of every table")
    parser.add_argument("--seconds", type=float, default=60.0, help="window per arm")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--checkpoint-interval", type=int, default=CHECKPOINT_INTERVAL, help="0: Delta's default"
    )
    args = parser.parse_args(argv)
    import icecompat_writer

    spark = icecompat_writer.session("bench-writers", **{"spark.sql.shuffle.partitions": "2"})
    try:
        run = measure(
            spark,
            [int(x) for x in args.streams.split(",")],
            args.files,
            args.seconds,
            args.rounds,
            checkpoint_interval=args.checkpoint_interval or None,
            progress=lambda m: print(f"[{time.strftime('%H:%M:%S')}] {m}", file=sys.stderr, flush=True),
        )
    finally:
        spark.stop()
    print("\n".join(section(run)))
    for what, measured, goal, met in targets(run):
        print(f"{'pass' if met else 'MISS'}  {what}: {measured} (goal {goal})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
