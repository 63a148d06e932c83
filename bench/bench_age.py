"""The Iceberg sync as a table ages: sync time, newest metadata file and ``metadata/`` after N commits.

One small table per arm: 100 live files (real compliant Parquet behind each, hard links of one
template per subdirectory, as ``bench_checker.build`` makes them), then commits that each add one file
and remove the one the commit before added (the table stays at 101 live files in two manifests and only
ages: its history grows, its data does not), each followed by the sync, as the write path runs it.
Commit times are the wall clock, so every commit is younger than Delta's retentions and only the
count bounds expire anything. The Delta log is kept as Delta keeps it: a checkpoint every 100
commits and the commits before the previous checkpoint cleaned up.

Two arms, side by side in one run: ``before`` sets table properties that switch every bound off
(no count bound, retentions of a century, ``previous-versions-max`` of a billion, no deletes: the
metadata the sync wrote before bounded history), ``after`` keeps the defaults. At each measuring
point: the median of the last 50 syncs, the newest ``v<N>.metadata.json``, and the size and file count
of ``metadata/``.

Run alone with ``.venv/bin/python -m bench.bench_age [--commits 1000,10000] [--before-commits 1000]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``bench`` and the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from icecompat_writer.iceberg import METADATA_DIR, write_iceberg_metadata
from icecompat_writer.iceberg.expire import (
    DELTA_DELETED_FILE_RETENTION,
    DELTA_LOG_RETENTION,
    PROP_DELETE_AFTER_COMMIT,
    PROP_MAX_SNAPSHOTS,
    PROP_PREVIOUS_VERSIONS_MAX,
)

from .bench_checker import _add, _template_path, _write_templates, compliant_state, data_path

LIVE = 100
CHECKPOINT_INTERVAL = 100
WINDOW = 50  # syncs whose median is reported at each measuring point

UNBOUNDED = {
    PROP_MAX_SNAPSHOTS: "0",
    DELTA_LOG_RETENTION: "interval 36500 days",
    DELTA_DELETED_FILE_RETENTION: "interval 36500 days",
    PROP_PREVIOUS_VERSIONS_MAX: "1000000000",
    PROP_DELETE_AFTER_COMMIT: "false",
}
ARMS = {"before": UNBOUNDED, "after": {}}


@dataclass
class AgePoint:
    """One arm after ``commits`` commits."""

    arm: str
    commits: int
    sync_ms: float
    newest_bytes: int
    dir_bytes: int
    dir_files: int


@dataclass
class AgeRun:
    points: list[AgePoint] = field(default_factory=list)


def _commit(root: Path, version: int, actions: list[dict[str, Any]]) -> None:
    from tests.deltalog import logbuilder as lb

    info = {"commitInfo": {"timestamp": int(time.time() * 1000), "operation": "WRITE"}}
    lb.LogBuilder(root).commit(version, [info, *actions])


def _checkpoint(
    root: Path, version: int, state: list[dict[str, Any]], live: dict[int, dict[str, Any]]
) -> None:
    """A classic checkpoint at ``version`` and the log cleanup Delta does behind the one before it."""
    from tests.deltalog import logbuilder as lb

    b = lb.LogBuilder(root)
    b.classic_checkpoint(version, [*state, *live.values()])
    b.last_checkpoint({"version": version, "size": len(state) + len(live)})
    log = root / "_delta_log"
    for p in log.iterdir():
        name = p.name
        if name[:20].isdigit() and int(name[:20]) < version - CHECKPOINT_INTERVAL:
            p.unlink()


def _metadata_dir(root: Path) -> tuple[int, int, int]:
    """(newest metadata file bytes, metadata/ bytes, metadata/ files)."""
    files = [p for p in (root / METADATA_DIR).iterdir() if p.is_file()]
    newest = max((p for p in files if p.name.endswith(".metadata.json")), key=lambda p: int(p.name[1:-14]))
    return newest.stat().st_size, sum(p.stat().st_size for p in files), len(files)


def age(
    arm: str,
    points: list[int],
    *,
    workdir: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[AgePoint]:
    """One arm: build the table, commit and sync up to ``max(points)`` times, measure at each point."""
    say = progress or (lambda _msg: None)
    out: list[AgePoint] = []
    with tempfile.TemporaryDirectory(prefix=f"bench_age_{arm}_", dir=workdir) as tmp:
        root = Path(tmp) / "t"
        protocol, metadata = compliant_state()
        metadata["configuration"] = {**metadata["configuration"], **ARMS[arm]}
        size = _write_templates(root, metadata)
        state = [{"protocol": protocol}, {"metaData": metadata}]
        live = {i: _add(i, 0, size) for i in range(LIVE)}
        for i in live:
            os.link(root / _template_path(i), root / data_path(i))
        _commit(root, 0, [*state, *live.values()])
        write_iceberg_metadata(root)
        samples: list[float] = []
        previous, nxt = None, LIVE
        for version in range(1, max(points) + 1):
            target = root / data_path(nxt)
            if not target.exists():
                os.link(root / _template_path(nxt), target)
            live[nxt] = _add(nxt, version, size)
            actions = [live[nxt]]
            if previous is not None:
                removed = live.pop(previous)
                ts = int(time.time() * 1000)
                actions.insert(
                    0,
                    {"remove": {"path": removed["add"]["path"], "deletionTimestamp": ts, "dataChange": True}},
                )
            _commit(root, version, actions)
            previous, nxt = nxt, nxt + 1
            if version % CHECKPOINT_INTERVAL == 0:
                _checkpoint(root, version, state, live)
            t0 = time.perf_counter()
            result = write_iceberg_metadata(root)
            samples.append(time.perf_counter() - t0)
            assert result.written and result.delta_version == version
            if version in points:
                newest, total, count = _metadata_dir(root)
                sync_ms = statistics.median(samples[-WINDOW:]) * 1000
                out.append(AgePoint(arm, version, sync_ms, newest, total, count))
                say(
                    f"age {arm}: {version:,} commits: sync {sync_ms:.1f} ms, newest {newest:,} B, "
                    f"metadata/ {total:,} B in {count:,} files"
                )
            elif version % 500 == 0:
                say(f"age {arm}: {version:,} commits")
    return out


def measure_age(
    points: list[int],
    before_points: list[int],
    *,
    workdir: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> AgeRun:
    """Both arms, ``before`` only up to ``before_points`` (unbounded, it slows down as it grows)."""
    run = AgeRun()
    if before_points:
        run.points += age("before", before_points, workdir=workdir, progress=progress)
    run.points += age("after", points, workdir=workdir, progress=progress)
    return run


def age_section(run: AgeRun) -> list[str]:
    """The table of docs/benchmarks.md's section."""
    lines = [
        "| arm | commits | sync (median of last 50) | newest metadata file | metadata/ size "
        "| metadata/ files |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for p in run.points:
        lines.append(
            f"| {p.arm} | {p.commits:,} | {p.sync_ms:.1f} ms | {p.newest_bytes / 1024:,.1f} KB | "
            f"{p.dir_bytes / 1024 / 1024:,.2f} MB | {p.dir_files:,} |"
        )
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--commits", default="1000,10000", help="measuring points of the after arm")
    parser.add_argument(
        "--before-commits", default="1000", help="measuring points of the before arm ('' none)"
    )
    args = parser.parse_args(argv)
    points = [int(x) for x in args.commits.split(",") if x]
    before = [int(x) for x in args.before_commits.split(",") if x]
    run = measure_age(points, before, progress=lambda m: print(m, file=sys.stderr, flush=True))
    print("\n".join(age_section(run)))


if __name__ == "__main__":
    main()
