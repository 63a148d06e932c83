"""The single doorway to the JVM.

Only this module imports py4j or touches ``spark._jvm``. Schemas and plans cross as JSON strings, and
every Java exception is translated here, by class name, into the package's own exception types, so
no caller ever sees a raw ``Py4JJavaError``.
"""

from __future__ import annotations

import functools
import json
import re
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from py4j.protocol import Py4JError, Py4JJavaError
from pyspark.errors.exceptions.captured import CapturedException

from icecompat_writer.errors import (
    CompatViolation,
    ConcurrentWriteError,
    IcebergSyncWarning,
    IcecompatError,
    JvmError,
    RuleServiceMismatch,
    SessionConfigError,
    SetupError,
    Violation,
)
from icecompat_writer.rules.catalog import layer_violation
from icecompat_writer.rules.writes import WRITE_PROFILE

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

T = TypeVar("T")

SHIM_PACKAGE = "io.icecompat.shim"

# Java exception class (simple or fully qualified name) -> our exception type. Checked in order; the
# first entry whose name appears in the Java class or its causes wins.
_JAVA_TO_PYTHON: tuple[tuple[str, type[IcecompatError]], ...] = (
    ("ConcurrentModificationException", ConcurrentWriteError),
    ("ConcurrentAppendException", ConcurrentWriteError),
    ("ConcurrentWriteException", ConcurrentWriteError),
    ("ConcurrentDeleteReadException", ConcurrentWriteError),
    ("ConcurrentDeleteDeleteException", ConcurrentWriteError),
    ("MetadataChangedException", ConcurrentWriteError),
    ("ProtocolChangedException", ConcurrentWriteError),
    # before its base class, GuardUnavailableException: mixed builds are a set-up problem
    ("io.icecompat.shim.guard.RuleServiceMismatchException", RuleServiceMismatch),
    ("io.icecompat.shim.guard.GuardUnavailableException", SessionConfigError),
    ("ClassNotFoundException", SetupError),
    ("NoClassDefFoundError", SetupError),
)


# The session guard's refusal carries its violations as JSON: rebuilt as the CompatViolation that
# compat_write would have raised for the same write.
_GUARD_VIOLATION = "io.icecompat.shim.guard.GuardViolationException"


def _throwables(throwable: Any) -> list[Any]:
    out: list[Any] = []
    try:
        while throwable is not None and len(out) < 16:
            out.append(throwable)
            throwable = throwable.getCause()
    except Py4JError:  # the gateway itself is gone: keep what we have
        pass
    return out


def _java_class_chain(err: Py4JJavaError) -> list[tuple[str, str]]:
    """(class name, message) of the Java exception and each of its causes, outermost first."""
    chain: list[tuple[str, str]] = []
    try:
        for throwable in _throwables(err.java_exception):
            chain.append((throwable.getClass().getName(), str(throwable.getMessage() or "")))
    except Py4JError:
        pass
    return chain


def _guard_refusal(throwable: Any) -> CompatViolation | None:
    """The CompatViolation a guard refusal somewhere in ``throwable``'s causes stands for, if any."""
    for t in _throwables(throwable):
        try:
            if t.getClass().getName() == _GUARD_VIOLATION:
                found = [Violation(**v) for v in json.loads(str(t.violationsJson()))]
                return CompatViolation(found, "(refused by the session guard)")
        except (Py4JError, ValueError, TypeError):
            return None
    return None


def translate_exception(err: BaseException) -> BaseException:
    """The package's exception for a Java failure raised by any Spark call, ``err`` itself otherwise.

    For code that writes with plain Spark APIs in a guarded session (``df.write...save()``, SQL): a
    guard refusal becomes the same :class:`CompatViolation` ``compat_write`` raises.
    """
    if isinstance(err, Py4JJavaError):
        return translate(err)
    if isinstance(err, CapturedException):
        return _translate_captured(err)
    return err


# delta-spark's refusal of a row while writing (NOT NULL, CHECK constraint, generation expression),
# raised from a task and so after files exist: rule DELTA-WRITE-ROW-CONSTRAINT.
_ROW_REFUSAL = "org.apache.spark.sql.delta.schema.DeltaInvariantViolationException"
_ROW_RULE = "DELTA-WRITE-ROW-CONSTRAINT"
_CHECK = re.compile(
    r"CHECK constraint (?P<name>.+?) \((?P<expr>.*)\) violated by row with values:(?P<values>.*)", re.S
)
_NOT_NULL = re.compile(r"NOT NULL constraint violated for column: (?P<column>.+?)\.?$", re.S)
_GENERATED = re.compile(r"^`?(?P<column>[^`]+?)`? <=> ")


def _row_refusal(chain: list[tuple[str, str]]) -> CompatViolation | None:
    """The rule a row delta-spark refused while writing breaks (the constraint, the column where the
    constraint names one, the row's values), if the Java failure is one."""
    for cls, msg in chain:
        if cls != _ROW_REFUSAL:
            continue
        text = re.sub(r"^\[[A-Z_]+\]\s*", "", msg.strip())
        path, constraint, values = "", text.splitlines()[0] if text else cls, None
        check = _CHECK.search(text)
        not_null = _NOT_NULL.search(text)
        if check is not None:
            constraint = f"{check['name']} ({check['expr']})"
            values = " ".join(check["values"].split()) or None
            generated = _GENERATED.match(check["expr"])
            if check["name"] == "Generated Column" and generated is not None:
                path = generated["column"]
        elif not_null is not None:
            path = not_null["column"].strip("`")
            constraint = f"NOT NULL {path}"
        problem = " ".join(text.split())
        found = layer_violation(
            WRITE_PROFILE, _ROW_RULE, path, observed=values, problem=problem, constraint=constraint
        )
        return CompatViolation([found], "(refused by delta-spark while writing; nothing committed)")
    return None


def translate(err: Py4JJavaError) -> IcecompatError:
    """Map a Java exception onto the package's exception types, keeping the Java message."""
    refusal = _guard_refusal(err.java_exception)
    if refusal is not None:
        return refusal
    chain = _java_class_chain(err)
    row = _row_refusal(chain)
    if row is not None:
        return row
    for java_name, py_type in _JAVA_TO_PYTHON:
        for cls, msg in chain:
            if cls.endswith(java_name):
                if py_type is JvmError:
                    return JvmError(msg, cls)
                return py_type(f"{msg} (from {cls})")
    cls, msg = chain[0] if chain else ("unknown", str(err))
    return JvmError(msg or cls, cls)


def _translate_captured(err: CapturedException) -> IcecompatError:
    """pyspark converts some Java exceptions (AnalysisException, ...) itself; map those too."""
    origin = getattr(err, "_origin", None)
    refusal = _guard_refusal(origin) if origin is not None else None
    if refusal is not None:
        return refusal
    if origin is not None:
        try:
            cls = str(origin.getClass().getName())
        except Py4JError:
            cls = type(err).__name__
    else:
        cls = type(err).__name__
    for java_name, py_type in _JAVA_TO_PYTHON:
        if cls.endswith(java_name):
            return py_type(f"{err.getMessage() if hasattr(err, 'getMessage') else err} (from {cls})")
    message = str(getattr(err, "_desc", "") or err).strip()
    return JvmError(message.splitlines()[0] if message else cls, cls)


def call(fn: Callable[[], T]) -> T:
    """Run ``fn`` (which calls into the JVM) and translate any Java exception it raises."""
    try:
        return fn()
    except Py4JJavaError as err:
        raise translate(err) from None
    except CapturedException as err:
        raise _translate_captured(err) from None


def jvm(spark: SparkSession) -> Any:
    """The py4j JVM view of a classic (non-Connect) session."""
    return spark._jvm


def shim_class(spark: SparkSession, simple_name: str) -> Any:
    """A class of the shim, or :class:`SetupError` when the shim jar is not on the driver classpath."""
    view = jvm(spark)
    name = f"{SHIM_PACKAGE}.{simple_name}"
    try:
        loader = view.java.lang.Thread.currentThread().getContextClassLoader()
        view.java.lang.Class.forName(name, True, loader)
    except Py4JJavaError:
        raise SetupError(
            f"the icecompat shim class {name} is not loaded in this Spark session; create the session "
            "with icecompat_writer.session() or icecompat_writer.configure(builder) so that the shim "
            "jars are on spark.jars"
        ) from None
    obj = view
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def shim_info(spark: SparkSession) -> dict[str, str]:
    """Versions the shim was built for and the Delta version the session actually runs."""
    info = shim_class(spark, "ShimInfo")
    return {
        "built_for_delta": str(call(info.builtForDeltaVersion)),
        "built_for_spark": str(call(info.builtForSparkVersion)),
        "running_delta": str(call(info.runningDeltaVersion)),
        "running_spark": str(spark.version),
    }


def require_supported_delta(spark: SparkSession) -> None:
    """Refuse (SetupError) a session whose delta-spark is not the one the shim was built for."""
    info = shim_info(spark)
    if info["built_for_delta"] != info["running_delta"]:
        raise SetupError(
            f"the icecompat shim was built for delta-spark {info['built_for_delta']} but this session "
            f"runs delta-spark {info['running_delta']}; rebuild the shim (bin/setup) against that version "
            "or run the Delta version the shim was built for"
        )


def activate_writer_features(spark: SparkSession) -> None:
    """Make delta-spark accept icebergWriterCompatV1/V3 (needs the driver agent), or SetupError."""
    features = shim_class(spark, "features.WriterCompatFeatures")
    try:
        features.activate()
    except Py4JJavaError as err:
        raise SetupError(str(translate(err))) from None


def guard_status(spark: SparkSession) -> dict[str, Any]:
    """What the session guard would use and what it lacks (``missing``: one sentence per piece)."""
    guard = shim_class(spark, "guard.Guard")
    return dict(json.loads(call(lambda: guard.statusJson(spark._jsparkSession))))


def guard_iceberg_syncs(spark: SparkSession, drain: bool = False) -> list[dict[str, Any]]:
    """The Iceberg syncs the guard ran after this driver's commits (oldest first, the last 1,000):
    ``table``, ``version``, ``identifier`` (the table's Spark catalog name, when the commit was made
    through it), ``converted_version``, ``millis`` (the sync's wall time, which the write waited for)
    and, for a failed sync, ``error``. With ``drain``
    the record is emptied."""
    guard = shim_class(spark, "guard.Guard")
    return list(json.loads(call(lambda: guard.icebergSyncs(drain))))


def guarded_syncs(spark: Any, *, drain: bool = True) -> list[dict[str, Any]]:
    """The syncs the session guard ran after this driver's commits (SQL, DataFrame writers, streaming),
    oldest first: ``table``, ``version``, ``converted_version``, ``millis`` and, if it failed, ``error``.

    Those syncs run in the JVM's commit path, where a failure is logged by the driver (logger
    ``io.icecompat.shim.guard.Guard``, level WARN); this call brings them to Python and emits one
    :class:`IcebergSyncWarning` per failed sync. With ``drain`` (the default) each is reported once.
    """
    done = guard_iceberg_syncs(spark, drain=drain)
    for outcome in done:
        if outcome.get("setting"):
            warnings.warn(str(outcome["setting"]), IcebergSyncWarning, stacklevel=2)
        if outcome.get("error"):
            warnings.warn(str(outcome["error"]), IcebergSyncWarning, stacklevel=2)
    return done


def pending_syncs(spark: Any) -> list[dict[str, Any]]:
    """The guard's queued Iceberg syncs that have not finished (``spark.icecompat.iceberg.sync=async``):
    one ``{"table", "versions"}`` per table, its committed Delta versions whose sync is still to run,
    oldest first. Empty when every table of this driver is current (and always in ``commit`` mode,
    where a write returns only after its sync)."""
    guard = shim_class(spark, "guard.Guard")
    return list(json.loads(call(guard.pendingSyncs)))


def await_syncs(spark: Any, table: str | None = None, *, timeout: float = 300.0) -> list[dict[str, Any]]:
    """Wait until the queued syncs of ``table`` (a table root, as written to; every table when None)
    have run, then return :func:`guarded_syncs` (drained; failed syncs warn as there).

    In ``async`` mode a write returns before its Iceberg sync: call this before reading the table as
    Iceberg, or before the driver exits (queued syncs die with the JVM; the next sync then converts
    every version after the last converted one). Raises :class:`TimeoutError` after ``timeout``
    seconds with the syncs still queued.
    """
    guard = shim_class(spark, "guard.Guard")
    millis = max(0, int(timeout * 1000))
    if not call(lambda: guard.awaitSyncs(table or "", millis)):
        left = [p for p in pending_syncs(spark) if table is None or _same_root(p["table"], table)]
        raise TimeoutError(f"Iceberg syncs still queued after {timeout:g} s: {left}")
    return guarded_syncs(spark, drain=True)


def _same_root(a: str, b: str) -> bool:
    """Whether two table roots are one (the guard names local tables ``file:/...``)."""

    def norm(s: str) -> str:
        s = s.rstrip("/")
        for prefix in ("file://", "file:"):
            if s.startswith(prefix):
                return s[len(prefix) :] or "/"
        return s

    return norm(a) == norm(b)


def writer_features_status(spark: SparkSession) -> dict[str, Any]:
    """What the agent did and whether Delta knows the writer-compat features (for diagnostics)."""
    features = shim_class(spark, "features.WriterCompatFeatures")
    known = bool(call(features.featuresKnown))  # first: it loads (and so patches) Delta's feature class
    return {"agent": str(call(features.agentStatus)), "features_known": known}


class PendingWrite:
    """A Delta transaction held open in the driver across plan, write, verify and commit.

    Wraps ``io.icecompat.shim.PendingWrite``: every call crosses as JSON and every Java exception is
    translated (:func:`call`).
    """

    def __init__(self, spark: SparkSession, location: str) -> None:
        cls = shim_class(spark, "PendingWrite")
        self._spark = spark
        self._java = call(lambda: cls.open(spark._jsparkSession, location))
        self.location = location

    @property
    def read_version(self) -> int:
        return int(call(self._java.readVersion))

    def snapshot_json(self) -> dict[str, Any]:
        """``{"version": n, "protocol": {...}, "metaData": {...}}``; only ``version`` (-1) when new."""
        return dict(json.loads(call(self._java.snapshotJson)))

    def txn_version(self, app_id: str) -> int:
        return int(call(lambda: self._java.txnVersion(app_id)))

    def write(self, df: Any, request: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
        """Apply the plan and write the data files (nothing committed).

        Returns the AddFile objects and the number of files the write will remove.
        """
        payload = json.dumps(request)
        out = json.loads(call(lambda: self._java.write(df._jdf, payload)))
        return list(out["added"]), int(out["removed"])

    def commit(self, operation: dict[str, Any] | None = None) -> int:
        payload = json.dumps(operation or {})
        return int(call(lambda: self._java.commit(payload)))

    def rewrite(self, request: dict[str, Any]) -> tuple[list[dict[str, Any]], int, int]:
        """Rewrite files of the read snapshot under the planned state (an upgrade; nothing committed).

        Returns the new files' AddFile objects, how many files are removed and how many are re-added
        unchanged (for their row ids).
        """
        payload = json.dumps(request)
        out = json.loads(call(lambda: self._java.rewrite(payload)))
        return list(out["added"]), int(out["removed"]), int(out["recommitted"])

    def commit_upgrade(self, properties: dict[str, str]) -> int:
        """Commit what :meth:`rewrite` produced as Delta's REORG TABLE UPGRADE UNIFORM operation."""
        payload = json.dumps(properties)
        return int(call(lambda: self._java.commitUpgrade(payload)))

    def abort(self) -> int:
        """Delete the data files this write created (only those); returns how many were deleted."""
        return int(call(self._java.abort))


def default_table_location(spark: SparkSession, table: tuple[str, ...]) -> str:
    """Where the session catalog would put a new managed table of that name."""
    view = jvm(spark)
    catalog = spark._jsparkSession.sessionState().catalog()
    name = table[-1]
    db = table[-2] if len(table) >= 2 else catalog.getCurrentDatabase()
    ident = view.org.apache.spark.sql.catalyst.TableIdentifier(name, view.scala.Option.apply(db))
    uri = call(lambda: catalog.defaultTablePath(ident))
    if str(uri.getScheme() or "file") == "file":
        return str(uri.getPath())  # decoded: a local path, not a %-escaped URI
    return str(uri.toString())


def hadoop_conf_values(spark: SparkSession, keys: Sequence[str]) -> dict[str, str]:
    """The values the session's Hadoop configuration holds for ``keys`` (unset keys are left out).

    The configuration is the one Delta and the filesystem connectors use for this session
    (``sessionState.newHadoopConf()``: ``spark.hadoop.*`` settings and SQL-level overrides applied),
    so the storage layer reaches a bucket with exactly the credentials and endpoint Spark uses.
    Values are expanded (``${var}``) as Hadoop expands them.
    """
    conf = call(lambda: spark._jsparkSession.sessionState().newHadoopConf())
    out: dict[str, str] = {}
    for key in keys:
        value = call(functools.partial(conf.get, key))
        if value is not None:
            out[key] = str(value)
    return out


def driver_session() -> SparkSession | None:
    """The running classic session of this driver, from any Python thread; None without one.

    ``SparkSession.getActiveSession()`` asks the JVM for the session of the calling thread, and a
    Python pool thread (footer reads) talks to the JVM through a thread that has none; the driver's
    default session (what ``builder.getOrCreate()`` would return, cleared by ``stop()``) is the answer
    there. Nothing is started.
    """
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    if spark is None:
        spark = SparkSession._instantiatedSession
    return spark


_GUARD_UNAVAILABLE = "io.icecompat.shim.guard.GuardUnavailableException"
_hook_installed = False


def _guard_exception(throwable: Any) -> IcecompatError | None:
    """The package's exception for a guard refusal anywhere in ``throwable``'s causes, if any."""
    refusal = _guard_refusal(throwable)
    if refusal is not None:
        return refusal
    for t in _throwables(throwable):
        try:
            if t.getClass().getName() == _GUARD_UNAVAILABLE:
                return SessionConfigError(str(t.getMessage() or "the session guard refused the write"))
        except Py4JError:
            return None
    return None


def install_exception_hook() -> None:
    """Make every Spark call of this Python process raise the guard's refusals as our exceptions.

    pyspark turns a Java exception into a Python one in a single function,
    ``pyspark.errors.exceptions.captured.convert_exception``, which its py4j return-value hook calls
    for every failed JVM call (``spark.sql(...)``, ``df.write...save()``, ``DeltaTable`` methods) and
    which raises whatever it returns ``from None`` unless it is an ``UnknownException``. Wrapping it
    lets a plain ``spark.sql(...)`` raise the :class:`CompatViolation` (or, for a session that refuses
    because its guard is off or incomplete, :class:`SessionConfigError`) that ``compat_write`` raises,
    with the rule records in ``.violations`` and no Java stack in the message. Other exceptions are
    converted by pyspark as before. Idempotent.
    """
    global _hook_installed
    if _hook_installed:
        return
    from pyspark.errors.exceptions import captured

    original = captured.convert_exception

    def convert_exception(e: Any) -> Any:
        try:
            ours = _guard_exception(e) if e is not None else None
        except Exception:  # a gateway that is going away: leave the conversion to pyspark
            ours = None
        return ours if ours is not None else original(e)

    captured.convert_exception = convert_exception
    _hook_installed = True
