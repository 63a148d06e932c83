"""``df.write`` and ``df.writeTo`` that route Delta writes through ``compat_write``, and nothing else.

:class:`RoutingDataFrameWriter` *is* a pyspark ``DataFrameWriter`` (a subclass): every builder call
(``format``, ``mode``, ``option``, ``partitionBy``, ...) goes to Spark exactly as before and is also
recorded. Only the calls that write decide: when the write is a Delta write, the recorded calls are
replayed onto the project's compat writer (:mod:`icecompat_writer.writing.wrappers`) and the write
goes through :func:`~icecompat_writer.writing.api.compat_write` with the enabled profile; any other
format is Spark's own write, untouched (``parquet()``, ``csv()``, ``jdbc()``, ... are inherited as is).

Which format a write has follows Spark's own rules: the ``format`` given (to the builder or the
terminal call), else for an append to an existing catalog table that table's provider, else
``spark.sql.sources.default``. ``insertInto`` and the v2 ``append`` / ``overwrite*`` calls write into
an existing table, so its provider decides.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from pyspark.sql.readwriter import DataFrameWriter, DataFrameWriterV2

from icecompat_writer.errors import IcecompatError
from icecompat_writer.schema import JsonDict

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql._typing import ColumnOrName, OptionalPrimitiveType

    from icecompat_writer.writing.api import WriteResult
    from icecompat_writer.writing.wrappers import CompatDataFrameWriter, CompatDataFrameWriterV2

_W = TypeVar("_W")

__all__ = ["RoutingDataFrameWriter", "RoutingDataFrameWriterV2", "is_delta_format", "table_provider"]

_DELTA_NAMES = frozenset({"delta", "org.apache.spark.sql.delta.sources.deltadatasource"})
# Builder calls that only choose the format: Spark gets them, the compat writer does not need them.
_FORMAT_CALLS = frozenset({"format", "using"})
# Builder calls a Delta table written through the compat path cannot honour.
_UNSUPPORTED = {
    "bucketBy": "bucketing is not a Delta feature",
    "sortBy": "sortBy only applies to bucketed tables",
    "clusterBy": "liquid clustering is not part of the compat write path",
}


def is_delta_format(name: str | None) -> bool:
    return name is not None and name.strip().lower() in _DELTA_NAMES


def default_format(spark: SparkSession) -> str:
    return str(spark.conf.get("spark.sql.sources.default", "parquet"))


def table_provider(spark: SparkSession, name: str) -> str | None:
    """The provider (``delta``, ``parquet``, ...) of an existing catalog table; None when there is none.

    Temporary views have no provider (None): Spark's own write decides what happens to them.
    """
    from icecompat_writer.writing.target import TargetError, parse_target

    try:
        target = parse_target(name)
    except TargetError:  # not an identifier: Spark's own write reports it
        return None
    if target.table is None or not spark.catalog.tableExists(target.sql_name):
        return None
    try:
        rows = spark.sql(f"DESCRIBE TABLE EXTENDED {target.sql_name}").collect()
    except Exception:  # a view or an object DESCRIBE cannot describe: leave the write to Spark
        return None
    for row in rows:
        if str(row[0]).strip().lower() == "provider":
            return str(row[1]).strip()
    return None


def _refuse_unsupported(calls: list[tuple[str, tuple[object, ...], JsonDict]], profile: str) -> None:
    used = [name for name, _, _ in calls if name in _UNSUPPORTED]
    if used:
        reasons = "; ".join(f"{name}: {_UNSUPPORTED[name]}" for name in dict.fromkeys(used))
        raise IcecompatError(
            f"this Delta write uses {', '.join(dict.fromkeys(used))}, which Iceberg-compatible writes "
            f"(profile {profile}) do not support ({reasons}); remove it, or write without the compat path "
            "after icecompat_writer.notebook.disable()"
        )


def _replay(target: _W, calls: list[tuple[str, tuple[object, ...], JsonDict]]) -> _W:
    for name, args, kwargs in calls:
        if name in _FORMAT_CALLS:
            continue
        if name == "mode" and (args[0] if args else kwargs.get("saveMode")) is None:
            continue  # Spark's mode(None) keeps the current mode
        if name == "option" and (args[1] if len(args) > 1 else kwargs.get("value")) is None:
            continue
        if name == "options":
            kwargs = {k: v for k, v in kwargs.items() if v is not None}
        getattr(target, name)(*args, **kwargs)
    return target


class RoutingDataFrameWriter(DataFrameWriter):
    """``df.write`` of a session with the notebook helper enabled (see the module docstring)."""

    def __init__(self, df: DataFrame, profile: str) -> None:
        super().__init__(df)
        self._icecompat_profile = profile
        self._icecompat_calls: list[tuple[str, tuple[object, ...], JsonDict]] = []
        self._icecompat_format: str | None = None
        self._icecompat_mode: str | None = None

    # -- builder calls: Spark's, recorded -------------------------------------------------------------
    def _record(self, name: str, *args: object, **kwargs: object) -> None:
        self._icecompat_calls.append((name, args, kwargs))

    def format(self, source: str) -> RoutingDataFrameWriter:
        self._record("format", source)
        self._icecompat_format = source
        super().format(source)
        return self

    def mode(self, saveMode: str | None) -> RoutingDataFrameWriter:
        self._record("mode", saveMode)
        if saveMode is not None:
            self._icecompat_mode = saveMode.lower()
        super().mode(saveMode)
        return self

    def option(self, key: str, value: OptionalPrimitiveType) -> RoutingDataFrameWriter:
        self._record("option", key, value)
        super().option(key, value)
        return self

    def options(self, **options: OptionalPrimitiveType) -> RoutingDataFrameWriter:
        self._record("options", **options)
        super().options(**options)
        return self

    def partitionBy(self, *cols: str | list[str]) -> RoutingDataFrameWriter:
        self._record("partitionBy", *cols)
        super().partitionBy(*cols)  # type: ignore[arg-type]  # all names or all lists, as pyspark's overloads
        return self

    def bucketBy(
        self, numBuckets: int, col: str | list[str] | tuple[str, ...], *cols: str
    ) -> RoutingDataFrameWriter:
        self._record("bucketBy", numBuckets, col, *cols)
        super().bucketBy(numBuckets, col, *cols)
        return self

    def sortBy(self, col: str | list[str] | tuple[str, ...], *cols: str) -> RoutingDataFrameWriter:
        self._record("sortBy", col, *cols)
        super().sortBy(col, *cols)
        return self

    def clusterBy(self, *cols: str | list[str]) -> RoutingDataFrameWriter:
        self._record("clusterBy", *cols)
        super().clusterBy(*cols)  # type: ignore[arg-type]  # all names or all lists, as pyspark's overloads
        return self

    # -- the calls that write -------------------------------------------------------------------------
    def _compat_writer(self) -> CompatDataFrameWriter:
        from icecompat_writer.writing.wrappers import compat

        _refuse_unsupported(self._icecompat_calls, self._icecompat_profile)
        return _replay(compat(self._df, self._icecompat_profile).write, self._icecompat_calls)

    def save(
        self,
        path: str | None = None,
        format: str | None = None,
        mode: str | None = None,
        partitionBy: str | list[str] | None = None,
        **options: OptionalPrimitiveType,
    ) -> WriteResult | None:
        """Spark's ``save``; a Delta save goes through ``compat_write`` and returns its ``WriteResult``."""
        chosen = format or self._icecompat_format or default_format(self._spark)
        if not is_delta_format(chosen):
            return super().save(path, format, mode, partitionBy, **options)
        return self._compat_writer().save(path, None, mode, partitionBy, **options)

    def saveAsTable(
        self,
        name: str,
        format: str | None = None,
        mode: str | None = None,
        partitionBy: str | list[str] | None = None,
        **options: OptionalPrimitiveType,
    ) -> WriteResult | None:
        """Spark's ``saveAsTable``; a Delta table goes through ``compat_write``."""
        chosen = format or self._icecompat_format
        if chosen is None:
            effective_mode = (mode or self._icecompat_mode or "errorifexists").lower()
            # Spark: an append to an existing table uses that table's format
            existing = table_provider(self._spark, name) if effective_mode == "append" else None
            chosen = existing or default_format(self._spark)
        if not is_delta_format(chosen):
            return super().saveAsTable(name, format, mode, partitionBy, **options)
        return self._compat_writer().saveAsTable(name, None, mode, partitionBy, **options)

    def insertInto(self, tableName: str, overwrite: bool | None = None) -> WriteResult | None:
        """Spark's ``insertInto``; into a Delta table it goes through ``compat_write`` (by position)."""
        if not is_delta_format(table_provider(self._spark, tableName)):
            return super().insertInto(tableName, overwrite)
        if overwrite is None:
            overwrite = self._icecompat_mode == "overwrite"
        return self._compat_writer().insertInto(tableName, overwrite=overwrite)


class RoutingDataFrameWriterV2(DataFrameWriterV2):
    """``df.writeTo(table)`` of a session with the notebook helper enabled."""

    def __init__(self, df: DataFrame, table: str, profile: str) -> None:
        super().__init__(df, table)
        self._icecompat_df = df
        self._icecompat_table = table
        self._icecompat_profile = profile
        self._icecompat_calls: list[tuple[str, tuple[object, ...], JsonDict]] = []
        self._icecompat_provider: str | None = None

    def _record(self, name: str, *args: object, **kwargs: object) -> None:
        self._icecompat_calls.append((name, args, kwargs))

    def using(self, provider: str) -> RoutingDataFrameWriterV2:
        self._record("using", provider)
        self._icecompat_provider = provider
        super().using(provider)
        return self

    def option(self, key: str, value: OptionalPrimitiveType) -> RoutingDataFrameWriterV2:
        self._record("option", key, value)
        super().option(key, value)
        return self

    def options(self, **options: OptionalPrimitiveType) -> RoutingDataFrameWriterV2:
        self._record("options", **options)
        super().options(**options)
        return self

    def tableProperty(self, property: str, value: str) -> RoutingDataFrameWriterV2:
        self._record("tableProperty", property, value)
        super().tableProperty(property, value)
        return self

    def partitionedBy(self, col: ColumnOrName, *cols: ColumnOrName) -> RoutingDataFrameWriterV2:
        self._record("partitionedBy", col, *cols)
        super().partitionedBy(col, *cols)
        return self

    def clusterBy(self, col: str, *cols: str) -> RoutingDataFrameWriterV2:
        self._record("clusterBy", col, *cols)
        super().clusterBy(col, *cols)
        return self

    def _creating_delta(self) -> bool:
        spark = self._icecompat_df.sparkSession
        return is_delta_format(self._icecompat_provider or default_format(spark))

    def _existing_delta(self) -> bool:
        return is_delta_format(table_provider(self._icecompat_df.sparkSession, self._icecompat_table))

    def _compat_writer(self) -> CompatDataFrameWriterV2:
        from icecompat_writer.writing.wrappers import compat

        _refuse_unsupported(self._icecompat_calls, self._icecompat_profile)
        writer = compat(self._icecompat_df, self._icecompat_profile).writeTo(self._icecompat_table)
        return _replay(writer, self._icecompat_calls)

    def create(self) -> WriteResult | None:
        return self._compat_writer().create() if self._creating_delta() else super().create()

    def replace(self) -> WriteResult | None:
        return self._compat_writer().replace() if self._creating_delta() else super().replace()

    def createOrReplace(self) -> WriteResult | None:
        if self._creating_delta():
            return self._compat_writer().createOrReplace()
        return super().createOrReplace()

    def append(self) -> WriteResult | None:
        return self._compat_writer().append() if self._existing_delta() else super().append()

    def overwritePartitions(self) -> WriteResult | None:
        if self._existing_delta():
            return self._compat_writer().overwritePartitions()
        return super().overwritePartitions()

    def overwrite(self, condition: ColumnOrName) -> WriteResult | None:
        if not self._existing_delta():
            return super().overwrite(condition)
        raise IcecompatError(
            "overwrite(condition) on a Delta table is not supported by Iceberg-compatible writes; use "
            "df.write.format('delta').mode('overwrite').option('replaceWhere', '<SQL condition>')"
            ".save(path_or_table) instead"
        )
