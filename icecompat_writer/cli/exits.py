"""The command line's exit codes, one convention for every subcommand (see :mod:`.main`), and the
usage error a subcommand raises for what only shows after parsing."""

from __future__ import annotations

import argparse

__all__ = ["EXIT_ERROR", "EXIT_OK", "EXIT_VIOLATIONS", "usage_error"]

EXIT_OK = 0
EXIT_VIOLATIONS = 1
EXIT_ERROR = 2


def usage_error(args: argparse.Namespace, message: str) -> int:
    """argparse's usage message for the subcommand and exit 2, for what only shows after parsing."""
    try:
        args.command_parser.error(message)
    except SystemExit as exit_:
        return int(exit_.code or EXIT_ERROR)
    return EXIT_ERROR  # pragma: no cover - error() always exits
