"""Time the Iceberg emitter on a table whose every data file has a deletion vector.

Used by ``bench.run``; alone: ``.venv/bin/python -m bench.bench_deletion_vectors [--files N] [--runs R]``.

The table is the checker benchmark's synthetic log with real data files (``bench_checker.build``,
``files`` live AddFiles, each a compliant 1,000-row Parquet file), then two commits as delta-spark
writes them: one enabling deletion vectors (protocol feature ``deletionVectors``, the table property),
and one DELETE that gives every file a DV (``remove`` + ``add`` with a ``u`` descriptor), all DVs in one
Delta DV file (version byte, then each DV framed: length, magic, portable roaring bitmap, CRC-32).

Measured side by side in one process, each a median of ``runs`` (one untimed warm-up conversion first):

- ``baseline``: the first conversion of the same table before its DV commits (metadata deleted first);
- ``first``: the first conversion with the DV commits: every DV read, verified and copied into a Puffin
  file, one delete-manifest entry per data file;
- ``incremental``: one more DELETE commit giving 10 files a new DV, converted on top of the first
  conversion's metadata (restored before each run): the 10 old DVs leave, 10 new ones come in.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import struct
import tempfile
import time
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from icecompat_writer.deltalog import read_snapshot
from icecompat_writer.deltalog.deletion_vectors import DV_MAGIC, z85_encode
from icecompat_writer.iceberg import METADATA_DIR, write_iceberg_metadata
from icecompat_writer.storage import io_for
from tests.deltalog import logbuilder as lb

from .bench_checker import ROWS_PER_FILE, build

INCREMENTAL_DVS = 10


@dataclass(frozen=True)
class DvRow:
    """Medians (s) of the three conversions for one table size."""

    files: int
    baseline_s: float
    first_s: float
    incremental_s: float
    puffin_bytes: int
    build_s: float

    @property
    def first_ratio(self) -> float:
        return self.first_s / self.baseline_s

    @property
    def incremental_ratio(self) -> float:
        return self.incremental_s / self.first_s


def _dv_data(positions: list[int]) -> bytes:
    """Magic + a portable 64-bit roaring bitmap of positions below 65,536 (one array container)."""
    bitmap = struct.pack("<IIHHI", 12346, 1, 0, len(positions) - 1, 4 + 4 + 4 + 4)
    bitmap += b"".join(struct.pack("<H", p) for p in sorted(positions))
    return struct.pack("<I", DV_MAGIC) + struct.pack("<QI", 1, 0) + bitmap


def _dv_file(root: Path, datas: list[bytes]) -> tuple[str, list[int]]:
    """Write one Delta DV file at the table root; its Z85 UUID and each DV's offset."""
    dv_uuid = uuid.uuid4()
    content, offsets = bytearray(b"\x01"), []
    for d in datas:
        offsets.append(len(content))
        content += struct.pack(">I", len(d)) + d + struct.pack(">I", zlib.crc32(d))
    (root / f"deletion_vector_{dv_uuid}.bin").write_bytes(bytes(content))
    return z85_encode(dv_uuid.bytes), offsets


def _delete_commit(root: Path, version: int, adds: list[Any], salt: int) -> None:
    """A DELETE as delta-spark commits it with DVs: per file, remove the old logical file, add the new."""
    deleted = [
        sorted({(i * 7 + salt) % ROWS_PER_FILE, (i * 13 + salt + 1) % ROWS_PER_FILE})
        for i in range(len(adds))
    ]
    datas = [_dv_data(positions) for positions in deleted]
    encoded, offsets = _dv_file(root, datas)
    actions: list[dict[str, Any]] = [lb.commit_info("DELETE")]
    for add, positions, data, offset in zip(adds, deleted, datas, offsets, strict=True):
        old = add.deletion_vector.to_json() if add.deletion_vector is not None else None
        dv = {"storageType": "u", "pathOrInlineDv": encoded, "offset": offset, "sizeInBytes": len(data),
              "cardinality": len(positions)}  # fmt: skip
        actions.append(lb.remove(add.path, deletion_vector=old))
        actions.append({"add": {**add.to_json(), "deletionVector": dv}})
    lb.LogBuilder(root).commit(version, actions)


def _enable_dvs(root: Path, version: int) -> None:
    snapshot = read_snapshot(root, io=io_for(root))
    protocol = snapshot.protocol.to_json()
    protocol["readerFeatures"] = sorted({*protocol.get("readerFeatures", []), "deletionVectors"})
    protocol["writerFeatures"] = sorted({*protocol.get("writerFeatures", []), "deletionVectors"})
    metadata = snapshot.metadata.to_json()
    metadata["configuration"] = {**metadata.get("configuration", {}), "delta.enableDeletionVectors": "true"}
    lb.LogBuilder(root).commit(version, [lb.commit_info("SET TBLPROPERTIES"), {"protocol": protocol},
                                         {"metaData": metadata}])  # fmt: skip


def _timed(fn: Callable[[], Any], runs: int, before: Callable[[], None], warmup: bool) -> float:
    samples = []
    for run in range(0 if warmup else 1, runs + 1):
        before()
        t0 = time.perf_counter()
        fn()
        if run:  # run 0 warms up
            samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def measure(
    files: int,
    runs: int,
    *,
    workdir: Path | None = None,
    progress: Callable[[str], None] | None = None,
    warmup: bool = True,
) -> DvRow:
    """The three conversions of the module docstring; ``warmup=False``: no warm-up conversion."""
    say = progress or (lambda _msg: None)
    with tempfile.TemporaryDirectory(prefix="bench_dv_", dir=workdir) as tmp:
        root = Path(tmp) / "t"
        t0 = time.perf_counter()
        build(root, files, with_data=True)
        built = time.perf_counter() - t0
        meta = root / METADATA_DIR
        saved = Path(tmp) / "saved-metadata"

        def fresh() -> None:
            shutil.rmtree(meta, ignore_errors=True)

        say(
            f"deletion vectors: {files:,} files, baseline conversion"
            + (" after a warm-up one" if warmup else "")
        )
        baseline = _timed(lambda: write_iceberg_metadata(root), runs, fresh, warmup=warmup)

        version = read_snapshot(root, io=io_for(root)).version
        _enable_dvs(root, version + 1)
        _delete_commit(root, version + 2, list(read_snapshot(root, io=io_for(root)).add_files), salt=0)
        say(f"deletion vectors: {files:,} files, first conversion with {files:,} DVs")
        first = _timed(lambda: write_iceberg_metadata(root), runs, fresh, warmup=False)
        fresh()
        write_iceberg_metadata(root)
        shutil.copytree(meta, saved)
        puffin_bytes = sum(p.stat().st_size for p in meta.glob("*.puffin"))

        live = sorted(read_snapshot(root, io=io_for(root)).add_files, key=lambda a: a.path)
        _delete_commit(
            root, version + 3, live[:: max(1, len(live) // INCREMENTAL_DVS)][:INCREMENTAL_DVS], salt=5
        )

        def restore() -> None:
            fresh()
            shutil.copytree(saved, meta)

        say(f"deletion vectors: {files:,} files, incremental conversion of {INCREMENTAL_DVS} new DVs")
        incremental = _timed(lambda: write_iceberg_metadata(root), runs, restore, warmup=False)
        result = write_iceberg_metadata(root)  # nothing new: the last timed run committed it
        assert not result.written and result.delta_version == version + 3
    return DvRow(files, baseline, first, incremental, puffin_bytes, built)


def section(row: DvRow, runs: int) -> list[str]:
    """The report's section for ``row``."""
    return [
        "## Iceberg deletion vectors",
        "",
        f"`write_iceberg_metadata(root)` on the Iceberg benchmark's synthetic table of {row.files:,} data "
        f"files, then a commit enabling deletion vectors and a DELETE giving every file a DV (all "
        f"{row.files:,} DVs in one Delta DV file), median of {runs} run(s) after one warm-up conversion. "
        "*Baseline*: the first conversion of the table before its DV commits. *First*: the first "
        f"conversion with them (every DV read, verified and copied into a Puffin file of "
        f"{row.puffin_bytes:,} bytes, one delete-manifest entry per file). *Incremental*: one more "
        f"DELETE giving {INCREMENTAL_DVS} files a new DV, converted on top of the first conversion: the "
        "DVs themselves cost little there; most of the run reads the current manifests back and rewrites "
        "the data manifest and the delete manifest that hold the re-added files (one entry per table "
        "file each, as the synthetic table keeps all its files in one manifest).",
        "",
        "| data files | DVs | baseline | first | first / baseline | incremental (10 DVs) "
        "| incremental / first |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        f"| {row.files:,} | {row.files:,} | {row.baseline_s:.2f} s | {row.first_s:.2f} s | "
        f"{row.first_ratio:.2f} | {row.incremental_s:.2f} s | {row.incremental_ratio:.2f} |",
        "",
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    row = measure(args.files, args.runs, progress=lambda m: print(m, flush=True))
    print("\n".join(section(row, args.runs)))


if __name__ == "__main__":
    main()
