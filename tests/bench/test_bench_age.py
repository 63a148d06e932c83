"""The age section of bench/bench_age.py runs end to end on a short history: the young table measured
first, every later point measured beside it (both tables' syncs interleaved), the targets computed from
the first and last points, and the plot drawn. Numbers are not asserted (they belong to the machine);
that bounded history stays bounded is, because it is what the section exists to show."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from bench import bench_age


def test_the_age_section_measures_every_point_beside_a_young_table(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    run = bench_age.measure_age([250, 300], [], workdir=tmp_path)

    points = run.after()
    assert [p.commits for p in points] == [250, 250, 300]
    assert points[0].young_sync_ms is None  # the young table alone
    for p in points[1:]:
        assert p.young_sync_ms is not None and p.young_sync_ms > 0 and p.ratio is not None
    assert [p.young_commits for p in points[1:]] == [300, 350]  # WINDOW commits of its own per point
    # 100 snapshots and 100 metadata files at most from about 200 commits on: metadata/ keeps its file count
    assert points[2].dir_files <= points[1].dir_files + 2
    assert points[2].newest_bytes <= points[1].newest_bytes * 1.05

    targets = bench_age.targets(run)
    assert [t[0].split(": ")[1] for t in targets] == [
        "sync time (aged over young, side by side)",
        "newest metadata file",
        "metadata/ size",
        "metadata/ file count",
    ]
    assert all(met is None for *_, met in targets)  # 300 commits: short of the target's size
    text = "\n".join(bench_age.section(run, "age.png"))
    assert "| after | 300 |" in text and "![Iceberg history as a table ages](age.png)" in text

    bench_age.plot(run, tmp_path / "age.png")
    png = (tmp_path / "age.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24])[0] >= 800
