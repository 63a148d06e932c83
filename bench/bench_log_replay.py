"""Time the Spark-free log replay on synthetic logs with 100,000 live AddFiles.

Not a test: run ``.venv/bin/python bench/bench_log_replay.py [--files N] [--repeat R]``. Builds, in a
temporary directory, one table per log shape (all-JSON commits; a classic checkpoint plus commits; a
multi-part checkpoint; a V2 checkpoint with sidecars) and prints the best-of-R time of
``read_snapshot`` on each, then of ``read_snapshot(...).add_files``: the snapshot keeps live files as
Arrow columns, and the second figure includes building every ``AddFile`` object (what a consumer of
all files, such as the Iceberg emitter, pays). Build time is printed separately and not part of the
measurement.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "deltalog"))
sys.path.insert(0, str(HERE.parent))

import logbuilder as lb  # noqa: E402

from icecompat_writer.deltalog import read_snapshot  # noqa: E402
from icecompat_writer.storage import io_for  # noqa: E402

STATS = (
    '{"numRecords":1000,"minValues":{"id":0,"p":"a"},"maxValues":{"id":999,"p":"z"},'
    '"nullCount":{"id":0,"p":0}}'
)


def _adds(n: int, prefix: str = "") -> list[dict]:
    return [
        lb.add(
            f"p={i % 100}/{prefix}part-{i:06d}-0d0c6b1e-6c6f-4a8e-9a51-2f2b0a1c3d4e-c000.snappy.parquet",
            partition_values={"p": str(i % 100)},
            stats=STATS,
            size=1024 + i,
            base_row_id=i * 1000,
            default_row_commit_version=1,
        )
        for i in range(n)
    ]


def build_json(root: Path, n: int) -> None:
    b = lb.LogBuilder(root)
    b.commit(0, [lb.commit_info("CREATE"), lb.protocol(), lb.metadata(partition_columns=["p"])])
    commits = 10
    per = n // commits
    adds = _adds(n)
    for c in range(commits):
        b.commit(c + 1, [lb.commit_info(), *adds[c * per : (c + 1) * per]])
    # a last commit that removes 1,000 files and adds 1,000 others: the live count stays n
    removed = [lb.remove(a["add"]["path"]) for a in adds[:1000]]
    b.commit(commits + 1, [lb.commit_info("DELETE"), *removed, *_adds(1000, prefix="x")])


def build_classic(root: Path, n: int) -> None:
    b = lb.LogBuilder(root)
    b.commit(0, [lb.commit_info("CREATE"), lb.protocol(), lb.metadata(partition_columns=["p"])])
    adds = _adds(n)
    b.classic_checkpoint(0, [lb.protocol(), lb.metadata(partition_columns=["p"]), *adds])
    for v in range(1, 6):
        b.commit(v, [lb.commit_info(), lb.remove(adds[v]["add"]["path"]), *_adds(1, prefix=f"v{v}")])


def build_multipart(root: Path, n: int) -> None:
    b = lb.LogBuilder(root)
    b.commit(0, [lb.commit_info("CREATE"), lb.protocol(), lb.metadata(partition_columns=["p"])])
    adds = _adds(n)
    quarter = n // 4
    parts = [adds[i * quarter : (i + 1) * quarter] for i in range(4)]
    parts[0] = [lb.protocol(), lb.metadata(partition_columns=["p"]), *parts[0]]
    b.multipart_checkpoint(0, parts)


def build_v2(root: Path, n: int) -> None:
    b = lb.LogBuilder(root)
    features = {
        "reader": 3,
        "writer": 7,
        "reader_features": ["v2Checkpoint"],
        "writer_features": ["v2Checkpoint"],
    }
    b.commit(0, [lb.commit_info("CREATE"), lb.protocol(**features), lb.metadata(partition_columns=["p"])])
    b.v2_checkpoint(
        0,
        [lb.protocol(**features), lb.metadata(partition_columns=["p"])],
        _adds(n),
        file_format="parquet",
        sidecars=4,
    )


def _time(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    best = float("inf")
    result: object = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    shapes = {
        "json commits": build_json,
        "classic checkpoint + 5 commits": build_classic,
        "multi-part checkpoint (4 parts)": build_multipart,
        "V2 checkpoint (parquet, 4 sidecars)": build_v2,
    }
    with tempfile.TemporaryDirectory(prefix="bench_log_replay_") as tmp:
        for label, build in shapes.items():
            root = Path(tmp) / label.split()[0]
            start = time.perf_counter()
            build(root, args.files)
            built = time.perf_counter() - start
            seconds, snap = _time(lambda root=root: read_snapshot(root, io=io_for(root)), args.repeat)
            with_objects, _ = _time(
                lambda root=root: read_snapshot(root, io=io_for(root)).add_files, args.repeat
            )
            live = len(snap.files)  # type: ignore[attr-defined]
            findings = len(snap.findings)  # type: ignore[attr-defined]
            print(
                f"{label:40s} live files {live:>7,d}  read_snapshot best of {args.repeat}: "
                f"{seconds:6.2f} s, with AddFile objects {with_objects:6.2f} s   "
                f"(build {built:5.1f} s, findings {findings})"
            )


if __name__ == "__main__":
    main()
