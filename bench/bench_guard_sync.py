"""What the Iceberg sync after a guarded commit costs: a 1-row SQL ``INSERT`` into a table whose
``delta.universalFormat.enabledFormats`` lists ``iceberg`` against the same statement into a table
without the property, in one session, the arms alternating within each round.

Runnable alone: ``python -m bench.bench_guard_sync [--quick]`` prints a markdown table. Three arms, each
its own ``v3`` table made by SQL ``CREATE TABLE ... AS SELECT`` with the same rows:

- ``no property``: the guarded commit only (metadata hook, commit check);
- ``iceberg``: the same plus the sync (the emitter's run in the rule service);
- ``iceberg + sqlite catalog``: the same plus the pyiceberg SQL catalog update.

Also timed in this process (no Spark in the way): the rule service's ``sync`` answer for a table whose
Iceberg metadata is already current, which is what a second sync of one version costs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``bench`` and the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ARMS = ("no property", "iceberg", "iceberg + sqlite catalog")


def _create(spark: Any, root: Path, arm: str) -> None:
    props = ["'delta.enableIcebergCompatV3' = 'true'"]
    if arm != ARMS[0]:
        props.append("'delta.universalFormat.enabledFormats' = 'iceberg'")
    if arm == ARMS[2]:
        props += [
            "'icecompat.iceberg.catalog' = 'bench'",
            f"'icecompat.iceberg.identifier' = 'b.{root.name}'",
        ]
    spark.sql(
        f"CREATE TABLE delta.`{root}` USING delta TBLPROPERTIES ({', '.join(props)}) "
        "AS SELECT id, CAST(id AS STRING) AS s FROM range(0, 100, 1, 4)"
    )


def run(rounds: int) -> dict[str, list[float]]:
    import icecompat_writer
    from icecompat_writer.jvm.service import handle

    base = Path(tempfile.mkdtemp(prefix="bench-guard-sync-"))
    os.environ["PYICEBERG_CATALOG__BENCH__TYPE"] = "sql"  # before the JVM starts: the service inherits it
    os.environ["PYICEBERG_CATALOG__BENCH__URI"] = f"sqlite:///{base / 'catalog.db'}"
    spark = icecompat_writer.session(
        "bench-guard-sync",
        **{"spark.sql.shuffle.partitions": "2", "spark.sql.warehouse.dir": str(base / "wh")},
    )
    samples: dict[str, list[float]] = {arm: [] for arm in ARMS}
    try:
        tables = {arm: base / f"t{i}" for i, arm in enumerate(ARMS)}
        for arm, root in tables.items():
            _create(spark, root, arm)
        for n in range(rounds + 1):  # round 0 warms up
            for arm, root in tables.items():
                start = time.perf_counter()
                spark.sql(f"INSERT INTO delta.`{root}` VALUES ({1000 + n}, 'x')")
                if n:
                    samples[arm].append(time.perf_counter() - start)
        from icecompat_writer.jvm.bridge import guard_iceberg_syncs

        for arm in ARMS[1:]:  # the sync's own wall time inside those INSERTs, as the JVM measured it
            done = [s for s in guard_iceberg_syncs(spark) if s["table"].endswith(tables[arm].name)]
            assert done and all("error" not in s for s in done), done
            samples[f"{arm}: the sync inside the INSERT"] = [s["millis"] / 1000 for s in done[-rounds:]]
        root = tables[ARMS[1]]
        version = rounds + 1
        noop = []
        for _ in range(max(3, rounds)):
            start = time.perf_counter()
            answer = handle(
                {
                    "op": "sync",
                    "table": str(root),
                    "version": version,
                    "configuration": {"delta.universalFormat.enabledFormats": "iceberg"},
                }
            )
            noop.append(time.perf_counter() - start)
            assert answer.get("ok") and answer["converted_version"] == version, answer
        samples["second sync of a current version (service, in process)"] = noop
    finally:
        spark.stop()
    return samples


def render(samples: dict[str, list[float]]) -> str:
    base = statistics.median(samples[ARMS[0]])
    lines = ["| arm | median s | min s | vs no property |", "|---|---|---|---|"]
    for arm, values in samples.items():
        med = statistics.median(values)
        ratio = f"{med / base:.2f}x" if arm in ARMS else ""
        lines.append(f"| {arm} | {med:.3f} | {min(values):.3f} | {ratio} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds instead of 7")
    args = parser.parse_args(argv)
    print(render(run(3 if args.quick else 7)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
