"""What the session guard costs: a SQL ``INSERT`` into a guarded table against the same statement
with the guard switched off.

Used by ``bench.run`` (``bin/bench``) and runnable alone (``python -m bench.bench_guard [--quick]``,
which prints the section's markdown). For each row count two ``v3`` tables are made by
``compat_write`` with the same two seed rows, and the same statement,
``INSERT INTO delta.`<table>` SELECT ... FROM range(<rows>)``, runs into each: one with the guard on
(the session's default: the metadata hook, the commit check with the new files' footers, the rule
service round trips), one with ``spark.icecompat.guard.enabled=false`` (delta-spark's own write,
IcebergCompatV3 enforced by delta-spark itself; a session that opted out still refuses writer-profile
tables, which is why the table is ``v3``). The arms alternate within a round, every round on fresh
tables; cells up to ``WARMUP_UP_TO_ROWS`` rows run one untimed warm-up round.
"""

from __future__ import annotations

import argparse
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

GUARDED = "guarded"
UNGUARDED = "guard off"
ENABLED_KEY = "spark.icecompat.guard.enabled"
FIXED_TARGET = 1.3  # at 1 row
PER_ROW_TARGET = 1.05  # at 10,000,000 rows
PER_ROW_AT = 10_000_000
WARMUP_UP_TO_ROWS = 1_000_000
TASKS = 4


@dataclass
class GuardRow:
    """The samples (seconds) of both arms at one row count."""

    rows: int
    samples: dict[str, list[float]] = field(default_factory=lambda: {GUARDED: [], UNGUARDED: []})

    def median(self, arm: str) -> float:
        return statistics.median(self.samples[arm])

    @property
    def ratio(self) -> float:
        return self.median(GUARDED) / self.median(UNGUARDED)


def _insert(spark: Any, table: Path, rows: int) -> float:
    statement = (
        f"INSERT INTO delta.`{table}` SELECT id, concat('name-', cast(id AS string)) AS s, "
        f"cast(id % 7 AS string) AS d FROM range(0, {rows}, 1, {max(1, min(TASKS, rows))})"
    )
    t0 = time.perf_counter()
    spark.sql(statement)
    return time.perf_counter() - t0


def _fresh_table(spark: Any, base: Path, name: str) -> Path:
    from icecompat_writer import compat_write

    table = base / name
    seed = spark.sql("SELECT * FROM VALUES (0L, 'a', 'x'), (1L, 'b', 'y') AS t(id, s, d)")
    compat_write(seed, str(table), profile="v3")
    return table


def measure(
    spark: Any, rows_list: list[int], runs: int, progress: Callable[[str], None] = lambda _: None
) -> list[GuardRow]:
    """Both arms at every row count, ``runs`` timed rounds each (plus the warm-up round)."""
    previous = spark.conf.get(ENABLED_KEY, None)
    out = []
    try:
        for rows in rows_list:
            row = GuardRow(rows)
            rounds = runs + (1 if rows <= WARMUP_UP_TO_ROWS else 0)
            for r in range(rounds):
                timed = r >= rounds - runs
                order = (GUARDED, UNGUARDED) if r % 2 == 0 else (UNGUARDED, GUARDED)
                for arm in order:
                    with tempfile.TemporaryDirectory(prefix="bench_guard_") as tmp:
                        table = _fresh_table(spark, Path(tmp), "t")
                        spark.conf.set(ENABLED_KEY, "true" if arm == GUARDED else "false")
                        elapsed = _insert(spark, table, rows)
                        spark.conf.set(ENABLED_KEY, "true")
                        progress(
                            f"guard: {rows:,} rows, {arm}: {elapsed:.3f} s" + ("" if timed else " (warm-up)")
                        )
                        if timed:
                            row.samples[arm].append(elapsed)
                        shutil.rmtree(table, ignore_errors=True)
            out.append(row)
    finally:
        if previous is None:
            spark.conf.unset(ENABLED_KEY)
        else:
            spark.conf.set(ENABLED_KEY, previous)
    return out


def targets(rows: list[GuardRow]) -> list[tuple[str, str, str, bool | None]]:
    """(what, measured, goal, met) of both targets; met is None when not measured at the goal's size."""
    out: list[tuple[str, str, str, bool | None]] = []
    smallest = min(rows, key=lambda r: r.rows)
    largest = max(rows, key=lambda r: r.rows)
    out.append(
        (
            f"guard fixed cost, SQL INSERT of {smallest.rows:,} row(s)",
            f"{smallest.ratio:.2f}x {UNGUARDED}",
            f"<= {FIXED_TARGET}x at 1 row",
            smallest.ratio <= FIXED_TARGET if smallest.rows == 1 else None,
        )
    )
    if largest.rows > smallest.rows:
        out.append(
            (
                f"guard per-row cost, SQL INSERT of {largest.rows:,} rows",
                f"{largest.ratio:.3f}x {UNGUARDED}",
                f"<= {PER_ROW_TARGET}x at {PER_ROW_AT:,} rows",
                largest.ratio <= PER_ROW_TARGET if largest.rows >= PER_ROW_AT else None,
            )
        )
    return out


def section(rows: list[GuardRow], runs: int) -> list[str]:
    """The markdown section of ``docs/benchmarks.md``."""
    lines = [
        "## The session guard: SQL INSERT, guarded vs guard off",
        "",
        "`bench/bench_guard.py`: the same `INSERT INTO delta.`<t>` SELECT ... FROM range(n)` into a fresh "
        "`v3` table (made by `compat_write`, two seed rows) with the guard on (the default) and with "
        f"`{ENABLED_KEY}=false`, arms alternating, {runs} timed run(s) per arm"
        + (
            ", one untimed warm-up round for cells up to 1,000,000 rows"
            if any(r.rows <= WARMUP_UP_TO_ROWS for r in rows)
            else ""
        )
        + ".",
        "",
        f"| rows | {GUARDED} | {UNGUARDED} | ratio |",
        "| ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r.rows:,} | {r.median(GUARDED):.3f} s | {r.median(UNGUARDED):.3f} s | {r.ratio:.3f}x |"
        )
    lines += ["", "| target | measured | goal | result |", "| --- | --- | --- | --- |"]
    for what, measured, goal, met in targets(rows):
        verdict = "n/a (not measured at the goal's size)" if met is None else ("pass" if met else "**MISS**")
        lines.append(f"| {what} | {measured} | {goal} | {verdict} |")
    return [*lines, ""]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="1 and 100,000 rows, one run (about a minute)")
    parser.add_argument("--runs", type=int, default=1, help="timed runs per arm and row count")
    args = parser.parse_args(argv)
    import icecompat_writer

    rows_list = [1, 100_000] if args.quick else [1, PER_ROW_AT]
    t0 = time.perf_counter()
    spark = icecompat_writer.session("icecompat-bench-guard")
    try:
        rows = measure(spark, rows_list, args.runs, progress=lambda m: print(m, file=sys.stderr, flush=True))
    finally:
        spark.stop()
    print("\n".join(section(rows, args.runs)))
    print(f"({(time.perf_counter() - t0) / 60:.1f} min)", file=sys.stderr)


if __name__ == "__main__":
    main()
