"""The Iceberg sync as a table ages: sync time, newest metadata file and ``metadata/`` after N commits.

One small table per arm: 100 live files (real compliant Parquet behind each, hard links of one
template per subdirectory, as ``bench_checker.build`` makes them), then commits that each add one file
and remove the one the commit before added (the table stays at 101 live files in two manifests and only
ages: its history grows, its data does not), each followed by the sync, as the write path runs it.
Commit times are the wall clock, so every commit is younger than Delta's retentions and only the
count bounds expire anything. The Delta log is kept as Delta keeps it: a checkpoint every 100
commits and the commits before the previous checkpoint cleaned up.

Two arms: ``before`` sets table properties that switch every bound off (no count bound, retentions
of a century, ``previous-versions-max`` of a billion, no deletes: the metadata the sync wrote before
bounded history), ``after`` keeps the defaults. At each measuring point: the median of the last 50
syncs, the newest ``v<N>.metadata.json``, and the size and file count of ``metadata/``.

``after`` is measured at every point beside a young table (:func:`age_side_by_side`): a table that
lived through the first point's whole history, whose syncs alternate with the aged table's before
each point, so the sync time's ratio is taken under one load. A point far out (100,000 commits at
about 15 ms a sync is half an hour of an idle machine) is reached by fast-forwarding
(:class:`AgingTable`): the log written as it looks 500 commits before the point, a first conversion
there, then 500 real commits and syncs, more than the bounds keep.

Run alone with ``.venv/bin/python -m bench.bench_age [--commits 1000,10000] [--before-commits 1000]
[--plot PNG]``;
``bin/bench`` runs the default arm as its age section (``--age-commits 1000,10000,100000`` for the
largest point).
"""

from __future__ import annotations

import argparse
import os
import shutil
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
FORWARD = 500  # real steps of a fast-forwarded table before its measuring point

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
    """One arm after ``commits`` commits.

    ``young_sync_ms`` is set at the points measured side by side with a young table (see
    :func:`measure_age`): the median of the young table's syncs interleaved with the ``sync_ms`` ones,
    so that their ratio is the aged table's cost with the machine's load of that moment in both.
    """

    arm: str
    commits: int
    sync_ms: float
    newest_bytes: int
    dir_bytes: int
    dir_files: int
    young_sync_ms: float | None = None
    young_commits: int = 0
    load: str = ""
    forwarded_from: int = 0  # the version the table was fast-forwarded to (0: every commit synced)

    @property
    def ratio(self) -> float | None:
        return None if self.young_sync_ms is None else self.sync_ms / self.young_sync_ms


@dataclass
class AgeRun:
    points: list[AgePoint] = field(default_factory=list)
    elapsed_s: float = 0.0

    def after(self) -> list[AgePoint]:
        return [p for p in self.points if p.arm == "after"]


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


def _load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


class AgingTable:
    """One synthetic table that ages by one commit and one real sync per :meth:`step`.

    ``start`` (a multiple of ``CHECKPOINT_INTERVAL``) fast-forwards the table: its log is written
    directly as the log of the real history looks at version ``start`` after Delta's clean-up (the
    checkpoint at ``start`` holding the live files, the commit of version ``start``), and its
    Iceberg metadata is a first conversion there. Every later commit is a real step. Once
    ``FORWARD`` steps have run, everything the bounds keep (100 snapshots, 100 previous metadata
    files, their manifest lists, the live manifests) was written by per-commit syncs, as in the
    table that lived through the whole history; see :func:`age_side_by_side` for what still differs.
    """

    def __init__(self, root: Path, arm: str, start: int = 0) -> None:
        assert start % CHECKPOINT_INTERVAL == 0, start
        self.root, self.arm = root, arm
        protocol, metadata = compliant_state()
        metadata["configuration"] = {**metadata["configuration"], **ARMS[arm]}
        self.size = _write_templates(root, metadata)
        self.state = [{"protocol": protocol}, {"metaData": metadata}]
        self.live = {i: _add(i, 0, self.size) for i in range(LIVE)}
        for i in self.live:
            os.link(root / _template_path(i), root / data_path(i))
        if start == 0:
            _commit(root, 0, [*self.state, *self.live.values()])
            self.previous: int | None = None
        else:  # the file commit ``start`` added (the one before it removed), as in the real history
            added = LIVE + start - 1
            self.live[added] = _add(added, start, self.size)
            os.link(root / _template_path(added), root / data_path(added))
            removed = {"remove": {"path": data_path(added - 1), "deletionTimestamp": int(time.time() * 1000)}}
            removed["remove"]["dataChange"] = True
            _commit(root, start, [removed, self.live[added]])
            _checkpoint(root, start, self.state, self.live)
            self.previous = added
        write_iceberg_metadata(root)
        self.version = start
        self.nxt = LIVE + start
        self.samples: list[float] = []

    def step(self) -> float:
        """One commit (add one file, remove the one the commit before added), the checkpoint and log
        clean-up when due, then the sync; returns the sync's seconds."""
        root, version, nxt = self.root, self.version + 1, self.nxt
        target = root / data_path(nxt)
        if not target.exists():
            os.link(root / _template_path(nxt), target)
        self.live[nxt] = _add(nxt, version, self.size)
        actions = [self.live[nxt]]
        if self.previous is not None:
            removed = self.live.pop(self.previous)
            ts = int(time.time() * 1000)
            actions.insert(
                0, {"remove": {"path": removed["add"]["path"], "deletionTimestamp": ts, "dataChange": True}}
            )
        _commit(root, version, actions)
        self.previous, self.nxt, self.version = nxt, nxt + 1, version
        if version % CHECKPOINT_INTERVAL == 0:
            _checkpoint(root, version, self.state, self.live)
        t0 = time.perf_counter()
        result = write_iceberg_metadata(root)
        elapsed = time.perf_counter() - t0
        assert result.written and result.delta_version == version, result
        self.samples.append(elapsed)
        return elapsed

    def point(self) -> AgePoint:
        newest, total, count = _metadata_dir(self.root)
        sync_ms = statistics.median(self.samples[-WINDOW:]) * 1000
        return AgePoint(self.arm, self.version, sync_ms, newest, total, count, load=_load())


def age(
    arm: str,
    points: list[int],
    *,
    workdir: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[AgePoint]:
    """One arm alone: build the table, commit and sync up to ``max(points)`` times, measure at each."""
    say = progress or (lambda _msg: None)
    out: list[AgePoint] = []
    with tempfile.TemporaryDirectory(prefix=f"bench_age_{arm}_", dir=workdir) as tmp:
        table = AgingTable(Path(tmp) / "t", arm)
        while table.version < max(points):
            table.step()
            if table.version in points:
                out.append(table.point())
                say(_describe(out[-1]))
    return out


def _describe(p: AgePoint) -> str:
    side = "" if p.ratio is None else f" ({p.ratio:.2f}x the young table's {p.young_sync_ms:.1f} ms)"
    return (
        f"age {p.arm}: {p.commits:,} commits (from {p.forwarded_from:,}): sync {p.sync_ms:.1f} ms{side}, "
        f"newest {p.newest_bytes:,} B, "
        f"metadata/ {p.dir_bytes:,} B in {p.dir_files:,} files, load {p.load}"
    )


def age_side_by_side(
    points: list[int],
    *,
    forward: int = FORWARD,
    workdir: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[AgePoint]:
    """The default arm at every point, each measured beside a young table.

    A young table lives through the first point's whole history (a real sync after every commit)
    and is measured there. Every point then gets an aged table of its own, fast-forwarded
    (:class:`AgingTable`) to ``forward`` commits before the point (rounded down to a checkpoint;
    not at all when the point is that young) and aged from there by real steps. The last ``WINDOW``
    commits before the point alternate between the aged and the young table (the order swapping
    every round), and the point records both medians: the aged table's sync time over the young
    one's, with the same load on the machine in both, is what the table's age adds.

    What a fast-forwarded table cannot have of the real history: its metadata files are numbered
    from its first conversion (``v<steps + 1>``, not ``v<commits + 1>``), so the metadata log's
    file names are shorter; its oldest manifest (the 100 files that never change) carries the
    sequence number of the first conversion. The first point measures both kinds side by side.
    """
    say = progress or (lambda _msg: None)
    points = sorted(points)
    out: list[AgePoint] = []
    with tempfile.TemporaryDirectory(prefix="bench_age_", dir=workdir) as tmp:
        # Iceberg metadata names files by absolute path: the two roots have names of one length
        young = AgingTable(Path(tmp) / "young", "after")
        while young.version < points[0]:
            young.step()
        first = young.point()
        out.append(first)
        say(_describe(first))
        for point in points:
            start = max(0, point - forward) // CHECKPOINT_INTERVAL * CHECKPOINT_INTERVAL
            aged = AgingTable(Path(tmp) / "aged_", "after", start)
            while aged.version < point - WINDOW:
                aged.step()
            young_samples: list[float] = []
            for n in range(point - aged.version):
                if n % 2:
                    young_samples.append(young.step())
                    aged.step()
                else:
                    aged.step()
                    young_samples.append(young.step())
            p = aged.point()
            p.young_sync_ms = statistics.median(young_samples) * 1000
            p.young_commits = young.version
            p.forwarded_from = start
            out.append(p)
            say(_describe(p))
            shutil.rmtree(aged.root)
    return out


def measure_age(
    points: list[int],
    before_points: list[int],
    *,
    forward: int = FORWARD,
    workdir: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> AgeRun:
    """``before`` alone up to ``before_points`` (unbounded, it slows down as it grows), then the
    default arm with every point measured beside a young table (:func:`age_side_by_side`)."""
    t0 = time.perf_counter()
    run = AgeRun()
    if before_points:
        run.points += age("before", before_points, workdir=workdir, progress=progress)
    if points:
        run.points += age_side_by_side(points, forward=forward, workdir=workdir, progress=progress)
    run.elapsed_s = time.perf_counter() - t0
    return run


def age_section(run: AgeRun) -> list[str]:
    """The table of docs/benchmarks.md's section."""
    lines = [
        f"| arm | commits | history | sync (median of last {WINDOW}) | young table's sync beside it "
        "| aged / young | newest metadata file | metadata/ size | metadata/ files "
        "| load average (1, 5, 15 min) |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for p in run.points:
        young = "" if p.young_sync_ms is None else f"{p.young_sync_ms:.1f} ms ({p.young_commits:,} commits)"
        ratio = "" if p.ratio is None else f"{p.ratio:.2f}"
        history = f"fast-forwarded to {p.forwarded_from:,}" if p.forwarded_from else "every commit synced"
        lines.append(
            f"| {p.arm} | {p.commits:,} | {history} | {p.sync_ms:.1f} ms | {young} | {ratio} | "
            f"{p.newest_bytes / 1024:,.1f} KB | {p.dir_bytes / 1024 / 1024:,.2f} MB | {p.dir_files:,} | "
            f"{p.load} |"
        )
    return lines


TARGET = 1.2  # every figure after the last point within this factor of the first point's
TARGET_AT = 100_000


def targets(run: AgeRun) -> list[tuple[str, str, str, bool | None]]:
    """(what, measured, goal, met) of the last point against the first, per figure; met is None when
    the run stopped short of ``TARGET_AT`` commits. The sync time's ratio is the side-by-side one
    (the aged table's syncs over the young table's, interleaved), not one across the run's hours."""
    points = run.after()
    if len(points) < 2:
        return []
    first, last = points[0], points[-1]
    at_size = last.commits >= TARGET_AT
    goal = f"<= {TARGET}x the figure at {first.commits:,} commits, at {TARGET_AT:,} commits"
    out = []
    figures = [
        ("sync time (aged over young, side by side)", last.ratio),
        ("newest metadata file", last.newest_bytes / first.newest_bytes),
        ("metadata/ size", last.dir_bytes / first.dir_bytes),
        ("metadata/ file count", last.dir_files / first.dir_files),
    ]
    for what, ratio in figures:
        if ratio is None:
            continue
        out.append(
            (
                f"Iceberg history after {last.commits:,} commits: {what}",
                f"{ratio:.2f}x",
                goal,
                ratio <= TARGET if at_size else None,
            )
        )
    return out


def section(run: AgeRun, plot_name: str | None = None) -> list[str]:
    """The ``bin/bench`` section: how it was measured, the table, the plot."""
    lines = [
        "## Iceberg history as a table ages",
        "",
        f"`bench/bench_age.py`: a {LIVE}-file table whose commits each add one file and remove the one "
        "the commit before added (the data stays the same size, the history grows), built directly as "
        "Delta log files (`tests/deltalog/logbuilder.py`, no Spark) with real compliant Parquet files "
        "behind every AddFile, and the real sync (`write_iceberg_metadata`, the incremental path the "
        "write path runs) after every commit, in one process. A classic checkpoint every "
        f"{CHECKPOINT_INTERVAL} commits, and the log cleaned up behind the checkpoint before it (what "
        "Delta's metadata clean-up does once those files are older than `delta.logRetentionDuration`). "
        "Commit times are the wall clock, so no time-based retention expires anything: the count "
        "bounds (`icecompat.iceberg.history.max-snapshots` 100, `write.metadata.previous-versions-max` "
        "100) are all that bound the history.",
        "",
        f"A young table lives through its whole history. Each later point gets a table fast-forwarded "
        f"to {FORWARD} commits before it: its log written as the real log looks there after clean-up "
        "(the checkpoint holding the live files, the last commit), a first conversion there, then "
        f"{FORWARD} real commits each followed by its sync, more than the bounds keep (after about 200 "
        "syncs every snapshot, manifest list and metadata file in `metadata/` was written by a "
        "per-commit sync). What it lacks of the real history: its metadata files are numbered from its "
        "first conversion, so the metadata log's file names are shorter (a few bytes each), and the "
        "manifest of the 100 unchanging files carries the first conversion's sequence number. The "
        "first point is measured both ways. Sync time is the median of the last "
        f"{WINDOW} syncs before each point; those {WINDOW} commits alternate with commits to the young "
        "table, so the ratio compares the two under the same load.",
        "",
        *age_section(run),
        "",
        f"Run time of this section: {run.elapsed_s / 60:.1f} min.",
        "",
    ]
    if plot_name:
        lines += [f"![Iceberg history as a table ages]({plot_name})", ""]
    return lines


def plot(run: AgeRun, path: Path) -> None:
    """Three panels against commits (log scale): sync time (aged and young beside it), the newest
    metadata file, and ``metadata/`` (size and file count)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = run.after()
    xs = [p.commits for p in points]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    ax = axes[0]
    side = [p for p in points if p.young_sync_ms is not None]  # the young table alone is not compared
    ax.plot([p.commits for p in side], [p.sync_ms for p in side], marker="o", label="aged table")
    ax.plot(
        [p.commits for p in side],
        [p.young_sync_ms or 0.0 for p in side],
        marker="s",
        label="young table, beside it",
    )
    ax.set_ylabel(f"sync, ms (median of {WINDOW})")
    ax.set_title("Sync time")
    ax.legend(fontsize=8)
    ax = axes[1]
    ax.plot(xs, [p.newest_bytes / 1024 for p in points], marker="o", color="tab:green")
    ax.set_ylabel("KB")
    ax.set_title("Newest vN.metadata.json")
    ax = axes[2]
    ax.plot(xs, [p.dir_bytes / 1024 / 1024 for p in points], marker="o", color="tab:purple", label="MB")
    ax.set_ylabel("metadata/ MB")
    twin = ax.twinx()
    twin.plot(xs, [p.dir_files for p in points], marker="^", color="tab:orange", label="files")
    twin.set_ylabel("metadata/ files")
    ax.set_title("metadata/ size (MB) and files")
    for a in axes:
        a.set_xscale("log")
        a.set_xlabel("commits")
        a.set_ylim(bottom=0)
    twin.set_ylim(bottom=0)
    fig.suptitle("Iceberg sync as a table ages (bounded history, defaults)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--commits", default="1000,10000", help="measuring points of the after arm")
    parser.add_argument(
        "--before-commits", default="1000", help="measuring points of the before arm ('' none)"
    )
    parser.add_argument("--plot", type=Path, default=None, help="also draw the plot into this PNG file")
    args = parser.parse_args(argv)
    points = [int(x) for x in args.commits.split(",") if x]
    before = [int(x) for x in args.before_commits.split(",") if x]
    run = measure_age(points, before, progress=lambda m: print(m, file=sys.stderr, flush=True))
    print("\n".join(age_section(run)))
    print(f"\n{run.elapsed_s / 60:.1f} min")
    if args.plot is not None:
        plot(run, args.plot)


if __name__ == "__main__":
    main()
