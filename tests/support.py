"""Independent observations of real tables: the log's JSON and the Parquet footers, read directly.

These helpers deliberately do not use the package's own reader or rules, so a test that asserts
through them cannot agree with a bug in the code it tests.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq


def tree_digest(root: Path) -> dict[str, str]:
    """Every file below ``root`` (relative path -> sha256): equal digests mean an untouched table."""
    if not root.exists():
        return {}
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def commits(root: Path) -> list[list[dict[str, Any]]]:
    """The actions of every JSON commit, in version order."""
    files = sorted((root / "_delta_log").glob("[0-9]" * 20 + ".json"))
    return [[json.loads(line) for line in f.read_text().splitlines() if line.strip()] for f in files]


def latest(root: Path, kind: str) -> dict[str, Any]:
    """The newest ``protocol`` or ``metaData`` action across the JSON commits."""
    found: dict[str, Any] | None = None
    for actions in commits(root):
        for a in actions:
            if kind in a:
                found = a[kind]
    assert found is not None, f"no {kind} action in {root}"
    return found


def live_adds(root: Path) -> list[dict[str, Any]]:
    """Live AddFiles after replaying adds and removes of the JSON commits."""
    live: dict[str, dict[str, Any]] = {}
    for actions in commits(root):
        for a in actions:
            if "add" in a:
                live[a["add"]["path"]] = a["add"]
            elif "remove" in a:
                live.pop(a["remove"]["path"], None)
    return list(live.values())


def data_file(root: Path, add: dict[str, Any]) -> Path:
    return root / unquote(add["path"])


def expected_field_ids(schema: dict[str, Any]) -> dict[str, int]:
    """Physical path (Parquet names: ``col-4.element``, ``col-7.key``) -> id, from the Delta schema."""
    out: dict[str, int] = {}

    def nested(t: Any, path: str, ids: dict[str, int]) -> None:
        if not isinstance(t, dict):
            return
        if t["type"] == "struct":
            walk(t, path)
        elif t["type"] == "array":
            out[f"{path}.element"] = ids[f"{path}.element"]
            nested(t["elementType"], f"{path}.element", ids)
        elif t["type"] == "map":
            out[f"{path}.key"] = ids[f"{path}.key"]
            out[f"{path}.value"] = ids[f"{path}.value"]
            nested(t["keyType"], f"{path}.key", ids)
            nested(t["valueType"], f"{path}.value", ids)

    def walk(struct: dict[str, Any], prefix: str) -> None:
        for f in struct["fields"]:
            meta = f["metadata"]
            phys = meta["delta.columnMapping.physicalName"]
            path = f"{prefix}.{phys}" if prefix else phys
            out[path] = int(meta["delta.columnMapping.id"])
            ids = {
                (f"{prefix}.{k}" if prefix else k): int(v)
                for k, v in (meta.get("delta.columnMapping.nested.ids") or {}).items()
            }
            nested(f["type"], path, ids)

    walk(schema, "")
    return out


def parquet_field_ids(path: Path) -> dict[str, int | None]:
    """Arrow-level path (list element ``element``, map ``key``/``value``) -> the file's field id."""
    out: dict[str, int | None] = {}

    def fid(field: pa.Field) -> int | None:
        raw = (field.metadata or {}).get(b"PARQUET:field_id")
        return None if raw is None else int(raw)

    def walk(field: pa.Field, path: str) -> None:
        out[path] = fid(field)
        t = field.type
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                walk(t.field(i), f"{path}.{t.field(i).name}")
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            walk(t.value_field, f"{path}.element")
        elif pa.types.is_map(t):
            walk(t.key_field, f"{path}.key")
            walk(t.item_field, f"{path}.value")

    for f in pq.ParquetFile(path).schema_arrow:
        walk(f, f.name)
    return out


def physical_types(path: Path) -> dict[str, str]:
    """Leaf column path -> Parquet physical type (``INT64``, ``INT96``, ...)."""
    schema = pq.ParquetFile(path).schema
    return {schema.column(i).path: schema.column(i).physical_type for i in range(len(schema))}


def parquet_rows(path: Path) -> int:
    return pq.ParquetFile(path).metadata.num_rows


# The Spark settings of a test's child driver (a second Spark in its own process: a writer to kill, a
# session with a log store of its own): one core, Delta's state reconstruction in one partition instead
# of 50, and a JVM tuned for a short life (the C1 compiler only, the serial collector), which starts
# and runs a few small writes in less time than the defaults. None changes what Delta writes.
CHILD_SPARK_CONF: dict[str, str] = {
    "spark.master": "local[1]",
    "spark.databricks.delta.snapshotPartitions": "1",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
}


def start_child_driver(code: str, *args: str) -> subprocess.Popen[str]:
    """Run the Python program ``code`` in a process group of its own (so that one SIGKILL ends it and
    its JVM), stdin and stdout piped as text; it gets ``args`` and, last, :data:`CHILD_SPARK_CONF` as
    JSON. The jars come from the package, as for a user (``ICECOMPAT_JARS_DIR`` is not passed on)."""
    env = {k: v for k, v in os.environ.items() if k != "ICECOMPAT_JARS_DIR"}
    return subprocess.Popen(
        [sys.executable, "-c", code, *args, json.dumps(CHILD_SPARK_CONF)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        start_new_session=True,
    )


@contextmanager
def session_conf(spark: Any, confs: dict[str, str]) -> Iterator[None]:
    """Set session confs for a block and put the previous values back, whatever happens."""
    saved = {key: spark.conf.get(key, None) for key in confs}
    try:
        for key, value in confs.items():
            spark.conf.set(key, value)
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def tree_state(root: Path) -> dict[str, str]:
    """:func:`tree_digest` plus every directory (``<dir>/`` -> ``dir``): equal states mean that no
    file and no directory was added, removed or changed below ``root``."""
    if not root.exists():
        return {}
    state = tree_digest(root)
    for p in sorted(root.rglob("*")):
        if p.is_dir():
            state[f"{p.relative_to(root)}/"] = "dir"
    return state


@contextmanager
def unguarded(spark: Any) -> Iterator[None]:
    """Writes on this thread run as delta-spark alone runs them, past the session guard (on by
    default in the shared session): for tests that need a table no guarded session would make. The
    thread's JVM thread is marked trusted, the way compat_write's own writes are (py4j pins each
    Python thread to one JVM thread)."""
    guard = spark._jvm.io.icecompat.shim.guard.Guard
    guard.enterTrusted()
    try:
        yield
    finally:
        guard.exitTrusted()


def unguarded_sql(spark: Any, text: str) -> None:
    """Run ``text`` past the session guard (see :func:`unguarded`)."""
    with unguarded(spark):
        spark.sql(text).collect()
