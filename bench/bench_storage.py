"""``icecompat check --files all`` of one 2,000-file table on a local S3 server and on local disk.

The table is built once on disk (compliant Parquet files with field ids, one commit: the synthetic
tables of tests/cli/synthetic.py), uploaded to a moto S3 server started on 127.0.0.1 for the run,
then checked in turns from disk and from ``s3a://`` through the standard AWS environment variables,
the way a user runs the command. Requests are counted from the server's access log during one extra
run: LIST, HEAD, ranged GET (206) and whole GET (200). Goals: at most 3x the local time, at most one
ranged read per footer.

Run alone with ``.venv/bin/python -m bench.bench_storage [--files N] [--runs N] [--write]``;
``--write`` replaces the object-storage section of docs/benchmarks.md with the result.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.docsections import replace_section

SECTION = "## Object storage: check on S3 against local disk"


@dataclass(frozen=True)
class StorageRow:
    files: int
    runs: int
    local_s: list[float]
    s3_s: list[float]
    requests: dict[str, int]

    @property
    def local_median(self) -> float:
        return statistics.median(self.local_s)

    @property
    def s3_median(self) -> float:
        return statistics.median(self.s3_s)

    @property
    def ratio(self) -> float:
        return self.s3_median / self.local_median

    @property
    def ranged_per_footer(self) -> float:
        return (
            self.requests.get("data file ranged GET", 0) + self.requests.get("data file whole GET", 0)
        ) / self.files


@contextlib.contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _check(target: str) -> float:
    from icecompat_writer.cli.main import main

    out = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["check", target, "--files", "all", "--json"])
    elapsed = time.perf_counter() - t0
    if code != 0:
        raise RuntimeError(f"icecompat check {target} exited {code}: {out.getvalue()[:2000]}")
    return elapsed


def _kind(method: str, path: str, status: int) -> str:
    if method == "GET" and "list-type=2" in path:
        return "LIST"
    where = "log" if "/_delta_log/" in path else "data file"
    if method == "GET":
        return f"{where} ranged GET" if status == 206 else f"{where} whole GET"
    return f"{where} {method}"


def measure(
    files: int = 2000, runs: int = 3, progress: Callable[[str], None] = print, *, warmup: bool = True
) -> StorageRow:
    """The section's measurement (module docstring); ``warmup=False``: no warm-up check of either path."""
    from icecompat_writer import storage
    from tests.cli.synthetic import build_table
    from tests.objectstores import start_s3_server

    with tempfile.TemporaryDirectory(prefix="bench_storage_") as tmp:
        base = Path(tmp)
        root = base / "t"
        progress(f"storage: building a {files}-file table on disk")
        build_table(root, "v3", files=files, rows_per_file=100)
        server = start_s3_server(base)
        try:
            bucket = server.new_bucket("bench")
            progress(f"storage: uploading {files} files to the local S3 server")
            server.upload_dir(root, bucket, "warehouse/t")
            uri = f"s3a://{bucket}/warehouse/t"
            local_s: list[float] = []
            s3_s: list[float] = []
            # the environment for a process without Spark; the per-bucket route for a running session
            with _environ(server.environ()), server.routed(bucket):
                if warmup:
                    progress("storage: warm-up of both paths")
                    _check(str(root))  # imports, connections
                    _check(uri)
                for run in range(runs):
                    progress(f"storage: run {run + 1}/{runs}")
                    local_s.append(_check(str(root)))
                    s3_s.append(_check(uri))
                mark = server.request_mark()
                storage.clear_cache()  # the counted run opens its connections like a new process
                _check(uri)
                counted = Counter(_kind(*r) for r in server.requests_since(mark))
        finally:
            server.stop()
    return StorageRow(files, runs, local_s, s3_s, dict(counted))


def section(row: StorageRow) -> list[str]:
    met_time = row.ratio <= 3.0
    met_reads = row.ranged_per_footer <= 1.0
    req = ", ".join(f"{k} {v:,}" for k, v in sorted(row.requests.items()))
    return [
        SECTION,
        "",
        "`bench/bench_storage.py`: `icecompat check --files all` of one table of "
        f"{row.files:,} compliant data files (one commit), from local disk and from `s3a://` on a moto S3 "
        "server on 127.0.0.1 (reached through `AWS_ENDPOINT_URL` and the other standard AWS variables), "
        f"{row.runs} interleaved runs each after one warm-up, medians. Requests counted from the server's "
        "access log during one more run with fresh connections.",
        "",
        "| | local disk | S3 (moto, 127.0.0.1) | ratio | goal |",
        "| --- | --- | --- | --- | --- |",
        f"| check, {row.files:,} footers | {row.local_median:.2f} s | {row.s3_median:.2f} s | "
        f"{row.ratio:.2f}x | at most 3x: {'met' if met_time else 'MISSED'} |",
        f"| ranged reads per footer | | {row.ranged_per_footer:.2f} | | at most 1: "
        f"{'met' if met_reads else 'MISSED'} |",
        "",
        f"Requests of one S3 check: {req}. The log is listed once and the table once (the listing gives "
        "every object's size), then each footer costs one ranged GET of the object's last 64 KiB and no "
        "HEAD; each log file read costs a HEAD and a GET (pyarrow's whole-file reader asks the size "
        "first). Footers are read by a pool of at most 16 threads. moto is a Python server: on this "
        "machine most of the S3 time is the server's own CPU per request, which a real S3 endpoint "
        "does not share with the client.",
        "",
        f"Samples (s): local {', '.join(f'{s:.2f}' for s in row.local_s)}; "
        f"S3 {', '.join(f'{s:.2f}' for s in row.s3_s)}.",
        "",
    ]


def write_section(row: StorageRow, doc: Path) -> None:
    """Put the section into ``doc``, replacing an earlier one (up to the next ``## `` heading)."""
    replace_section(doc, SECTION, section(row))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="replace the section in docs/benchmarks.md")
    args = parser.parse_args(argv)
    row = measure(args.files, args.runs, progress=lambda m: print(m, file=sys.stderr, flush=True))
    print("\n".join(section(row)))
    if args.write:
        write_section(row, Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md")


if __name__ == "__main__":
    main()
