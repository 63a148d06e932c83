"""``enable()`` / ``disable()``: one session whose plain ``df.write`` Delta writes are compat writes.

``enable`` finds the running SparkSession (or starts one through
:func:`icecompat_writer.sessions.session`, which configures a builder with :func:`~icecompat_writer.
sessions.configure` and lean local defaults), makes sure that session was started with what the plugin
needs (see :mod:`.requirements`), and then routes Delta writes of that session's DataFrames through
``compat_write`` by replacing the ``write`` property and the ``writeTo`` method of pyspark's classic
``DataFrame`` with versions that hand out :mod:`.writers` for the enabled session and pyspark's own
writers for every other DataFrame. ``disable`` puts pyspark's originals back.
"""

from __future__ import annotations

import functools
import html
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from icecompat_writer.errors import SessionConfigError, SparkConnectNotSupported
from icecompat_writer.schema import JsonDict

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from icecompat_writer.notebook.requirements import Requirement

__all__ = ["APP_NAME", "NotebookStatus", "disable", "enable", "enabled_session", "status"]

APP_NAME = "icecompat-notebook"


class _Printer(Protocol):
    """What IPython's pretty printer offers a ``_repr_pretty_``."""

    def text(self, text: str) -> None: ...


@dataclass(frozen=True)
class NotebookStatus:
    """Where the notebook helper stands: which session, which profile, what that session carries."""

    enabled: bool
    profile: str | None = None
    started_session: bool = False
    master: str | None = None
    app_name: str | None = None
    spark_version: str | None = None
    requirements: tuple[Requirement, ...] = ()
    notes: tuple[str, ...] = field(default=())

    def __str__(self) -> str:
        if not self.enabled:
            return "icecompat_writer: not enabled (Delta writes of df.write are Spark's own)"
        how = "started" if self.started_session else "using the running"
        lines = [
            f"icecompat_writer: Delta writes of df.write / df.writeTo go through compat_write, profile "
            f"{self.profile} ({how} session {self.app_name!r}, master {self.master}, Spark "
            f"{self.spark_version})",
            *(f"  {r.render()}" for r in self.requirements),
            *(f"  note: {n}" for n in self.notes),
        ]
        return "\n".join(lines)

    def _repr_pretty_(self, printer: _Printer, cycle: bool) -> None:
        """IPython's plain-text view: the summary, not the dataclass fields."""
        printer.text(str(self))

    def _repr_html_(self) -> str:
        esc = html.escape
        if not self.enabled:
            return (
                "<p><b>icecompat_writer</b>: not enabled (Delta writes of <code>df.write</code> are "
                "Spark's own)</p>"
            )
        how = "started" if self.started_session else "using the running"
        rows = "".join(
            f"<tr><td>{'&#10003;' if r.ok else ('&#10007;' if r.required else '&ndash;')}</td>"
            f"<td><code>{esc(r.setting)}</code></td><td>{esc(r.detail)}</td></tr>"
            for r in self.requirements
        )
        notes = "".join(f"<li>{esc(n)}</li>" for n in self.notes)
        return (
            f"<p><b>icecompat_writer</b>: Delta writes of <code>df.write</code> / <code>df.writeTo</code> "
            f"go through <code>compat_write</code>, profile <b>{esc(str(self.profile))}</b> ({how} session "
            f"<code>{esc(str(self.app_name))}</code>, master <code>{esc(str(self.master))}</code>, Spark "
            f"{esc(str(self.spark_version))})</p>"
            f"<table>{rows}</table>" + (f"<ul>{notes}</ul>" if notes else "")
        )


@dataclass
class _Enabled:
    spark: SparkSession
    profile: str
    status: NotebookStatus


_STATE: _Enabled | None = None
_ORIGINALS: JsonDict = {}


def _classic_dataframe() -> type:
    from pyspark.sql.classic.dataframe import DataFrame

    return DataFrame


def enabled_session(df: DataFrame) -> _Enabled | None:
    """The enabled state when ``df`` belongs to the enabled session, else None."""
    state = _STATE
    if state is None:
        return None
    session = df.sparkSession
    if session is state.spark:
        return state
    try:  # another Python wrapper of the same JVM session
        same = session._jsparkSession.equals(state.spark._jsparkSession)  # noqa: SLF001
    except Exception:
        return None
    return state if same else None


def _install() -> None:
    """Replace ``DataFrame.write`` / ``DataFrame.writeTo`` (once; idempotent)."""
    if _ORIGINALS:
        return
    cls = _classic_dataframe()
    original_write: property = cls.__dict__["write"]
    original_write_to: Callable[..., Any] = cls.__dict__["writeTo"]
    _ORIGINALS.update(write=original_write, writeTo=original_write_to)

    def write(self: DataFrame) -> Any:  # noqa: ANN401  # pyspark's writer, patched in
        state = enabled_session(self)
        if state is None:
            return original_write.fget(self)  # type: ignore[misc]
        from icecompat_writer.notebook.writers import RoutingDataFrameWriter

        return RoutingDataFrameWriter(self, state.profile)

    @functools.wraps(original_write_to)
    def write_to(self: DataFrame, table: str) -> Any:  # noqa: ANN401  # pyspark's writer, patched in
        state = enabled_session(self)
        if state is None:
            return original_write_to(self, table)
        from icecompat_writer.notebook.writers import RoutingDataFrameWriterV2

        return RoutingDataFrameWriterV2(self, table, state.profile)

    cls.write = property(write, doc=original_write.__doc__)  # type: ignore[attr-defined]
    cls.writeTo = write_to  # type: ignore[attr-defined]


def _uninstall() -> None:
    if not _ORIGINALS:
        return
    cls = _classic_dataframe()
    cls.write = _ORIGINALS.pop("write")  # type: ignore[attr-defined]
    cls.writeTo = _ORIGINALS.pop("writeTo")  # type: ignore[attr-defined]


def _in_notebook() -> bool:
    ipython = sys.modules.get("IPython")
    return ipython is not None and ipython.get_ipython() is not None


def _running_session() -> SparkSession | None:
    """The session this process already runs (a SparkContext alone counts), or None."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    if SparkContext._active_spark_context is not None:  # noqa: SLF001 - no public accessor
        return SparkSession.builder.getOrCreate()
    return None


def _conf(spark: SparkSession) -> dict[str, str]:
    return dict(spark.sparkContext.getConf().getAll())


def enable(spark: SparkSession | None = None, profile: str | None = None) -> NotebookStatus:
    """Route the Delta writes of ``spark``'s ``df.write`` / ``df.writeTo`` through ``compat_write``.

    ``spark`` defaults to the running session; when none runs, one is started with
    :func:`icecompat_writer.session` (Delta, the shim, lean local defaults). ``profile`` defaults to the
    one already enabled, else ``v3``. Raises :class:`SessionConfigError` (with what is missing and what
    to do) when the session was started without the shim jars, Delta's extension or, for a writer
    profile, the driver agent: those are fixed when the JVM starts. Calling it again changes the
    profile (or the session).
    """
    global _STATE
    from icecompat_writer import sessions
    from icecompat_writer.jvm import bridge
    from icecompat_writer.notebook.requirements import check_conf, explain_missing
    from icecompat_writer.rules.profiles import DEFAULT_PROFILE, get_profile

    chosen = get_profile(profile or (_STATE.profile if _STATE is not None else DEFAULT_PROFILE)).name
    started = False
    if spark is None:
        spark = _running_session()
        if spark is None:
            spark = sessions.session(APP_NAME)
            started = True
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        raise SparkConnectNotSupported(
            "icecompat_writer needs a classic SparkSession with an in-process JVM; this is a Spark Connect "
            "client, which cannot load the shim. Install the shim jars, Delta's extension and the driver "
            "agent on the Connect server instead (see conf/README.md)"
        )
    requirements = check_conf(_conf(spark), chosen)
    missing = [r for r in requirements if r.required and not r.ok]
    if missing:
        raise SessionConfigError(explain_missing(missing, notebook=_in_notebook()))
    sessions.require_supported_spark(spark)
    bridge.require_supported_delta(spark)
    if chosen.startswith("writer-"):
        bridge.activate_writer_features(spark)
    notes = []
    if not all(r.ok for r in requirements):
        notes.append("settings marked '--' are optional for this profile but cannot be added later")
    status_ = NotebookStatus(
        enabled=True,
        profile=chosen,
        started_session=started
        or (_STATE is not None and _STATE.spark is spark and _STATE.status.started_session),
        master=spark.sparkContext.master,
        app_name=spark.sparkContext.appName,
        spark_version=spark.version,
        requirements=tuple(requirements),
        notes=tuple(notes),
    )
    _STATE = _Enabled(spark, chosen, status_)
    _install()
    return status_


def disable() -> NotebookStatus:
    """Give ``DataFrame.write`` / ``writeTo`` back to pyspark. The session keeps running."""
    global _STATE
    _STATE = None
    _uninstall()
    return NotebookStatus(enabled=False)


def status() -> NotebookStatus:
    """The current state (what ``enable`` returned, or not enabled)."""
    return _STATE.status if _STATE is not None else NotebookStatus(enabled=False)
