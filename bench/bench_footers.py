"""Footers per second on S3 with request latency: read by the driver's threads, or by Spark executors.

One table of small compliant data files (the synthetic tables of tests/cli/synthetic.py, one commit) is
uploaded to a moto S3 server on 127.0.0.1. Between the readers and the server sits a TCP relay that
holds every request for a fixed latency before passing it on (a real S3 request takes tens of
milliseconds; moto on loopback takes about one), so the figures show how each reader overlaps latency.
The same :class:`~icecompat_writer.evidence.file_reads.FooterJob` (every live file, sizes from one
listing) is read in turns by :func:`~icecompat_writer.evidence.file_reads.read_in_threads` (one pool
of 16 threads in this process) and by :class:`~icecompat_writer.jvm.footers.ExecutorFooterReader`
(one Spark job; each task reads its slice with its own pool), and both must return the same facts.
Only the footer reads are timed (the log and the listing are read once, outside).

The store is reached through a ``FileIO`` built from ``fs.s3a.*`` keys only (no AWS environment): the
executors get the endpoint and the credentials from the driver, inside the task.

Run alone with ``.venv/bin/python -m bench.bench_footers [--files N] [--runs N] [--latency-ms N]
[--write]``; ``--write`` replaces the section in docs/benchmarks.md. ``bin/bench`` runs it with its
session (local, two cores here: the executors are two Python workers on the same machine as the
driver and the server).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.docsections import replace_section

SECTION = "## Footers on the executors: S3 with request latency"


@dataclass(frozen=True)
class ExecutorRow:
    files: int
    runs: int
    latency_ms: int
    cores: int
    tasks: int
    driver_s: list[float]
    executors_s: list[float]
    load: str = ""  # the machine's load average (1, 5, 15 min) when the runs ended

    @property
    def driver_rate(self) -> float:
        return self.files / statistics.median(self.driver_s)

    @property
    def executors_rate(self) -> float:
        return self.files / statistics.median(self.executors_s)


class LatencyRelay:
    """A TCP relay on 127.0.0.1 that delays every chunk a client sends by ``delay`` seconds.

    An S3 request (GET, HEAD, LIST) arrives as one chunk on a kept-alive connection, so each request
    waits ``delay`` once; connections are relayed concurrently, as a network would.
    """

    def __init__(self, target_port: int, delay: float) -> None:
        self.target_port = target_port
        self.delay = delay
        self.loop = asyncio.new_event_loop()
        self.port = 0
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="latency-relay", daemon=True)
        self._thread.start()
        self._ready.wait(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self.loop.run_forever()
        server.close()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delayed: bool) -> None:
        try:
            while data := await reader.read(65536):
                if delayed and self.delay:
                    await asyncio.sleep(self.delay)
                writer.write(data)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def _handle(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        server_r, server_w = await asyncio.open_connection("127.0.0.1", self.target_port)
        await asyncio.gather(self._pipe(client_r, server_w, True), self._pipe(server_r, client_w, False))

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)


@contextmanager
def _no_aws_environment() -> Iterator[None]:
    """The readers get the store only from the FileIO's settings (what reaches the executors)."""
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("AWS_")}
    try:
        yield
    finally:
        os.environ.update(saved)


def measure(
    spark: Any,
    files: int = 2000,
    runs: int = 3,
    latencies_ms: Sequence[int] = (20, 100),
    progress: Callable[[str], None] = print,
    *,
    warmup: bool = True,
) -> list[ExecutorRow]:
    """The section's measurement (module docstring), on ``spark``'s executors: a row per latency."""
    from icecompat_writer import storage
    from icecompat_writer.deltalog import read_snapshot
    from icecompat_writer.evidence.live_files import footer_job
    from icecompat_writer.jvm.footers import ExecutorFooterReader
    from tests.cli.synthetic import build_table
    from tests.objectstores import start_s3_server

    with tempfile.TemporaryDirectory(prefix="bench_footers_") as tmp:
        base = Path(tmp)
        root = base / "t"
        progress(f"footers on executors: building a {files}-file table on disk")
        build_table(root, "v3", files=files, rows_per_file=10)
        server = start_s3_server(base)
        relay = LatencyRelay(server.port, 0.0)
        rows: list[ExecutorRow] = []
        try:
            bucket = server.new_bucket("bench")
            progress(f"footers on executors: uploading {files} files to the local S3 server")
            server.upload_dir(root, bucket, "warehouse/t")
            io = storage.ObjectStoreFileIO(
                {
                    "fs.s3a.endpoint": f"http://127.0.0.1:{relay.port}",
                    "fs.s3a.access.key": server.access_key,
                    "fs.s3a.secret.key": server.secret_key,
                    "fs.s3a.endpoint.region": server.region,
                    "fs.s3a.path.style.access": "true",
                    "fs.s3a.connection.ssl.enabled": "false",
                }
            )
            with _no_aws_environment():
                snapshot = read_snapshot(f"s3a://{bucket}/warehouse/t", io=io)
                job = footer_job(snapshot, snapshot.add_files)
                executors = ExecutorFooterReader(spark, "true")
                for latency_ms in latencies_ms:
                    relay.delay = latency_ms / 1000
                    rows.append(_runs(job, executors, files, runs, latency_ms, progress, warmup))
        finally:
            relay.stop()
            server.stop()
    return rows


def _runs(
    job: Any,
    executors: Any,
    files: int,
    runs: int,
    latency_ms: int,
    progress: Callable[[str], None],
    warmup: bool,
) -> ExecutorRow:
    """Interleaved timed reads of ``job`` by the driver's threads and by ``executors``."""
    from icecompat_writer.evidence.file_reads import read_in_threads

    if warmup:
        progress(f"footers on executors, {latency_ms} ms: warm-up of both readers")
        assert list(executors(job)) == list(read_in_threads(job))
    driver_s: list[float] = []
    executors_s: list[float] = []
    for run in range(runs):
        progress(f"footers on executors, {latency_ms} ms: run {run + 1}/{runs}")
        t0 = time.perf_counter()
        here = list(read_in_threads(job))
        driver_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        there = list(executors(job))
        executors_s.append(time.perf_counter() - t0)
        assert there == here and sum(f is not None for f, _ in here) == files
    cores = int(executors.spark.sparkContext.defaultParallelism)
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    return ExecutorRow(files, runs, latency_ms, cores, min(files, cores * 4), driver_s, executors_s, load)


def section(rows: Sequence[ExecutorRow]) -> list[str]:
    row = rows[0]
    lines = [
        SECTION,
        "",
        f"`bench/bench_footers.py`: the footers of one table of {row.files:,} small compliant data files "
        "on a moto S3 server on 127.0.0.1, behind a relay that adds a fixed latency to every request, "
        "read by the driver's pool of 16 threads and by one Spark job on the session's executors "
        f"({row.cores} cores, {row.tasks} tasks, each reading its slice with its own pool of 16 threads); "
        f"{row.runs} interleaved runs after one warm-up of each, medians. Both readers return the same "
        "facts (asserted on every run). Only the footer reads are timed.",
        "",
        "| latency per request | driver threads | executors | bound of one pool of 16 |",
        "| --- | --- | --- | --- |",
    ]
    for r in rows:
        bound = 16 * 1000 / r.latency_ms
        lines.append(
            f"| {r.latency_ms} ms | {r.driver_rate:,.0f} footers/s ({statistics.median(r.driver_s):.2f} s) "
            f"| {r.executors_rate:,.0f} footers/s ({statistics.median(r.executors_s):.2f} s) "
            f"| {bound:,.0f} footers/s |"
        )
    lines += [
        "",
        "With a fixed latency per request one pool of 16 threads reads at most 16 / latency footers a "
        "second; the executors' job adds its scheduling and sends the facts back, then reads with as "
        "many pools as the cluster runs tasks at once, so its bound is 16 x cores / latency and grows "
        "with the cluster, while the driver keeps only the facts. Here the executors are two Python "
        "workers on the same two cores as the driver and the moto server (a Python server whose own CPU "
        "per request caps every reader: at a short latency both readers wait for that CPU, not for the "
        "network), on a machine shared with other work (load average "
        f"{row.load or 'not recorded'} at the end of the first row's runs). The figures show that the "
        "job runs and returns the driver's facts, and what it costs on one small machine; they are not "
        "what a cluster reads. `auto` sends only object-store tables of more than 10,000 footers to the "
        "executors (`spark.icecompat.footers.executorThreshold`), where the job's fixed costs are small "
        "against the reads.",
        "",
    ]
    for r in rows:
        lines.append(
            f"Samples at {r.latency_ms} ms (s): driver {', '.join(f'{s:.2f}' for s in r.driver_s)}; "
            f"executors {', '.join(f'{s:.2f}' for s in r.executors_s)}."
        )
    return [*lines, ""]


def write_section(rows: Sequence[ExecutorRow], doc: Path) -> None:
    """Put the section into ``doc``, replacing an earlier one (up to the next ``## `` heading)."""
    replace_section(doc, SECTION, section(rows))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--latency-ms", type=int, nargs="+", default=[20, 100])
    parser.add_argument("--write", action="store_true", help="replace the section in docs/benchmarks.md")
    args = parser.parse_args(argv)
    import icecompat_writer

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # Python tasks run this interpreter
    spark = icecompat_writer.session("icecompat-bench-footers", **{"spark.ui.enabled": "false"})
    try:
        rows = measure(
            spark,
            args.files,
            args.runs,
            args.latency_ms,
            progress=lambda m: print(m, file=sys.stderr, flush=True),
        )
    finally:
        spark.stop()
    print("\n".join(section(rows)))
    if args.write:
        write_section(rows, Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md")


if __name__ == "__main__":
    main()
