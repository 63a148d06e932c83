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
SMALL_RUNS = 9  # timed rounds of the cells up to WARMUP_UP_TO_ROWS rows
TASKS = 4


@dataclass
class GuardRow:
    """The samples (seconds) of both arms at one row count."""

    rows: int
    samples: dict[str, list[float]] = field(default_factory=lambda: {GUARDED: [], UNGUARDED: []})

    def median(self, arm: str) -> float:
        return statistics.median(self.samples[arm])

    @property
    def pair_ratios(self) -> list[float]:
        """guarded / guard off of each round (the two runs of a round are adjacent in time)."""
        return [g / u for g, u in zip(self.samples[GUARDED], self.samples[UNGUARDED], strict=True)]

    @property
    def ratio(self) -> float:
        """The median of the rounds' ratios: a load that drifts during the run moves both runs of a
        round alike, so the ratio of each round is steadier than the ratio of the medians."""
        return statistics.median(self.pair_ratios)


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


def _timed_insert(spark: Any, table: Path, rows: int, arm: str) -> float:
    spark.conf.set(ENABLED_KEY, "true" if arm == GUARDED else "false")
    try:
        return _insert(spark, table, rows)
    finally:
        spark.conf.set(ENABLED_KEY, "true")


def measure(
    spark: Any,
    rows_list: list[int],
    runs: int,
    progress: Callable[[str], None] = lambda _: None,
    small_runs: int = SMALL_RUNS,
    warmup: bool = True,
) -> list[GuardRow]:
    """Both arms at every row count: ``runs`` timed rounds each, or ``max(runs, small_runs)`` for
    cells up to ``WARMUP_UP_TO_ROWS`` rows, which also get one untimed warm-up round (none when
    ``warmup`` is false).

    Large cells write into fresh tables every round. Small cells, where one INSERT is mostly fixed
    cost and a loaded machine's noise is as large as the guard's cost, keep one table per arm for
    all their rounds (a 1-row INSERT into a table with a few more 1-row files costs the same), so
    many rounds fit in the time one fresh table per round would take.
    """
    previous = spark.conf.get(ENABLED_KEY, None)
    out = []
    try:
        for rows in rows_list:
            row = GuardRow(rows)
            small = rows <= WARMUP_UP_TO_ROWS
            timed_rounds = max(runs, small_runs) if small else runs
            rounds = timed_rounds + (1 if small and warmup else 0)
            with tempfile.TemporaryDirectory(prefix="bench_guard_") as tmp:
                names = {arm: arm.replace(" ", "_") for arm in row.samples}
                kept = {arm: _fresh_table(spark, Path(tmp), name) for arm, name in names.items() if small}
                for r in range(rounds):
                    timed = r >= rounds - timed_rounds
                    order = (GUARDED, UNGUARDED) if r % 2 == 0 else (UNGUARDED, GUARDED)
                    for arm in order:
                        if small:
                            elapsed = _timed_insert(spark, kept[arm], rows, arm)
                        else:
                            table = _fresh_table(spark, Path(tmp), f"r{r}_{names[arm]}")
                            elapsed = _timed_insert(spark, table, rows, arm)
                            shutil.rmtree(table, ignore_errors=True)
                        progress(
                            f"guard: {rows:,} rows, {arm}: {elapsed:.3f} s" + ("" if timed else " (warm-up)")
                        )
                        if timed:
                            row.samples[arm].append(elapsed)
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
    small = [r for r in rows if r.rows <= WARMUP_UP_TO_ROWS]
    lines = [
        "## The session guard: SQL INSERT, guarded vs guard off",
        "",
        "`bench/bench_guard.py`: the same `INSERT INTO delta.`<t>` SELECT ... FROM range(n)` into a "
        "`v3` table (made by `compat_write`, two seed rows) with the guard on (the default) and with "
        f"`{ENABLED_KEY}=false`, the two arms of a round run back to back, their order alternating "
        "from round to round; ratio: the median of the rounds' ratios. "
        + (
            f"Cells up to {WARMUP_UP_TO_ROWS:,} rows keep one table per arm and run one untimed warm-up "
            "round; larger cells write into a fresh table every run."
            if small
            else "Every run writes into a fresh table."
        ),
        "",
        f"| rows | rounds | {GUARDED} (median) | {UNGUARDED} (median) | ratio | round ratios |",
        "| ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        spread = ", ".join(f"{x:.2f}" for x in sorted(r.pair_ratios))
        lines.append(
            f"| {r.rows:,} | {len(r.pair_ratios)} | {r.median(GUARDED):.3f} s | {r.median(UNGUARDED):.3f} s "
            f"| {r.ratio:.3f}x | {spread} |"
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
    parser.add_argument(
        "--quick", action="store_true", help="1 and 100,000 rows (about two minutes on an idle machine)"
    )
    parser.add_argument("--runs", type=int, default=1, help="timed rounds of the cells above 1,000,000 rows")
    parser.add_argument(
        "--small-runs", type=int, default=SMALL_RUNS, help="timed rounds of the cells up to 1,000,000 rows"
    )
    args = parser.parse_args(argv)
    import icecompat_writer

    rows_list = [1, 100_000] if args.quick else [1, PER_ROW_AT]
    t0 = time.perf_counter()
    spark = icecompat_writer.session("icecompat-bench-guard")
    try:
        rows = measure(
            spark,
            rows_list,
            args.runs,
            progress=lambda m: print(m, file=sys.stderr, flush=True),
            small_runs=args.small_runs,
        )
    finally:
        spark.stop()
    print("\n".join(section(rows, args.runs)))
    print(f"({(time.perf_counter() - t0) / 60:.1f} min)", file=sys.stderr)


if __name__ == "__main__":
    main()
