"""One path for every table another writer made: upgrade under a profile, then either check -> Iceberg
-> readers, or a refusal that names its rules and leaves the table byte-identical."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from icecompat_writer.checking.check import check_table
from icecompat_writer.errors import CompatViolation
from icecompat_writer.iceberg import write_iceberg_metadata
from icecompat_writer.iceberg.catalogs import sync_catalog
from icecompat_writer.upgrading import upgrade_table
from tests import support
from tests.iceberg._support import duckdb_rows, latest_metadata, normalise, spark_rows, static_table

PROFILES = ("v3", "writer-v1", "writer-v3")
WRITER_PROFILES = ("writer-v1", "writer-v3")


def dry_run_or_refusal(
    spark: Any, source: Path, work: Path, profile: str, refused: frozenset[str] | None
) -> None:
    """The cheap half of a corpus case: the Spark-free dry run of upgrading ``source`` to ``profile``.

    ``refused``: the dry run refuses with exactly these rules, and so does the real upgrade of a copy
    (``work``), which leaves the copy byte-identical. None: the dry run plans a commit (for the writer
    profiles a new table state: every live file rewritten) and writes nothing. That such a plan then
    commits, checks compliant and reads back the same rows is what :func:`upgrade_and_read` proves on
    a subset of the tables.
    """
    before = support.tree_digest(source)
    if refused is not None:
        with pytest.raises(CompatViolation) as info:
            upgrade_table(None, source, profile, dry_run=True)
        assert type(info.value) is CompatViolation
        assert set(info.value.rules) == refused, info.value
        assert support.tree_digest(source) == before
        upgrade_and_read(spark, source, work, profile, refused)
        return
    result = upgrade_table(None, source, profile, dry_run=True)
    assert result.dry_run and result.needed and not result.committed
    if profile in WRITER_PROFILES:
        assert result.new_table_state
        assert len(result.rewritten) == result.files_total > 0
    assert support.tree_digest(source) == before, "a dry run writes nothing"


def upgrade_and_read(
    spark: Any,
    source: Path,
    work: Path,
    profile: str,
    refused: frozenset[str] | None,
    rest: Callable[[], Any] | None = None,
) -> None:
    """Copy ``source`` to ``work`` and upgrade the copy to ``profile``.

    ``refused``: the rule ids the upgrade must refuse with (the copy then byte-identical); None: the
    upgrade commits, the checker calls the table compliant, delta-spark reads the same rows, and
    pyiceberg reads them from the Iceberg metadata. With ``rest`` (the name of a pyiceberg REST catalog,
    given as a factory so the server starts only when asked) DuckDB and that catalog read them too.
    """
    root = Path(shutil.copytree(source, work))
    expected = spark_rows(spark.read.format("delta").load(str(root)))
    if refused is not None:
        before = support.tree_digest(root)
        with pytest.raises(CompatViolation) as info:
            upgrade_table(spark, root, profile)
        assert type(info.value) is CompatViolation
        assert set(info.value.rules) == refused, info.value
        assert support.tree_digest(root) == before, "a refused upgrade leaves every byte of the table"
        return
    result = upgrade_table(spark, root, profile)
    assert result.version is not None
    report = check_table(root, profile)
    assert report.compliant, report.render_text()
    assert spark_rows(spark.read.format("delta").load(str(root))) == expected
    write_iceberg_metadata(root)
    assert normalise(static_table(root).scan().to_arrow(), list(expected[0])) == expected
    if rest is not None:
        columns = list(expected[0])
        assert [{c: r[c] for c in columns} for r in duckdb_rows(root)] == expected
        catalog = rest()
        identifier = f"foreign.{root.name}_{profile.replace('-', '_')}"
        sync_catalog("rest", identifier, str(latest_metadata(root)))
        got = catalog.load_table(identifier).scan().to_arrow()
        assert normalise(got, list(expected[0])) == expected
