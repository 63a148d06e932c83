"""Choosing a table's FileIO, and reading many files at once.

:func:`io_for` is the one place that decides, from a table's root, which :class:`~.fileio.FileIO`
reaches its files; the edges (a write, an upgrade, a check, a conversion, the command line, the rule
service) call it once and hand the object down. :func:`map_bounded` and :func:`footer_readers` size
the thread pools that read many footers or deletion vectors: request latency on an object store,
the GIL on a local disk.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from .fileio import FileIO
from .local_io import LocalFileIO
from .object_io import ObjectStoreFileIO
from .uri import Location, ObjectPath, parse_location

__all__ = [
    "LOCAL_READERS",
    "LOCAL_SERIAL_MAX",
    "MAX_PARALLEL_READS",
    "footer_readers",
    "io_for",
    "map_bounded",
]

MAX_PARALLEL_READS = 16
"""Upper bound of concurrent reads on an object store (footers): enough to hide request latency,
few enough not to be throttled or exhaust the client's connection pool."""
LOCAL_READERS = min(os.cpu_count() or 1, 4)
"""Threads reading local footers: a local footer is a few page-cache reads and mostly Python decoding
under the GIL, where 16 threads measured twice as slow as one."""
LOCAL_SERIAL_MAX = 32
"""Up to this many local footers are read in the calling thread, without a pool (about 1 ms each): in
a process that had just converted 100,000 files, starting a pool's two threads took 1.6 s."""

T = TypeVar("T")
R = TypeVar("R")


def io_for(root: str | os.PathLike[str] | Location, hadoop: Mapping[str, str] | None = None) -> FileIO:
    """The FileIO that reaches the table at ``root``: local files, or its object store.

    ``hadoop``: a Spark session's Hadoop settings (what the session guard's driver hands over with a
    request), used before the environment; None: the running session's settings (installed by the
    package entry, :mod:`icecompat_writer.driver_settings`), else the environment. A local table
    needs none. Raises :class:`~.uri.UnsupportedSchemeError` for a scheme no store serves.
    """
    if isinstance(parse_location(root), ObjectPath):
        return ObjectStoreFileIO(hadoop)
    return LocalFileIO()


def footer_readers(io: FileIO, count: int) -> int:
    """How many threads :func:`map_bounded` should use to read ``count`` footers through ``io``."""
    if io.remote:
        return MAX_PARALLEL_READS
    return LOCAL_READERS if count > LOCAL_SERIAL_MAX else 1


def map_bounded(fn: Callable[[T], R], items: Sequence[T], workers: int = MAX_PARALLEL_READS) -> Iterator[R]:
    """``fn`` over ``items`` in a pool of at most ``workers`` threads, results in input order.

    pyarrow releases the GIL during requests, so threads overlap the latency of object-store reads.
    """
    if len(items) <= 1 or workers <= 1:
        yield from map(fn, items)
        return
    with ThreadPoolExecutor(max_workers=min(workers, len(items)), thread_name_prefix="icecompat-io") as pool:
        yield from pool.map(fn, items)
