"""Drop-in wrappers for ``df.write`` (v1) and ``df.writeTo`` (v2) that route through ``compat_write``.

Existing code changes one word: ``df.write.format("delta")...save(p)`` becomes
``compat(df).write.format("delta")...save(p)`` (``.format`` is optional: the format is always Delta).
Each wrapper only collects settings; every write goes through :func:`compat_write`, so the v1 and v2
APIs share one implementation and one set of guarantees.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from icecompat_writer.errors import IcecompatError
from icecompat_writer.writing.api import WriteResult, compat_write

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql._typing import OptionalPrimitiveType


__all__ = ["CompatDataFrameWriter", "CompatDataFrameWriterV2", "CompatFrame", "compat"]

_MODES = {"append", "overwrite", "errorifexists", "error", "ignore", "default"}


def _check_format(source: str) -> None:
    if source.lower() != "delta":
        raise IcecompatError(f"compat writes are Delta writes; format {source!r} is not supported")


class CompatDataFrameWriter:
    """The ``DataFrameWriter`` look-alike (``compat(df).write``)."""

    def __init__(self, df: DataFrame, profile: str) -> None:
        self._df = df
        self._profile = profile
        self._mode = "errorifexists"
        self._partition_by: list[str] | None = None
        self._options: dict[str, str] = {}

    def format(self, source: str) -> CompatDataFrameWriter:
        _check_format(source)
        return self

    def mode(self, save_mode: str | None) -> CompatDataFrameWriter:
        mode = (save_mode or "errorifexists").lower()
        if mode not in _MODES:
            raise IcecompatError(
                f"unknown save mode {save_mode!r}; use append, overwrite, errorifexists/error or ignore"
            )
        self._mode = "errorifexists" if mode in {"error", "default"} else mode
        return self

    def partitionBy(self, *cols: str | list[str]) -> CompatDataFrameWriter:
        flat: list[str] = []
        for c in cols:
            flat.extend(c if isinstance(c, list | tuple) else [c])
        self._partition_by = flat
        return self

    def option(self, key: str, value: OptionalPrimitiveType) -> CompatDataFrameWriter:
        self._options[key] = _to_option(value)
        return self

    def options(self, **opts: OptionalPrimitiveType) -> CompatDataFrameWriter:
        for k, v in opts.items():
            self.option(k, v)
        return self

    def _write(
        self,
        target: str,
        mode: str | None,
        partition_by: str | list[str] | None,
        options: Mapping[str, OptionalPrimitiveType],
    ) -> WriteResult:
        if mode is not None:
            self.mode(mode)
        if partition_by is not None:
            self.partitionBy(partition_by)
        self.options(**options)
        properties = {k: v for k, v in self._options.items() if k.startswith("delta.")}
        writer_options = {k: v for k, v in self._options.items() if not k.startswith("delta.")}
        return compat_write(
            self._df,
            target,
            mode=self._mode,
            partition_by=self._partition_by,
            profile=self._profile,
            properties=properties or None,
            options=writer_options or None,
        )

    def save(
        self,
        path: str | None = None,
        format: str | None = None,
        mode: str | None = None,
        partitionBy: str | list[str] | None = None,
        **options: OptionalPrimitiveType,
    ) -> WriteResult:
        """Write to a path (``path`` or the ``path`` option)."""
        if format is not None:
            _check_format(format)
        target = path or options.pop("path", None) or self._options.pop("path", None)
        if not target:
            raise IcecompatError("save() needs a path: save('/data/t') or .option('path', ...)")
        if "/" not in str(target) and "://" not in str(target):
            raise IcecompatError(f"save() takes a path, not a table name ({target!r}); use saveAsTable()")
        return self._write(str(target), mode, partitionBy, options)

    def saveAsTable(
        self,
        name: str,
        format: str | None = None,
        mode: str | None = None,
        partitionBy: str | list[str] | None = None,
        **options: OptionalPrimitiveType,
    ) -> WriteResult:
        """Write to a catalog table (created when missing)."""
        if format is not None:
            _check_format(format)
        return self._write(name, mode, partitionBy, options)

    def insertInto(self, tableName: str, overwrite: bool | None = None) -> WriteResult:
        """Append to (or overwrite) an existing catalog table, matching columns by position like Spark."""
        return compat_write(
            self._df,
            tableName,
            mode="overwrite" if overwrite else "append",
            profile=self._profile,
            options=self._options or None,
            by_position=True,
        )


class CompatDataFrameWriterV2:
    """The ``DataFrameWriterV2`` look-alike (``compat(df).writeTo(name)``)."""

    def __init__(self, df: DataFrame, table: str, profile: str) -> None:
        self._df = df
        self._table = table
        self._profile = profile
        self._options: dict[str, str] = {}
        self._properties: dict[str, str] = {}
        self._partitioned_by: list[str] | None = None

    def using(self, provider: str) -> CompatDataFrameWriterV2:
        _check_format(provider)
        return self

    def option(self, key: str, value: OptionalPrimitiveType) -> CompatDataFrameWriterV2:
        self._options[key] = _to_option(value)
        return self

    def options(self, **opts: OptionalPrimitiveType) -> CompatDataFrameWriterV2:
        for k, v in opts.items():
            self.option(k, v)
        return self

    def tableProperty(self, property: str, value: str) -> CompatDataFrameWriterV2:
        self._properties[property] = value
        return self

    def partitionedBy(self, col: str | Column, *cols: str | Column) -> CompatDataFrameWriterV2:
        names: list[str] = []
        for c in (col, *cols):
            if isinstance(c, str):
                names.append(c)
            else:
                raise IcecompatError(
                    "partitionedBy takes column names: Iceberg-compatible Delta tables are partitioned "
                    "by identity on columns (no transforms)"
                )
        self._partitioned_by = names
        return self

    def _go(self, mode: str, **extra: str) -> WriteResult:
        return compat_write(
            self._df,
            self._table,
            mode=mode,
            partition_by=self._partitioned_by,
            profile=self._profile,
            properties=self._properties or None,
            options={**self._options, **extra} or None,
        )

    def create(self) -> WriteResult:
        return self._go("errorifexists")

    def replace(self) -> WriteResult:
        return self._go("replace")

    def createOrReplace(self) -> WriteResult:
        return self._go("create_or_replace")

    def append(self) -> WriteResult:
        return self._go("append_existing")

    def overwritePartitions(self) -> WriteResult:
        return self._go("overwrite_existing", partitionOverwriteMode="dynamic")


class CompatFrame:
    """What :func:`compat` returns: ``.write`` and ``.writeTo(name)`` like a DataFrame."""

    def __init__(self, df: DataFrame, profile: str) -> None:
        self._df = df
        self._profile = profile

    @property
    def write(self) -> CompatDataFrameWriter:
        return CompatDataFrameWriter(self._df, self._profile)

    def writeTo(self, table: str) -> CompatDataFrameWriterV2:
        return CompatDataFrameWriterV2(self._df, table, self._profile)


def compat(df: DataFrame, profile: str = "v3") -> CompatFrame:
    """Wrap a DataFrame so that ``.write`` / ``.writeTo`` produce Iceberg-compatible Delta tables."""
    return CompatFrame(df, profile)


def _to_option(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
