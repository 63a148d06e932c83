"""The demo behind ``bin/demo``: a nested, partitioned table written through icecompat_writer on an
embedded local Spark, evolved once, audited by the Spark-free checker, and finally read back as an
Apache Iceberg table by pyiceberg, next to the rows delta-spark reads.

Run: ``python -m icecompat_writer.demo [--profile v3|writer-v1|writer-v3] [--dir DIR]`` (the last step
needs pyiceberg: ``pip install 'icecompat_writer[demo]'``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="icecompat-demo", description=__doc__)
    parser.add_argument("--profile", default="v3", choices=["v3", "writer-v1", "writer-v3"])
    parser.add_argument("--dir", help="where to put the table (default: a new temporary folder)")
    args = parser.parse_args(argv)

    import icecompat_writer
    from icecompat_writer.checking.check import check_table
    from icecompat_writer.writing.api import compat_write

    base = Path(args.dir).resolve() if args.dir else Path(tempfile.mkdtemp(prefix="icecompat-demo-"))
    base.mkdir(parents=True, exist_ok=True)
    table = base / f"orders_{args.profile.replace('-', '_')}"
    spark = icecompat_writer.session("icecompat-demo", **{"spark.sql.warehouse.dir": str(base / "warehouse")})
    try:
        orders = spark.createDataFrame(
            [
                (
                    1,
                    "eu",
                    dt.datetime(2026, 11, 1, 9, 30),
                    ("Ada", ("Paris", "75001")),
                    [("pen", 2)],
                    {"gift": "no"},
                ),
                (2, "us", dt.datetime(2026, 11, 1, 10, 0), ("Bob", ("Boston", "02108")), [("ink", 1)], {}),
                (3, "eu", dt.datetime(2026, 11, 2, 8, 15), ("Cy", ("Rome", "00118")), [], {"gift": "yes"}),
            ],
            "order_id long, region string, placed_at timestamp, "
            "customer struct<name: string, address: struct<city: string, zip: string>>, "
            "items array<struct<sku: string, qty: int>>, tags map<string, string>",
        )
        first = compat_write(
            orders, str(table), mode="overwrite", partition_by=["region"], profile=args.profile
        )
        print(first)
        print("what the plan set, and which rule asked for it:")
        for change in first.changes:
            print(f"  {change.rule:<28} {change.path or '(table)':<24} {change.what}")
        # a later batch brings a new column: schema evolution keeps ids and col-<id> names stable
        more = orders.limit(1).selectExpr(
            "order_id + 10 as order_id",
            "region",
            "placed_at",
            "customer",
            "items",
            "tags",
            "9.5d as discount",
        )
        second = compat_write(
            more, str(table), mode="append", profile=args.profile, options={"mergeSchema": "true"}
        )
        print(second)
        delta_rows = [
            _shown(row.asDict(recursive=True))
            for row in spark.read.format("delta").load(str(table)).orderBy("order_id").collect()
        ]
    finally:
        spark.stop()

    report = check_table(table, args.profile)
    print()
    print(report.render_text())
    if not report.compliant:
        return 1

    # The point of it all: the same table, read as Iceberg by a reader that knows nothing of Delta.
    from pyiceberg.table import StaticTable

    from icecompat_writer.iceberg.emitter import write_iceberg_metadata

    iceberg = write_iceberg_metadata(table)
    print()
    print(iceberg.summary())
    scanned = StaticTable.from_metadata(str(iceberg.metadata_path)).scan().to_arrow()
    iceberg_rows = sorted((_shown(row) for row in scanned.to_pylist()), key=lambda r: int(str(r["order_id"])))
    print()
    print(f"{'delta-spark reads':<60} | pyiceberg reads (Iceberg v{iceberg.format_version})")
    for left, right in zip(delta_rows, iceberg_rows, strict=True):
        print(f"{_line(left):<60} | {_line(right)}")
    same = delta_rows == iceberg_rows
    print("same rows, same values" if same else "THE TWO READERS DISAGREE")
    return 0 if same else 1


def _shown(row: dict[str, Any]) -> dict[str, Any]:
    """A row in a form both readers agree on: maps as sorted pairs (pyarrow gives a list of tuples),
    timestamps as UTC (Spark hands back local wall-clock time, pyarrow an aware UTC value)."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        if isinstance(value, dt.datetime):
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        if key == "tags":
            pairs = list(value.items()) if isinstance(value, dict) else list(value or [])
            value = sorted((str(k), str(v)) for k, v in pairs)
        out[key] = value
    return out


def _line(row: dict[str, Any]) -> str:
    name = row["customer"]["name"]
    items = len(row["items"] or [])
    return f"{row['order_id']:>3} {row['region']} {name:<4} items={items} discount={row['discount']}"


if __name__ == "__main__":
    sys.exit(main())
