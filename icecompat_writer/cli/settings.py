"""Spark settings given on the command line: ``--properties-file F`` and ``--conf KEY=VALUE``.

One parser for every subcommand that takes them (``doctor``, ``check``, ``upgrade``, ``iceberg``), so a
table on S3 gets the same settings whether the command starts a Spark session or reads the table
itself. The settings reach two places:

- a Spark session the command starts (every key, as ``spark-submit --conf`` would);
- the package's own reads and writes without Spark (the checker, a dry run, the Iceberg metadata):
  the ``spark.hadoop.*`` keys, without that prefix, are the Hadoop settings the storage layer resolves
  credentials and endpoints from (:mod:`icecompat_writer.storage.config`), exactly as it would from a
  running session's Hadoop configuration. :func:`installed` hands them down for the command's run.

The values are never printed or logged (``-v`` names the keys only): they are often credentials.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from icecompat_writer import driver_settings

from .console import note

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "HADOOP_PREFIX",
    "CommandLineSettings",
    "add_arguments",
    "conf_option",
    "given",
    "hadoop_settings",
    "installed",
    "parse_properties",
    "read_properties",
    "spark_session",
    "spark_settings",
]

HADOOP_PREFIX = "spark.hadoop."


def parse_properties(text: str) -> dict[str, str]:
    """spark-defaults style text: ``key value`` or ``key=value`` lines, ``#`` comments."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            parts = re.split(r"\s*=\s*|\s+", stripped, maxsplit=1)
            out[parts[0]] = parts[1].strip() if len(parts) > 1 else ""
    return out


def read_properties(path: str) -> dict[str, str]:
    """A spark-defaults style file (:func:`parse_properties`)."""
    with open(path, encoding="utf-8") as fh:
        return parse_properties(fh.read())


def conf_option(text: str) -> tuple[str, str]:
    """argparse type for ``--conf KEY=VALUE``: no ``=``, or a key that is not a dotted Spark key
    (``spark.hadoop.fs.s3a.endpoint``), is a usage error."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or "." not in key or any(c.isspace() for c in key):
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE with a Spark key (spark.x.y), got {text!r}")
    return key, value.strip()


def add_arguments(parser: argparse.ArgumentParser, *, file_help: str | None = None) -> None:
    """``--conf KEY=VALUE`` (repeatable) and ``--properties-file F``."""
    parser.add_argument(
        "--conf",
        metavar="KEY=VALUE",
        action="append",
        type=conf_option,
        default=None,
        help="a Spark setting, repeatable (later wins, over --properties-file); spark.hadoop.* keys "
        "also reach the reads and writes made without Spark (e.g. spark.hadoop.fs.s3a.endpoint=...)",
    )
    parser.add_argument(
        "--properties-file",
        metavar="FILE",
        default=None,
        help=file_help
        or "Spark settings from a spark-defaults style file (key value or key=value lines), as --conf",
    )


def given(args: argparse.Namespace) -> bool:
    """Whether the command line named any setting."""
    return bool(getattr(args, "conf", None)) or getattr(args, "properties_file", None) is not None


def spark_settings(args: argparse.Namespace) -> dict[str, str]:
    """The settings the command line names: the properties file first, then each ``--conf`` in order.

    Raises :class:`OSError` when the file cannot be read.
    """
    out: dict[str, str] = {}
    path = getattr(args, "properties_file", None)
    if path is not None:
        out.update(read_properties(path))
    for key, value in getattr(args, "conf", None) or ():
        out[key] = value
    return out


def hadoop_settings(settings: Mapping[str, str]) -> dict[str, str]:
    """The Hadoop keys among Spark settings: ``spark.hadoop.fs.s3a.endpoint`` -> ``fs.s3a.endpoint``."""
    return {k[len(HADOOP_PREFIX) :]: v for k, v in settings.items() if k.startswith(HADOOP_PREFIX)}


class CommandLineSettings:
    """A :class:`~icecompat_writer.driver_settings.SettingsSource` that answers the command line's
    Hadoop keys over those of the source it replaces (a running session's): the command line is the
    more specific of the two, as ``--conf`` is over ``spark-defaults.conf``."""

    def __init__(self, hadoop: Mapping[str, str], before: driver_settings.SettingsSource | None) -> None:
        self._hadoop = dict(hadoop)
        self._before = before

    def hadoop_values(self, keys: Sequence[str]) -> dict[str, str] | None:
        inner = None if self._before is None else self._before.hadoop_values(keys)
        out = dict(inner or {})
        out.update({k: self._hadoop[k] for k in keys if k in self._hadoop})
        return out


@contextmanager
def installed(settings: Mapping[str, str]) -> Iterator[None]:
    """Hand the ``spark.hadoop.*`` keys of ``settings`` to the storage layer for the ``with`` block;
    no such key: nothing changes. The previous source is back afterwards."""
    hadoop = hadoop_settings(settings)
    if not hadoop:
        yield
        return
    before = driver_settings.install(None)
    driver_settings.install(CommandLineSettings(hadoop, before))
    try:
        yield
    finally:
        driver_settings.install(before)


def spark_session(app_name: str, args: argparse.Namespace) -> tuple[SparkSession, bool]:
    """The running Spark session, else a new one with the command line's settings (``args.settings``),
    and whether this call started it (the caller stops what it started).

    A running session keeps its own settings (most cannot change once it runs): the command line's
    then reach only the package's own reads and writes, and a note says so.
    """
    from pyspark.sql import SparkSession

    from icecompat_writer.sessions import session

    settings = dict(getattr(args, "settings", None) or {})
    running = SparkSession.getActiveSession()
    if running is not None:
        if settings:
            note(
                args,
                "a Spark session is already running: --conf / --properties-file reach icecompat's own "
                "reads and writes, not that session",
                level=0,
            )
        else:
            note(args, "using the running Spark session")
        return running, False
    keys = ", ".join(sorted(settings)) or "none"
    if settings.get("spark.master", "local").startswith("local"):
        # A local session's Python tasks (footers read on its executors) run this interpreter, which
        # has the package, not the first ``python3`` on PATH; PYSPARK_PYTHON still wins.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    note(args, f"starting a Spark session (settings from the command line: {keys})")
    return session(app_name, **settings), True
