"""``icecompat iceberg TABLE_PATH [--format-version 2|3]``, ready to be wired as a subcommand.

:func:`add_arguments` fills a (sub)parser and :func:`run` executes parsed arguments, following the exit
codes of ``icecompat_writer.cli.main``: 0 written or already current, 1 the table is refused
(violations printed one per line), 2 the log could not be read or another run committed first.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from icecompat_writer.errors import CompatViolation, IcecompatError

from .emitter import write_iceberg_metadata

__all__ = ["add_arguments", "main", "run"]

EXIT_OK = 0
EXIT_VIOLATIONS = 1
EXIT_ERROR = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of the ``iceberg`` subcommand."""
    parser.add_argument(
        "table_path",
        metavar="TABLE_PATH",
        help="root of the Delta table: local path, file: URI or s3a://, gs://, abfss:// URI",
    )
    parser.add_argument(
        "--format-version",
        type=int,
        choices=(2, 3),
        default=None,
        help="Iceberg format version (default: kept for an existing tree; new: 3 if IcebergCompatV3, else 2)",
    )


def run(args: argparse.Namespace) -> int:
    """Convert and report; never raises for the package's own errors (they become exit codes)."""
    try:
        result = write_iceberg_metadata(args.table_path, format_version=args.format_version)
    except CompatViolation as err:
        print(f"icecompat iceberg: {err}", file=sys.stderr)
        return EXIT_VIOLATIONS
    except IcecompatError as err:
        print(f"icecompat iceberg: {err}", file=sys.stderr)
        return EXIT_ERROR
    print(result.summary())
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Stand-alone entry point (``python -m icecompat_writer.iceberg.cli TABLE_PATH``)."""
    parser = argparse.ArgumentParser(
        prog="icecompat iceberg", description="Write Iceberg metadata for a Delta table."
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
