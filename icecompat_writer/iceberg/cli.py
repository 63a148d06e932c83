"""``icecompat iceberg TABLE_PATH [--format-version 2|3] [--catalog NAME --identifier NS.TABLE]``.

Ready to be wired as a subcommand.

:func:`add_arguments` fills a (sub)parser and :func:`run` executes parsed arguments, following the exit
codes of ``icecompat_writer.cli.main``: 0 written or already current, 1 the table is refused
(violations printed one per line), 2 the log could not be read or another run committed first.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from icecompat_writer.errors import CompatViolation, IcecompatError

from .catalogs import sync_catalog
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
        nargs="*",
        help="root of the Delta table: local path, file: URI or s3a://, gs://, abfss:// URI "
        "(several: each in turn, one summary)",
    )
    parser.add_argument(
        "--format-version",
        type=int,
        choices=(2, 3),
        default=None,
        help="Iceberg format version (default: kept for an existing tree; new: 3 if IcebergCompatV3, else 2)",
    )
    parser.add_argument(
        "--catalog",
        metavar="NAME",
        default=None,
        help="also register the table in (or move it forward in) the pyiceberg catalog NAME "
        "(.pyiceberg.yaml or PYICEBERG_CATALOG__NAME__* variables); needs --identifier",
    )
    parser.add_argument(
        "--identifier",
        metavar="NAMESPACE.TABLE",
        default=None,
        help="the table's identifier in --catalog",
    )


def run(args: argparse.Namespace) -> int:
    """Convert and report; never raises for the package's own errors (they become exit codes)."""
    catalog, identifier = getattr(args, "catalog", None), getattr(args, "identifier", None)
    if (catalog is None) != (identifier is None):
        print("icecompat iceberg: --catalog and --identifier go together", file=sys.stderr)
        return EXIT_ERROR
    path = args.table_path
    if isinstance(path, list):  # the positional takes several paths; this runs exactly one
        if len(path) != 1:
            print(
                "icecompat iceberg: one TABLE_PATH here (`icecompat iceberg` takes several)", file=sys.stderr
            )
            return EXIT_ERROR
        path = path[0]
    try:
        result = write_iceberg_metadata(path, format_version=args.format_version)
        print(result.summary())
        if catalog is not None and identifier is not None:
            print(sync_catalog(catalog, identifier, str(result.metadata_path)).summary())
    except CompatViolation as err:
        print(f"icecompat iceberg: {err}", file=sys.stderr)
        return EXIT_VIOLATIONS
    except IcecompatError as err:
        print(f"icecompat iceberg: {err}", file=sys.stderr)
        return EXIT_ERROR
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
