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
from typing import Any

from icecompat_writer.errors import IcecompatError
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
from icecompat_writer.fleet.run import DEFAULT_PARALLEL

__all__ = ["add_arguments", "routed", "run"]

EXIT_ERROR = 2


def add_arguments(
    parser: argparse.ArgumentParser, *, with_json: bool = False, with_catalog: bool = False
) -> None:
    """``--database``, ``--parallel`` and ``--html``; ``--json`` and ``--catalog`` for a subcommand that
    has none of its own."""
    parser.add_argument(
        "--database",
        metavar="DB",
        default=None,
        help="every table of this Spark catalog database (listed through a Spark session)",
    )
    parser.add_argument(
        "--parallel",
        type=int,
        default=DEFAULT_PARALLEL,
        metavar="N",
        help=f"tables worked on at once over several tables (default {DEFAULT_PARALLEL})",
    )
    parser.add_argument("--html", metavar="FILE", default=None, help="also write the summary as an HTML page")
    parser.set_defaults(fleet_parser=parser)  # for usage errors found after parsing
    if with_json:
        parser.add_argument("--json", action="store_true", help="print only JSON on stdout")
    if with_catalog:
        parser.add_argument(
            "--catalog",
            metavar="NAME",
            default=None,
            help="over several tables: also report each table's state in this pyiceberg catalog",
        )


def routed(command: str, single: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """The subcommand's function: ``single`` for one path, :func:`run` for a database or many paths."""

    def dispatch(args: argparse.Namespace) -> int:
        paths = list(args.table_path or [])
        problem = None
        if args.database is None and not paths:
            problem = "give TABLE_PATH(s) or --database DB"
        elif args.database is not None and paths:
            problem = "give --database or TABLE_PATHs, not both"
        if problem is not None:
            try:
                args.fleet_parser.error(problem)  # argparse's usage message, exit 2
            except SystemExit as exit_:
                return int(exit_.code or EXIT_ERROR)
        if args.database is None and len(paths) == 1 and args.html is None:
            args.table_path = paths[0]
            return single(args)
        return run(command, args)

    return dispatch


def _session() -> tuple[Any, bool]:
    """The running Spark session, else a new one (and whether this call started it)."""
    from pyspark.sql import SparkSession

    from icecompat_writer.sessions import session

    running = SparkSession.getActiveSession()
    return (running, False) if running is not None else (session("icecompat-fleet"), True)


def run(command: str, args: argparse.Namespace) -> int:
    """Run ``command`` over the tables ``args`` name and print the summary."""
    paths = list(args.table_path or [])
    if args.parallel < 1:
        print(f"icecompat {command}: --parallel must be at least 1", file=sys.stderr)
        return EXIT_ERROR
    if command == "iceberg" and getattr(args, "identifier", None):
        print(
            "icecompat iceberg: --identifier names one table; over several tables each gets its own "
            "(its icecompat.iceberg.identifier property, else db.tbl)",
            file=sys.stderr,
        )
        return EXIT_ERROR
    needs_spark = args.database is not None or (command == "upgrade" and not args.dry_run)
    spark, started = _session() if needs_spark else (None, False)
    try:
        refs = discover_database(spark, args.database) if args.database else path_refs(paths)
        work = _work(command, args, spark)
        began = time.perf_counter()
        outcomes = _with_progress(command, refs, work, args.parallel)
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


def _work(command: str, args: argparse.Namespace, spark: Any) -> Callable[[TableRef], TableOutcome]:
    if command == "check":
        return lambda ref: check_outcome(
            ref, args.profile, files=args.files, catalog=getattr(args, "catalog", None)
        )
    if command == "upgrade":
        return lambda ref: upgrade_outcome(spark, ref, args.profile, dry_run=args.dry_run)
    return lambda ref: iceberg_outcome(ref, args.format_version, catalog=args.catalog)


def _with_progress(
    command: str, refs: list[TableRef], work: Callable[[TableRef], TableOutcome], parallel: int
) -> list[TableOutcome]:
    """:func:`run_tables` with a progress bar on stderr (never mixed into the report on stdout)."""
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(f"{command}: {len(refs)} table(s)", total=len(refs))
        return run_tables(refs, work, parallel, on_done=lambda _: bar.advance(task))
