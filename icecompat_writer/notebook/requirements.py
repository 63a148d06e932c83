"""What a running SparkSession must have been started with, and what to say when it was not.

The checks read the session's static configuration only (no JVM call), the same settings
:func:`icecompat_writer.sessions.configure` adds: the shim jar on ``spark.jars``, Delta's SQL extension
and the driver agent in ``spark.driver.extraJavaOptions``. All three are read once, when the driver JVM
starts, which is why a session that lacks them cannot be repaired, only replaced by a new process.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from icecompat_writer import sessions
from icecompat_writer.errors import IcecompatError

__all__ = ["Requirement", "check_conf", "explain_missing"]

WRITER_PROFILES = frozenset({"writer-v1", "writer-v3"})


@dataclass(frozen=True)
class Requirement:
    """One setting a session needs: ``ok`` when present; ``required`` when its absence is fatal."""

    setting: str
    what: str
    ok: bool
    detail: str
    required: bool = True

    def render(self) -> str:
        mark = "ok " if self.ok else ("BAD" if self.required else "-- ")
        return f"{mark} {self.setting}: {self.detail}"


def _csv(value: str | None) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def _shown(value: str | None, limit: int = 160) -> str:
    if not value:
        return "unset"
    return value if len(value) <= limit else value[: limit - 3] + "..."


def _agent_option() -> str:
    try:
        return f"-javaagent:{sessions.agent_jar()}"
    except IcecompatError:
        return f"-javaagent:<jars folder>/{sessions.AGENT_JAR_NAME}"


def check_conf(conf: Mapping[str, str], profile: str) -> list[Requirement]:
    """Judge a session's configuration (``SparkConf`` as a mapping) for writes with ``profile``."""
    jars = _csv(conf.get("spark.jars"))
    has_shim = any(j.rsplit("/", 1)[-1] == sessions.SHIM_JAR_NAME for j in jars)
    extensions = _csv(conf.get("spark.sql.extensions"))
    has_delta = sessions.DELTA_EXTENSION in extensions
    java_options = (conf.get("spark.driver.extraJavaOptions") or "").split()
    has_agent = any(
        o.startswith("-javaagent:") and o.split("=", 1)[0].endswith(sessions.AGENT_JAR_NAME)
        for o in java_options
    )
    catalog = conf.get("spark.sql.catalog.spark_catalog")
    return [
        Requirement(
            "spark.jars",
            f"{sessions.SHIM_JAR_NAME} and the Delta runtime jars",
            has_shim,
            f"has {sessions.SHIM_JAR_NAME}"
            if has_shim
            else f"lacks {sessions.SHIM_JAR_NAME} (now: {_shown(conf.get('spark.jars'))})",
        ),
        Requirement(
            "spark.sql.extensions",
            sessions.DELTA_EXTENSION,
            has_delta,
            f"has {sessions.DELTA_EXTENSION}"
            if has_delta
            else f"lacks {sessions.DELTA_EXTENSION} (now: {_shown(conf.get('spark.sql.extensions'))})",
        ),
        Requirement(
            "spark.driver.extraJavaOptions",
            f"the driver agent {_agent_option()}",
            has_agent,
            "loads the driver agent"
            if has_agent
            else f"does not load the driver agent ({_agent_option()}), which the writer-v1 and "
            "writer-v3 profiles need",
            required=profile in WRITER_PROFILES,
        ),
        Requirement(
            "spark.sql.catalog.spark_catalog",
            sessions.DELTA_CATALOG,
            catalog == sessions.DELTA_CATALOG,
            "is Delta's catalog"
            if catalog == sessions.DELTA_CATALOG
            else f"is {_shown(catalog)}, not {sessions.DELTA_CATALOG}: catalog tables (saveAsTable, "
            "insertInto, writeTo) may not resolve as Delta tables",
            required=False,
        ),
    ]


def explain_missing(missing: Sequence[Requirement], *, notebook: bool) -> str:
    """Why a running session cannot be used, and exactly what to do instead."""
    restart = (
        "Restart the kernel (Jupyter: Kernel > Restart Kernel): a new kernel starts a new JVM."
        if notebook
        else "Start a new Python process: a new process starts a new JVM."
    )
    first = (
        "%load_ext icecompat_writer   (starts a session that has them)"
        if notebook
        else "icecompat_writer.notebook.enable()   (starts a session that has them)"
    )
    lines = ["this SparkSession was started without what icecompat_writer needs:"]
    lines += [f"  - {r.setting} {r.detail}" for r in missing]
    lines += [
        "These are static settings: Spark reads them once, when the driver JVM starts. A running "
        "session cannot take them (spark.conf.set refuses them), and spark.stop() followed by a new "
        "session does not help either, because the JVM keeps running.",
        "What to do:",
        f"  1. {restart}",
        "  2. Before any other Spark code, run",
        f"         {first}",
        "     or build the session yourself with",
        "         from pyspark.sql import SparkSession",
        "         import icecompat_writer",
        "         spark = icecompat_writer.configure(SparkSession.builder).getOrCreate()",
        "  If the session is started for you (spark-submit, SPARK_CONF_DIR, a cluster's Spark "
        "configuration), add the settings `icecompat conf` prints to that configuration instead "
        "(see conf/README.md), then restart.",
    ]
    return "\n".join(lines)
