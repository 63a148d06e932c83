"""``icecompat check|upgrade|iceberg`` over many tables: ``--database DB`` (a Spark catalog database) or
several TABLE_PATHs.

:func:`add_arguments` adds the options to a subcommand whose TABLE_PATH takes any number of paths;
:func:`routed` wraps the subcommand's one-table function: one path and no ``--database`` runs it as
before, anything else runs table by table (``--parallel`` at a time, a progress bar on stderr) and
prints one summary: text, or JSON with ``--json``; ``--html FILE`` also writes the page. Exit codes
as for one table, over all of them: 2 if any table failed, else 1 if any broke a rule or was refused.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from icecompat_writer.errors import CompatViolation, IcecompatError
from icecompat_writer.evidence.file_reads import FooterReader, footers_read_by
from icecompat_writer.fleet import (
    FleetReport,
    TableOutcome,
    TableRef,
    check_outcome,
    discover_database,
    iceberg_outcome,
    path_refs,
    run_tables,
    upgrade_outcome,
)
from icecompat_writer.fleet.run import DEFAULT_PARALLEL, IDENTIFIER_PROPERTY, table_identifier
from icecompat_writer.iceberg.cli import catalog_plan, plan_conversion
from icecompat_writer.jvm.footers import ExecutorFooterReader
from icecompat_writer.schema import JsonDict

from .console import note, quiet
from .settings import spark_session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["add_arguments", "iceberg_plan_outcome", "routed", "run"]

EXIT_ERROR = 2


def add_arguments(parser: argparse.ArgumentParser, *, with_catalog: bool = False) -> None:
    """``--database``, ``--parallel`` and ``--html``; ``--catalog`` for a subcommand that has none of its
    own."""
    parser.add_argument(
        "--database",
        metavar="DB",
        default=None,
        help="every table of this Spark catalog database (listed through a Spark session)",
    )
    parser.add_argument(
        "--parallel",
        type=int,
        default=None,
        metavar="N",
        help=f"tables worked on at once over several tables (default {DEFAULT_PARALLEL}); not for one table",
    )
    parser.add_argument("--html", metavar="FILE", default=None, help="also write the summary as an HTML page")
    parser.set_defaults(fleet_parser=parser)  # for usage errors found after parsing
    if with_catalog:
        parser.add_argument(
            "--catalog",
            metavar="NAME",
            default=None,
            help="also report each table's state in this pyiceberg catalog (under its "
            "icecompat.iceberg.identifier property, else its Spark catalog name db.tbl)",
        )


def routed(command: str, single: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """The subcommand's function: ``single`` for one path, :func:`run` for a database or many paths."""

    def dispatch(args: argparse.Namespace) -> int:
        paths = list(args.table_path or [])
        several = args.database is not None or len(paths) != 1 or args.html is not None
        problem = None
        if args.database is None and not paths:
            problem = "give TABLE_PATH(s) or --database DB"
        elif args.database is not None and paths:
            problem = "give --database or TABLE_PATHs, not both"
        elif args.parallel is not None and args.parallel < 1:
            problem = "--parallel must be at least 1"
        elif args.parallel is not None and not several:
            problem = "--parallel N works over several tables (TABLE_PATHs or --database DB), not one"
        elif several and getattr(args, "identifier", None):
            problem = (
                "--identifier names one table; over several tables each gets its own "
                "(its icecompat.iceberg.identifier property, else db.tbl)"
            )
        if problem is not None:
            try:
                args.fleet_parser.error(problem)  # argparse's usage message, exit 2
            except SystemExit as exit_:
                return int(exit_.code or EXIT_ERROR)
        if not several:
            args.table_path = paths[0]
            return single(args)
        return run(command, args)

    return dispatch


def run(command: str, args: argparse.Namespace) -> int:
    """Run ``command`` over the tables ``args`` name and print the summary."""
    paths = list(args.table_path or [])
    parallel = DEFAULT_PARALLEL if args.parallel is None else args.parallel
    dry_run = bool(getattr(args, "dry_run", False))
    executors = bool(getattr(args, "executors", False))
    needs_spark = args.database is not None or executors or (command == "upgrade" and not dry_run)
    spark, started = spark_session("icecompat-fleet", args) if needs_spark else (None, False)
    try:
        refs = (
            discover_database(spark, args.database)
            if args.database and spark is not None
            else path_refs(paths)
        )
        work = _work(command, args, spark)
        if spark is not None:  # footers on the executors: always with --executors, else big tables
            reader = ExecutorFooterReader.from_session(spark, "true" if executors else None)
            work = _reading_with(reader, work)
        began = time.perf_counter()
        note(args, f"{command}: {len(refs)} table(s), {parallel} at a time")
        outcomes = _with_progress(command, refs, work, parallel, quiet=quiet(args))
        report = FleetReport(command, args.database or f"{len(paths)} path(s)", outcomes)
        report.seconds = time.perf_counter() - began
    except IcecompatError as err:
        print(f"icecompat {command}: {err}", file=sys.stderr)
        return EXIT_ERROR
    finally:
        if started and spark is not None:
            spark.stop()
    if args.html:
        with open(args.html, "w", encoding="utf-8") as fh:
            fh.write(report.render_html())
    sys.stdout.write(report.render_json() if args.json else report.render_text())
    return report.exit_code()


def _reading_with(
    reader: FooterReader, work: Callable[[TableRef], TableOutcome]
) -> Callable[[TableRef], TableOutcome]:
    """``work`` reading its footers with ``reader``, in whichever thread of the pool it runs."""

    def wrapped(ref: TableRef) -> TableOutcome:
        with footers_read_by(reader):
            return work(ref)

    return wrapped


def _work(
    command: str, args: argparse.Namespace, spark: SparkSession | None
) -> Callable[[TableRef], TableOutcome]:
    if command == "check":
        return lambda ref: check_outcome(
            ref, args.profile, files=args.files, catalog=getattr(args, "catalog", None)
        )
    if command == "upgrade":
        return lambda ref: upgrade_outcome(spark, ref, args.profile, dry_run=args.dry_run)
    if args.dry_run:
        return lambda ref: iceberg_plan_outcome(ref, args.format_version, catalog=args.catalog)
    return lambda ref: iceberg_outcome(ref, args.format_version, catalog=args.catalog)


def iceberg_plan_outcome(
    ref: TableRef, format_version: int | None = None, catalog: str | None = None
) -> TableOutcome:
    """``iceberg --dry-run`` on one table: would convert (or current), and what the catalog would get;
    refused with its rules when not compliant. Nothing is written."""
    from icecompat_writer.deltalog import read_snapshot
    from icecompat_writer.storage import io_for

    assert ref.location is not None
    io = io_for(ref.location)  # the environment's store settings: a command line runs no Spark session
    try:
        plan = plan_conversion(ref.location, format_version=format_version, io=io)
    except CompatViolation as err:
        rules = tuple(sorted({v.rule for v in err.violations}))
        return TableOutcome(ref.name, ref.location, "refused", rules=rules, detail=str(err).splitlines()[0])
    state: JsonDict | None = None
    if catalog:
        configuration = {
            str(k): str(v) for k, v in read_snapshot(ref.location, io=io).metadata.configuration.items()
        }
        ident = table_identifier(ref, configuration)
        if ident is None:
            raise IcecompatError(
                f"{ref.name}: no Iceberg identifier (a path: set the table property {IDENTIFIER_PROPERTY})"
            )
        planned = catalog_plan(catalog, ident, plan, io=io)
        state = {
            "catalog": catalog,
            "identifier": ident,
            "registered": planned["action"] != "would register",
            "action": planned["action"],
            "delta_version": planned["catalog_delta_version"],
        }
    detail = (
        f"would write metadata v{plan.metadata_version} (format {plan.format_version})"
        if plan.needed
        else f"metadata v{plan.metadata_version} (format {plan.format_version})"
    )
    return TableOutcome(
        ref.name,
        ref.location,
        "would convert" if plan.needed else "current",
        delta_version=plan.delta_version,
        iceberg_version=plan.converted_version,
        catalog=state,
        detail=detail,
    )


def _with_progress(
    command: str,
    refs: list[TableRef],
    work: Callable[[TableRef], TableOutcome],
    parallel: int,
    *,
    quiet: bool = False,
) -> list[TableOutcome]:
    """:func:`run_tables` with a progress bar on stderr (never mixed into the report on stdout);
    none with ``-q``."""
    from rich.console import Console
    from rich.progress import Progress

    if quiet:
        return run_tables(refs, work, parallel)
    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(f"{command}: {len(refs)} table(s)", total=len(refs))
        return run_tables(refs, work, parallel, on_done=lambda _: bar.advance(task))
