"""One run's changes to an Iceberg table: applied in order, committed once, or aborted.

A run produces its snapshots one Delta version at a time (:mod:`.producers`); each producer returns a
:class:`.producers.SnapshotChanges` and :meth:`Transaction.apply` applies it to the table held in
memory (metadata updates, live files), so the next producer builds on it. Nothing is visible to a
reader until :meth:`Transaction.commit` creates ``v<N+1>.metadata.json``: that create is the commit
point. It fails when the name exists, on every store (a local ``link``, S3 ``If-None-Match: *``, GCS
``ifGenerationMatch=0``, Azure ``If-None-Match: *``), so of two runs racing for one version exactly one
commits and the other raises :class:`~icecompat_writer.errors.ConcurrentWriteError`.

Abort (any exception before the commit point, that one included): every file the run wrote
(manifests, manifest lists, Puffin files) is deleted, and a ``metadata/`` directory the run made is
removed when empty. None of those files is referenced by a committed metadata file, because only the
metadata file created at the commit point references them. After the commit point nothing is removed:
a failure to write the version hint (a hint only, readers list ``metadata/``) is raised as it is, the
commit stands.

History is bounded (:mod:`.expire`): before the commit point the metadata about to be written loses
the snapshots no longer retained and the ``metadata-log`` entries past its bound; only after the commit
point (and the version hint) are the files no retained metadata file references deleted.
"""

from __future__ import annotations

import json
import time
from types import TracebackType

from icecompat_writer.deltalog.actions import Metadata, Protocol
from icecompat_writer.errors import ConcurrentWriteError
from icecompat_writer.storage import Location

from . import expire
from .locations import uri
from .metadata import VERSION_HINT, MetadataLogEntry, MetadataUpdate
from .producers import SnapshotChanges
from .table import IcebergTable

__all__ = ["Transaction"]


class Transaction:
    """The changes of one run to ``table`` on top of ``previous`` (the current metadata file, if any).

    Used as a context manager, an exception leaving the block before :meth:`commit` aborts the run.
    """

    def __init__(self, table: IcebergTable, previous: tuple[int, Location] | None) -> None:
        self.table = table
        self.previous = previous
        self.created_dir = False  # this run made ``metadata/``: an abort removes it when empty
        self.committed: tuple[int, Location] | None = None

    def __enter__(self) -> Transaction:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is not None and self.committed is None:
            self.abort()

    def make_directory(self) -> None:
        """Make ``metadata/`` where the store has directories (kept in mind for an abort)."""
        self._check_open()
        self.created_dir = self.table.io.make_directory(self.table.meta_dir) or self.created_dir

    def set_delta_state(self, protocol: Protocol, metadata: Metadata, version: int) -> None:
        """Convert from here on under the Delta protocol/metadata in force at ``version``: its schema,
        partition spec and name mapping recorded in the table metadata."""
        self._check_open()
        self.table.metadata.apply(self.table.delta_state_updates(protocol, metadata, version))

    def update(self, *updates: MetadataUpdate) -> None:
        """Apply metadata updates that come with no snapshot (a record of what the run verified)."""
        self._check_open()
        self.table.metadata.apply(updates)

    def apply(self, changes: SnapshotChanges) -> None:
        """Make one producer's snapshot current in the table held in memory."""
        self._check_open()
        table = self.table
        table.metadata.apply(changes.updates)
        table.files = changes.files
        table.new_snapshots.append(changes.info)

    def _check_open(self) -> None:
        if self.committed is not None:
            raise ValueError("the transaction is committed: start another for more changes")

    def commit(self) -> tuple[int, Location]:
        """Write ``v<N+1>.metadata.json`` (create-if-absent: the commit point), then the version hint.

        Returns (N+1, the metadata file). Raises ConcurrentWriteError when another run committed that
        version first (the caller's ``with`` block then aborts this run).
        """
        table = self.table
        meta = table.metadata
        version = 1 if self.previous is None else self.previous[0] + 1
        now = int(time.time() * 1000)
        if self.previous is not None:
            meta.metadata_log.append(MetadataLogEntry(uri(self.previous[1]), meta.last_updated_ms))
        delta_conf = table.delta_metadata.configuration if table.delta_metadata is not None else {}
        retention = expire.Retention.of(delta_conf, meta.properties)
        expiry = expire.prepare(meta, retention, now, lambda u: expire.read_metadata(table.io, table.root, u))
        meta.last_updated_ms = max(now, meta.last_snapshot_ms, meta.last_updated_ms)
        target = table.meta_dir / f"v{version}.metadata.json"
        document = json.dumps(meta.to_json(), indent=2).encode("utf-8")
        if not table.io.new_output(target).create(document):
            raise ConcurrentWriteError(
                f"{target} appeared while converting: another conversion committed first; run it again"
            )
        self.committed = (version, target)
        table.io.new_output(table.meta_dir / VERSION_HINT).write(str(version).encode("utf-8"))
        expire.clean_up(table.io, table.root, meta, expiry, table.writer.written)
        return self.committed

    def abort(self) -> None:
        """Remove every file the run wrote (none is referenced by committed metadata), and
        ``metadata/`` when the run made it and it is empty again."""
        if self.committed is not None:
            raise ValueError(f"{self.committed[1]} is committed: a committed run cannot be aborted")
        table = self.table
        table.writer.discard()
        if self.created_dir:
            table.io.remove_empty_directory(table.meta_dir)
