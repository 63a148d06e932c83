"""``icecompat``: the command line entry point.

Exit codes follow one convention for every subcommand: 0 success / compliant, 1 violations found,
2 usage or read errors.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from icecompat_writer.errors import IcecompatError

EXIT_OK = 0
EXIT_VIOLATIONS = 1
EXIT_ERROR = 2


def _cmd_conf(args: argparse.Namespace) -> int:
    from icecompat_writer.sessions import spark_defaults

    text = spark_defaults()
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return EXIT_OK


PROGRESS_MIN_FILES = 200  # below this many footers a progress bar is only noise


def _cmd_check(args: argparse.Namespace) -> int:
    from icecompat_writer.checking.check import check_table

    progress_cb = None
    bar = None
    if not args.json:
        from rich.console import Console
        from rich.progress import Progress

        bar = Progress(console=Console(stderr=True), transient=True)
        task = None

        def progress_cb(done: int, total: int) -> None:
            nonlocal task
            if total < PROGRESS_MIN_FILES:
                return
            if task is None:
                bar.start()
                task = bar.add_task("reading Parquet footers", total=total)
            bar.update(task, completed=done)

    try:
        report = check_table(args.table_path, args.profile, files=args.files, progress=progress_cb)
    finally:
        if bar is not None:
            bar.stop()
    if args.json:
        sys.stdout.write(json.dumps(report.to_json(), indent=2) + "\n")
    else:
        _print_report(report)
    return EXIT_OK if report.compliant else EXIT_VIOLATIONS


def _print_report(report: Any) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if report.profile is None:
        console.print(f"[bold]{report.table}[/] (version {report.version}) declares no profile")
        t = Table("profile", "violations")
        for name, count in report.candidates.items():
            t.add_row(name, "compliant" if count == 0 else str(count))
        console.print(t)
        return
    verdict = "[green]COMPLIANT[/]" if report.compliant else "[red]NOT COMPLIANT[/]"
    console.print(
        f"[bold]{report.table}[/] version {report.version}, profile [bold]{report.profile}[/]: {verdict} "
        f"({report.files_checked}/{report.files_total} footers read)"
    )
    if report.violations:
        t = Table("rule", "column", "problem", "observed", "expected", "fix", show_lines=False)
        for v in report.violations:
            t.add_row(
                v.rule, v.path or "(table)", v.message, str(v.observed or ""), str(v.expected or ""), v.fix
            )
        console.print(t)
    for f in report.findings:
        console.print(f"[yellow]log finding[/] {f.code}: {f.message}")


def doctor_report(start_spark: bool) -> list[tuple[str, bool, str]]:
    """(what, ok, detail) for each thing the plugin needs, from files up to a live session."""
    import shutil

    from icecompat_writer import sessions

    rows: list[tuple[str, bool, str]] = []
    try:
        jars = sessions.runtime_jars()
        rows.append(("runtime jars", True, f"{len(jars)} in {sessions.jars_dir()}"))
    except IcecompatError as err:
        rows.append(("runtime jars", False, str(err)))
    try:
        rows.append(("driver agent", True, str(sessions.agent_jar())))
    except IcecompatError as err:
        rows.append(("driver agent", False, str(err)))
    java = shutil.which("java")
    rows.append(("java", java is not None, java or "no java on PATH: install a JDK 17"))
    if not start_spark or not all(ok for _, ok, _ in rows):
        return rows
    from icecompat_writer.jvm import bridge

    try:
        spark = sessions.session("icecompat-doctor")
    except IcecompatError as err:
        rows.append(("spark session", False, str(err)))
        return rows
    try:
        info = bridge.shim_info(spark)
        rows.append(
            ("spark session", True, f"Spark {info['running_spark']}, delta-spark {info['running_delta']}")
        )
        same = info["built_for_delta"] == info["running_delta"]
        rows.append(("shim vs delta", same, f"shim built for delta-spark {info['built_for_delta']}"))
        status = bridge.writer_features_status(spark)
        rows.append(
            (
                "writer-compat features",
                bool(status["features_known"]),
                f"agent {status['agent']}; icebergWriterCompatV1/V3 "
                + (
                    "known to delta-spark"
                    if status["features_known"]
                    else "NOT known: writer profiles refused"
                ),
            )
        )
    finally:
        spark.stop()
    return rows


def _cmd_doctor(args: argparse.Namespace) -> int:
    rows = doctor_report(start_spark=not args.no_spark)
    for what, ok, detail in rows:
        print(f"{'ok ' if ok else 'BAD'}  {what:<24} {detail}")
    return EXIT_OK if all(ok for _, ok, _ in rows) else EXIT_VIOLATIONS


def _cmd_iceberg(args: argparse.Namespace) -> int:
    from icecompat_writer.iceberg.cli import run

    return run(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="icecompat", description="Iceberg-safe Delta Lake tables.")
    sub = parser.add_subparsers(dest="command", required=True)
    conf = sub.add_parser("conf", help="print a spark-defaults.conf with absolute paths to this installation")
    conf.add_argument("-o", "--output", help="write to this file instead of stdout")
    conf.set_defaults(func=_cmd_conf)

    doctor = sub.add_parser("doctor", help="say what is installed, loaded and missing")
    doctor.add_argument("--no-spark", action="store_true", help="do not start a local session")
    doctor.set_defaults(func=_cmd_doctor)

    check = sub.add_parser("check", help="audit a Delta table (log and Parquet footers, no Spark)")
    check.add_argument("table_path", metavar="TABLE_PATH")
    check.add_argument("--profile", choices=["v3", "writer-v1", "writer-v3"], default=None)
    check.add_argument("--json", action="store_true", help="print only JSON on stdout")
    check.add_argument("--files", default="all", help="footers to read: all, none or sample:N (default all)")
    check.set_defaults(func=_cmd_check)

    from icecompat_writer.iceberg.cli import add_arguments as iceberg_arguments

    iceberg = sub.add_parser("iceberg", help="write Iceberg metadata next to a compliant Delta table")
    iceberg_arguments(iceberg)
    iceberg.set_defaults(func=_cmd_iceberg)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse: usage errors are exit 2 already; --help is 0
        return int(exit_.code or 0)
    try:
        return int(args.func(args))
    except IcecompatError as err:
        print(f"icecompat: {err}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    raise SystemExit(main())
