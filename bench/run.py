"""Measure what the guarantees cost, side by side, and write ``docs/benchmarks.md`` + ``benchmarks.png``.

Run with ``bin/bench [--quick] [--out DIR] [--runs N]`` (or ``.venv/bin/python -m bench.run``). One
Spark session for everything (a lean local one, or the caller's: ``run(spark=...)``), sections in this
order: write overhead (``bench_write``), planning (``bench_planning``), checker and footer checks
(``bench_checker``), Iceberg metadata emission, sync after a small commit and first conversion against
pyiceberg's ``add_files`` (``bench_iceberg``), with deletion vectors (``bench_deletion_vectors``),
``check`` on a local S3 server
against local disk (``bench_storage``), the session guard's cost on a SQL ``INSERT`` (``bench_guard``),
the Iceberg history as a table ages (``bench_age``: about 2,200 syncs of 15 ms on an idle machine at
1,000/10,000 commits, 550 more per point of ``--age-commits``) and many writers in one driver
(``bench_writers``: 8 and 16 streams, three arms, two rounds of 60 s windows, about 15 minutes),
whole-table operations' time and peak RSS, each in a fresh process (``bench_scale``, 100,000 files:
about 5 minutes on two idle cores; ``scale.png`` beside the document). Progress goes to stderr.

``--quick`` uses tiny sizes and two runs (about two minutes): it shows that the harness works. The smoke
test runs ``run(quick=True, smoke=True, runs=1)``: the quick run's write and planning cells, smaller
tables elsewhere and no warm-ups (``SMOKE``); ``bin/bench`` has no such mode. The full run is sized to
finish in about 35 minutes on two idle cores: about 17 minutes of 10,000,000-row writes (2 layouts x 5
arms x 5 runs at roughly 20 s each), 4 to 5 of Iceberg emission at 100,000 files (about 50 s a run,
footers of every file read), about 5 for the Iceberg sync section at 100,000 files (two rounds of a
first conversion, pyiceberg's add_files and a fully verified sync, about a minute each), 2 to 3 for the
checker and the rest; a machine loaded by other work stretches all of it.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``bench`` and the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import (
    bench_age,
    bench_checker,
    bench_deletion_vectors,
    bench_footers,
    bench_guard,
    bench_iceberg,
    bench_planning,
    bench_scale,
    bench_storage,
    bench_write,
    bench_writers,
    report,
)

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "docs"
PROFILES = ["v3", "writer-v1"]


@dataclass(frozen=True)
class Config:
    """Sizes and run counts of one benchmark run."""

    write_rows: list[int]
    write_runs: int
    write_tasks: int
    planning_sizes: list[int]
    planning_runs: int
    checker_sizes: list[int]
    checker_runs: int
    checker_warmup: int
    footer_files: int
    iceberg_sizes: list[int]
    iceberg_runs: int
    iceberg_sync_sizes: list[int]
    iceberg_sync_runs: int
    guard_rows: list[int]
    guard_runs: int
    guard_small_runs: int = bench_guard.SMALL_RUNS
    storage_files: int = 2000
    executor_footer_files: int = 2000  # bench_footers: S3 with latency, driver threads against executors
    dv_files: int = 10_000
    dv_runs: int = 1
    warmups: bool = True  # every section's untimed warm-up rounds or runs
    age_commits: tuple[int, ...] = (1_000, 10_000)  # bench_age's measuring points (--age-commits)
    writers_streams: tuple[int, ...] = (8, 16)  # bench_writers: streams in one driver
    writers_files: int = 10_000  # live files of every table
    writers_seconds: float = 60.0  # window per arm
    writers_rounds: int = 2
    scale_sizes: tuple[int, ...] = (100_000,)  # bench_scale: 1,000,000 and more on its own command line
    scale_ops: tuple[str, ...] = tuple(bench_scale.OPS)


# Full: 10,000,000-row writes dominate (see docs/benchmarks.md for the run time they add up to).
FULL = Config(
    write_rows=[1, 10_000_000],
    write_runs=5,
    write_tasks=4,
    planning_sizes=[100, 1_000, 10_000],
    planning_runs=7,
    checker_sizes=[1_000, 10_000, 100_000],
    checker_runs=5,
    checker_warmup=3,
    footer_files=300,
    iceberg_sizes=[1_000, 10_000, 100_000],
    iceberg_runs=5,
    iceberg_sync_sizes=[100_000],
    iceberg_sync_runs=2,
    guard_rows=[1, 10_000_000],
    guard_runs=1,
)
QUICK = Config(
    write_rows=[1, 10_000],
    write_runs=2,
    write_tasks=4,
    planning_sizes=[100, 1_000, 10_000],
    planning_runs=2,
    checker_sizes=[1_000],
    checker_runs=2,
    checker_warmup=1,
    footer_files=40,
    iceberg_sizes=[1_000],
    iceberg_runs=2,
    iceberg_sync_sizes=[1_000],
    iceberg_sync_runs=1,
    guard_rows=[1, 100_000],
    guard_runs=1,
    guard_small_runs=1,
    storage_files=100,
    dv_files=200,
    executor_footer_files=400,
    age_commits=(200, 400),
    writers_streams=(2,),
    writers_files=1_000,
    writers_seconds=10.0,
    writers_rounds=1,
    scale_sizes=(10_000,),
)
# The harness's own test: the quick run's write and planning cells (the test asserts them), the other
# sections' tables smaller, and no warm-up anywhere (a warm-up makes numbers comparable; a smoke run's
# numbers are not compared).
SMOKE = replace(
    QUICK,
    footer_files=8,
    iceberg_sizes=[100],
    iceberg_sync_sizes=[100],
    guard_rows=[1, 10_000],
    storage_files=10,
    executor_footer_files=20,
    dv_files=100,  # bench_checker.build's log needs at least 30 live files
    age_commits=(100, 200),
    writers_files=100,
    writers_seconds=5.0,
    warmups=False,
    scale_sizes=(100,),
    scale_ops=tuple(op for op in bench_scale.OPS if op != "delta-spark"),  # no second JVM
)


class Progress:
    """Progress lines on stderr, each with the time since the run started."""

    def __init__(self, enabled: bool = True) -> None:
        self.start = time.perf_counter()
        self.enabled = enabled
        self.messages: list[str] = []  # every message, printed or not (``Results.progress``)

    def __call__(self, message: str) -> None:
        self.messages.append(message)
        if self.enabled:
            elapsed = time.perf_counter() - self.start
            print(f"[bench {elapsed:7.1f} s] {message}", file=sys.stderr, flush=True)


def footer_checks(
    spark: Any, files: int, runs: int, say: Progress, *, warmup: bool = True
) -> report.FooterRow:
    """``check_table(files="all")`` on a ``compat_write`` table of ``files`` small data files, ``runs``
    timed checks after an untimed one (none when ``warmup`` is false)."""
    import statistics

    from icecompat_writer import compat_write
    from icecompat_writer.checking.check import check_table

    with tempfile.TemporaryDirectory(prefix="bench_footers_") as tmp:
        path = Path(tmp) / "t"
        say(f"footers: writing a table of {files} data files")
        compat_write(bench_write.nested_frame(spark, files * 100, files), str(path), profile="v3")
        samples = []
        for run in range(0 if warmup else 1, runs + 1):
            say("footers: " + ("warm-up" if run == 0 else f"run {run}/{runs}"))
            t0 = time.perf_counter()
            checked = check_table(path, files="all")
            elapsed = time.perf_counter() - t0
            assert checked.compliant and checked.files_checked == files, checked.render_text()
            if run:
                samples.append(elapsed)
    return report.FooterRow(files, statistics.median(samples))


def run(
    spark: Any | None = None,
    *,
    quick: bool = False,
    out: Path = DEFAULT_OUT,
    runs: int | None = None,
    progress: bool = True,
    smoke: bool = False,
    age_commits: tuple[int, ...] | None = None,
) -> report.Results:
    """Run every section and write ``benchmarks.md`` and ``benchmarks.png`` into ``out``.

    ``spark``: a running session with Delta and the shim (a test's); without one, a lean local session
    is created and stopped at the end. ``runs`` overrides every section's run count. ``smoke``: the
    ``SMOKE`` sizes instead of ``QUICK``'s or ``FULL``'s, for the harness's own test: every section
    and cell runs, with the quick run's write and planning cells, smaller tables in the other sections
    and no warm-up round or run anywhere, so every timed run may be cold; the document says so.
    ``age_commits`` overrides the age section's measuring points (``--age-commits 1000,10000,100000``).
    The ``Results`` record what ran (sizes in the rows, every progress message in ``progress``).
    """
    cfg = SMOKE if smoke else QUICK if quick else FULL
    if age_commits is not None:
        cfg = replace(cfg, age_commits=tuple(age_commits))
    warm = cfg.warmups
    if runs is not None:
        cfg = Config(
            **{**cfg.__dict__, **{k: runs for k in cfg.__dict__ if k.endswith("_runs")}},
        )
    say = Progress(progress)
    own = spark is None
    if spark is None:
        import icecompat_writer

        say("starting a local Spark session")
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # Python tasks (footers) run this one
        spark = icecompat_writer.session("icecompat-bench")
    try:
        machine = report.machine(spark)
        write = bench_write.measure(
            spark, cfg.write_rows, cfg.write_runs, PROFILES, tasks=cfg.write_tasks, progress=say, warmup=warm
        )
        say("planning")
        planning = [
            row
            for profile in PROFILES
            for row in bench_planning.measure(profile, cfg.planning_sizes, cfg.planning_runs)
        ]
        planning_alone = [
            row
            for profile in PROFILES
            for row in bench_planning.measure_alone(profile, cfg.planning_sizes, cfg.planning_runs)
        ]
        checker = bench_checker.measure(
            spark, cfg.checker_sizes, cfg.checker_runs, progress=say, warmup=cfg.checker_warmup if warm else 0
        )
        footers = footer_checks(spark, cfg.footer_files, cfg.checker_runs, say, warmup=warm)
        iceberg = bench_iceberg.measure(cfg.iceberg_sizes, cfg.iceberg_runs, progress=say, warmup=warm)
        iceberg_sync = [
            bench_iceberg.measure_sync(size, cfg.iceberg_sync_runs, progress=say, warmup=warm)
            for size in cfg.iceberg_sync_sizes
        ]
        dvs = bench_deletion_vectors.measure(cfg.dv_files, cfg.dv_runs, progress=say, warmup=warm)
        stored = bench_storage.measure(cfg.storage_files, cfg.checker_runs, progress=say, warmup=warm)
        on_executors = bench_footers.measure(
            spark, cfg.executor_footer_files, cfg.checker_runs, progress=say, warmup=warm
        )
        guard = bench_guard.measure(
            spark, cfg.guard_rows, cfg.guard_runs, small_runs=cfg.guard_small_runs, progress=say, warmup=warm
        )
        age = bench_age.measure_age(list(cfg.age_commits), [], progress=say)
        writers = bench_writers.measure(
            spark,
            list(cfg.writers_streams),
            cfg.writers_files,
            cfg.writers_seconds,
            cfg.writers_rounds,
            warmup=warm,
            progress=say,
        )
        with tempfile.TemporaryDirectory(prefix="bounded-") as tmp:
            scale = bench_scale.run(list(cfg.scale_sizes), list(cfg.scale_ops), Path(tmp), progress=say)
        results = report.Results(
            quick=quick,
            smoke=smoke,
            machine=machine,
            write=write,
            planning=planning,
            planning_runs=cfg.planning_runs,
            planning_alone=planning_alone,
            checker=checker,
            checker_runs=cfg.checker_runs,
            footers=footers,
            iceberg=iceberg,
            iceberg_runs=cfg.iceberg_runs,
            iceberg_sync=iceberg_sync,
            deletion_vectors=dvs,
            dv_runs=cfg.dv_runs,
            profiles_of_misses={},
            storage=stored,
            footers_executors=on_executors,
            guard=guard,
            guard_runs=cfg.guard_runs,
            age=age,
            writers=writers,
            scale=scale,
            scale_sizes=list(cfg.scale_sizes),
        )
        fixed_rows = min(cfg.write_rows)
        for t in report.targets(results):
            if t.met is False and t.what.startswith("write fixed cost"):
                profile = t.what.split(", ")[1]
                key = f"{profile}, {fixed_rows:,} row(s)"
                if key not in results.profiles_of_misses:
                    say(f"profiling compat_write ({key})" + (" after a warm-up write" if warm else ""))
                    results.profiles_of_misses[key] = bench_write.profile_compat_write(
                        spark, profile, fixed_rows, cfg.write_tasks, warmup=warm
                    )
    finally:
        if own:
            spark.stop()
    results.elapsed_s = time.perf_counter() - say.start
    results.progress = say.messages
    results.load_at_end = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    out.mkdir(parents=True, exist_ok=True)
    (out / "benchmarks.md").write_text(report.markdown(results), encoding="utf-8")
    report.plot(results, out / "benchmarks.png")
    bench_age.plot(age, out / report.AGE_PLOT)
    bench_scale.plot(results.scale, out / "scale.png")
    plots = f"{out / 'benchmarks.png'}, {out / report.AGE_PLOT} and {out / 'scale.png'}"
    say(f"wrote {out / 'benchmarks.md'}, {plots}")
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes, two runs (about two minutes)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where to write (default: docs/)")
    parser.add_argument("--runs", type=int, default=None, help="timed runs per section (overrides)")
    parser.add_argument(
        "--age-commits",
        default=None,
        help="the age section's measuring points, e.g. 1000,10000,100000 (default 1000,10000)",
    )
    args = parser.parse_args(argv)
    points = None if args.age_commits is None else tuple(int(x) for x in args.age_commits.split(",") if x)
    results = run(quick=args.quick, out=args.out, runs=args.runs, age_commits=points)
    for t in report.targets(results):
        print(f"{report._verdict(t):>8}  {t.what}: {t.measured} (goal {t.target})")
    print(f"{args.out / 'benchmarks.md'}, {args.out / 'benchmarks.png'} ({results.elapsed_s / 60:.1f} min)")


if __name__ == "__main__":
    main()
