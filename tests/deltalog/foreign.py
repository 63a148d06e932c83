"""One path for every (table, profile) pair of the corpus of tables other writers made: upgrade a copy,
then either check -> Iceberg -> every reader, or a refusal that names its rules before any file is
written and leaves the table byte-identical."""

from __future__ import annotations

import functools
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest

from icecompat_writer.checking.check import check_table
from icecompat_writer.errors import CompatViolation
from icecompat_writer.iceberg import write_iceberg_metadata
from icecompat_writer.iceberg.catalogs import sync_catalog
from icecompat_writer.storage import io_for
from icecompat_writer.upgrading import upgrade_table
from tests import support
from tests.iceberg._support import duckdb_connect, latest_metadata, normalise, spark_rows, static_table

PROFILES = ("v3", "writer-v1", "writer-v3")
WRITER_PROFILES = ("writer-v1", "writer-v3")


def delta_rows(spark: Any, root: Path) -> list[dict[str, Any]]:
    """What delta-spark reads from the table at ``root``, sorted by ``id``."""
    return spark_rows(spark.read.format("delta").load(str(root)))


@functools.cache
def duckdb_connection() -> duckdb.DuckDBPyConnection:
    """One DuckDB connection, its iceberg extension loaded once, for every pair of the run."""
    return duckdb_connect()


def pairs(tables: tuple[str, ...]) -> list[Any]:
    """Every (table, profile) pair, each a test of its own whose id names the pair."""
    return [pytest.param(name, profile, id=f"{name}-{profile}") for name in tables for profile in PROFILES]


def upgrade_end_to_end(
    spark: Any,
    source: Path,
    work: Path,
    profile: str,
    refused: frozenset[str] | None,
    expected: list[dict[str, Any]],
    rest: Callable[[], Any],
) -> None:
    """Upgrade a copy (``work``) of ``source`` to ``profile`` and prove the outcome.

    First the Spark-free dry run on ``source`` (which stays byte-identical). ``refused``: the dry run
    and the real upgrade refuse with exactly these rule ids, and the copy stays byte-identical. None:
    the upgrade commits what the dry run planned, the checker calls the copy compliant, and delta-spark
    (from the Delta log), pyiceberg, DuckDB's ``iceberg_scan`` (from the Iceberg metadata) and the REST
    catalog ``rest`` (the table registered through :func:`sync_catalog`) all read ``expected``, the rows
    delta-spark read from ``source``.
    """
    before = support.tree_digest(source)
    if refused is not None:
        with pytest.raises(CompatViolation) as info:
            upgrade_table(None, source, profile, dry_run=True)
        assert type(info.value) is CompatViolation
        assert set(info.value.rules) == refused, info.value
        assert support.tree_digest(source) == before, "a dry run writes nothing"
        root = Path(shutil.copytree(source, work))
        with pytest.raises(CompatViolation) as info:
            upgrade_table(spark, root, profile)
        assert type(info.value) is CompatViolation
        assert set(info.value.rules) == refused, info.value
        assert support.tree_digest(root) == before, "a refused upgrade leaves every byte of the table"
        return
    plan = upgrade_table(None, source, profile, dry_run=True)
    assert plan.dry_run and plan.needed and not plan.committed
    if profile in WRITER_PROFILES:
        assert plan.new_table_state
        assert len(plan.rewritten) == plan.files_total > 0
    assert support.tree_digest(source) == before, "a dry run writes nothing"

    root = Path(shutil.copytree(source, work))
    result = upgrade_table(spark, root, profile)
    assert result.version is not None
    assert result.new_table_state == plan.new_table_state
    assert sorted(f.path for f in result.rewritten) == sorted(f.path for f in plan.rewritten)
    report = check_table(root, profile)
    assert report.compliant, report.render_text()
    assert delta_rows(spark, root) == expected

    write_iceberg_metadata(root)
    columns = list(expected[0])
    assert normalise(static_table(root).scan().to_arrow(), columns) == expected
    scanned = duckdb_connection().execute(f"SELECT * FROM iceberg_scan('{latest_metadata(root)}')")
    assert normalise(scanned.fetch_arrow_table(), columns) == expected
    catalog = rest()
    identifier = f"foreign.{root.name}_{profile.replace('-', '_')}"
    sync_catalog("rest", identifier, str(latest_metadata(root)), io=io_for(str(latest_metadata(root))))
    assert normalise(catalog.load_table(identifier).scan().to_arrow(), columns) == expected
