"""Helpers for reading emitted Iceberg tables with independent readers and comparing with Spark."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import stat
import sys
from collections.abc import Iterator
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

import duckdb
import fastavro
import pyarrow as pa
import pytest
from pyiceberg.table import StaticTable

from icecompat_writer.jvm.bridge import guard_iceberg_syncs


def latest_metadata(root: Path) -> Path:
    """The metadata file ``version-hint.text`` points at."""
    hint = (root / "metadata" / "version-hint.text").read_text().strip()
    return root / "metadata" / f"v{hint}.metadata.json"


def metadata_json(root: Path) -> dict[str, Any]:
    return json.loads(latest_metadata(root).read_text())


def static_table(root: Path) -> StaticTable:
    return StaticTable.from_metadata(str(latest_metadata(root)))


def duckdb_connect() -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with the iceberg extension loaded from the pip package, never downloaded."""
    dist = importlib_metadata.distribution("duckdb-ext-iceberg")
    ext_dir = Path(str(dist.locate_file("duckdb_ext/extensions")))
    con = duckdb.connect()
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = true")
    con.execute(f"SET extension_directory = '{ext_dir}'")
    con.execute("LOAD iceberg")
    con.execute("SET TimeZone = 'UTC'")
    return con


def duckdb_rows(root: Path, where: str = "") -> list[dict[str, Any]]:
    con = duckdb_connect()
    try:
        sql = f"SELECT * FROM iceberg_scan('{latest_metadata(root)}')" + (f" WHERE {where}" if where else "")
        return normalise(con.execute(sql).fetch_arrow_table())
    finally:
        con.close()


def _norm_value(value: Any) -> Any:
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC)
    if isinstance(value, dict):
        return {k: _norm_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_norm_value(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_norm_value(v) for v in value)
    return value


def normalise(table: pa.Table, columns: list[str] | None = None) -> list[dict[str, Any]]:
    """Rows as dicts sorted by ``id``; zoned timestamps in UTC so readers' zone choices do not matter."""
    if columns is not None:
        table = table.select(columns)
    rows = [_norm_value(r) for r in table.to_pylist()]
    return sorted(rows, key=lambda r: r["id"])


def spark_rows(df: Any) -> list[dict[str, Any]]:
    return normalise(df.toArrow())


def read_avro(uri: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    path = uri.removeprefix("file://")
    with open(path, "rb") as fh:
        reader = fastavro.reader(fh)
        return list(reader), dict(reader.metadata)


def live_files_with_lineage(root: Path) -> list[dict[str, Any]]:
    """Live data files of the current snapshot with first_row_id and data sequence number resolved.

    Written from the spec's inheritance rules ("First Row ID Inheritance", "Sequence Number
    Inheritance"), independently of the emitter, so the test checks what a v3 reader would compute.
    """
    meta = metadata_json(root)
    snap = next(s for s in meta["snapshots"] if s["snapshot-id"] == meta["current-snapshot-id"])
    manifests, _ = read_avro(snap["manifest-list"])
    out = []
    for m in manifests:
        entries, _ = read_avro(m["manifest_path"])
        next_id = m.get("first_row_id")
        for e in entries:
            df = e["data_file"]
            first = df.get("first_row_id")
            if first is None and next_id is not None:
                first = next_id
                next_id += df["record_count"]
            if e["status"] == 2:
                continue
            seq = e["sequence_number"]
            if seq is None and e["status"] == 1:
                seq = m["sequence_number"]
            out.append({**df, "path": df["file_path"], "first_row_id": first, "data_sequence_number": seq})
    return out


def python_with_env(script: Path, exports: dict[str, str]) -> Path:
    """An executable wrapper of this interpreter that exports ``exports`` first: what a user names in
    ``spark.icecompat.python`` so that the guard's rule service (its own process, its own environment)
    sees pyiceberg's ``PYICEBERG_CATALOG__*`` configuration."""
    lines = ["#!/bin/sh", *(f"export {k}='{v}'" for k, v in exports.items()), f'exec {sys.executable} "$@"']
    script.write_text("\n".join(lines) + "\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


@contextlib.contextmanager
def catalogs_configured(spark: Any, work: Path, exports: dict[str, str]) -> Iterator[None]:
    """pyiceberg catalog configuration ``exports`` (``PYICEBERG_CATALOG__*``) in this process and in
    the guard's rule service: ``spark.icecompat.python`` names a wrapper that exports them (a different
    executable, so the guard starts a new service); everything is restored on exit."""
    from icecompat_writer import storage

    key = "spark.icecompat.python"
    script = python_with_env(work / "python-with-catalogs", exports)
    before = spark.conf.get(key, None)
    spark.conf.set(key, str(script))
    guard_iceberg_syncs(spark, drain=True)
    storage.clear_cache()
    try:
        with pytest.MonkeyPatch.context() as mp:
            for name, value in exports.items():
                mp.setenv(name, value)
            yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)
        storage.clear_cache()


def stream_once(
    spark: Any, target: str, work: Path, ids: range = range(10, 13), *, table: bool = False
) -> None:
    """A Structured Streaming write into the Delta table at the path ``target`` (or, with ``table``,
    into the catalog table named ``target``): ``availableNow`` over one JSON file of ``ids`` rows
    (``id``, ``part``, ``v``), so one micro-batch and one commit."""
    incoming = work / "incoming"
    incoming.mkdir()
    rows = [{"id": i, "part": str(i % 3), "v": i * 2} for i in ids]
    (incoming / "0.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    writer = (
        spark.readStream.schema("id BIGINT, part STRING, v BIGINT")
        .json(str(incoming))
        .writeStream.format("delta")
        .option("checkpointLocation", str(work / "checkpoint"))
        .trigger(availableNow=True)
    )
    query = writer.toTable(target) if table else writer.start(target)
    query.awaitTermination()
    assert query.exception() is None, query.exception()


def guarded_walk(spark: Any, table_sql: str, root: str, work: Path) -> list[tuple[str, Any]]:
    """The commits a catalog walk makes after its first write, each a guarded Spark write on the table
    (``table_sql`` names it in SQL): INSERT, MERGE (updates and inserts), DELETE, and a Structured
    Streaming micro-batch. Each step is (name, a call that makes exactly one commit)."""
    t = table_sql
    merge = (
        f"MERGE INTO {t} AS d USING (SELECT id, CAST(id % 3 AS STRING) AS part, id * 5 AS v "
        "FROM range(5, 9)) AS s ON d.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"
    )
    return [
        ("INSERT", lambda: spark.sql(f"INSERT INTO {t} VALUES (6, '0', 12), (7, '1', 14)")),
        ("MERGE", lambda: spark.sql(merge)),
        ("DELETE", lambda: spark.sql(f"DELETE FROM {t} WHERE id = 2")),
        ("stream", lambda: stream_once(spark, root, work)),
    ]


def assert_synced(spark: Any, done: Any, version: int, what: str, table: str) -> None:
    """The walk's step ``version`` reached Iceberg: the first (compat_write) registered the table in
    the catalog itself; every later one (a guarded write) was synced once, without error, by the
    guard's rule service (drained from the session's record of syncs)."""
    if version == 0:
        assert done.iceberg is not None and done.iceberg.error is None, done.iceberg
        assert done.iceberg.catalog is not None and done.iceberg.catalog.action == "registered"
        return
    synced = [s for s in guard_iceberg_syncs(spark, drain=True) if table in s["table"]]
    assert [(s["version"], s.get("error")) for s in synced] == [(version, None)], what
