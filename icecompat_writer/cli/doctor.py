"""``icecompat doctor``: what is installed, loaded and missing, from the files of this installation up
to a live session (the jars of the Spark line, the agent, the guard's pieces, the rule service)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from icecompat_writer.cli.exits import EXIT_OK, EXIT_VIOLATIONS, usage_error
from icecompat_writer.cli.settings import given, read_properties
from icecompat_writer.errors import IcecompatError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["cmd_doctor", "doctor_report"]


def _guard_rows(spark: SparkSession) -> list[tuple[str, bool, str]]:
    """The session guard's pieces as the running session sees them."""
    from icecompat_writer.jvm import bridge

    status = bridge.guard_status(spark)
    missing = list(status["missing"])
    state = (
        "on"
        if status["guarded"]
        else "off (spark.icecompat.guard.enabled=false: writes to writer-profile tables are refused)"
    )
    if status["profile"]:
        state += f", session profile {status['profile']}"
    rows = [
        ("session guard", not missing, f"{state}; " + ("complete" if not missing else "; ".join(missing))),
        ("rule service", bool(status["service_ok"]), f"{status['python']}: {status['service']}"),
    ]
    stores = dict(status.get("log_stores") or {})
    unguarded = sorted(scheme for scheme, s in stores.items() if not s["guarded"])
    own = [f"{scheme} -> {s['delegate']}" for scheme, s in sorted(stores.items()) if s["delegate_configured"]]
    detail = f"guarded: {', '.join(sorted(set(stores) - set(unguarded))) or 'none'}"
    if unguarded:
        plain = ", ".join(f"{x} ({stores[x]['impl']})" for x in unguarded)
        detail += f"; UNCHECKED: {plain}"
    if own:
        detail += f"; your stores wrapped: {', '.join(own)}"
    rows.append(("commit check per scheme", not unguarded, detail))
    return rows


def doctor_report(
    start_spark: bool, properties_file: str | None = None, conf: Mapping[str, str] | None = None
) -> list[tuple[str, bool, str]]:
    """(what, ok, detail) for each thing the plugin needs, from files up to a live session.

    With ``properties_file``, the session is started from that file alone (as spark-submit would),
    so the report says what a job using it gets; otherwise from ``icecompat_writer.session()``.
    ``conf`` (``--conf``) is added on top of either.
    """
    import shutil

    from icecompat_writer import sessions

    rows: list[tuple[str, bool, str]] = []
    supported = ", ".join(f"{line}.x" for line in sessions.supported_lines()) or "none built"
    try:
        line_dir = sessions.line_jars_dir()
        rows.append(
            ("spark line", True, f"Delta jars for this pyspark in {line_dir} (supported: {supported})")
        )
    except IcecompatError as err:
        rows.append(("spark line", False, str(err)))
    try:
        jars = sessions.runtime_jars()
        rows.append(("runtime jars", True, f"{len(jars)} in {sessions.jars_dir()}"))
    except IcecompatError as err:
        rows.append(("runtime jars", False, str(err)))
    try:
        rows.append(("driver agent", True, str(sessions.agent_jar())))
    except IcecompatError as err:
        rows.append(("driver agent", False, str(err)))
    java = shutil.which("java")
    rows.append(("java", java is not None, java or "no java on PATH: install a JDK 17"))
    if not start_spark or not all(ok for _, ok, _ in rows):
        return rows
    from icecompat_writer.jvm import bridge

    try:
        if properties_file is None:
            extra: dict[str, Any] = dict(conf or {})  # Spark keys (dotted): never session()'s own arguments
            spark = sessions.session("icecompat-doctor", **extra)
        else:
            from pyspark.sql import SparkSession

            builder = SparkSession.builder.appName("icecompat-doctor").master("local[1]")
            for key, value in {**read_properties(properties_file), **dict(conf or {})}.items():
                builder.config(key, value)
            builder.config("spark.ui.enabled", "false")
            spark = builder.getOrCreate()
    except IcecompatError as err:
        rows.append(("spark session", False, str(err)))
        return rows
    try:
        sessions.require_supported_spark(spark)
        info = bridge.shim_info(spark)
        rows.append(
            ("spark session", True, f"Spark {info['running_spark']}, delta-spark {info['running_delta']}")
        )
        same = info["built_for_delta"] == info["running_delta"]
        rows.append(("shim vs delta", same, f"shim built for delta-spark {info['built_for_delta']}"))
        status = bridge.writer_features_status(spark)
        rows.append(
            (
                "writer-compat features",
                bool(status["features_known"]),
                f"agent {status['agent']}; icebergWriterCompatV1/V3 "
                + (
                    "known to delta-spark"
                    if status["features_known"]
                    else "NOT known: writer profiles refused"
                ),
            )
        )
        rows.extend(_guard_rows(spark))
    except IcecompatError as err:
        rows.append(("spark session", False, str(err)))
    finally:
        spark.stop()
    return rows


def cmd_doctor(args: argparse.Namespace) -> int:
    if args.no_spark and given(args):
        flag = "--conf" if args.conf else "--properties-file"
        return usage_error(args, f"{flag} configures the session that --no-spark does not start")
    rows = doctor_report(
        start_spark=not args.no_spark, properties_file=args.properties_file, conf=dict(args.conf or [])
    )
    ok_all = all(ok for _, ok, _ in rows)
    if args.json:
        doc = {
            "format": "icecompat-doctor/1",
            "ok": ok_all,
            "checks": [{"what": what, "ok": ok, "detail": detail} for what, ok, detail in rows],
        }
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        for what, ok, detail in rows:
            print(f"{'ok ' if ok else 'BAD'}  {what:<24} {detail}")
    return EXIT_OK if ok_all else EXIT_VIOLATIONS
