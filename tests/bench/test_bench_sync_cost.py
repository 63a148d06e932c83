"""The sync-cost cell of bench/bench_iceberg.py runs end to end on a small table: both arms take the
path they name (from the record, and replaying the log), each in its own process, and the section
shows every run. Numbers are not asserted (they belong to the machine)."""

from __future__ import annotations

from pathlib import Path

from bench.bench_iceberg import RECORD_SYNC, REPLAY_SYNC, cost_section, measure_sync_cost


def test_the_sync_cost_cell_measures_both_arms(tmp_path: Path) -> None:
    rows = measure_sync_cost([400], 1, workdir=tmp_path)
    (row,) = rows
    for arm in (RECORD_SYNC, REPLAY_SYNC):
        assert len(row.seconds[arm]) == 1 and row.seconds[arm][0] > 0
        assert row.peak_mib[arm][0] >= row.base_mib[arm][0] > 0
    text = "\n".join(cost_section(rows))
    assert "| 400 | 1 |" in text and f"400 files, {REPLAY_SYNC}:" in text
