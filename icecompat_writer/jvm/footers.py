"""Reading a table's Parquet footers on a Spark session's executors, where the data is.

The checker, the Iceberg conversion and the upgrade read one footer per live data file. On a driver
that is one pool of threads (:func:`~icecompat_writer.evidence.file_reads.read_in_threads`); a table
of millions of files on S3 is better read by the cluster. :class:`ExecutorFooterReader` is the
:class:`~icecompat_writer.evidence.file_reads.FooterReader` that does so: the driver's
:class:`~icecompat_writer.evidence.file_reads.FooterJob` is cut into slices
(``sparkContext.parallelize(files, n).mapPartitions(read_slice)``), each task reads its slice with the
same function the driver uses (pyarrow, a pool of threads per task) and sends back only the facts:
row count, writer, key-value metadata and the schema tree, each distinct tree and metadata map once
per slice. The driver rebuilds exactly the :class:`~icecompat_writer.facts.ParquetFooter` values and
findings it would have read itself.

The store settings reach the executors resolved: the driver's options for the table's bucket (the
session's Hadoop keys, else the driver's environment) travel inside the task as a :class:`PinnedIO`,
so an executor reads with the credentials and endpoint the driver would use. They are never logged:
neither the reader nor the pinned settings print them.

Whether a job goes to the executors is the session's setting ``spark.icecompat.footers.executors``:
``auto`` (the default: a table on an object store with more files to read than
``spark.icecompat.footers.executorThreshold``, 10,000 unless set), ``true`` or ``false``
(:func:`use_executors`). Executors import this module by
name, so the package must be on their Python path (installed, or through ``spark.executorEnv.PYTHONPATH``
or ``--py-files``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING

from icecompat_writer.errors import SessionConfigError
from icecompat_writer.evidence.file_reads import (
    CheckFinding,
    FileClaim,
    FileRead,
    FooterJob,
    read_in_threads,
)
from icecompat_writer.facts import ParquetField, ParquetFooter
from icecompat_writer.storage import (
    FileIO,
    LocalFileIO,
    Location,
    ObjectPath,
    ObjectStoreFileIO,
    StoreOptions,
    parse_location,
)
from icecompat_writer.storage.fileio import PathLike

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "DEFAULT_THRESHOLD",
    "EXECUTORS_KEY",
    "JOB_GROUP",
    "MODES",
    "THRESHOLD_KEY",
    "ExecutorFooterReader",
    "PinnedIO",
    "read_slice",
    "unpack",
    "use_executors",
]

EXECUTORS_KEY = "spark.icecompat.footers.executors"
THRESHOLD_KEY = "spark.icecompat.footers.executorThreshold"
DEFAULT_THRESHOLD = 10_000
"""``auto`` reads on the executors above this many footers: below it a Spark job's scheduling costs
more than the driver's threads take (about 1,000 footers a second on S3 from one driver)."""
MODES = ("auto", "true", "false")
JOB_GROUP = "icecompat-footers"
"""The Spark job group of every footer job (what the UI and the status tracker show)."""
TASKS_PER_CORE = 4
"""Slices per core of the cluster (``defaultParallelism``): small enough slices that a slow
executor does not hold the job up, few enough that scheduling stays cheap."""

_Slice = tuple[
    list[tuple[ParquetField, ...]],
    list[dict[str, str]],
    list[tuple[tuple[int, str | None, int, int] | None, CheckFinding | None]],
]


def use_executors(mode: str, threshold: int, files: int, remote: bool = True) -> bool:
    """Whether ``files`` footers are read on the executors under ``mode`` (``auto`` | ``true`` |
    ``false``) and ``threshold``: ``auto`` sends only jobs of more than ``threshold`` files of a
    table on an object store (``remote``). A local footer costs a few system calls, with no latency
    to overlap, and a path on the driver's disk need not exist on an executor's: only ``true`` sends
    a local table (one on a file system every executor mounts)."""
    if mode == "true":
        return True
    if mode == "false":
        return False
    return remote and files > threshold


def parse_mode(text: str | None) -> str:
    """``spark.icecompat.footers.executors`` as one of :data:`MODES` (unset: ``auto``)."""
    mode = "auto" if text is None or not text.strip() else text.strip().lower()
    if mode not in MODES:
        raise SessionConfigError(f"{EXECUTORS_KEY} takes auto, true or false, not {text!r}")
    return mode


def parse_threshold(text: str | None) -> int:
    """``spark.icecompat.footers.executorThreshold`` as a number of files >= 0 (unset: the default)."""
    if text is None or not text.strip():
        return DEFAULT_THRESHOLD
    try:
        value = int(text.strip().replace("_", ""))
    except ValueError:
        value = -1
    if value < 0:
        raise SessionConfigError(f"{THRESHOLD_KEY} takes a number of files (0 or more), not {text!r}")
    return value


class PinnedIO(ObjectStoreFileIO):
    """An :class:`~icecompat_writer.storage.ObjectStoreFileIO` that reaches one table's store with
    options the driver resolved.

    Sent to executors inside a footer task: an executor has no session to ask and may have another
    environment, so it uses exactly the driver's options for the table's bucket (every file a reader
    opens lies under the table root). Another bucket resolves from no settings at all.
    """

    def __init__(self, root: ObjectPath, options: StoreOptions) -> None:
        super().__init__({})
        self._root = root
        self._pinned = options

    @classmethod
    def of(cls, io: FileIO, root: Location) -> FileIO:
        """``io``'s settings for ``root``'s store, resolved now (on the driver); a local table's
        files are read with a :class:`~icecompat_writer.storage.LocalFileIO` wherever the task runs."""
        if isinstance(io, ObjectStoreFileIO) and isinstance(root, ObjectPath):
            return cls(root, io.options(root))
        return LocalFileIO()

    def options(self, location: PathLike) -> StoreOptions:
        path = location if isinstance(location, ObjectPath) else parse_location(location)
        root = self._root
        if isinstance(path, ObjectPath) and (path.family, path.authority) == (root.family, root.authority):
            return self._pinned
        return super().options(location)

    def __repr__(self) -> str:  # the options hold credentials: never printed
        return f"PinnedIO({self._root.family})"


def read_slice(job: FooterJob, files: Iterable[tuple[FileClaim, int | None]]) -> Iterator[_Slice]:
    """What one Spark task runs: read its slice of ``job`` (in a pool of threads, as the driver would)
    and yield the facts once, each distinct schema tree and key-value map listed once."""
    trees: dict[tuple[ParquetField, ...], int] = {}
    metas: dict[tuple[tuple[str, str], ...], int] = {}
    rows: list[tuple[tuple[int, str | None, int, int] | None, CheckFinding | None]] = []
    for footer, finding in read_in_threads(job.with_files(list(files))):
        if footer is None:
            rows.append((None, finding))
            continue
        tree = trees.setdefault(footer.fields, len(trees))
        meta = metas.setdefault(tuple(footer.key_value_metadata.items()), len(metas))
        rows.append(((footer.num_rows, footer.created_by, tree, meta), finding))
    yield list(trees), [dict(m) for m in metas], rows


def unpack(slices: Iterable[_Slice]) -> Iterator[FileRead]:
    """The driver's side of :func:`read_slice`: footers rebuilt, equal trees shared across slices."""
    trees: dict[tuple[ParquetField, ...], tuple[ParquetField, ...]] = {}
    for slice_trees, slice_metas, rows in slices:
        local = [trees.setdefault(t, t) for t in slice_trees]
        metas = [MappingProxyType(m) for m in slice_metas]
        for row, finding in rows:
            if row is None:
                yield None, finding
                continue
            num_rows, created_by, tree, meta = row
            footer = ParquetFooter(
                num_rows=num_rows, fields=local[tree], created_by=created_by, key_value_metadata=metas[meta]
            )
            yield footer, finding


class ExecutorFooterReader:
    """A :class:`~icecompat_writer.evidence.file_reads.FooterReader` that sends big jobs to the
    executors of ``spark`` and reads the others in the driver's threads.

    ``mode`` and ``threshold`` are the settings' text (None: unset), checked when a job is read (so a
    malformed setting fails the read that uses it, inside whatever handles that read's errors, never
    a write that has committed already). ``tasks`` counts the Spark tasks its jobs ran.
    """

    def __init__(
        self, spark: SparkSession, mode: str | None = None, threshold: str | int | None = None
    ) -> None:
        self.spark = spark
        self.mode = mode
        self.threshold = threshold
        self.tasks = 0

    @classmethod
    def from_session(cls, spark: SparkSession, mode: str | None = None) -> ExecutorFooterReader:
        """The reader the session's settings ask for; ``mode`` (a command-line flag) wins over the
        session's ``spark.icecompat.footers.executors``."""
        conf = spark.conf
        chosen = mode if mode is not None else conf.get(EXECUTORS_KEY, None)
        return cls(spark, chosen, conf.get(THRESHOLD_KEY, None))

    def __repr__(self) -> str:
        return f"ExecutorFooterReader(mode={self.mode!r}, threshold={self.threshold!r})"

    def on_executors(self, files: int, remote: bool = True) -> bool:
        """Whether a job of ``files`` footers (of a table on an object store: ``remote``) goes to the
        executors (:func:`use_executors`); a session without a SparkContext (Spark Connect) reads on
        the driver. Raises :class:`~icecompat_writer.errors.SessionConfigError` for a malformed
        setting."""
        threshold = self.threshold if isinstance(self.threshold, int) else parse_threshold(self.threshold)
        if not files or not use_executors(parse_mode(self.mode), threshold, files, remote):
            return False
        try:
            self.spark.sparkContext  # noqa: B018 (Spark Connect has none: it raises)
        except Exception:
            return False
        return True

    def reads_here(self, files: int, remote: bool) -> bool:
        """The opposite of :meth:`on_executors` (what :func:`~icecompat_writer.evidence.file_reads.reads_here`
        asks)."""
        return not self.on_executors(files, remote)

    def __call__(self, job: FooterJob) -> Iterable[FileRead]:
        if not self.on_executors(len(job.files), job.io.remote):
            return read_in_threads(job)
        return self.read_on_executors(job)

    def read_on_executors(self, job: FooterJob) -> list[FileRead]:
        """One Spark job over slices of ``job``; the reads in the job's order."""
        sc = self.spark.sparkContext
        files: Sequence[tuple[FileClaim, int | None]] = list(job.files)
        slices = max(1, min(len(files), max(1, int(sc.defaultParallelism)) * TASKS_PER_CORE))
        shipped = FooterJob(job.root, PinnedIO.of(job.io, job.root), ())
        keys = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")
        before = {k: sc.getLocalProperty(k) for k in keys}
        sc.setJobGroup(JOB_GROUP, f"icecompat: read {len(files)} Parquet footers of {job.root}")
        try:
            rdd = sc.parallelize(files, slices).mapPartitions(functools.partial(read_slice, shipped))
            out = list(unpack(rdd.collect()))
        finally:
            for k, v in before.items():
                sc.setLocalProperty(k, v)  # type: ignore[arg-type]  # None unsets it (as it was)
        self.tasks += slices
        return out
