"""Time ``plan`` + ``validate`` on synthetic nested schemas of 100, 1,000 and 10,000 leaves.

Not a test: run ``.venv/bin/python bench/bench_planning.py [--repeat 5] [--profile v3]``. For each size
it builds a DataFrame-like schema (no column-mapping metadata: the planner must assign every id) mixing
plain columns, structs, arrays of structs and maps with struct keys and array values, then reports the
median of ``--repeat`` runs of: planning a new table, validating the plan, and re-planning the
compliant result (the no-op path every append takes). The target is plan + validate < 100 ms at 10,000
leaves.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from icecompat_writer.deltalog.actions import Metadata
from icecompat_writer.planning import PROFILES, plan, validate
from icecompat_writer.rules.schema import clear_index_cache

PRIMITIVES = ("integer", "long", "string", "double", "date", "timestamp", "decimal(10,2)", "boolean")


def _field(name: str, type_: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, "nullable": True, "metadata": {}}


def build_schema(leaves: int) -> dict[str, Any]:
    """A schema with exactly ``leaves`` primitive leaves, in groups of 10 of four shapes."""
    fields: list[dict[str, Any]] = []
    made = 0
    group = 0
    while made < leaves:
        n = min(10, leaves - made)
        prims = [PRIMITIVES[(made + i) % len(PRIMITIVES)] for i in range(n)]
        shape = group % 4
        inner = [_field(f"f{i}", t) for i, t in enumerate(prims)]
        if shape == 0:
            fields.extend(_field(f"c{group}_{i}", t) for i, t in enumerate(prims))
        elif shape == 1:
            fields.append(_field(f"s{group}", {"type": "struct", "fields": inner}))
        elif shape == 2:
            elem = {"type": "struct", "fields": inner}
            fields.append(_field(f"a{group}", {"type": "array", "elementType": elem, "containsNull": True}))
        else:
            key = {"type": "struct", "fields": inner[:1]}
            value = {
                "type": "array",
                "elementType": {"type": "struct", "fields": inner[1:]},
                "containsNull": True,
            }
            if n == 1:
                value = {"type": "array", "elementType": "long", "containsNull": True}
            fields.append(
                _field(
                    f"m{group}",
                    {"type": "map", "keyType": key, "valueType": value, "valueContainsNull": True},
                )
            )
        made += n
        group += 1
    return {"type": "struct", "fields": fields}


def median_ms(fn: Callable[[], Any], repeat: int) -> float:
    """Median wall time of ``fn``; the index cache is emptied and the previous result freed untimed."""
    times = []
    for _ in range(repeat):
        clear_index_cache()
        t0 = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - t0) * 1000)
        del result
    return statistics.median(times)


@dataclass(frozen=True)
class PlanningRow:
    """Medians (ms) for one schema size: what ``bench.run`` tabulates and this script prints."""

    profile: str
    leaves: int
    changes: int
    plan_validate_ms: float
    validate_ms: float
    replan_ms: float


def measure(profile: str, sizes: list[int], repeat: int) -> list[PlanningRow]:
    """Plan + validate, validate alone and the no-op re-plan, for each schema size (medians in ms)."""
    rows = []
    for leaves in sizes:
        md = Metadata(schema_string=json.dumps(build_schema(leaves)), id="bench")

        def cold_plan_validate(md: Metadata = md) -> Any:
            p = plan(profile, md)
            assert not validate(profile, p.metadata, p.protocol)
            return p

        p = plan(profile, md)

        def replan(p: Any = p) -> Any:
            q = plan(profile, p.metadata, p.protocol)
            assert not q.changes
            return q

        def validate_only(p: Any = p) -> Any:
            return validate(profile, p.metadata, p.protocol)

        rows.append(
            PlanningRow(
                profile,
                leaves,
                len(p.changes),
                median_ms(cold_plan_validate, repeat),
                median_ms(validate_only, repeat),
                median_ms(replan, repeat),
            )
        )
    return rows


def measure_alone(profile: str, sizes: list[int], repeat: int) -> list[PlanningRow]:
    """The same measurement in a new Python process that never starts a JVM (pure Python).

    ``bench.run`` measures planning inside the Spark driver, where ``compat_write`` plans; this is the
    reference that shows how much of that figure is the planner's own work.
    """
    out = subprocess.run(
        [sys.executable, "-m", "bench.bench_planning", "--profile", profile, "--repeat", str(repeat),
         "--sizes", ",".join(str(n) for n in sizes), "--json"],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        check=True,
    )  # fmt: skip
    return [PlanningRow(**row) for row in json.loads(out.stdout)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--profile", default="v3", choices=list(PROFILES))
    ap.add_argument("--sizes", default="100,1000,10000")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON (what bench.run reads)")
    args = ap.parse_args()

    rows = measure(args.profile, [int(s) for s in args.sizes.split(",")], args.repeat)
    if args.json:
        print(json.dumps([r.__dict__ for r in rows]))
        return
    print(f"profile {args.profile}, median of {args.repeat} runs, cold (index cache emptied before each run)")
    print(f"{'leaves':>8} {'changes':>8} {'plan+validate ms':>17} {'validate ms':>12} {'re-plan ms':>11}")
    for r in rows:
        print(
            f"{r.leaves:>8} {r.changes:>8} {r.plan_validate_ms:>17.1f} {r.validate_ms:>12.1f} "
            f"{r.replan_ms:>11.1f}"
        )


if __name__ == "__main__":
    main()
