"""Time ``write_iceberg_metadata`` on the checker benchmark's synthetic logs, with real data files.

Three measurements: :func:`measure` (first conversions at several sizes, the section "Iceberg metadata
emission"), :func:`measure_sync` (one table, side by side in one run: the sync after a 10-file commit,
the same sync with full verification, a first conversion, and pyiceberg's own ``Table.add_files`` of the
same live files; the section "Iceberg sync and first conversion vs pyiceberg") and
:func:`measure_sync_cost` (the sync after a 10-file commit by table size, from the record and by
replaying the log, each in a process of its own for its peak RSS; the section "Iceberg sync: what a
small commit costs by table size"). Run alone with
``.venv/bin/python -m bench.bench_iceberg [--sizes 10000,20000] [--runs 3] [--no-compare] [--cost]``.

Used by ``bench.run`` (``bin/bench``). The emitter reads more than the log: before converting, it
checks the latest version with the rule catalog and the facts of every live data file, so it opens
every file's Parquet footer (field ids, INT64 timestamps, materialised partition columns, row count).
The logs are therefore those of ``bench_checker.build`` (a checkpoint plus three commits, ``size`` live
AddFiles) with ``with_data=True``: a real compliant 1,000-row Parquet file behind every AddFile
(hard links of one file per subdirectory). Each run starts from no Iceberg metadata (``metadata/`` is
deleted before it), so every run is a first, full conversion: one snapshot for the checkpoint's
version and one per later commit, each writing its manifests and manifest list.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``bench`` and the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from icecompat_writer.iceberg import METADATA_DIR, IcebergResult, write_iceberg_metadata
from icecompat_writer.storage import io_for

from .bench_checker import _add, _template_path, build, data_path


@dataclass(frozen=True)
class IcebergRow:
    """One log size: the median emission time and what the emitter reported."""

    size: int
    median_s: float
    snapshots: int
    data_files: int
    build_s: float

    @property
    def files_per_s(self) -> float:
        return self.size / self.median_s


def measure(
    sizes: list[int],
    runs: int,
    *,
    workdir: Path | None = None,
    progress: Callable[[str], None] | None = None,
    warmup: bool = True,
) -> list[IcebergRow]:
    """Per size: build the table once, an untimed conversion (first size only, unless ``warmup`` is
    false), ``runs`` timed ones."""
    say = progress or (lambda _msg: None)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_iceberg_", dir=workdir) as tmp:
        for size in sizes:
            root = Path(tmp) / f"t{size}"
            t0 = time.perf_counter()
            build(root, size, with_data=True)
            built = time.perf_counter() - t0
            samples = []
            result: IcebergResult | None = None
            # A warm-up conversion for the first size only: later sizes run the same code, warm.
            for run in range(0 if warmup and size == sizes[0] else 1, runs + 1):
                say(f"iceberg: {size:,} AddFiles, " + ("warm-up" if run == 0 else f"run {run}/{runs}"))
                shutil.rmtree(root / METADATA_DIR, ignore_errors=True)
                t0 = time.perf_counter()
                result = write_iceberg_metadata(root)
                elapsed = time.perf_counter() - t0
                if run:
                    samples.append(elapsed)
            assert result is not None
            files = _live_files(result)
            assert files == size, f"the emitter converted {files} live files, expected {size}"
            rows.append(IcebergRow(size, statistics.median(samples), len(result.snapshots), files, built))
            shutil.rmtree(root)
    return rows


def _live_files(result: IcebergResult) -> int:
    """Live data files after the conversion: every snapshot's added files minus its deleted ones."""
    return sum(s.added_files - s.deleted_files for s in result.snapshots)


# --- sync after a small commit, and first conversion vs pyiceberg ------------------------------------

SYNC_TARGET_S = 1.0
SYNC_AT = 100_000
COMMIT_FILES = 10
SYNC = "sync (incremental)"
FULL_SYNC = "sync, full verification"
FIRST = "first conversion"
PYICEBERG = "pyiceberg Table.add_files"


@dataclass
class SyncRow:
    """One table size: seconds per arm, and what each run reported (footers read, verification)."""

    size: int
    runs: int
    samples: dict[str, list[float]] = field(default_factory=dict)
    footers: dict[str, int] = field(default_factory=dict)
    build_s: float = 0.0

    def median(self, arm: str) -> float:
        return statistics.median(self.samples[arm])

    def has(self, arm: str) -> bool:
        return bool(self.samples.get(arm))


def _commit_files(root: Path, version: int, first: int, file_size: int) -> None:
    """A commit of ``COMMIT_FILES`` new files (hard links of the templates), as a small append writes."""
    from tests.deltalog import logbuilder as lb

    adds = []
    for k in range(COMMIT_FILES):
        i = first + k
        target = root / data_path(i)
        if not target.exists():
            os.link(root / _template_path(i), target)
        add = _add(i, version, file_size)
        adds.append(add)
    lb.LogBuilder(root).commit(version, [lb.commit_info("WRITE"), *adds])


def _drop_record(root: Path) -> None:
    """Remove the verification record from the current metadata: the next sync verifies in full."""
    meta_dir = root / METADATA_DIR
    hint = (meta_dir / "version-hint.text").read_text().strip()
    path = meta_dir / f"v{hint}.metadata.json"
    doc = json.loads(path.read_text())
    doc["properties"] = {
        k: v for k, v in doc["properties"].items() if not k.startswith("icecompat.verified-")
    }
    path.write_text(json.dumps(doc, indent=2))


def _logical_copies(root: Path, out: Path, metadata_path: Path) -> Any:
    """The same data files for pyiceberg: ``add_files`` matches Parquet columns by name, so its copies
    carry the logical names (same rows, row groups and field ids); hard-linked like the originals.
    Returns the Iceberg schema the table is registered with."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyiceberg.io.pyarrow import schema_to_pyarrow
    from pyiceberg.table import StaticTable

    schema = StaticTable.from_metadata(str(metadata_path)).schema()
    target = schema_to_pyarrow(schema)

    def rename(arr: Any, t: Any) -> Any:
        if pa.types.is_struct(t):
            kids = [rename(arr.field(i), t.field(i).type) for i in range(t.num_fields)]
            return pa.StructArray.from_arrays(kids, fields=list(t), mask=arr.is_null())
        return arr.cast(t)

    converted: dict[bytes, bytes] = {}  # the templates are copies of one file: converted once
    for d in range(256):
        raw = (root / _template_path(d)).read_bytes()
        if raw not in converted:
            src = pq.read_table(pa.BufferReader(raw))
            cols = [
                rename(src.column(i).combine_chunks(), target.field(i).type) for i in range(src.num_columns)
            ]
            sink = pa.BufferOutputStream()
            pq.write_table(pa.Table.from_arrays(cols, schema=target), sink)
            converted[raw] = sink.getvalue().to_pybytes()
        dest = out / _template_path(d)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(converted[raw])
    return schema


def _pyiceberg_add_files(work: Path, metadata_path: Path, paths: list[str], run: int) -> float:
    """pyiceberg's ``add_files`` of ``paths`` into an empty table of the same schema and spec, registered
    in a sqlite catalog (format v2: pyiceberg 0.12 writes no v3 metadata); returns the seconds it took."""
    from pyiceberg.catalog.sql import SqlCatalog

    wh = work / f"pyiceberg-{run}"
    shutil.rmtree(wh, ignore_errors=True)
    (wh / "t" / "metadata").mkdir(parents=True)
    doc = json.loads(metadata_path.read_text())
    doc.update(
        {
            "format-version": 2,
            "location": f"file://{wh}/t",
            "last-sequence-number": 0,
            "current-snapshot-id": None,
            "snapshots": [],
            "snapshot-log": [],
            "metadata-log": [],
            "refs": {},
            "properties": {},
        }
    )
    doc.pop("next-row-id", None)
    start = wh / "t" / "metadata" / "v0.metadata.json"
    start.write_text(json.dumps(doc))
    catalog = SqlCatalog("bench", uri=f"sqlite:///{wh}/catalog.db", warehouse=f"file://{wh}")
    catalog.create_namespace("bench")
    table = catalog.register_table("bench.t", f"file://{start}")
    t0 = time.perf_counter()
    table.add_files(paths)
    elapsed = time.perf_counter() - t0
    added = catalog.load_table("bench.t").current_snapshot()
    assert added is not None and int(added.summary["added-data-files"]) == len(paths)
    return elapsed


def measure_sync(
    size: int,
    runs: int,
    *,
    compare: bool = True,
    workdir: Path | None = None,
    progress: Callable[[str], None] | None = None,
    warmup: bool = True,
) -> SyncRow:
    """Per run, interleaved: a first conversion, (``compare``) pyiceberg's ``add_files`` of the same live
    files, the sync after a 10-file commit, and (``compare``) the sync after another 10-file commit with
    the verification record removed (full verification: what every sync cost before the record)."""
    from icecompat_writer.deltalog import read_snapshot

    say = progress or (lambda _msg: None)
    row = SyncRow(size, runs)
    arms = [FIRST, SYNC] + ([PYICEBERG, FULL_SYNC] if compare else [])
    row.samples = {a: [] for a in arms}
    if warmup:  # every arm once on a small table, untimed: imports and first-use costs are paid there
        say("iceberg sync: warm-up on a 300-file table")
        measure_sync(300, 1, compare=compare, workdir=workdir, warmup=False)
    with tempfile.TemporaryDirectory(prefix="bench_iceberg_sync_", dir=workdir) as tmp:
        root = Path(tmp) / "t"
        say(f"iceberg sync: building a {size:,}-file table")
        t0 = time.perf_counter()
        build(root, size, with_data=True)
        row.build_s = time.perf_counter() - t0
        file_size = (root / _template_path(0)).stat().st_size
        next_file = size + 1000
        version = max(int(p.name[:20]) for p in (root / "_delta_log").glob("*.json")) + 1
        logical = Path(tmp) / "logical"
        schema_ready = False
        for run in range(1, runs + 1):
            say(f"iceberg sync: {size:,} files, run {run}/{runs}: first conversion")
            shutil.rmtree(root / METADATA_DIR, ignore_errors=True)
            t0 = time.perf_counter()
            first = write_iceberg_metadata(root)
            row.samples[FIRST].append(time.perf_counter() - t0)
            row.footers[FIRST] = first.footers_read
            assert first.verification.startswith("full"), first.verification
            if compare:
                say(f"iceberg sync: {size:,} files, run {run}/{runs}: pyiceberg add_files")
                if not schema_ready:
                    _logical_copies(root, logical, Path(first.metadata_path))
                    schema_ready = True
                paths = []
                for add in read_snapshot(root, io=io_for(root)).add_files:
                    p = logical / add.path
                    if not p.exists():
                        index = int(add.path.split("part-")[1][:6])
                        os.link(logical / _template_path(index), p)
                    paths.append(str(p))
                row.samples[PYICEBERG].append(
                    _pyiceberg_add_files(Path(tmp), Path(first.metadata_path), paths, run)
                )
                row.footers[PYICEBERG] = len(paths)
            say(f"iceberg sync: {size:,} files, run {run}/{runs}: sync after a {COMMIT_FILES}-file commit")
            _commit_files(root, version, next_file, file_size)
            version, next_file = version + 1, next_file + COMMIT_FILES
            t0 = time.perf_counter()
            synced = write_iceberg_metadata(root)
            row.samples[SYNC].append(time.perf_counter() - t0)
            assert synced.verification == "incremental", synced.verification
            assert [s.operation for s in synced.snapshots] == ["append"]
            row.footers[SYNC] = synced.footers_read
            if compare:
                say(f"iceberg sync: {size:,} files, run {run}/{runs}: the same sync, full verification")
                _commit_files(root, version, next_file, file_size)
                version, next_file = version + 1, next_file + COMMIT_FILES
                _drop_record(root)
                t0 = time.perf_counter()
                full = write_iceberg_metadata(root)
                row.samples[FULL_SYNC].append(time.perf_counter() - t0)
                assert full.verification.startswith("full"), full.verification
                row.footers[FULL_SYNC] = full.footers_read
    return row


def sync_targets(row: SyncRow) -> list[tuple[str, str, str, bool | None]]:
    """(what, measured, goal, met): the sync goal, and the first conversion against pyiceberg."""
    out: list[tuple[str, str, str, bool | None]] = []
    sync = row.median(SYNC)
    out.append(
        (
            f"Iceberg sync after a {COMMIT_FILES}-file commit, {row.size:,}-file table",
            f"{sync:.3f} s",
            f"<= {SYNC_TARGET_S:.0f} s at {SYNC_AT:,} files",
            sync <= SYNC_TARGET_S if row.size >= SYNC_AT else None,
        )
    )
    if row.has(PYICEBERG):
        ratio = row.median(FIRST) / row.median(PYICEBERG)
        out.append(
            (
                f"Iceberg first conversion, {row.size:,} files",
                f"{ratio:.2f}x pyiceberg add_files",
                "< 1x (faster than pyiceberg)",
                ratio < 1.0,
            )
        )
    return out


def sync_section(rows: list[SyncRow]) -> list[str]:
    """The markdown section of ``docs/benchmarks.md``."""
    lines = [
        "## Iceberg sync and first conversion vs pyiceberg",
        "",
        "`bench/bench_iceberg.py` (`measure_sync`), one table per size (the checker's synthetic log with a "
        "real compliant 1,000-row Parquet file behind every AddFile), arms interleaved in every run: "
        f"**{FIRST}** (`metadata/` deleted first; every footer read), **{PYICEBERG}** (the same live "
        "files, into an empty table of the same schema registered in a sqlite catalog; pyiceberg matches "
        "columns by name, so it gets copies whose columns carry the logical names, same rows and field "
        f"ids), **{SYNC}** (`write_iceberg_metadata` after a commit of {COMMIT_FILES} new files: reads "
        f"the new commits and {COMMIT_FILES} footers), **{FULL_SYNC}** (the same after another "
        f"{COMMIT_FILES}-file commit, with the verification record removed from the metadata: every live "
        "footer read, as every run did before the record). The first conversion also converts the log's "
        "later commits (each removes one file, so the manifest holding the table's files is rewritten for "
        "each) and "
        "the 10-file commits of earlier runs; pyiceberg adds the live files in one snapshot. Every arm "
        "ran once, untimed, on a 300-file table first.",
        "",
        "| files | runs | "
        + " | ".join(a for a in (FIRST, PYICEBERG, SYNC, FULL_SYNC))
        + " | footers read (sync / full) |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        cells = [
            (f"{r.median(a):.3f} s" if r.has(a) else "not run") for a in (FIRST, PYICEBERG, SYNC, FULL_SYNC)
        ]
        footers = f"{r.footers.get(SYNC, 0):,} / {r.footers.get(FULL_SYNC, r.footers.get(FIRST, 0)):,}"
        lines.append(f"| {r.size:,} | {r.runs} | " + " | ".join(cells) + f" | {footers} |")
    lines += ["", "| target | measured | goal | result |", "| --- | --- | --- | --- |"]
    for r in rows:
        for what, measured, goal, met in sync_targets(r):
            verdict = (
                "n/a (not measured at the goal's size)" if met is None else ("pass" if met else "**MISS**")
            )
            lines.append(f"| {what} | {measured} | {goal} | {verdict} |")
    return [*lines, ""]


# --- the sync after a small commit by table size: from the record vs replaying the log ----------------

RECORD_SYNC = "sync from the record"
REPLAY_SYNC = "sync replaying the log"
COST_TARGET_S = 0.2
COST_AT = 1_000_000

_CHILD = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from icecompat_writer.iceberg import write_iceberg_metadata


def status(key):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])  # KiB
    raise KeyError(key)


warm, root = Path(sys.argv[2]), Path(sys.argv[3])
write_iceberg_metadata(warm)  # imports and first-use costs paid on a small table
Path("/proc/self/clear_refs").write_text("5")  # the peak RSS (VmHWM) starts again from the current RSS
base = status("VmRSS")
t0 = time.perf_counter()
result = write_iceberg_metadata(root)
elapsed = time.perf_counter() - t0
peak = status("VmHWM")
print(json.dumps({"s": elapsed, "base_kib": base, "peak_kib": peak, "verification": result.verification,
                  "snapshots": [s.operation for s in result.snapshots], "footers": result.footers_read}))
"""


@dataclass
class CostRow:
    """One table size: per arm, the seconds of each run and the process's peak RSS (MiB, Linux
    ``VmHWM``, reset just before the sync) in each run, and the RSS before the sync started (imports,
    the warm-up). ``ru_maxrss`` would not do: Linux carries it over from the parent across ``exec``."""

    size: int
    runs: int
    seconds: dict[str, list[float]] = field(default_factory=dict)
    peak_mib: dict[str, list[float]] = field(default_factory=dict)
    base_mib: dict[str, list[float]] = field(default_factory=dict)
    build_s: float = 0.0
    first_s: float = 0.0


def _forget_state(root: Path) -> None:
    """Remove the record of the Delta state from the current metadata: the next sync replays the log
    (the path every sync took before the record)."""
    meta_dir = root / METADATA_DIR
    hint = (meta_dir / "version-hint.text").read_text().strip()
    path = meta_dir / f"v{hint}.metadata.json"
    doc = json.loads(path.read_text())
    doc["properties"].pop("icecompat.delta-state", None)
    path.write_text(json.dumps(doc, indent=2))


def _child_sync(warm: Path, root: Path) -> dict[str, Any]:
    project = str(Path(__file__).resolve().parent.parent)
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, project, str(warm), str(root)],
        check=True,
        capture_output=True,
        text=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def measure_sync_cost(
    sizes: list[int],
    runs: int,
    *,
    workdir: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[CostRow]:
    """Per size: build the table, convert it once, then ``runs`` rounds of two interleaved arms, each a
    10-file commit followed by a sync in a fresh process (warmed on a 300-file table first): the sync
    from the record (:func:`write_iceberg_metadata` as it runs after every commit) and the same with
    the state record removed, which replays the log as every sync did before the record."""
    say = progress or (lambda _msg: None)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_iceberg_cost_", dir=workdir) as tmp:
        warm = Path(tmp) / "warm"
        build(warm, 300, with_data=True)
        write_iceberg_metadata(warm)
        warm_size = (warm / _template_path(0)).stat().st_size
        warm_version = max(int(p.name[:20]) for p in (warm / "_delta_log").glob("*.json")) + 1
        warm_next = 2000
        for size in sizes:
            row = CostRow(size, runs)
            for arm in (RECORD_SYNC, REPLAY_SYNC):
                row.seconds[arm], row.peak_mib[arm], row.base_mib[arm] = [], [], []
            root = Path(tmp) / f"t{size}"
            say(f"iceberg sync cost: building a {size:,}-file table")
            t0 = time.perf_counter()
            build(root, size, with_data=True)
            row.build_s = time.perf_counter() - t0
            say(f"iceberg sync cost: {size:,} files: first conversion")
            t0 = time.perf_counter()
            write_iceberg_metadata(root)
            row.first_s = time.perf_counter() - t0
            file_size = (root / _template_path(0)).stat().st_size
            version = max(int(p.name[:20]) for p in (root / "_delta_log").glob("*.json")) + 1
            next_file = size + 1000
            for run in range(1, runs + 1):
                for arm in (RECORD_SYNC, REPLAY_SYNC):
                    say(f"iceberg sync cost: {size:,} files, run {run}/{runs}: {arm}")
                    _commit_files(root, version, next_file, file_size)
                    version, next_file = version + 1, next_file + COMMIT_FILES
                    _commit_files(warm, warm_version, warm_next, warm_size)
                    warm_version, warm_next = warm_version + 1, warm_next + COMMIT_FILES
                    if arm == REPLAY_SYNC:  # the warm-up takes the same path as the timed sync
                        _forget_state(root)
                        _forget_state(warm)
                    got = _child_sync(warm, root)
                    assert got["verification"] == "incremental", got
                    assert got["snapshots"] == ["append"] and got["footers"] == COMMIT_FILES, got
                    row.seconds[arm].append(float(got["s"]))
                    row.peak_mib[arm].append(int(got["peak_kib"]) / 1024)
                    row.base_mib[arm].append(int(got["base_kib"]) / 1024)
            rows.append(row)
            shutil.rmtree(root)
    return rows


def cost_section(rows: list[CostRow]) -> list[str]:
    """The markdown table of :func:`measure_sync_cost` (medians; RSS in MiB per arm: before the sync,
    and its peak during the sync), then every run's seconds."""
    lines = [
        f"| files | runs | {RECORD_SYNC} | RSS before / peak | {REPLAY_SYNC} | RSS before / peak |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        cells = []
        for arm in (RECORD_SYNC, REPLAY_SYNC):
            base, peak = statistics.median(r.base_mib[arm]), statistics.median(r.peak_mib[arm])
            cells.append(f"{statistics.median(r.seconds[arm]):.3f} s | {base:.0f} / {peak:.0f} MiB")
        lines.append(f"| {r.size:,} | {r.runs} | " + " | ".join(cells) + " |")
    lines.append("")
    for r in rows:
        for arm in (RECORD_SYNC, REPLAY_SYNC):
            samples = ", ".join(f"{x:.3f}" for x in r.seconds[arm])
            lines.append(f"- {r.size:,} files, {arm}: {samples} s")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Iceberg sync and first conversion vs pyiceberg")
    parser.add_argument("--sizes", default="10000", help="comma-separated table sizes (live files)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-compare", action="store_true", help="only first conversion and sync")
    parser.add_argument("--cost", action="store_true", help="the sync's cost by table size, with peak RSS")
    args = parser.parse_args(argv)
    if args.cost:

        def say(message: str) -> None:
            print(message, file=sys.stderr, flush=True)

        cost = measure_sync_cost([int(x) for x in args.sizes.split(",")], args.runs, progress=say)
        for r in cost:
            say(f"{r.size:,} files: built in {r.build_s:.1f} s, first conversion {r.first_s:.1f} s")
        print("\n".join(cost_section(cost)))
        return
    rows = []
    for size in (int(x) for x in args.sizes.split(",")):
        rows.append(
            measure_sync(
                size,
                args.runs,
                compare=not args.no_compare,
                progress=lambda m: print(m, file=sys.stderr, flush=True),
            )
        )
    print("\n".join(sync_section(rows)))


if __name__ == "__main__":
    main()
