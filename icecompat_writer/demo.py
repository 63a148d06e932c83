"""The demo behind ``bin/demo``: a nested, partitioned table written through icecompat_writer on an
embedded local Spark, evolved once, then audited by the Spark-free checker.

Run: ``python -m icecompat_writer.demo [--profile v3|writer-v1|writer-v3] [--dir DIR]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path


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
        print(f"rows now: {spark.read.format('delta').load(str(table)).count()}")
    finally:
        spark.stop()

    report = check_table(table, args.profile)
    print()
    print(report.render_text())
    return 0 if report.compliant else 1


if __name__ == "__main__":
    sys.exit(main())
