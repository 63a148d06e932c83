"""Time ``plan`` + ``validate`` on synthetic nested schemas of 100, 1,000 and 10,000 leaves.

Not a test: run ``.venv/bin/python bench/bench_planning.py [--repeat 5] [--profile v3]``, or
``--compare REV [--rounds 5]`` for REV's planner and the working tree's side by side in one run. For
each size it builds a DataFrame-like schema (no column-mapping metadata: the planner must assign
every id) mixing plain columns, structs, arrays of structs and maps with struct keys and array values,
then reports the median of ``--repeat`` runs of: planning a new table, validating the plan, and
re-planning the compliant result (the no-op path every append takes). The target is plan + validate
< 50 ms at 10,000 leaves. ``--same-as REV [--sizes ...]`` checks that a change kept every planning
outcome: it hashes the outcome of each case of :func:`digests` in REV's tree and the working tree.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from icecompat_writer.deltalog.actions import Metadata, Protocol
from icecompat_writer.errors import CompatViolation
from icecompat_writer.planning import PROFILES, plan, validate
from icecompat_writer.rules.schema import clear_index_cache
from icecompat_writer.schema import parse_schema

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


ROOT = Path(__file__).resolve().parents[1]


def measure_alone(profile: str, sizes: list[int], repeat: int, root: Path = ROOT) -> list[PlanningRow]:
    """The same measurement in a new Python process that never starts a JVM (pure Python).

    ``bench.run`` measures planning inside the Spark driver, where ``compat_write`` plans; this is the
    reference that shows how much of that figure is the planner's own work. ``root``: the source tree
    whose package is measured (another revision's, for :func:`compare`).
    """
    out = subprocess.run(
        [sys.executable, "-m", "bench.bench_planning", "--profile", profile, "--repeat", str(repeat),
         "--sizes", ",".join(str(n) for n in sizes), "--json"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )  # fmt: skip
    return [PlanningRow(**row) for row in json.loads(out.stdout)]


def _export(revision: str, into: Path) -> None:
    """``revision``'s ``icecompat_writer`` and ``bench`` (git archive), extracted into ``into``."""
    archive = subprocess.run(
        ["git", "archive", revision, "icecompat_writer", "bench"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)


def compare(revision: str, profiles: list[str], sizes: list[int], repeat: int, rounds: int) -> None:
    """Before and after, side by side in one run: ``revision``'s planner against the working tree's.

    The revision's ``icecompat_writer`` and ``bench`` are exported into a temporary directory; each
    round measures both trees in new processes, in alternating order, so that a change of the
    machine's load during the run weighs on both alike. Prints the median over all rounds' medians.
    """
    with tempfile.TemporaryDirectory(prefix="bench-planning-") as tmp:
        _export(revision, Path(tmp))
        trees = {revision: Path(tmp), "working tree": ROOT}
        got: dict[tuple[str, str, int], list[PlanningRow]] = {}
        for r in range(rounds):
            for profile in profiles:
                for name in list(trees) if r % 2 == 0 else list(reversed(trees)):
                    for row in measure_alone(profile, sizes, repeat, trees[name]):
                        got.setdefault((name, profile, row.leaves), []).append(row)
    print(f"median over {rounds} rounds of the median of {repeat} runs (ms), each tree in new processes")
    print(f"{'profile':>10} {'leaves':>7} {'tree':>14} {'plan+validate':>14} {'validate':>9} {'re-plan':>8}")
    for profile in profiles:
        for leaves in sizes:
            for name in trees:
                rows = got[(name, profile, leaves)]
                med = [statistics.median(getattr(x, a) for x in rows)
                       for a in ("plan_validate_ms", "validate_ms", "replan_ms")]  # fmt: skip
                cells = f"{med[0]:>14.1f} {med[1]:>9.1f} {med[2]:>8.1f}"
                print(f"{profile:>10} {leaves:>7} {name[:14]:>14} {cells}")


@dataclass(frozen=True)
class _State:
    protocol: Protocol
    metadata: Metadata


def _mangled(leaves: int, how: str) -> dict[str, Any]:
    """``build_schema(leaves)`` broken or pre-mapped in one way, on every third field or so."""
    schema = build_schema(leaves)
    fields: list[dict[str, Any]] = []

    def walk(t: Any) -> None:
        if isinstance(t, dict):
            for f in t.get("fields", ()):
                fields.append(f)
                walk(f["type"])
            walk(t.get("elementType"))
            walk(t.get("keyType"))
            walk(t.get("valueType"))

    walk(schema)
    for i, f in enumerate(fields):
        md = f["metadata"]
        if how == "forbidden_types" and i % 7 == 3:
            f["type"] = ["void", "byte", "short", "variant", "timestamp_ntz", "interval"][i % 6]
        elif how == "partly_mapped" and i % 3 != 0:
            md["delta.columnMapping.id"] = i + 1
            if i % 2:
                md["delta.columnMapping.physicalName"] = f"col-{i + 1}" if i % 4 == 1 else f"p{i}"
            if i % 5 == 0:
                md["delta.columnMapping.nested.ids"] = {f"p{i}.element": 10 * leaves + i}
        elif how == "col_names_taken" and i % 4 == 1:
            md["delta.columnMapping.physicalName"] = f"col-{i + 2}"
        elif how == "bad_ids" and i % 5 == 2:
            md["delta.columnMapping.id"] = [True, 0, -4, 2**31, 7, "9"][i % 6]
            md["delta.columnMapping.physicalName"] = ["x", "", 3, "x", "y", "col-1"][i % 6]
        elif how == "dup_names" and i % 6 == 1:
            f["name"] = fields[i - 1]["name"].upper() if i else "A"
        elif how == "odd_metadata" and i % 4 == 0:
            f["metadata"] = [None, "text", {"delta.invariants": "x > 0"}, {"comment": "c"}][i // 4 % 4]
        elif how == "irregular" and i == len(fields) // 2 and isinstance(f["type"], dict):
            f["type"]["fields"] = {"not": "a list"}
    return schema


_NAME_MODE = {"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "5"}
_BROKEN = ("forbidden_types", "partly_mapped", "col_names_taken", "bad_ids", "dup_names", "odd_metadata",
           "irregular")  # fmt: skip


def _outcome(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """What ``fn`` gives, as plain data: a plan's outputs, violations, or the error it raised."""
    try:
        got = fn(*args, **kwargs)
    except CompatViolation as e:
        return ["CompatViolation", str(e), [_plain(v) for v in e.violations]]
    except Exception as e:  # every other outcome is compared too, its type and text
        return [type(e).__name__, str(e)]
    if isinstance(got, list):
        return [_plain(v) for v in got]
    return [got.profile, got.protocol.to_json(), got.metadata.to_json(), [_plain(c) for c in got.changes]]


def _plain(obj: Any) -> Any:
    return {k: repr(v) for k, v in sorted(vars(obj).items())} if hasattr(obj, "__dict__") else repr(obj)


def digests(sizes: list[int]) -> dict[str, str]:
    """sha256 of every planning outcome, per case: new, re-planned, evolved, unmapped-previous and
    broken schemas, for every profile and size. Two trees that plan alike give equal digests."""
    out: dict[str, str] = {}

    def record(name: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        clear_index_cache()
        result = _outcome(fn, *args, **kwargs)
        text = json.dumps(result, sort_keys=True, default=repr)
        out[name] = hashlib.sha256(text.encode()).hexdigest()

    for profile in PROFILES:
        for n in sizes:
            tag = f"{profile}/{n}"
            md = Metadata(schema_string=json.dumps(build_schema(n)), id="t")
            try:
                first = plan(profile, md)
            except CompatViolation:
                first = None
            record(f"{tag}/new", plan, profile, md)
            record(f"{tag}/validate-raw", validate, profile, md, Protocol(1, 2))
            if first is not None:
                p = first
                record(f"{tag}/replan", plan, profile, p.metadata, p.protocol)
                record(f"{tag}/validate-plan", validate, profile, p.metadata, p.protocol)
                # evolved: more columns, some renamed by case, one type changed, config kept
                grown = build_schema(n + n // 3 + 1)
                for i, f in enumerate(grown["fields"]):
                    if i % 5 == 1:
                        f["name"] = f["name"].upper()
                    if i == 2:
                        f["type"] = {"type": "array", "elementType": "string", "containsNull": True}
                evolved = p.metadata.with_schema(parse_schema(grown))
                record(f"{tag}/evolved", plan, profile, evolved, previous=p)
                record(f"{tag}/evolved-validate", validate, profile, evolved, p.protocol, p)
                shrunk = p.metadata.with_schema(parse_schema(build_schema(max(1, n // 2))))
                record(f"{tag}/replaced-smaller", plan, profile, shrunk, previous=p)
            unmapped = _State(Protocol(1, 2), Metadata(schema_string=json.dumps(build_schema(n)), id="u"))
            bigger = Metadata(schema_string=json.dumps(build_schema(n + 3)), id="u")
            record(f"{tag}/unmapped-previous", plan, profile, bigger, previous=unmapped)
            col_prev = _State(
                Protocol(1, 2), Metadata(schema_string=json.dumps(_mangled(n, "col_names_taken")), id="c")
            )
            record(f"{tag}/unmapped-col-names", plan, profile, bigger, previous=col_prev)
            for how in _BROKEN:
                bad = Metadata(schema_string=json.dumps(_mangled(n, how)), id="b")
                record(f"{tag}/{how}", plan, profile, bad)
                record(f"{tag}/{how}-validate", validate, profile, bad, Protocol(3, 7))
                named = Metadata(schema_string=bad.schema_string, id="b", configuration=_NAME_MODE)
                record(f"{tag}/{how}-name-mode", plan, profile, named)
        for text in ("not json", "[1, 2]", '{"type": "struct"}', '{"type": "struct", "fields": 3}', "{}"):
            md = Metadata(schema_string=text, id="x")
            record(f"{profile}/text {text}", plan, profile, md)
            record(f"{profile}/text {text} validate", validate, profile, md, Protocol(3, 7))
    return out


def same_as(revision: str, sizes: list[int]) -> bool:
    """Whether the working tree plans exactly as ``revision`` does: :func:`digests` run in both trees
    (this file's own copy of the cases in each), compared case by case. Prints the differing cases."""
    here = Path(__file__).resolve()
    runs = {}
    with tempfile.TemporaryDirectory(prefix="bench-planning-") as tmp:
        _export(revision, Path(tmp))
        (Path(tmp) / "bench" / "bench_planning.py").write_text(here.read_text())
        for name, root in ((revision, Path(tmp)), ("working tree", ROOT)):
            cmd = [
                sys.executable,
                "-m",
                "bench.bench_planning",
                "--digest",
                "--sizes",
                ",".join(map(str, sizes)),
            ]
            out = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=True)
            runs[name] = json.loads(out.stdout)
    before, after = runs[revision], runs["working tree"]
    differ = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    for k in differ:
        print(f"differs: {k}")
    print(f"{len(before)} cases, {len(differ)} differ from {revision}")
    return not differ


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument(
        "--profile", default=None, choices=list(PROFILES), help="default: v3 (--compare: v3, writer-v1)"
    )
    ap.add_argument("--sizes", default="100,1000,10000")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON (what bench.run reads)")
    ap.add_argument(
        "--compare", metavar="REV", help="measure REV's planner and the working tree's, interleaved"
    )
    ap.add_argument("--rounds", type=int, default=5, help="rounds of --compare")
    ap.add_argument("--digest", action="store_true", help="print a digest of every planning outcome")
    ap.add_argument(
        "--same-as", metavar="REV", help="whether every planning outcome equals REV's (--digest in both)"
    )
    args = ap.parse_args()
    if args.digest:
        print(json.dumps(digests([int(s) for s in args.sizes.split(",")])))
        return
    if args.same_as:
        sys.exit(0 if same_as(args.same_as, [int(s) for s in args.sizes.split(",")]) else 1)
    if args.compare:
        profiles = [args.profile] if args.profile else ["v3", "writer-v1"]
        compare(args.compare, profiles, [int(s) for s in args.sizes.split(",")], args.repeat, args.rounds)
        return

    rows = measure(args.profile or "v3", [int(s) for s in args.sizes.split(",")], args.repeat)
    if args.json:
        print(json.dumps([r.__dict__ for r in rows]))
        return
    profile = args.profile or "v3"
    print(f"profile {profile}, median of {args.repeat} runs, cold (index cache emptied before each run)")
    print(f"{'leaves':>8} {'changes':>8} {'plan+validate ms':>17} {'validate ms':>12} {'re-plan ms':>11}")
    for r in rows:
        print(
            f"{r.leaves:>8} {r.changes:>8} {r.plan_validate_ms:>17.1f} {r.validate_ms:>12.1f} "
            f"{r.replan_ms:>11.1f}"
        )


if __name__ == "__main__":
    main()
