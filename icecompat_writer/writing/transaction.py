"""One Delta transaction driven from Python: the loop ``compat_write`` and ``upgrade_table`` share.

Every attempt runs read snapshot -> plan -> write -> verify -> commit, and ends in exactly one of
two ways: its commit lands, or every file it created is deleted again. :func:`run` owns the loop:

* each attempt opens its own pending transaction in the JVM (:class:`~icecompat_writer.jvm.bridge.
  PendingWrite`), which reads the snapshot the attempt plans from;
* whatever goes wrong after the first file exists (a refusal while verifying, an error while reading
  the new files' footers, a commit that failed, a lost race that is given up) aborts the attempt:
  the data files it added are deleted through :mod:`icecompat_writer.storage` (on any filesystem the
  storage layer serves), then the JVM deletes anything else it wrote, and on local disk the
  directories the attempt created and left empty are removed;
* a JVM write that fails itself (:meth:`Attempt.write`: a row delta-spark refuses, a task's I/O error)
  has no list of files to give: the files that appeared under the table during the call are deleted
  as the attempt's own, unless another writer committed meanwhile (then they are left, unreferenced);
* a lost race (:class:`~icecompat_writer.errors.ConcurrentWriteError` at commit) is re-planned from
  the newer snapshot, at most :data:`MAX_ATTEMPTS` times;
* a commit that raised but landed (the response was lost) is recognised by its files in the log.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from icecompat_writer import storage
from icecompat_writer.deltalog.files import AddFile
from icecompat_writer.deltalog.paths import commit_file_name, resolve_data_path, table_root_path
from icecompat_writer.deltalog.snapshot import list_versions, read_commit
from icecompat_writer.errors import ConcurrentWriteError, IcecompatError
from icecompat_writer.schema import JsonDict

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["MAX_ATTEMPTS", "Attempt", "landed_version", "missing_ancestor", "run"]

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 5
"""Attempts of one transaction before a lost race is given up (and raised)."""

T = TypeVar("T")


class _Retry(Exception):
    """This attempt lost a race and was aborted; the loop plans again from the newer snapshot."""


class Attempt:
    """One attempt of a transaction: its pending JVM transaction and the files it added.

    ``created`` is the outermost local directory that did not exist before the transaction (None
    elsewhere): an abort of a new table removes it again when it holds no file. ``io`` reaches the
    table's files: every listing, read and deletion of the attempt goes through it.
    """

    def __init__(
        self,
        spark: SparkSession,
        location: str,
        number: int,
        created: storage.Location | None,
        *,
        io: storage.FileIO,
    ) -> None:
        from icecompat_writer.jvm import bridge  # pyspark and py4j, loaded only when a write runs

        self.location = location
        self.io = io
        self.number = number
        self.created = created
        self.pending = bridge.PendingWrite(spark, location)
        self.added: list[AddFile] = []
        self.stray: list[storage.Location] = []
        self.finished = False

    @property
    def read_version(self) -> int:
        """The version the attempt's snapshot was read at (-1: no table yet)."""
        return int(self.pending.read_version)

    def track(self, added_json: Sequence[JsonDict]) -> list[AddFile]:
        """Record the AddFiles the JVM wrote for this attempt; they are its files from now on."""
        self.added = [AddFile.from_json(a) for a in added_json]
        return self.added

    def write(self, fn: Callable[[], T]) -> T:
        """Run ``fn``, the JVM call that writes this attempt's data files (``PendingWrite.write`` or
        ``rewrite``), keeping track of what it leaves behind when it fails.

        A Spark task that fails (a row refused by a constraint, an I/O error) keeps the file it had
        opened: Delta's commit protocol deletes nothing on a task's or a job's abort, and the files
        never reach Delta's list of written files. They are the files that appeared under the table,
        outside its log, during the call: :meth:`abort` deletes them with the attempt's own.

        A write that succeeds pays nothing for this: only a failed call lists the table, and takes
        the files modified since the call began (:func:`_written_since`), so a table of millions of
        files is not listed on every write.
        """
        started_ms = time.time_ns() // 1_000_000
        try:
            return fn()
        except BaseException:
            self.stray = _written_since(self.location, started_ms, self.read_version, self.io)
            raise

    def release(self) -> None:
        """End an attempt that wrote nothing it keeps (nothing to do, a dry decision): no deletion."""
        if not self.finished:
            self.finished = True
            self.pending.abort()

    def abort(self, *, keep_root: bool = False) -> int:
        """Delete exactly the files this attempt created; how many were deleted. Idempotent.

        ``keep_root`` keeps a table directory this transaction created even when it is empty (a lost
        race: another writer's table lives there now).
        """
        if self.finished:
            return 0
        self.finished = True
        deleted = 0
        stray = self._stray()
        try:
            deleted += _delete_added(self.location, [a.path for a in self.added], self.io)
            deleted += self.io.delete(stray)
        except Exception as e:  # the JVM's abort below deletes them too: never hide the first error
            log.warning(
                "could not delete the files of %s from Python (%s); Delta's abort deletes them",
                self.location,
                e,
            )
        finally:
            deleted += int(self.pending.abort())
            added = [a.path for a in self.added]
            _remove_empty_dirs(self.location, added, None if keep_root else self.created, stray, self.io)
        return deleted

    def _stray(self) -> list[storage.Location]:
        """The files a failed write left (:meth:`write`), when they can only be this attempt's: no other
        writer has committed to the table since the attempt read it (another writer's uncommitted
        files cannot be told from them, and are never deleted: left, they are only unreferenced)."""
        if not self.stray:
            return []
        try:
            newer = [v for v in list_versions(self.location, io=self.io) if v > self.read_version]
        except IcecompatError:
            newer = []
        if newer:
            log.warning(
                "a failed write to %s left %d file(s), kept: other writers committed meanwhile (version %d)",
                self.location,
                len(self.stray),
                max(newer),
            )
            return []
        return list(self.stray)

    def commit(self, fn: Callable[[], int]) -> int:
        """Run the commit ``fn``; the committed version.

        A lost race aborts the attempt and retries (raises to :func:`run`), or, at the last attempt,
        raises the :class:`ConcurrentWriteError`. Any other error is checked against the log: a
        commit that landed although its response was lost returns its version; otherwise aborted.
        """
        try:
            version = fn()
        except ConcurrentWriteError as err:
            log.info("attempt %d on %s lost a race (%s); re-planning", self.number, self.location, err)
            self.abort(keep_root=True)
            if self.number >= MAX_ATTEMPTS:
                raise
            raise _Retry from err
        except IcecompatError:
            added = {a.path for a in self.added}
            landed = landed_version(self.location, self.read_version, added, io=self.io)
            if landed is None:
                raise  # run() aborts
            version = landed
        self.finished = True
        return version


def run(
    spark: SparkSession,
    location: str,
    body: Callable[[Attempt], T],
    *,
    created: storage.Location | None = None,
    io: storage.FileIO,
) -> T:
    """Run ``body`` once per attempt until it returns, at most :data:`MAX_ATTEMPTS` attempts.

    ``body`` reads the attempt's snapshot, plans, writes (``attempt.track``), verifies and ends with
    ``attempt.commit``; an attempt that returns without committing is released (it wrote nothing it
    keeps). Whatever ``body`` raises aborts the attempt first. ``io``: the table's FileIO.
    """
    for number in range(1, MAX_ATTEMPTS + 1):
        attempt = Attempt(spark, location, number, created, io=io)
        try:
            result = body(attempt)
            attempt.release()
            return result
        except _Retry:
            continue
        except BaseException:
            attempt.abort()
            raise
    raise ConcurrentWriteError(  # pragma: no cover - the last attempt raises instead of retrying
        f"gave up on {location} after {MAX_ATTEMPTS} attempts"
    )


def landed_version(
    location: str, after_version: int, added_paths: set[str], *, io: storage.FileIO
) -> int | None:
    """The version that holds this write's files, if an earlier commit of it did land."""
    try:
        versions = [v for v in list_versions(location, io=io) if v > after_version]
    except IcecompatError:
        return None
    for v in versions:
        paths = {a["add"]["path"] for a in read_commit(location, v, io=io) if "add" in a}
        if added_paths and added_paths <= paths:
            return v
    return None


def missing_ancestor(location: str, *, io: storage.FileIO) -> storage.Location | None:
    """The outermost directory of ``location`` that does not exist yet (None: it exists, or the store
    has no directories). A refused write removes it again when it holds no file."""
    try:
        root = table_root_path(location)
    except IcecompatError:
        return None
    return io.missing_ancestor(root)


def _delete_added(location: str, added_paths: Sequence[str], io: storage.FileIO) -> int:
    """Delete the data files of ``added_paths`` through the storage layer (inside the root only)."""
    if not added_paths:
        return 0
    try:
        root = table_root_path(location)
    except IcecompatError:
        return 0
    targets = [t for t in (resolve_data_path(root, p) for p in added_paths) if t is not None]
    return io.delete(targets)


# How far before a failed call's start a file's modification time may lie and still count as the
# call's: an object store stamps files with its own clock, which may run behind the driver's.
CLOCK_SLACK_MS = 2_000
# How many commits at or before the attempt's read version are read for files they reference.
RECENT_COMMITS_READ = 100


def _written_since(
    location: str, started_ms: int, read_version: int, io: storage.FileIO
) -> list[storage.Location]:
    """The files a failed write call left: every file under the table root, outside its Delta log and
    its Iceberg ``metadata/``, modified since ``started_ms`` (less the clock slack), and referenced by
    none of the commits that landed within that slack up to ``read_version`` (a file committed just
    before the call is never taken for the call's). Empty when the root cannot be listed: nothing is
    deleted then."""
    since = started_ms - CLOCK_SLACK_MS
    try:
        root = table_root_path(location)
        entries = io.list_tree(root)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except (IcecompatError, OSError) as e:
        log.debug("cannot list %s to find a failed write's files (%s)", location, e)
        return []
    kept = (root / "_delta_log", root / "metadata")
    fresh = [
        e.location
        for e in entries
        if e.mtime_ms >= since and not any(_under(e.location, d) for d in kept)
    ]
    if not fresh:
        return []
    committed: set[str] = set()
    for version in range(read_version, max(-1, read_version - RECENT_COMMITS_READ), -1):
        commit = root / "_delta_log" / commit_file_name(version)
        try:
            if io.new_input(commit).mtime_ms() < since:
                break
            actions = read_commit(root, version, io=io)
        except (IcecompatError, OSError) as e:
            log.debug("cannot read commit %d of %s (%s): nothing deleted", version, location, e)
            return []
        for action in actions:
            add = action.get("add")
            if isinstance(add, dict) and isinstance(add.get("path"), str):
                target = resolve_data_path(root, add["path"])
                if target is not None:
                    committed.add(str(target))
    return sorted((f for f in fresh if str(f) not in committed), key=str)


def _under(location: storage.Location, directory: storage.Location) -> bool:
    return str(location).startswith(str(directory).rstrip("/") + "/")


def _remove_empty_dirs(
    location: str,
    added_paths: Sequence[str],
    created: storage.Location | None,
    stray: Sequence[storage.Location],
    io: storage.FileIO,
) -> None:
    """After an abort: remove the directories the aborted write made and left empty.

    Deleting a write's data files leaves the directories they were written to (random prefixes,
    partition directories), and for a new table the table directory itself. Only empty directories
    are removed, walking up from each file's directory to the table root; the root and the
    directories above it only when this write created them (``created``). An object store has no
    directories: nothing to do there (:meth:`~icecompat_writer.storage.FileIO.prune_empty_directories`).
    """
    try:
        root = table_root_path(location)
    except IcecompatError:
        return
    files = [t for t in (resolve_data_path(root, p) for p in added_paths) if t is not None]
    files.extend(stray)
    # a new table that no other writer has committed to meanwhile: every directory is this write's
    new_table = created is not None and not io.new_input(root / "_delta_log").exists()
    io.prune_empty_directories(root, files, whole_tree=new_table, up_to=created)
