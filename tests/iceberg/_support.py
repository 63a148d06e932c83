"""Helpers for reading emitted Iceberg tables with independent readers and comparing with Spark."""

from __future__ import annotations

import datetime as dt
import json
import stat
import sys
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

import duckdb
import fastavro
import pyarrow as pa
from pyiceberg.table import StaticTable


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
