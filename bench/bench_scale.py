"""Time and peak memory of whole-table operations at production scale: 100,000 to 10,000,000 live files.

Not a test: run ``.venv/bin/python bench/bench_scale.py [--sizes 100000,1000000] [--ops ...]
[--out DIR] [--keep]``.

Per size, one synthetic table is built under ``/tmp/bounded-<size>`` (or ``--tmp``): the layout of
:func:`bench_checker.build` (a classic checkpoint at version 10 with all but 27 of the AddFiles, three
commits of ten adds and one remove after it, ``_last_checkpoint``) with a real compliant Parquet file
behind every live AddFile. The checkpoint is written in row groups of 100,000 rows, never holding all
actions at once, and every data file is a hard link of one of 256 template files (no extra disk
blocks or inodes). Then, each in a fresh subprocess (``nice -n 10``), whose peak RSS is taken from
``os.wait4`` (the child and every process it waited for):

- ``check``: ``check_table(files="none")``;
- ``upgrade-plan``: ``plan_upgrade(profile="v3")`` (log replay and every footer, as ``icecompat upgrade``
  plans);
- ``convert``: the first Iceberg conversion, ``write_iceberg_metadata`` (every footer read);
- ``sync``: a commit of ten new files, then ``write_iceberg_metadata`` again (the incremental sync);
- ``delta-spark``: delta-spark's own snapshot load, ``DeltaLog.forTable(...).unsafeVolatileSnapshot()
  .allFiles().count()`` (:func:`bench_checker.workloads`), timed after one untimed warm-up load of the
  same table in the same JVM; its peak RSS is the JVM's ``VmHWM`` (the driver), the Python side's
  own peak is small.

A measurement that fails (out of memory, killed, an error) is reported with what it printed. The
results go to ``scale.json`` and ``scale.png`` (time and peak RSS against files, log-log) in ``--out``.
The tables are deleted at the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``bench`` and the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pyarrow as pa
import pyarrow.parquet as pq

from bench import bench_checker
from tests.deltalog import logbuilder as lb

OPS = ["check", "delta-spark", "convert", "sync", "upgrade-plan"]
SIZES = [100_000, 1_000_000, 10_000_000]
QUICK_SIZES = [10_000, 100_000]
ROW_GROUP = 100_000
SYNC_ADDS = 10
ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class ScaleRow:
    """One measurement: an operation on a table of ``files`` live files."""

    op: str
    files: int
    seconds: float | None  # None: it did not complete
    peak_rss_mb: float
    note: str = ""
    size: int = 0  # the table's size as built (files: what it holds when measured, after the sync's commit)


# -- the synthetic table ------------------------------------------------------------------------------


def _checkpoint_batches(count: int, size: int) -> Iterator[pa.Table]:
    """The checkpoint's AddFile rows, ``ROW_GROUP`` at a time (the first batch has no protocol/metadata)."""
    names = lb.V1_CHECKPOINT_SCHEMA.names
    for start in range(0, count, ROW_GROUP):
        adds = [
            bench_checker._add(i, bench_checker.CHECKPOINT_VERSION, size)["add"]
            for i in range(start, min(count, start + ROW_GROUP))
        ]
        columns: dict[str, list[Any]] = {n: [None] * len(adds) for n in names}
        columns["add"] = adds
        yield pa.Table.from_pydict(columns, schema=lb.V1_CHECKPOINT_SCHEMA)


def build(root: Path, live: int) -> None:
    """:func:`bench_checker.build`'s table with data, written without holding its actions in memory."""
    protocol, metadata = bench_checker.compliant_state()
    per = bench_checker.ADDS_PER_COMMIT
    after = bench_checker.COMMITS_AFTER
    in_checkpoint = live - after * per + after
    size = bench_checker._write_templates(root, metadata)
    b = lb.LogBuilder(root)
    cp = b.log / f"{bench_checker.CHECKPOINT_VERSION:020d}.checkpoint.parquet"
    with pq.ParquetWriter(cp, lb.V1_CHECKPOINT_SCHEMA) as writer:
        head: dict[str, list[Any]] = {n: [None, None] for n in lb.V1_CHECKPOINT_SCHEMA.names}
        head["protocol"] = [protocol, None]
        head["metaData"] = [None, metadata]
        writer.write_table(pa.Table.from_pydict(head, schema=lb.V1_CHECKPOINT_SCHEMA))
        for batch in _checkpoint_batches(in_checkpoint, size):
            writer.write_table(batch, row_group_size=ROW_GROUP)
    b.last_checkpoint({"version": bench_checker.CHECKPOINT_VERSION, "size": in_checkpoint + 2})
    next_id = in_checkpoint
    for c in range(after):
        version = bench_checker.CHECKPOINT_VERSION + 1 + c
        new = [bench_checker._add(next_id + k, version, size) for k in range(per)]
        next_id += per
        removed = bench_checker._add(c, bench_checker.CHECKPOINT_VERSION, size)["add"]["path"]
        b.commit(version, [lb.commit_info(), lb.remove(removed), *new])
    _link(root, range(next_id))


def _link(root: Path, ids: range) -> None:
    """Hard links of the templates under the data file names (one template per subdirectory)."""
    for i in ids:
        target = root / bench_checker.data_path(i)
        if not target.exists():
            os.link(root / bench_checker._template_path(i), target)


def add_commit(root: Path, live: int) -> None:
    """The sync's commit: ``SYNC_ADDS`` new files after the last version, with their data files."""
    b = lb.LogBuilder(root)
    version = bench_checker.CHECKPOINT_VERSION + bench_checker.COMMITS_AFTER + 1
    first = live + bench_checker.COMMITS_AFTER  # ids used so far: live + the removed ones
    size = (root / bench_checker._template_path(0)).stat().st_size
    new = [bench_checker._add(first + k, version, size) for k in range(SYNC_ADDS)]
    _link(root, range(first, first + SYNC_ADDS))
    b.commit(version, [lb.commit_info(), *new])


# -- the child side -----------------------------------------------------------------------------------


def _child(op: str, root: Path, files: int) -> dict[str, Any]:
    """Run ``op`` once on ``root``; returns what the parent records (seconds, and a note)."""
    if op == "delta-spark":
        return _delta_spark(root, files)
    from icecompat_writer.checking.check import check_table
    from icecompat_writer.iceberg import write_iceberg_metadata
    from icecompat_writer.storage import io_for
    from icecompat_writer.upgrading.plan import plan_upgrade

    t0 = time.perf_counter()
    note = ""
    if op == "check":
        report = check_table(root, files="none")
        assert report.compliant and report.files_total == files, report.render_text()
    elif op == "upgrade-plan":
        planned = plan_upgrade(root, "v3", io=io_for(root))
        note = f"needed={planned.needed}"
    elif op in ("convert", "sync"):
        result = write_iceberg_metadata(root)
        assert result.written, result
        note = f"{result.verification}, {result.footers_read} footers"
    else:
        raise ValueError(op)
    return {"seconds": time.perf_counter() - t0, "note": note}


def _delta_spark(root: Path, files: int) -> dict[str, Any]:
    import icecompat_writer

    spark = icecompat_writer.session("bench-scale")
    try:
        load = bench_checker.workloads(spark)["allFiles.count"]
        assert load(root) == files  # untimed: JIT, caches
        t0 = time.perf_counter()
        count = load(root)
        seconds = time.perf_counter() - t0
        assert count == files, count
        pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
        hwm = _vm_hwm_kb(pid)
    finally:
        spark.stop()
    return {"seconds": seconds, "note": "JVM", "jvm_peak_kb": hwm}


def _vm_hwm_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


# -- the parent side ----------------------------------------------------------------------------------


def measure_one(op: str, root: Path, files: int, timeout: float) -> ScaleRow:
    """``op`` in a fresh ``nice -n 10`` subprocess; its peak RSS from ``os.wait4`` (the child and every
    process it waited for)."""
    cmd = [
        "nice",
        "-n",
        "10",
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        op,
        str(root),
        str(files),
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=ROOT)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
        elapsed = time.monotonic() - started
        out.seek(0)
        err.seek(0)
        lines = out.read().decode(errors="replace").strip().splitlines()
        errors = err.read().decode(errors="replace").strip().splitlines()
    peak_kb = int(usage.ru_maxrss)  # KiB on Linux
    if proc.returncode == 0 and lines:
        doc = json.loads(lines[-1])
        peak = max(peak_kb, int(doc.get("jvm_peak_kb", 0)))
        return ScaleRow(op, files, float(doc["seconds"]), peak / 1024, str(doc.get("note", "")))
    tail = (errors or ["no output"])[-1][:300]
    note = f"failed (exit {proc.returncode}) after {elapsed:.0f} s: {tail}"
    return ScaleRow(op, files, None, peak_kb / 1024, note)


def run(
    sizes: list[int],
    ops: list[str],
    tmp: Path,
    *,
    keep: bool = False,
    timeout: float = 4 * 3600,
    progress: Callable[[str], None] | None = None,
) -> list[ScaleRow]:
    say = progress or (lambda _m: None)
    rows: list[ScaleRow] = []
    for size in sizes:
        root = tmp / f"bounded-{size}"
        if root.exists():
            shutil.rmtree(root)
        say(f"scale: building {size:,} files in {root}")
        t0 = time.perf_counter()
        build(root, size)
        say(f"scale: built in {time.perf_counter() - t0:.0f} s")
        files = size  # live files now (the sync's commit adds some)
        try:
            for op in ops:
                if op == "sync":
                    if not (root / "metadata").exists():
                        rows.append(ScaleRow(op, size, None, 0.0, "no first conversion to sync", size))
                        continue
                    add_commit(root, size)
                    files = size + SYNC_ADDS
                say(f"scale: {op} at {size:,} files")
                row = replace(measure_one(op, root, files, timeout), size=size)
                say(f"scale: {op} at {size:,}: {row.seconds} s, {row.peak_rss_mb:.0f} MB {row.note}")
                rows.append(row)
        finally:
            if not keep:
                shutil.rmtree(root, ignore_errors=True)
    return rows


def plot(rows: list[ScaleRow], path: Path) -> None:
    """Time and peak RSS against files, log-log, one line per operation."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for op in OPS:
        done = sorted((r for r in rows if r.op == op and r.seconds is not None), key=lambda r: r.files)
        if not done:
            continue
        xs = [r.files for r in done]
        left.plot(xs, [r.seconds for r in done], marker="o", label=op)
        right.plot(xs, [r.peak_rss_mb for r in done], marker="o", label=op)
    for ax, label in ((left, "time (s)"), (right, "peak RSS (MB)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("live files")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    right.axhline(2048, color="grey", linestyle="--", linewidth=0.8)
    left.legend(fontsize=8)
    fig.suptitle("whole-table operations at scale (fresh process each)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def render(rows: list[ScaleRow]) -> str:
    """The markdown table: per size and operation, time, peak RSS and the ratio to delta-spark's load."""
    anchor = {r.size: r for r in rows if r.op == "delta-spark" and r.seconds is not None}
    out = [
        "| files | operation | time | peak RSS | time / delta-spark load | note |",
        "| ---: | --- | ---: | ---: | ---: | --- |",
    ]
    for r in sorted(rows, key=lambda r: (r.size, OPS.index(r.op))):
        base = anchor.get(r.size)
        time_s = "-" if r.seconds is None else f"{r.seconds:,.1f} s"
        ratio = ""
        if r.seconds is not None and base is not None and base.seconds and r.op != "delta-spark":
            ratio = f"{r.seconds / base.seconds:.2f}"
        out.append(f"| {r.files:,} | {r.op} | {time_s} | {r.peak_rss_mb:,.0f} MB | {ratio} | {r.note} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default=",".join(str(s) for s in SIZES))
    parser.add_argument("--ops", default=",".join(OPS))
    parser.add_argument("--out", type=Path, default=Path("/tmp/bounded-bench"))
    parser.add_argument("--tmp", type=Path, default=Path("/tmp"))
    parser.add_argument("--keep", action="store_true", help="keep the synthetic tables")
    parser.add_argument("--timeout", type=float, default=4 * 3600, help="seconds per measurement")
    parser.add_argument("--child", nargs=3, metavar=("OP", "ROOT", "FILES"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        op, root, files = args.child
        print(json.dumps(_child(op, Path(root), int(files))))
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    ops = [o for o in args.ops.split(",") if o]
    unknown = set(ops) - set(OPS)
    if unknown:
        parser.error(f"unknown operations {sorted(unknown)}; known: {OPS}")
    rows = run(
        sizes,
        ops,
        args.tmp,
        keep=args.keep,
        timeout=args.timeout,
        progress=lambda m: print(m, file=sys.stderr, flush=True),
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "scale.json").write_text(json.dumps([asdict(r) for r in rows], indent=1))
    plot(rows, args.out / "scale.png")
    print(render(rows))


if __name__ == "__main__":
    main()


def section(rows: list[ScaleRow], sizes: list[int]) -> list[str]:
    """The "Scale" section of ``benchmarks.md`` (the plot is ``scale.png`` beside it)."""
    lines = [
        "## Scale",
        "",
        f"`bench/bench_scale.py` at {', '.join(f'{s:,}' for s in sizes)} live files: each operation once, in "
        "a fresh `nice -n 10` subprocess, peak RSS from `os.wait4` (for delta-spark, the JVM's `VmHWM`; its "
        "time is a second snapshot load in the same JVM). Larger sizes: `.venv/bin/python "
        "bench/bench_scale.py --sizes 1000000,10000000`.",
        "",
        render(rows),
        "",
        "![scale](scale.png)",
        "",
    ]
    return lines
