"""The benchmark harness runs end to end on the test session and writes its report: every section and
cell of ``--quick`` (its write and planning cells), with ``run(smoke=True)``'s smaller tables in the
other sections and no warm-ups, and one timed run of every measurement. The run count, the sizes and
the absence of warm-ups are parameters the harness honours, which is asserted, not the numbers.

Numbers are not asserted (they belong to the machine); what is: every section is in the document, the
plot is a real PNG that matplotlib drew, and the write arms wrote equal file counts, without which the
write comparison would compare different work.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from bench import run as bench_run

pytestmark = pytest.mark.spark

SECTIONS = (
    "## Machine",
    "## Targets",
    "## Write overhead",
    "## Planning",
    "## Checker",
    "## Iceberg metadata emission",
    "## Iceberg deletion vectors",
    "## Iceberg sync and first conversion vs pyiceberg",
    "## Iceberg history as a table ages",
    "## The session guard: SQL INSERT, guarded vs guard off",
    "## Many writers in one driver",
    "## Where a target is missed, and why",
)


def test_quick_run_writes_every_section_and_a_png(spark, tmp_path: Path) -> None:
    results = bench_run.run(spark, quick=True, smoke=True, out=tmp_path, progress=False, runs=1)

    text = (tmp_path / "benchmarks.md").read_text(encoding="utf-8")
    for heading in SECTIONS:
        assert heading in text, heading
    for key in ("CPU", "RAM", "OS", "Python", "Java", "Spark", "Delta", "git commit", "date"):
        assert f"| {key} |" in text, key
    assert "files/s" in text
    assert "plan + validate, no JVM" in text
    alone = {(r.profile, r.leaves) for r in results.planning_alone}
    assert alone == {(r.profile, r.leaves) for r in results.planning}  # measured in its own process
    assert "compat_write v3" in text and "compat_write writer-v1" in text and "plain delta" in text

    png = (tmp_path / "benchmarks.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])  # IHDR follows the signature
    assert width >= 800 and height >= 600
    assert len(png) > 20_000  # four panels of lines and bars, not an empty canvas

    assert spark.sparkContext._jsc is not None  # the shared session is still running
    cells = results.write.cells
    assert {c.rows for c in cells} == {1, 10_000} and {c.partitioned for c in cells} == {True, False}
    for cell in cells:
        assert cell.equal_files, cell.files
        assert len(cell.arms) == 5
        assert all(len(s) == results.write.runs == 1 for s in cell.samples.values())
    unpartitioned = next(c for c in cells if c.rows == 10_000 and not c.partitioned)
    assert unpartitioned.file_count == 4

    # what smoke=True asked for is what ran: SMOKE's sizes, no warm-up, and the document says so
    smoke = bench_run.SMOKE
    assert results.smoke and "**Smoke run" in text
    assert [c.size for c in results.checker] == smoke.checker_sizes
    assert results.footers.files == smoke.footer_files
    assert [r.size for r in results.iceberg] == smoke.iceberg_sizes
    assert [r.size for r in results.iceberg_sync] == smoke.iceberg_sync_sizes
    assert results.deletion_vectors is not None and results.deletion_vectors.files == smoke.dv_files
    assert results.storage is not None and results.storage.files == smoke.storage_files
    assert [r.files for r in results.footers_executors] == [smoke.executor_footer_files] * 2
    assert [g.rows for g in results.guard] == smoke.guard_rows
    assert all(len(samples) == 1 for g in results.guard for samples in g.samples.values())
    assert any(m.startswith("write: 1 rows unpartitioned, run 1/1") for m in results.progress)
    assert [m for m in results.progress if "warm-up" in m] == []
