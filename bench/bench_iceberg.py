"""Time ``write_iceberg_metadata`` on the checker benchmark's synthetic logs, with real data files.

Used by ``bench.run`` (``bin/bench``). The emitter reads more than the log: before converting, it
checks the latest version with the rule catalog and the facts of every live data file, so it opens
every file's Parquet footer (field ids, INT64 timestamps, materialised partition columns, row count).
The logs are therefore those of ``bench_checker.build`` (a checkpoint plus three commits, ``size`` live
AddFiles) with ``with_data=True``: a real compliant 1,000-row Parquet file behind every AddFile
(hard links of one file per subdirectory). Each run starts from no Iceberg metadata (``metadata/`` is
deleted before it), so every run is a first, full conversion: one snapshot for the checkpoint's
version and one per later commit, each writing its manifests and manifest list.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from icecompat_writer.iceberg import METADATA_DIR, IcebergResult, write_iceberg_metadata

from .bench_checker import build


@dataclass(frozen=True)
class IcebergRow:
    """One log size: the median emission time and what the emitter reported."""

    size: int
    median_s: float
    snapshots: int
    data_files: int
    build_s: float

    @property
    def files_per_s(self) -> float:
        return self.size / self.median_s


def measure(
    sizes: list[int],
    runs: int,
    *,
    workdir: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[IcebergRow]:
    """Per size: build the table once, an untimed conversion (first size only), ``runs`` timed ones."""
    say = progress or (lambda _msg: None)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_iceberg_", dir=workdir) as tmp:
        for size in sizes:
            root = Path(tmp) / f"t{size}"
            t0 = time.perf_counter()
            build(root, size, with_data=True)
            built = time.perf_counter() - t0
            samples = []
            result: IcebergResult | None = None
            # A warm-up conversion for the first size only: later sizes run the same code, warm.
            for run in range(0 if size == sizes[0] else 1, runs + 1):
                say(f"iceberg: {size:,} AddFiles, " + ("warm-up" if run == 0 else f"run {run}/{runs}"))
                shutil.rmtree(root / METADATA_DIR, ignore_errors=True)
                t0 = time.perf_counter()
                result = write_iceberg_metadata(root)
                elapsed = time.perf_counter() - t0
                if run:
                    samples.append(elapsed)
            assert result is not None
            files = _live_files(result)
            assert files == size, f"the emitter converted {files} live files, expected {size}"
            rows.append(IcebergRow(size, statistics.median(samples), len(result.snapshots), files, built))
            shutil.rmtree(root)
    return rows


def _live_files(result: IcebergResult) -> int:
    """Live data files after the conversion: every snapshot's added files minus its deleted ones."""
    return sum(s.added_files - s.deleted_files for s in result.snapshots)
