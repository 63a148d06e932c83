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
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from icecompat_writer.checking.check import check_table
from icecompat_writer.deltalog.snapshot import read_snapshot
from icecompat_writer.storage import io_for
from icecompat_writer.writing.api import compat_write
from tests.support import start_child_driver

ROWS = 500

CHILD = textwrap.dedent(
    """
    import json, sys
    import icecompat_writer
    from icecompat_writer.writing.api import compat_write
    table, version, rows, conf = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4])
    spark = icecompat_writer.session("crash-child", **conf)
    df = spark.range(version * 100000, version * 100000 + rows)
    df = df.selectExpr("id", "cast(id % 7 as string) as part")
    print("READY", flush=True)
    sys.stdin.readline()  # told to write: the table is as the previous kill and its recovery left it
    print("WRITING", flush=True)
    compat_write(df, table, mode="append", options={"txnAppId": "crash-job", "txnVersion": str(version)})
    print("DONE", flush=True)
    """
)


class Child:
    """One child writer. Its driver starts at once (the next child's start-up overlaps the current
    kill and its recovery); it writes only when told (:meth:`write`)."""

    def __init__(self, table: Path, version: int) -> None:
        self.proc = start_child_driver(CHILD, str(table), str(version), str(ROWS))
        self.said: list[str] = []
        self.ready = threading.Event()
        self.writing = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.said.append(line.strip())
            if line.startswith("READY"):
                self.ready.set()
            elif line.startswith("WRITING"):
                self.writing.set()

    def write(self) -> None:
        """Tell the child to write and wait until it says it writes."""
        assert self.proc.stdin is not None
        if not self.ready.wait(timeout=300):
            self.kill()
            raise AssertionError("the child writer's session never started")
        self.proc.stdin.write("write\n")
        self.proc.stdin.flush()
        if not self.writing.wait(timeout=300):
            self.kill()
            raise AssertionError("the child writer never started writing")

    def kill(self) -> str:
        """SIGKILL the Python driver and its JVM at once; the last word the child printed."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=60)
        self.reader.join(timeout=60)  # the pipe closed with the child: every line it printed is in
        return self.said[-1] if self.said else ""


KILL_POINTS = ("random time", "first data file", "commit file")


def files_of(table: Path) -> set[Path]:
    return set(table.rglob("*.parquet"))


def wait_until(condition: Callable[[], bool], proc: subprocess.Popen[str], timeout: float = 300) -> None:
    """Poll ``condition`` every 10 ms until it holds, the child exits, or ``timeout`` passes."""
    end = time.monotonic() + timeout
    while not condition() and proc.poll() is None and time.monotonic() < end:
        time.sleep(0.01)


def kill_during_write(table: Path, child: Child, point: str, rng: random.Random) -> str:
    """Let ``child`` write and SIGKILL it at ``point``; return the last word it printed."""
    files_before = files_of(table)
    next_commit = table / "_delta_log" / f"{read_snapshot(table, io=io_for(table)).version + 1:020d}.json"
    child.write()
    if point == "random time":
        time.sleep(rng.uniform(0.0, 6.0))
    elif point == "first data file":
        wait_until(lambda: bool(files_of(table) - files_before), child.proc)
    else:
        wait_until(next_commit.exists, child.proc)
    return child.kill()


def crash_and_recover(spark: SparkSession, root: Path, kills: int, seed: int) -> Counter[str]:
    """Kill ``kills`` child writes in turn at each point; after each, check and re-run the write."""
    rng = random.Random(seed)
    # Two child drivers start while the table is made; each kill starts the one after the next.
    children = {version: Child(root, version) for version in range(1, min(kills, 2) + 1)}
    try:
        compat_write(
            spark.range(0).selectExpr("id", "cast(id as string) as part"), str(root), partition_by="part"
        )
        outcomes: Counter[str] = Counter()
        for version in range(1, kills + 1):
            point = KILL_POINTS[(version - 1) % len(KILL_POINTS)]
            last = kill_during_write(root, children.pop(version), point, rng)
            if version + 2 <= kills:
                children[version + 2] = Child(root, version + 2)
            committed = read_snapshot(root, io=io_for(root)).txns.get("crash-job", 0) >= version
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
            # the row count and the distinct id count, in one read
            back = spark.read.format("delta").load(str(root))
            rows, ids = back.agg(F.count("*"), F.count_distinct("id")).first()
            assert rows == version * ROWS, f"after kill {version}"
            assert ids == version * ROWS
        return outcomes
    finally:
        for child in children.values():
            child.kill()


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
