"""Which tables a run covers, and one command on one table as a :class:`~.report.TableOutcome`.

A table's failure is its own outcome (verdict ``error`` with the exception type and message as cause);
:func:`run_tables` never lets it reach the other tables.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from icecompat_writer.errors import CompatViolation, IcecompatError
from icecompat_writer.iceberg.sync import resolve_identifier
from icecompat_writer.schema import JsonDict
from icecompat_writer.storage import FileIO, io_for
from icecompat_writer.writing.target import Target

from .report import TableOutcome

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "DEFAULT_PARALLEL",
    "TableRef",
    "check_outcome",
    "discover_database",
    "iceberg_outcome",
    "path_refs",
    "run_tables",
    "table_identifier",
    "upgrade_outcome",
]

DEFAULT_PARALLEL = 4
IDENTIFIER_PROPERTY = "icecompat.iceberg.identifier"


@dataclass(frozen=True)
class TableRef:
    """One table of a run: its display name, its location, and the Iceberg identifier it gets by
    default (``db.tbl`` for a table of the Spark catalog, None for a bare path). ``problem`` says why
    the table cannot be run at all (a view, not a Delta table): it becomes an ``error`` outcome."""

    name: str
    location: str | None
    identifier: str | None = None
    problem: str | None = None


def path_refs(paths: Sequence[str]) -> list[TableRef]:
    return [TableRef(p, p) for p in paths]


def discover_database(spark: SparkSession, database: str) -> list[TableRef]:
    """Every table of ``database`` in the Spark session's catalog, in name order.

    Locations and providers come from ``DESCRIBE TABLE EXTENDED`` (catalog metadata only, no job). A
    table that is not Delta is listed with its ``problem``; temporary views are not the database's.
    """
    if not spark.catalog.databaseExists(database):
        raise IcecompatError(f"no database {database!r} in the Spark session's catalog")
    refs: list[TableRef] = []
    target = Target(table=(database,))
    for row in sorted(spark.sql(f"SHOW TABLES IN {target.sql_name}").collect(), key=lambda r: r["tableName"]):
        if row["isTemporary"]:
            continue
        table = str(row["tableName"])
        name = f"{database}.{table}"
        try:
            info = _describe(spark, Target(table=(database, table)))
        except Exception as err:  # one unreadable entry of the catalog is that table's outcome
            first = (str(err).strip().splitlines() or [""])[0]
            problem = f"the Spark catalog cannot describe it ({type(err).__name__}: {first})"
            refs.append(TableRef(name, None, name, problem=problem))
            continue
        provider = (info.get("Provider") or "").lower()
        location = info.get("Location")
        if (info.get("Type") or "").upper() == "VIEW":
            refs.append(TableRef(name, None, name, problem="a view, not a Delta table"))
        elif provider != "delta":
            refs.append(TableRef(name, location, name, problem=f"not a Delta table (provider {provider})"))
        else:
            refs.append(TableRef(name, location, name))
    return refs


def _describe(spark: SparkSession, target: Target) -> dict[str, str]:
    out: dict[str, str] = {}
    detailed = False
    for row in spark.sql(f"DESCRIBE TABLE EXTENDED {target.sql_name}").collect():
        key = str(row["col_name"] or "").strip()
        if key.startswith("# Detailed Table Information"):
            detailed = True
        elif detailed and key:
            out[key] = str(row["data_type"] or "").strip()
    return out


def run_tables(
    refs: Sequence[TableRef],
    work: Callable[[TableRef], TableOutcome],
    parallel: int = DEFAULT_PARALLEL,
    on_done: Callable[[TableOutcome], None] | None = None,
) -> list[TableOutcome]:
    """``work`` on every table, at most ``parallel`` at a time; outcomes in the order of ``refs``.

    Whatever ``work`` raises for one table becomes that table's ``error`` outcome (type and message);
    ``on_done`` is called once per table as it finishes (a progress bar).
    """

    def one(ref: TableRef) -> TableOutcome:
        started = time.perf_counter()
        if ref.problem is not None or ref.location is None:
            outcome = TableOutcome(ref.name, ref.location, "error", error=ref.problem or "no location")
        else:
            try:
                outcome = work(ref)
            except Exception as err:  # one table's failure never stops the others: it is reported
                outcome = TableOutcome(ref.name, ref.location, "error", error=f"{type(err).__name__}: {err}")
        outcome = _timed(outcome, time.perf_counter() - started)
        if on_done is not None:
            on_done(outcome)
        return outcome

    with ThreadPoolExecutor(max_workers=max(1, parallel), thread_name_prefix="icecompat-fleet") as pool:
        return list(pool.map(one, refs))


def _timed(outcome: TableOutcome, seconds: float) -> TableOutcome:
    return replace(outcome, seconds=seconds)


def table_identifier(ref: TableRef, configuration: dict[str, str] | None = None) -> str | None:
    """The Iceberg identifier of a table: its ``icecompat.iceberg.identifier`` property when set (the
    user said otherwise), else its Spark catalog name ``db.tbl``; None for a bare path without one.
    The rule of :func:`~icecompat_writer.iceberg.sync.resolve_identifier`, which one table's
    ``icecompat iceberg --catalog`` follows too."""
    return resolve_identifier(configuration or {}, default=ref.identifier)


def _configuration(location: str, io: FileIO) -> dict[str, str]:
    from icecompat_writer.deltalog.snapshot import read_snapshot

    return {str(k): str(v) for k, v in read_snapshot(location, io=io).metadata.configuration.items()}


def _catalog_state(
    catalog: str | None, ref: TableRef, location: str | None, io: FileIO
) -> JsonDict | None:
    from icecompat_writer.iceberg.catalogs import catalog_status

    if not catalog or ref.location is None:
        return None
    ident = table_identifier(ref, _configuration(ref.location, io))
    if ident is None:
        return {"catalog": catalog, "identifier": None, "registered": False, "error": "no identifier"}
    return catalog_status(catalog, ident, location, io=io)


def check_outcome(
    ref: TableRef, profile: str | None = None, files: str = "all", catalog: str | None = None
) -> TableOutcome:
    """``check`` on one table: the verdict, the rules broken, the Iceberg lag and the catalog's state."""
    from icecompat_writer.checking.check import check_table
    from icecompat_writer.iceberg.sync import converted_version

    assert ref.location is not None
    io = io_for(ref.location)  # one table's store, with the running session's settings or the environment's
    report = check_table(ref.location, profile, files=files, io=io)
    details: list[str] = []
    if report.profile is None:
        verdict = "no profile"
        ranked = sorted(report.candidates.items(), key=lambda item: (item[1], item[0]))
        closest = ranked[0][0] if ranked else None
        rules = tuple(sorted({v.rule for v in report.violations if v.profile == closest}))
        if closest is not None:
            details.append(f"closest profile {closest}: {ranked[0][1]} violation(s)")
    else:
        verdict = "compliant" if report.compliant else "not compliant"
        rules = tuple(sorted(report.by_rule()))
    if report.errors:
        details.append(f"{len(report.errors)} error finding(s): " + ", ".join(f.code for f in report.errors))
    if report.deletion_vectors_read:
        details.append(f"{report.deletion_vectors_read} deletion vector(s) read")
    done = converted_version(ref.location, io=io)
    state = _catalog_state(catalog, ref, ref.location, io)  # the table's store: the catalog's FileIO
    return TableOutcome(
        ref.name,
        ref.location,
        verdict,
        profile=report.profile or report.declared,
        rules=rules,
        delta_version=report.version,
        iceberg_version=done,
        catalog=state,
        detail="; ".join(details),
    )


def upgrade_outcome(
    spark: SparkSession | None, ref: TableRef, profile: str, dry_run: bool = False
) -> TableOutcome:
    """``upgrade`` on one table: upgraded / would upgrade / already compliant, or refused with its rules."""
    from icecompat_writer.upgrading.api import upgrade_table

    assert ref.location is not None
    try:
        result = upgrade_table(spark, ref.location, profile, dry_run=dry_run)
    except CompatViolation as err:
        rules = tuple(sorted({v.rule for v in err.violations}))
        return TableOutcome(
            ref.name, ref.location, "refused", profile=profile, rules=rules, detail=str(err).splitlines()[0]
        )
    if not result.needed:
        verdict = "already compliant"
    else:
        verdict = "would upgrade" if dry_run else "upgraded"
    return TableOutcome(
        ref.name,
        ref.location,
        verdict,
        profile=profile,
        rules=tuple(sorted({v.rule for v in result.reasons})),
        delta_version=result.version if result.version is not None else result.read_version,
        detail=result.headline(),
    )


def iceberg_outcome(
    ref: TableRef, format_version: int | None = None, catalog: str | None = None
) -> TableOutcome:
    """``iceberg`` on one table: metadata converted (or already current), then registered or moved
    forward in ``catalog`` under :func:`table_identifier`; refused with its rules when not compliant."""
    from icecompat_writer.iceberg.catalogs import sync_catalog
    from icecompat_writer.iceberg.emitter import write_iceberg_metadata

    assert ref.location is not None
    io = io_for(ref.location)  # one table's store, with the running session's settings or the environment's
    try:
        result = write_iceberg_metadata(ref.location, format_version=format_version, io=io)
    except CompatViolation as err:
        rules = tuple(sorted({v.rule for v in err.violations}))
        return TableOutcome(ref.name, ref.location, "refused", rules=rules, detail=str(err).splitlines()[0])
    state: JsonDict | None = None
    if catalog:
        ident = table_identifier(ref, _configuration(ref.location, io))
        if ident is None:
            raise IcecompatError(
                f"{ref.name}: no Iceberg identifier (a path: set the table property {IDENTIFIER_PROPERTY})"
            )
        synced = sync_catalog(catalog, ident, str(result.metadata_path), io=io)
        state = {
            "catalog": catalog,
            "identifier": ident,
            "registered": True,
            "action": synced.action,
            "delta_version": max(synced.delta_version, synced.catalog_delta_version),
            "metadata_location": synced.metadata_location,
        }
    return TableOutcome(
        ref.name,
        ref.location,
        "converted" if result.written else "current",
        delta_version=result.delta_version,
        iceberg_version=result.delta_version,
        catalog=state,
        detail=f"metadata v{result.metadata_version} (format {result.format_version})",
    )
