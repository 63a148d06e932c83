"""``icecompat``: the command line entry point.

Exit codes follow one convention for every subcommand: 0 success / compliant, 1 violations found,
2 usage or read errors.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="icecompat", description="Iceberg-safe Delta Lake tables.")
    sub = parser.add_subparsers(dest="command", required=True)
    conf = sub.add_parser("conf", help="print a spark-defaults.conf with absolute paths to this installation")
    conf.add_argument("-o", "--output", help="write to this file instead of stdout")
    conf.set_defaults(func=_cmd_conf)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except IcecompatError as err:
        print(f"icecompat: {err}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    raise SystemExit(main())
