"""icecompat_writer: Delta Lake writes that Apache Iceberg readers can read.

Public entry points are imported lazily, so ``import icecompat_writer`` (and the Spark-free checker
and planner) never start a JVM or import pyspark.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib import import_module
from typing import TYPE_CHECKING, Any

from . import driver_settings
from .errors import (
    CompatViolation,
    ConcurrentWriteError,
    IcebergSyncWarning,
    IcecompatError,
    JvmError,
    RuleServiceMismatch,
    SessionConfigError,
    SetupError,
    SparkConnectNotSupported,
    TableExistsError,
    TableNotFoundError,
    TableReadError,
    UnsupportedSparkVersion,
    UpgradeRefused,
    Violation,
)
from .version import __version__

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# public name -> module that defines it (imported on first use)
_LAZY: dict[str, str] = {
    "session": ".sessions",
    "configure": ".sessions",
    "plan": ".planning",
    "validate": ".planning",
    "export_catalog": ".rules",
    "compat_write": ".writing.api",
    "WriteResult": ".writing.api",
    "compat": ".writing.wrappers",
    "check_table": ".checking.check",
    "guarded_syncs": ".jvm.bridge",
    "pending_syncs": ".jvm.bridge",
    "await_syncs": ".jvm.bridge",
    "upgrade_table": ".upgrading.api",
    "UpgradeResult": ".upgrading.api",
    # the exceptions defined next to the code that raises them (every one derives from IcecompatError)
    "CatalogError": ".iceberg.catalogs",
    "FooterReadError": ".evidence.footers",
    "MalformedSchemaError": ".rules.schema",
    "ProtocolError": ".jvm.protocol",
    "SchemaIdError": ".iceberg.schema",
    "TargetError": ".writing.target",
    "UnknownProfileError": ".rules.profiles",
    "UnsupportedSchemeError": ".storage.uri",
}

__all__ = [
    "CompatViolation",
    "ConcurrentWriteError",
    "IcebergSyncWarning",
    "IcecompatError",
    "JvmError",
    "RuleServiceMismatch",
    "SessionConfigError",
    "SetupError",
    "SparkConnectNotSupported",
    "TableExistsError",
    "TableNotFoundError",
    "TableReadError",
    "UnsupportedSparkVersion",
    "UpgradeRefused",
    "Violation",
    "__version__",
    "load_ipython_extension",
    "unload_ipython_extension",
    *_LAZY,
]


def _running_session() -> SparkSession | None:
    """The driver's running Spark session, or None; asked only once the process imported pyspark."""
    if "pyspark" not in sys.modules:
        return None
    from .jvm import bridge  # pyspark and py4j, already imported by the process

    try:
        return bridge.driver_session()
    except Exception:  # a half-initialised pyspark: behave as without a session
        return None


class _DriverSession:
    """The storage layer's view of the driver's running Spark session (:mod:`.driver_settings`).

    A Spark-free process (the CLI, the checker) never pays for the Spark adapter's imports.
    """

    def hadoop_values(self, keys: Sequence[str]) -> dict[str, str] | None:
        spark = _running_session()
        if spark is None:
            return None
        from .jvm import bridge  # pyspark and py4j, already imported by the process

        return bridge.hadoop_conf_values(spark, keys)


driver_settings.install(_DriverSession())


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext icecompat_writer``: see :mod:`icecompat_writer.notebook`."""
    from .notebook import ipython as notebook_ipython

    notebook_ipython.load(ipython)


def unload_ipython_extension(ipython: object) -> None:
    """``%unload_ext icecompat_writer``: pyspark's own ``df.write`` again, magics removed."""
    from .notebook import ipython as notebook_ipython

    notebook_ipython.unload(ipython)


def __getattr__(name: str) -> Any:  # noqa: ANN401  # whatever the lazily imported name is
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'icecompat_writer' has no attribute {name!r}")
    return getattr(import_module(module, __name__), name)
