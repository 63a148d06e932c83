"""A writer killed (SIGKILL) at a random point of a write: the table reads, checks clean, and the same
idempotent write re-run afterwards lands its rows exactly once.

The kill points cover the whole write, taking turns: a random time after the child says it starts
writing (mostly session, snapshot and planning), the moment its first data file appears in the table
directory (files being written, nothing committed), and the moment its commit file appears in the log
(committed, the caller not yet told). Each outcome is read from the log (did the killed write's
``txnVersion`` land?). The CI variant kills 3 writers, one per point; ``--soak`` kills 20.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from icecompat_writer.checking.check import check_table
from icecompat_writer.deltalog.snapshot import read_snapshot
from icecompat_writer.writing.api import compat_write

ROWS = 500

CHILD = textwrap.dedent(
    """
    import sys
    import icecompat_writer
    from icecompat_writer.writing.api import compat_write
    table, version, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    spark = icecompat_writer.session(
        "crash-child", **{"spark.master": "local[1]", "spark.databricks.delta.snapshotPartitions": "1"}
    )
    df = spark.range(version * 100000, version * 100000 + rows)
    df = df.selectExpr("id", "cast(id % 7 as string) as part")
    print("WRITING", flush=True)
    compat_write(df, table, mode="append", options={"txnAppId": "crash-job", "txnVersion": str(version)})
    print("DONE", flush=True)
    """
)


def start_child(table: Path, version: int) -> tuple[subprocess.Popen[str], list[str]]:
    """Start one child write and wait until it says it writes; return it and the lines it printed."""
    env = {k: v for k, v in os.environ.items() if k != "ICECOMPAT_JARS_DIR"}
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(table), str(version), str(ROWS)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        start_new_session=True,
    )
    said: list[str] = []
    writing = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            said.append(line.strip())
            if line.startswith("WRITING"):
                writing.set()

    threading.Thread(target=read, daemon=True).start()
    if not writing.wait(timeout=300):
        os.killpg(proc.pid, signal.SIGKILL)
        raise AssertionError("the child writer never started writing")
    return proc, said


KILL_POINTS = ("random time", "first data file", "commit file")


def files_of(table: Path) -> set[Path]:
    return set(table.rglob("*.parquet"))


def wait_until(condition: Callable[[], bool], proc: subprocess.Popen[str], timeout: float = 300) -> None:
    """Poll ``condition`` every 10 ms until it holds, the child exits, or ``timeout`` passes."""
    end = time.monotonic() + timeout
    while not condition() and proc.poll() is None and time.monotonic() < end:
        time.sleep(0.01)


def kill_during_write(table: Path, version: int, point: str, rng: random.Random) -> str:
    """Run one child write and SIGKILL it at ``point``; return the last word it printed."""
    files_before = files_of(table)
    next_commit = table / "_delta_log" / f"{read_snapshot(table).version + 1:020d}.json"
    proc, said = start_child(table, version)
    if point == "random time":
        time.sleep(rng.uniform(0.0, 6.0))
    elif point == "first data file":
        wait_until(lambda: bool(files_of(table) - files_before), proc)
    else:
        wait_until(next_commit.exists, proc)
    os.killpg(proc.pid, signal.SIGKILL)  # the Python driver and its JVM, at once
    proc.wait(timeout=60)
    time.sleep(0.2)  # let the reader thread take the last line
    return said[-1] if said else ""


def crash_and_recover(spark: SparkSession, root: Path, kills: int, seed: int) -> Counter[str]:
    """Kill ``kills`` child writes in turn at each point; after each, check and re-run the write."""
    rng = random.Random(seed)
    compat_write(
        spark.range(0).selectExpr("id", "cast(id as string) as part"), str(root), partition_by="part"
    )
    outcomes: Counter[str] = Counter()
    for version in range(1, kills + 1):
        point = KILL_POINTS[(version - 1) % len(KILL_POINTS)]
        last = kill_during_write(root, version, point, rng)
        committed = read_snapshot(root).txns.get("crash-job", 0) >= version
        assert committed or last != "DONE", "a write that said DONE has its txnVersion in the log"
        if last == "DONE":
            outcomes[f"{point}: finished before the kill"] += 1
        else:
            outcomes[f"{point}: killed {'after its commit' if committed else 'before committing'}"] += 1
        report = check_table(root, "v3")
        assert report.violations == () and report.findings == (), report.render_text()
        # the same idempotent write, re-run: its rows land once whether or not the killed one committed
        again = spark.range(version * 100000, version * 100000 + ROWS).selectExpr(
            "id", "cast(id % 7 as string) as part"
        )
        compat_write(
            again, str(root), mode="append", options={"txnAppId": "crash-job", "txnVersion": str(version)}
        )
        back = spark.read.format("delta").load(str(root))
        assert back.count() == version * ROWS, f"after kill {version}"
        assert back.select("id").distinct().count() == version * ROWS
    return outcomes


@pytest.mark.spark
def test_killed_writers_leave_a_readable_compliant_table(spark: SparkSession, tmp_path: Path) -> None:
    outcomes = crash_and_recover(spark, tmp_path / "t", kills=3, seed=7)
    print(f"kills=3 outcomes={dict(outcomes)}")
    assert sum(outcomes.values()) == 3
    # a kill on the first data file lands before the commit; one on the commit file lands after it
    assert outcomes["first data file: killed before committing"] == 1, outcomes
    assert outcomes["commit file: killed after its commit"] == 1, outcomes


@pytest.mark.spark
@pytest.mark.soak
def test_soak_twenty_kills(spark: SparkSession, tmp_path: Path) -> None:
    t0 = time.monotonic()
    outcomes = crash_and_recover(spark, tmp_path / "t", kills=20, seed=2026)
    assert sum(outcomes.values()) == 20
    print(f"SOAK kills=20 outcomes={dict(outcomes)} seconds={time.monotonic() - t0:.0f}")
