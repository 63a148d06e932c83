"""Whole databases: ``check``, ``upgrade`` and ``iceberg`` run table by table over a Spark catalog
database or a list of paths, with bounded parallelism, and one report (text, JSON, HTML).

:func:`discover_database` lists a database's tables through the Spark catalog (each with its location
and its default Iceberg identifier, ``db.tbl``); :func:`run_tables` runs one command per table on a
bounded pool, turning any failure of one table into that table's ``error`` outcome, so the others go
on; :class:`FleetReport` renders the result.
"""

from .report import FleetReport, TableOutcome
from .run import (
    TableRef,
    check_outcome,
    discover_database,
    iceberg_outcome,
    path_refs,
    run_tables,
    upgrade_outcome,
)

__all__ = [
    "FleetReport",
    "TableOutcome",
    "TableRef",
    "check_outcome",
    "discover_database",
    "iceberg_outcome",
    "path_refs",
    "run_tables",
    "upgrade_outcome",
]
