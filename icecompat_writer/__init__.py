"""icecompat_writer: Delta Lake writes that Apache Iceberg readers can read.

Public entry points are imported lazily, so ``import icecompat_writer`` (and the Spark-free checker
and planner) never start a JVM or import pyspark.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from .errors import (
    CompatViolation,
    ConcurrentWriteError,
    IcecompatError,
    JvmError,
    SessionConfigError,
    SetupError,
    SparkConnectNotSupported,
    TableReadError,
    UpgradeRefused,
    Violation,
)

__version__ = "0.1.0"

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
    "upgrade_table": ".upgrading.api",
    "UpgradeResult": ".upgrading.api",
}

__all__ = [
    "CompatViolation",
    "ConcurrentWriteError",
    "IcecompatError",
    "JvmError",
    "SessionConfigError",
    "SetupError",
    "SparkConnectNotSupported",
    "TableReadError",
    "UpgradeRefused",
    "Violation",
    "__version__",
    "load_ipython_extension",
    "unload_ipython_extension",
    *_LAZY,
]


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext icecompat_writer``: see :mod:`icecompat_writer.notebook`."""
    from .notebook import ipython as notebook_ipython

    notebook_ipython.load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext icecompat_writer``: pyspark's own ``df.write`` again, magics removed."""
    from .notebook import ipython as notebook_ipython

    notebook_ipython.unload(ipython)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'icecompat_writer' has no attribute {name!r}")
    return getattr(import_module(module, __name__), name)
