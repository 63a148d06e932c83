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
    run = bench_age.measure_age([200, 300], [], forward=100, workdir=tmp_path)

    points = run.after()
    assert [(p.commits, p.forwarded_from) for p in points] == [(200, 0), (200, 100), (300, 200)]
    assert points[0].young_sync_ms is None  # the young table alone
    for p in points[1:]:
        assert p.young_sync_ms is not None and p.young_sync_ms > 0 and p.ratio is not None
    assert [p.young_commits for p in points[1:]] == [250, 300]  # WINDOW commits of its own per point
    # two tables fast-forwarded by the same number of steps: the same metadata/, whatever their age
    assert points[2].dir_files == points[1].dir_files
    assert abs(points[2].newest_bytes - points[1].newest_bytes) < 0.01 * points[1].newest_bytes
    assert not list(tmp_path.iterdir())  # every table removed

    targets = bench_age.targets(run)
    assert [t[0].split(": ")[1] for t in targets] == [
        "sync time (aged over young, side by side)",
        "newest metadata file",
        "metadata/ size",
        "metadata/ file count",
    ]
    assert all(met is None for *_, met in targets)  # 300 commits: short of the target's size
    text = "\n".join(bench_age.section(run, "age.png"))
    assert "| after | 300 | fast-forwarded to 200 |" in text
    assert "![Iceberg history as a table ages](age.png)" in text

    bench_age.plot(run, tmp_path / "age.png")
    png = (tmp_path / "age.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24])[0] >= 800
