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


def _cmd_iceberg(args: argparse.Namespace) -> int:
    from icecompat_writer.iceberg.cli import run

    return run(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="icecompat", description="Iceberg-safe Delta Lake tables.")
    sub = parser.add_subparsers(dest="command", required=True)
    conf = sub.add_parser("conf", help="print a spark-defaults.conf with absolute paths to this installation")
    conf.add_argument("-o", "--output", help="write to this file instead of stdout")
    conf.set_defaults(func=_cmd_conf)

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
