"""What the command says besides its result: ``-v`` / ``-q`` and the notes and logging on stderr.

stdout carries only the command's result (only JSON with ``--json``); everything else goes to stderr,
at the level the top-level ``-q`` (errors only) and ``-v`` (more, repeatable) choose:

- ``-q`` (verbosity -1): errors only; no progress bar, no note; the package's log at ERROR;
- default (0): progress bars and the notes that change how to read the result; log at WARNING;
- ``-v`` (1): also what the command is doing (the table, the settings keys, a Spark session started
  or reused, the time taken); log at INFO;
- ``-vv`` (2): also the package's debug log.
"""

from __future__ import annotations

import argparse
import logging
import sys

__all__ = ["LEVELS", "configure_logging", "note", "quiet", "restore_logging", "verbosity"]

LEVELS = {-1: logging.ERROR, 0: logging.WARNING, 1: logging.INFO, 2: logging.DEBUG}


def verbosity(args: argparse.Namespace) -> int:
    """-1 (``-q``), 0, 1 (``-v``) or 2 (``-vv`` and more)."""
    return max(-1, min(2, int(getattr(args, "verbosity", 0) or 0)))


def quiet(args: argparse.Namespace) -> bool:
    return verbosity(args) < 0


def note(args: argparse.Namespace, text: str, *, level: int = 1) -> None:
    """``text`` on stderr when the verbosity is at least ``level`` (0: unless ``-q``; 1: with ``-v``)."""
    if verbosity(args) >= level:
        print(f"icecompat: {text}", file=sys.stderr)


def configure_logging(args: argparse.Namespace) -> tuple[logging.Handler, int]:
    """The package's log (``icecompat_writer.*``) on stderr at the level of the command's verbosity;
    returns what :func:`restore_logging` needs to undo it."""
    logger = logging.getLogger("icecompat_writer")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("icecompat: %(levelname)s %(name)s: %(message)s"))
    previous = logger.level
    logger.addHandler(handler)
    logger.setLevel(LEVELS[verbosity(args)])
    return handler, previous


def restore_logging(state: tuple[logging.Handler, int]) -> None:
    """Undo :func:`configure_logging`: the command may run inside a process that goes on (a test, a
    notebook), whose logging must be as it was."""
    handler, previous = state
    logger = logging.getLogger("icecompat_writer")
    logger.removeHandler(handler)
    logger.setLevel(previous)
