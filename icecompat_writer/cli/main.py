"""``icecompat``: the command line entry point (reference: docs/cli.md).

Exit codes follow one convention for every subcommand: 0 success / compliant, 1 violations found (for
``upgrade`` and ``iceberg``: refused; for ``doctor``: something missing), 2 usage or read errors. Every
flag a subcommand accepts has an effect, or the command stops with a usage error naming it. stdout
carries only the result (only JSON with ``--json``); notes, progress and errors go to stderr, as much
as ``-v`` / ``-q`` ask (:mod:`.console`). ``--conf`` / ``--properties-file`` are read once here and
handed down for the run (:mod:`.settings`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from icecompat_writer.cli import fleet, settings
from icecompat_writer.cli.console import configure_logging, note, quiet, restore_logging
from icecompat_writer.cli.doctor import cmd_doctor
from icecompat_writer.cli.exits import EXIT_ERROR, EXIT_OK, EXIT_VIOLATIONS, usage_error
from icecompat_writer.cli.settings import parse_properties, spark_session
from icecompat_writer.errors import IcecompatError
from icecompat_writer.evidence.file_reads import footers_read_by
from icecompat_writer.fleet.run import IDENTIFIER_PROPERTY, TableRef, table_identifier
from icecompat_writer.iceberg.cli import add_arguments as iceberg_arguments
from icecompat_writer.jvm.footers import ExecutorFooterReader
from icecompat_writer.schema import JsonDict

if TYPE_CHECKING:
    from icecompat_writer.checking.report import Report
    from icecompat_writer.errors import Violation
    from icecompat_writer.storage import FileIO
    from icecompat_writer.upgrading.api import UpgradeResult



def _cmd_conf(args: argparse.Namespace) -> int:
    import shlex

    from icecompat_writer.sessions import spark_defaults, submit_arguments

    try:
        text = spark_defaults(spark_version=args.spark_version, packages=args.packages)
    except IcecompatError as err:
        return _command_failed("conf", args, type(err).__name__, str(err))
    if args.json:
        doc: JsonDict = {"format": "icecompat-conf/1", "output": args.output}
        if args.submit:
            doc["spark_submit"] = submit_arguments(text)
        else:
            doc["settings"] = parse_properties(text)
    if args.submit:
        parts = submit_arguments(text)
        text = " \\\n  ".join(
            " ".join(shlex.quote(p) for p in parts[i : i + 2]) for i in range(0, len(parts), 2)
        )
        text = "spark-submit \\\n  " + text + " \\\n  your_job.py\n"
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
        note(args, f"wrote {args.output}")
    if args.json:
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    elif not args.output:
        sys.stdout.write(text)
    return EXIT_OK


PROGRESS_MIN_FILES = 200  # below this many footers a progress bar is only noise
ROWS_PER_RULE = 10  # the terminal table shows this many violations per rule; --json has them all


def _files_option(text: str) -> str:
    """argparse type for ``--files``: a malformed value is a usage error (exit 2) before any read."""
    from icecompat_writer.checking.check import parse_files_option

    try:
        parse_files_option(text)
    except IcecompatError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def _cmd_check(args: argparse.Namespace) -> int:
    """Audit one table; stdout carries the report only (JSON alone with --json), stderr the rest."""
    from rich.console import Console
    from rich.progress import Progress

    from icecompat_writer.checking.check import check_table
    from icecompat_writer.storage import io_for

    spark, started = spark_session("icecompat-check", args) if args.executors else (None, False)
    reader = None if spark is None else ExecutorFooterReader.from_session(spark, "true")
    # Progress goes to stderr, so it never mixes with the report (or the JSON) on stdout.
    bar = Progress(console=Console(stderr=True), transient=True)
    task = None

    def progress_cb(done: int, total: int) -> None:
        nonlocal task
        if total < PROGRESS_MIN_FILES or quiet(args):
            return
        if task is None:
            bar.start()
            task = bar.add_task("reading Parquet footers", total=total)
        bar.update(task, completed=done)

    try:
        io = io_for(args.table_path)  # a running session's store settings, else the environment's
        report = check_table(
            args.table_path, args.profile, files=args.files, progress=progress_cb, io=io, footer_reader=reader
        )
    except IcecompatError as err:
        return _check_failed(args, type(err).__name__, str(err))
    except Exception as err:  # exit 1 means "violations": a crash must not look like one
        return _check_failed(args, type(err).__name__, f"internal error while checking: {err!r}")
    finally:
        if task is not None:  # stopping a bar that never started still writes a newline
            bar.stop()
        if started and spark is not None:
            spark.stop()
    lag = _iceberg_lag(args.table_path, report.version, io)
    catalog = _catalog_state(args.catalog, args.table_path, io)
    if args.json:
        doc = report.to_json()
        if lag is not None:
            doc["iceberg"] = lag
        if catalog is not None:
            doc["catalog"] = catalog
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        _print_report(report)
        if lag is not None:
            print(
                f"Iceberg: converted up to Delta version {lag['converted_version']} of "
                f"{lag['delta_version']} (lag {lag['lag']})"
            )
        if catalog is not None:
            print(_catalog_text(catalog))
    return EXIT_OK if report.compliant else EXIT_VIOLATIONS


def _catalog_state(catalog: str | None, table_path: str, io: FileIO) -> JsonDict | None:
    """Where the table stands in the pyiceberg catalog ``catalog`` (``--catalog``), under the identifier
    every run finds the same way (:func:`~icecompat_writer.fleet.run.table_identifier`); None without
    ``--catalog``. Never raises: the check's verdict stands whatever the catalog says."""
    from icecompat_writer.deltalog import read_snapshot
    from icecompat_writer.iceberg.catalogs import catalog_status

    if catalog is None:
        return None
    try:
        configuration = read_snapshot(table_path, io=io).metadata.configuration
        properties = {str(k): str(v) for k, v in configuration.items()}
        ident = table_identifier(TableRef(table_path, table_path), properties)
    except (IcecompatError, OSError, ValueError) as err:
        return {"catalog": catalog, "identifier": None, "registered": False, "error": str(err)}
    if ident is None:
        problem = f"no identifier: set the table property {IDENTIFIER_PROPERTY}"
        return {"catalog": catalog, "identifier": None, "registered": False, "error": problem}
    return catalog_status(catalog, ident, table_path, io=io)


def _catalog_text(state: JsonDict) -> str:
    where = f"Catalog {state['catalog']}: {state.get('identifier') or '(no identifier)'}"
    if state.get("error"):
        return f"{where} unreadable ({state['error']})"
    if not state.get("registered"):
        return f"{where} not registered"
    return f"{where} at Delta version {state.get('delta_version')} ({state.get('metadata_location')})"


def _iceberg_lag(table_path: str, delta_version: int, io: FileIO) -> dict[str, int] | None:
    """Delta version checked vs the last one the table's Iceberg metadata holds; None without metadata."""
    from icecompat_writer.iceberg.sync import converted_version

    try:
        done = converted_version(table_path, io=io)
    except (IcecompatError, OSError, ValueError):  # the check's verdict stands without the lag
        return None
    if done is None:
        return None
    return {"delta_version": delta_version, "converted_version": done, "lag": delta_version - done}


def _check_failed(args: argparse.Namespace, kind: str, message: str) -> int:
    """Exit 2 with the reason on stderr; with --json stdout still gets JSON (an ``error`` object)."""
    print(f"icecompat check: {message}", file=sys.stderr)
    if args.json:
        error = {"type": kind, "message": message, "table": args.table_path}
        sys.stdout.write(json.dumps({"error": error}, indent=2) + "\n")
    return EXIT_ERROR


def _print_report(report: Report) -> None:
    """The terminal report: verdict, candidate profiles, one table section per rule, findings.

    The table keeps to what differs between rows (column, file, observed, expected); each rule's
    message and fix are said once below it, so the table stays legible in 80 columns. Without a
    profile only the closest candidate's violations are listed (``--profile`` or ``--json`` for all).
    """
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from icecompat_writer.checking.check import violation_file
    from icecompat_writer.rules.catalog import RULES_BY_ID

    console = Console()
    footers = f"{report.files_checked}/{report.files_total} data file footers read"
    violations = list(report.violations)
    if report.profile is None:
        console.print(
            f"[bold]{escape(report.table)}[/] version {report.version} declares no profile ({footers})"
        )
        ranked = sorted(report.candidates.items(), key=lambda item: (item[1], item[0]))
        t = Table("profile", "violations", title="candidate profiles")
        for name, count in ranked:
            t.add_row(name, "compliant" if count == 0 else str(count))
        console.print(t)
        if ranked:
            closest = ranked[0][0]
            violations = [v for v in violations if v.profile == closest]
            console.print(f"violations of the closest profile, {closest} (--profile NAME for another):")
    else:
        verdict = "[green]COMPLIANT[/]" if report.compliant else "[red]NOT COMPLIANT[/]"
        console.print(
            f"[bold]{escape(report.table)}[/] version {report.version}, profile [bold]{report.profile}[/]: "
            f"{verdict} ({len(report.violations)} violation(s), {len(report.errors)} error finding(s), "
            f"{footers})"
        )
    by_rule: dict[str, list[Violation]] = {}
    for v in violations:
        by_rule.setdefault(v.rule, []).append(v)
    if by_rule:
        # The file column only when a file-level rule is violated: protocol rules have no file.
        with_files = any(violation_file(v) is not None for v in violations)
        headers = ["rule", "column", *(["file"] if with_files else []), "observed", "expected"]
        t = Table(*headers, title="violations")
        for rule, items in sorted(by_rule.items()):
            for i, v in enumerate(items[:ROWS_PER_RULE]):
                file = violation_file(v)
                file_cell = [escape(file or "")] if with_files else []
                t.add_row(
                    f"{rule} ({len(items)})" if i == 0 else "",
                    escape(v.path or ("(file)" if file else "(table)")),
                    *file_cell,
                    escape(str(v.observed or "")),
                    escape(str(v.expected or "")),
                )
            if len(items) > ROWS_PER_RULE:
                more = f"... and {len(items) - ROWS_PER_RULE} more (--json lists all)"
                t.add_row("", more, *[""] * (len(headers) - 2))
            t.add_section()
        console.print(t)
        for rule, items in sorted(by_rule.items()):
            # What the rule checks (the catalog's sentence) reads better than one row's message.
            known = RULES_BY_ID.get(rule)
            what = known.checks if known is not None else items[0].message + "."
            console.print(f"[bold]{rule}[/]: {escape(what)} [bold]Fix:[/] {escape(items[0].fix)}")
    if report.findings:
        t = Table("severity", "finding", "file", "message", title="what the checker could not vouch for")
        for f in report.findings:
            where = f.file or ""
            if f.line is not None:
                where += f":{f.line}"
            color = "red" if f.blocking else "yellow"
            t.add_row(f"[{color}]{f.severity.value}[/]", f.code, escape(where), escape(f.message))
        console.print(t)


def _cmd_upgrade(args: argparse.Namespace) -> int:
    """Upgrade one table (or, with --dry-run, say what the upgrade would do, without Spark).

    stdout carries the result (one JSON document with --json), or the refusal (exit 1); errors go to
    stderr (exit 2).
    """
    from icecompat_writer.errors import CompatViolation
    from icecompat_writer.upgrading.api import JSON_FORMAT

    try:
        result = _run_upgrade(args)
    except CompatViolation as err:  # UpgradeRefused too: the table was read and will not be upgraded
        if args.json:
            refused = {
                "type": type(err).__name__,
                "message": str(err).splitlines()[0],
                "violations": [
                    {"profile": v.profile, "rule": v.rule, "path": v.path, "message": v.message, "fix": v.fix}
                    for v in err.violations
                ],
            }
            doc = {
                "format": JSON_FORMAT,
                "table": args.table_path,
                "profile": args.profile,
                "refused": refused,
            }
            sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        else:
            print(f"icecompat upgrade: refused, nothing changed. {err}")
        return EXIT_VIOLATIONS
    except IcecompatError as err:
        return _command_failed("upgrade", args, type(err).__name__, str(err))
    except Exception as err:  # exit 1 means "refused": a crash must not look like one
        return _command_failed(
            "upgrade", args, type(err).__name__, f"internal error while upgrading: {err!r}"
        )
    if args.json:
        sys.stdout.write(json.dumps(result.to_json(), indent=2) + "\n")
    else:
        print(result.render_text())
    return EXIT_OK


def _run_upgrade(args: argparse.Namespace) -> UpgradeResult:
    """The upgrade itself: a dry run needs no Spark; a real one uses the running session, or starts
    (and afterwards stops) one of its own."""
    from icecompat_writer.upgrading.api import upgrade_table

    if args.dry_run:
        return upgrade_table(None, args.table_path, args.profile, dry_run=True)
    spark, started = spark_session("icecompat-upgrade", args)
    try:
        return upgrade_table(spark, args.table_path, args.profile)
    finally:
        if started:
            spark.stop()


def _command_failed(command: str, args: argparse.Namespace, kind: str, message: str) -> int:
    """Exit 2 with the reason on stderr; with --json stdout still gets JSON (an ``error`` object)."""
    print(f"icecompat {command}: {message}", file=sys.stderr)
    if args.json:
        error: JsonDict = {"type": kind, "message": message}
        if hasattr(args, "table_path"):
            error["table"] = args.table_path
        sys.stdout.write(json.dumps({"error": error}, indent=2) + "\n")
    return EXIT_ERROR


def _cmd_iceberg(args: argparse.Namespace) -> int:
    from icecompat_writer.iceberg.cli import run

    if not args.executors:
        return run(args)
    spark, started = spark_session("icecompat-iceberg", args)
    try:
        with footers_read_by(ExecutorFooterReader.from_session(spark, "true")):
            return run(args)
    finally:
        if started:
            spark.stop()


PROFILES = ["v3", "writer-v1", "writer-v3"]
JSON_HELP = "print only JSON on stdout (errors too, as an error object; notes stay on stderr)"


def build_parser() -> argparse.ArgumentParser:
    """The whole command line; ``docs/cli.md`` documents every flag (a test holds them together)."""
    parser = argparse.ArgumentParser(
        prog="icecompat",
        description="Iceberg-safe Delta Lake tables. Exit codes: 0 ok, 1 violations found or refused, "
        "2 usage or read errors.",
    )
    loudness = parser.add_mutually_exclusive_group()
    loudness.add_argument(
        "-v",
        "--verbose",
        dest="verbosity",
        action="count",
        default=0,
        help="say more on stderr: what is done (-v), the package's debug log (-vv)",
    )
    loudness.add_argument(
        "-q",
        "--quiet",
        dest="verbosity",
        action="store_const",
        const=-1,
        help="only errors on stderr: no progress bar, no note",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    conf = sub.add_parser(
        "conf",
        help="print the Spark settings (spark-defaults.conf, or spark-submit arguments) for this "
        "installation and the running pyspark's Spark line",
    )
    conf.add_argument("-o", "--output", metavar="FILE", help="write to this file instead of stdout")
    conf.add_argument(
        "--spark-version",
        metavar="X.Y.Z",
        help="render for this Spark version instead of the installed pyspark's (e.g. the cluster's)",
    )
    conf.add_argument(
        "--packages",
        action="store_true",
        help="take delta-spark from Maven (spark.jars.packages / --packages) instead of the bundled jars; "
        "the shim and agent stay bundled",
    )
    conf.add_argument(
        "--submit", action="store_true", help="print spark-submit arguments, not a properties file"
    )
    conf.add_argument("--json", action="store_true", help=JSON_HELP)
    conf.set_defaults(func=_cmd_conf, command_parser=conf)

    doctor = sub.add_parser("doctor", help="say what is installed, loaded and missing")
    doctor.add_argument("--no-spark", action="store_true", help="do not start a local session")
    settings.add_arguments(
        doctor,
        file_help="start the session from this spark-defaults file only (what a spark-submit job gets)",
    )
    doctor.add_argument("--json", action="store_true", help=JSON_HELP)
    doctor.set_defaults(func=cmd_doctor, command_parser=doctor)

    check = sub.add_parser("check", help="audit a Delta table (log and Parquet footers, no Spark)")
    check.add_argument("table_path", metavar="TABLE_PATH", nargs="*")
    check.add_argument(
        "--profile",
        choices=PROFILES,
        default=None,
        help="profile to check (default: the one the table declares; none declared: every candidate)",
    )
    check.add_argument("--json", action="store_true", help=JSON_HELP)
    check.add_argument(
        "--files",
        default="all",
        type=_files_option,
        help="data file footers to read: all, none or sample:N (default all)",
    )
    _executors_argument(check)
    settings.add_arguments(check)
    fleet.add_arguments(check, with_catalog=True)
    check.set_defaults(func=fleet.routed("check", _cmd_check), command_parser=check)

    upgrade = sub.add_parser(
        "upgrade",
        help="bring a Delta table to a profile in one commit, rewriting only the files that fall short",
    )
    upgrade.add_argument("table_path", metavar="TABLE_PATH", nargs="*")
    upgrade.add_argument("--profile", choices=PROFILES, required=True, help="profile to upgrade to")
    upgrade.add_argument(
        "--dry-run",
        action="store_true",
        help="print the planned changes and the files that would be rewritten; change nothing (no Spark)",
    )
    upgrade.add_argument("--json", action="store_true", help=JSON_HELP)
    settings.add_arguments(upgrade)
    fleet.add_arguments(upgrade)
    upgrade.set_defaults(func=fleet.routed("upgrade", _cmd_upgrade), command_parser=upgrade)

    iceberg = sub.add_parser("iceberg", help="write Iceberg metadata next to a compliant Delta table")
    iceberg_arguments(iceberg)
    _executors_argument(iceberg)
    settings.add_arguments(iceberg)
    fleet.add_arguments(iceberg)
    iceberg.set_defaults(func=fleet.routed("iceberg", _cmd_iceberg), command_parser=iceberg)
    return parser


def _executors_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--executors",
        action="store_true",
        help="read the data files' Parquet footers as a Spark job on the executors of a Spark session "
        "(the running one, else one started with the command line's settings), not in this process",
    )


def _starts_spark(args: argparse.Namespace) -> bool:
    """Whether the command may start a Spark session (which gets every setting of the command line)."""
    if args.command == "doctor":
        return not args.no_spark
    if getattr(args, "database", None) is not None or getattr(args, "executors", False):
        return True
    return args.command == "upgrade" and not args.dry_run


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, then run the subcommand with the command line's settings and verbosity in force."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse: usage errors are exit 2 already; --help is 0
        return int(exit_.code or 0)
    try:
        args.settings = settings.spark_settings(args)
    except OSError as err:
        return usage_error(args, f"--properties-file: cannot read {args.properties_file}: {err}")
    if args.settings:
        keys = ", ".join(sorted(args.settings))
        note(args, f"settings from the command line (values not shown): {keys}")
        unused = sorted(k for k in args.settings if not k.startswith(settings.HADOOP_PREFIX))
        if unused and not _starts_spark(args):
            note(
                args,
                f"this run starts no Spark session: only the spark.hadoop.* settings apply; unused: "
                f"{', '.join(unused)}",
                level=0,
            )
    logging_state = configure_logging(args)
    began = time.perf_counter()
    try:
        with settings.installed(args.settings):
            code = int(args.func(args))
    except IcecompatError as err:
        print(f"icecompat: {err}", file=sys.stderr)
        code = EXIT_ERROR
    finally:
        restore_logging(logging_state)
    note(args, f"{args.command}: exit {code} after {time.perf_counter() - began:.1f} s")
    return code


if __name__ == "__main__":
    raise SystemExit(main())
