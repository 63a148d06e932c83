"""Random sequences of DDL, DML, property changes, clones, RESTORE and writes against guarded tables.

A hypothesis state machine drives one table per sequence (of a profile, or plain) through SQL, the
DataFrame writers and the DeltaTable-level commands, in the shared (guarded by default) session.
After every step exactly one of two things holds:

- the step landed: ``check_table`` with every footer read finds the table compliant with the profile
  it declares or is held to (a plain table stays plain), and delta-spark reads it back
  (``_metadata.row_id`` present and unique when row tracking is on);
- the step was refused: every file and directory below the table is as it was (hashed).

Every run starts with a coverage phase that runs each step kind once, in a fixed order, against a
table of one profile (CI: the profile ``ICECOMPAT_STATEFUL_SEED`` picks; soak: every profile), so every
kind is drawn and refusals are among the outcomes; random sequences then fill a time budget. The
sequences come from that seed too (default 0; the run prints it), so a failure is replayed by setting
it; how many sequences fit the budget depends on the machine. The counts per step
kind (landed compliant / refused untouched) are printed; the soak's are in docs/reliability.md.
"""

from __future__ import annotations

import collections
import contextlib
import datetime
import itertools
import json
import os
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, seed, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from pyspark.errors.exceptions.base import PySparkException

from icecompat_writer import compat_write
from icecompat_writer.checking.check import check_table
from icecompat_writer.errors import CompatViolation, IcecompatError
from tests.support import session_conf, tree_state

PROFILES = ("v3", "writer-v1", "writer-v3", "plain")
DECLARING = {
    "v3": "delta.enableIcebergCompatV3",
    "writer-v1": "delta.enableIcebergWriterCompatV1",
    "writer-v3": "delta.enableIcebergWriterCompatV3",
}
# Every outcome of the run, by step kind: landed / refused (printed, and published for the soak).
COUNTS: collections.Counter[tuple[str, str]] = collections.Counter()
# Landed steps that made at least one commit (a DELETE that matches no row commits nothing).
COMMITTED: collections.Counter[str] = collections.Counter()
# Why refused steps were refused: (kind, rule ids or delta-spark's error class).
REASONS: collections.Counter[tuple[str, str]] = collections.Counter()
# Steps after which delta-spark reads the table at once (properties, protocol, RESTORE); after the
# other steps the checker's verdict (every footer, every AddFile's row ids) stands, and delta-spark
# reads the table at the end of the sequence.
READ_AFTER = frozenset({"SET TBLPROPERTIES", "UNSET TBLPROPERTIES", "RESTORE"})
# Where the run's time goes (seconds): the steps themselves, hashing, the checker, delta-spark's read.
SPENT: collections.Counter[str] = collections.Counter()
FAILURES: list[str] = []
_ids = itertools.count(1000)

NEW_COLUMN_TYPES = ("int", "bigint", "string", "double", "date", "timestamp", "tinyint", "smallint",
                    "decimal(10,2)", "struct<a:int,b:string>", "array<int>", "map<string,int>")  # fmt: skip
# Each entry is one SET TBLPROPERTIES statement (several properties set together where Delta turns
# them into several commits, as row tracking with a profile).
PROPERTIES: tuple[tuple[tuple[str, str], ...], ...] = (
    (("delta.enableIcebergCompatV3", "true"),),
    (("delta.enableIcebergCompatV3", "false"),),
    (("delta.enableIcebergWriterCompatV1", "false"),),
    (("delta.enableIcebergWriterCompatV3", "true"),),
    (("delta.enableIcebergWriterCompatV3", "false"),),
    (("delta.enableRowTracking", "true"),),
    (("delta.enableRowTracking", "false"),),
    (("delta.enableRowTracking", "true"), ("delta.enableIcebergCompatV3", "true")),
    (
        ("delta.enableRowTracking", "true"),
        ("delta.enableIcebergCompatV3", "true"),
        ("delta.enableIcebergWriterCompatV3", "true"),
    ),
    (("delta.enableChangeDataFeed", "true"),),
    (("delta.enableDeletionVectors", "true"),),
    (("delta.appendOnly", "false"),),
    (("delta.logRetentionDuration", "interval 30 days"),),
    (("parquet.crypto.factory.class", "x.Y"),),
    (("fs.file.impl", "x.Y"),),
    (("user.owner", "team"),),
)
UNSETS = (
    "delta.enableIcebergCompatV3",
    "delta.enableIcebergWriterCompatV1",
    "delta.enableIcebergWriterCompatV3",
    "delta.enableRowTracking",
    "user.owner",
)
# Small tables, small plans: one partition for Delta's state reconstruction instead of 50.
FAST = {"spark.databricks.delta.snapshotPartitions": "1"}


class _Budget(Exception):
    """The run's time is up: raised where a new sequence would start."""


class GuardedTable(RuleBasedStateMachine):
    """One table of one profile (or plain), in the shared guarded session; see the module docstring."""

    spark: Any = None
    base: Path = Path()
    deadline: float = float("inf")
    counts_file: Path | None = None

    def __init__(self) -> None:
        super().__init__()
        self.root = self.base / f"t{next(_ids)}"
        self.profile = "v3"
        self.columns: list[str] = []
        self.configuration: dict[str, str] = {}

    @property
    def sql(self) -> str:
        return f"delta.`{self.root}`"

    def _log(self) -> list[Path]:
        return sorted((self.root / "_delta_log").glob("[0-9]" * 20 + ".json"))

    def _read_state(self) -> None:
        """The table's current columns and properties, from its newest metaData in the log."""
        meta: dict[str, Any] = {}
        for f in self._log():
            for line in f.read_text().splitlines():
                if '"metaData"' in line:
                    meta = json.loads(line)["metaData"]
        self.columns = [f["name"] for f in json.loads(meta["schemaString"])["fields"]]
        self.configuration = dict(meta.get("configuration") or {})

    def _step(self, kind: str, fn: Callable[[], Any]) -> None:
        """Run one step: it lands compliant, or it is refused and leaves the table as it was.

        Past the run's deadline steps are skipped, so the sequence ends at once."""
        if time.monotonic() > self.deadline:
            return
        with _timed("hash"):
            before = tree_state(self.root)
        commits = len(self._log())
        try:
            with _timed("step"):
                fn()
        except (IcecompatError, PySparkException) as e:
            with _timed("hash"):
                after = tree_state(self.root)
            assert after == before, (
                f"{kind} was refused ({type(e).__name__}: {str(e)[:300]}) but changed the table"
            )
            REASONS[(kind, _reason(e))] += 1
            _count(kind, "refused")
            return
        self._read_state()
        self._assert_compliant(kind, self.root, read=kind in READ_AFTER)
        if len(self._log()) > commits:
            COMMITTED[kind] += 1
        _count(kind, "landed")

    def _assert_compliant(self, kind: str, root: Path, read: bool = True) -> None:
        """The checker's verdict (every footer) and, with ``read``, one delta-spark read of every row
        (the checker already holds every live AddFile to its row ids)."""
        with _timed("check"):
            report = check_table(root, files="all")
        if report.profile is not None or self.profile != "plain":
            assert report.compliant, f"after {kind} ({self.profile} table):\n{report.render_text()}"
        if read:
            self._read(kind, root)

    def _read(self, kind: str, root: Path) -> None:
        with _timed("read"):
            df = self.spark.read.format("delta").load(str(root))
            if self._row_tracking(root):
                ids = [r[0] for r in df.select("_metadata.row_id").collect()]
                assert None not in ids and len(set(ids)) == len(ids), f"after {kind}: row ids {ids}"
            else:
                df.collect()

    def _row_tracking(self, root: Path) -> bool:
        conf = self.configuration if root == self.root else {}
        if root != self.root:
            for f in sorted((root / "_delta_log").glob("[0-9]" * 20 + ".json")):
                for line in f.read_text().splitlines():
                    if '"metaData"' in line:
                        conf = json.loads(line)["metaData"].get("configuration") or {}
        return str(conf.get("delta.enableRowTracking", "")).lower() == "true"

    @initialize(profile=st.sampled_from(PROFILES), sql=st.booleans())
    def create(self, profile: str, sql: bool) -> None:
        """A table of ``profile``, made by compat_write or by SQL in the guarded session (a plain
        table by delta-spark's own writers)."""
        if time.monotonic() > self.deadline:
            raise _Budget
        self.profile = profile
        rows = "SELECT * FROM VALUES (1, 'a', 'x'), (2, 'b', 'y') AS t(id, s, d)"
        properties = f"TBLPROPERTIES ('{DECLARING[profile]}' = 'true') " if profile in DECLARING else ""
        with _timed("create"):
            if sql:
                self.spark.sql(f"CREATE TABLE {self.sql} USING delta {properties}AS {rows}")
            elif profile == "plain":
                self.spark.sql(rows).write.format("delta").save(str(self.root))
            else:
                compat_write(self.spark.sql(rows), str(self.root), profile=profile)
        self._read_state()
        self._assert_compliant("create", self.root)
        _count(f"create {profile}", "landed")

    @rule(n=st.integers(1, 3))
    def insert(self, n: int) -> None:
        values = ", ".join("id" if c == "id" else "NULL" for c in self.columns)
        self._step(
            "INSERT",
            lambda: self.spark.sql(f"INSERT INTO {self.sql} SELECT {values} FROM range({n}) AS r(id)"),
        )

    @rule()
    def insert_overwrite(self) -> None:
        values = ", ".join("id" if c == "id" else "NULL" for c in self.columns)
        self._step(
            "INSERT OVERWRITE",
            lambda: self.spark.sql(f"INSERT OVERWRITE {self.sql} SELECT {values} FROM range(2) AS r(id)"),
        )

    @rule(merge_schema=st.booleans())
    def dataframe_append(self, merge_schema: bool) -> None:
        df = self.spark.range(2).selectExpr(
            "cast(id AS int) AS id", "'w' AS s", "'z' AS d", "cast(id AS int) AS extra_i"
        )
        if merge_schema:
            writer = df.write.format("delta").mode("append").option("mergeSchema", "true")
        else:
            writer = df.drop("extra_i").write.format("delta").mode("append")
        self._step("DataFrame append", lambda: writer.save(str(self.root)))

    @rule()
    def update(self) -> None:
        self._step("UPDATE", lambda: self.spark.sql(f"UPDATE {self.sql} SET id = id + 10 WHERE id % 2 = 0"))

    @rule(k=st.integers(0, 3))
    def delete(self, k: int) -> None:
        self._step("DELETE", lambda: self.spark.sql(f"DELETE FROM {self.sql} WHERE id % 4 = {k}"))

    @rule()
    def merge(self) -> None:
        self._step(
            "MERGE",
            lambda: self.spark.sql(
                f"MERGE INTO {self.sql} t USING (SELECT 2 AS id UNION ALL SELECT 7) s ON t.id = s.id "
                "WHEN MATCHED THEN UPDATE SET t.id = s.id + 100 "
                "WHEN NOT MATCHED THEN INSERT (id) VALUES (s.id)"
            ),
        )

    @rule(kind=st.sampled_from(NEW_COLUMN_TYPES))
    def add_column(self, kind: str) -> None:
        name = f"c{next(_ids)}"
        self._step(
            "ADD COLUMN", lambda: self.spark.sql(f"ALTER TABLE {self.sql} ADD COLUMNS ({name} {kind})")
        )

    def _extra(self) -> list[str]:
        return [c for c in self.columns if c.startswith(("c", "r", "extra"))]

    @precondition(lambda self: bool(self._extra()))
    @rule()
    def rename_column(self) -> None:
        column = self._extra()[0]
        self._step(
            "RENAME COLUMN",
            lambda: self.spark.sql(f"ALTER TABLE {self.sql} RENAME COLUMN {column} TO r{next(_ids)}"),
        )

    @precondition(lambda self: bool(self._extra()))
    @rule()
    def drop_column(self) -> None:
        column = self._extra()[-1]
        self._step("DROP COLUMN", lambda: self.spark.sql(f"ALTER TABLE {self.sql} DROP COLUMN {column}"))

    @rule(props=st.sampled_from(PROPERTIES))
    def set_property(self, props: tuple[tuple[str, str], ...]) -> None:
        pairs = ", ".join(f"'{k}' = '{v}'" for k, v in props)
        self._step(
            "SET TBLPROPERTIES",
            lambda: self.spark.sql(f"ALTER TABLE {self.sql} SET TBLPROPERTIES ({pairs})"),
        )

    @rule(key=st.sampled_from(UNSETS))
    def unset_property(self, key: str) -> None:
        self._step(
            "UNSET TBLPROPERTIES",
            lambda: self.spark.sql(f"ALTER TABLE {self.sql} UNSET TBLPROPERTIES IF EXISTS ('{key}')"),
        )

    @rule()
    def optimize(self) -> None:
        self._step("OPTIMIZE", lambda: self.spark.sql(f"OPTIMIZE {self.sql}"))

    @precondition(lambda self: len(self._log()) > 1)
    @rule(back=st.integers(1, 3))
    def restore(self, back: int) -> None:
        current = int(self._log()[-1].name[:20])
        target = max(0, current - back)
        self._step("RESTORE", lambda: self.spark.sql(f"RESTORE TABLE {self.sql} TO VERSION AS OF {target}"))

    @rule(back=st.integers(0, 2))
    def clone(self, back: int) -> None:
        """A shallow clone (of the current version, or an older one) into a fresh location: the
        source must stay as it is, the clone comply or not exist. (Delta's open-source SQL has no
        DEEP CLONE: the statement does not parse.)"""
        if time.monotonic() > self.deadline:
            return
        target = self.base / f"clone{next(_ids)}"
        kind = "SHALLOW CLONE"
        current = int(self._log()[-1].name[:20])
        version = f" VERSION AS OF {max(0, current - back)}" if back else ""
        before = tree_state(self.root)
        try:
            self.spark.sql(f"CREATE TABLE delta.`{target}` SHALLOW CLONE {self.sql}{version}")
        except (IcecompatError, PySparkException) as e:
            assert tree_state(target) == {}, f"a refused {kind} left {sorted(tree_state(target))}"
            REASONS[(kind, _reason(e))] += 1
            outcome = "refused"
        else:
            self._assert_compliant(kind, target)
            COMMITTED[kind] += 1
            outcome = "landed"
        assert tree_state(self.root) == before, f"{kind} changed its source"
        _count(kind, outcome)

    @invariant()
    def readable(self) -> None:
        assert (self.root / "_delta_log").is_dir()

    def teardown(self) -> None:
        """The end of a sequence: delta-spark reads what the data steps left."""
        if (self.root / "_delta_log").is_dir():
            self._read("the sequence", self.root)


# The coverage phase: every step kind once, in an order that lets each one apply (a column to
# rename or drop, versions to restore), with the statements that land on one profile and are
# refused on another.
COVERAGE: tuple[tuple[str, dict[str, Any]], ...] = (
    ("insert", {"n": 2}),
    ("dataframe_append", {"merge_schema": False}),
    ("dataframe_append", {"merge_schema": True}),
    ("update", {}),
    ("delete", {"k": 1}),
    ("merge", {}),
    ("add_column", {"kind": "int"}),
    ("add_column", {"kind": "tinyint"}),
    ("rename_column", {}),
    ("drop_column", {}),
    ("set_property", {"props": PROPERTIES[7]}),
    ("set_property", {"props": (("fs.file.impl", "x.Y"),)}),
    ("set_property", {"props": (("user.owner", "team"),)}),
    ("unset_property", {"key": "user.owner"}),
    ("unset_property", {"key": "delta.enableIcebergCompatV3"}),
    ("insert_overwrite", {}),
    ("optimize", {}),
    ("restore", {"back": 2}),
    ("clone", {"back": 0}),
    ("clone", {"back": 1}),
)


@contextlib.contextmanager
def _timed(what: str) -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        SPENT[what] += time.perf_counter() - start


def _reason(e: BaseException) -> str:
    if isinstance(e, CompatViolation):
        return "+".join(e.rules)
    if isinstance(e, PySparkException):
        return str(e.getCondition() or type(e).__name__)
    return type(e).__name__


def _count(kind: str, outcome: str) -> None:
    COUNTS[(kind, outcome)] += 1
    if GuardedTable.counts_file is not None:
        _write_counts(GuardedTable.counts_file)


def _write_counts(path: Path) -> None:
    data = {
        "counts": {f"{k} | {o}": n for (k, o), n in sorted(COUNTS.items())},
        "committed": dict(sorted(COMMITTED.items())),
        "refused_by": {f"{k} | {r}": n for (k, r), n in sorted(REASONS.items())},
        "failures": FAILURES,
        "seconds": {k: round(v, 1) for k, v in sorted(SPENT.items())},
        "at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    path.write_text(json.dumps(data, indent=1))


def _coverage(profiles: tuple[str, ...]) -> None:
    """Every step kind once per profile, outside hypothesis (same checks after every step)."""
    for profile in profiles:
        machine = GuardedTable()
        machine.create(profile=profile, sql=False)
        for name, kwargs in COVERAGE:
            getattr(machine, name)(**kwargs)
            machine.readable()
        machine.teardown()


def stateful_seed() -> int:
    """The run's seed: ``ICECOMPAT_STATEFUL_SEED`` (an integer), 0 when unset."""
    return int(os.environ.get("ICECOMPAT_STATEFUL_SEED", "0"))


def _random(examples: int, steps: int, run_seed: int) -> None:
    """Random sequences until the budget is up (or ``examples`` sequences ran), drawn from ``run_seed``."""
    try:
        run_state_machine_as_test(
            seed(run_seed)(GuardedTable),
            settings=settings(
                max_examples=examples,
                stateful_step_count=steps,
                deadline=None,
                # Generation only: shrinking a failing sequence of Spark commands takes hours; the
                # failing sequence is printed as it was found.
                phases=[Phase.generate],
                suppress_health_check=list(HealthCheck),
                database=None,
            ),
        )
    except _Budget:
        pass
    except Exception as e:  # hypothesis's replay of the sequence the budget ended can differ
        if not _ended_by_budget(e):
            raise


def _ended_by_budget(e: BaseException | None) -> bool:
    while e is not None:
        if isinstance(e, _Budget):
            return True
        e = e.__cause__ or e.__context__
    return False


def _run(
    spark: Any, tmp_path: Path, seconds: float, coverage: tuple[str, ...], keep_going: bool, run_seed: int
) -> None:
    GuardedTable.spark = spark
    GuardedTable.base = tmp_path
    end = time.monotonic() + seconds
    GuardedTable.deadline = float("inf")  # the coverage phase runs whole, whatever it takes
    with session_conf(spark, FAST):
        _coverage(coverage)
        GuardedTable.deadline = end
        for round_ in itertools.count():
            if time.monotonic() >= GuardedTable.deadline:
                break
            try:
                _random(examples=100_000, steps=25, run_seed=run_seed * 1_000_003 + round_)
            except Exception:
                if not keep_going:
                    raise
                FAILURES.append(traceback.format_exc()[-4000:])
                if GuardedTable.counts_file is not None:
                    _write_counts(GuardedTable.counts_file)


def _report(label: str, started: float) -> str:
    steps = {k: n for k, n in COUNTS.items() if not k[0].startswith("create")}
    landed = sum(n for (_, outcome), n in steps.items() if outcome == "landed")
    refused = sum(n for (_, outcome), n in steps.items() if outcome == "refused")
    tables = sum(n for (kind, _), n in COUNTS.items() if kind.startswith("create"))
    lines = [
        f"{label}: {tables} tables, {landed + refused} steps, {landed} landed compliant, "
        f"{refused} refused untouched, {len(FAILURES)} failures, {time.monotonic() - started:.0f} s"
    ]
    lines += [f"  {kind}: {outcome} {n}" for (kind, outcome), n in sorted(COUNTS.items())]
    lines += [f"  committed {kind}: {n}" for kind, n in sorted(COMMITTED.items())]
    lines += [f"  refused {kind}: {why} {n}" for (kind, why), n in sorted(REASONS.items())]
    lines.append("  seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in sorted(SPENT.items())))
    text = "\n".join(lines)
    print(text)
    return text


def _start(tmp_path: Path) -> float:
    COUNTS.clear()
    COMMITTED.clear()
    REASONS.clear()
    SPENT.clear()
    FAILURES.clear()
    path = os.environ.get("ICECOMPAT_STATEFUL_COUNTS")
    GuardedTable.counts_file = Path(path) if path else None
    return time.monotonic()


def test_random_sequences_keep_guarded_tables_compliant(spark: Any, tmp_path: Path) -> None:
    """CI: the coverage phase on the profile the seed picks, then random sequences drawn from the seed
    for what is left of about 90 s."""
    started = _start(tmp_path)
    run_seed = stateful_seed()
    profile = PROFILES[run_seed % len(PROFILES)]
    print(f"stateful run: ICECOMPAT_STATEFUL_SEED={run_seed} (coverage on {profile})")
    try:
        _run(spark, tmp_path, seconds=90, coverage=(profile,), keep_going=False, run_seed=run_seed)
    finally:
        _report(f"stateful (ICECOMPAT_STATEFUL_SEED={run_seed}, coverage on {profile})", started)
    kinds = {kind for kind, _ in COUNTS}
    assert {kind for kind, outcome in COUNTS if outcome == "refused"}, "no step was refused"
    assert {"INSERT OVERWRITE", "RENAME COLUMN", "RESTORE", "SHALLOW CLONE", "SET TBLPROPERTIES"} <= kinds


@pytest.mark.soak
def test_random_sequences_soak(spark: Any, tmp_path: Path) -> None:
    """Soak: the coverage phase on every profile, then random sequences for
    ``ICECOMPAT_SOAK_SECONDS`` (default 3000); a failing sequence is recorded and the run goes on,
    and the test fails at the end if any did."""
    started = _start(tmp_path)
    seconds = float(os.environ.get("ICECOMPAT_SOAK_SECONDS", "3000"))
    run_seed = stateful_seed()
    try:
        _run(spark, tmp_path, seconds=seconds, coverage=PROFILES, keep_going=True, run_seed=run_seed)
    finally:
        _report(f"soak (ICECOMPAT_STATEFUL_SEED={run_seed})", started)
    assert not FAILURES, "\n\n".join(FAILURES)
