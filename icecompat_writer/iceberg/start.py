"""Where a conversion starts: the current metadata file of an existing Iceberg tree, and for a first
conversion the oldest Delta version from which every later one is convertible (with the full
verification of the latest version, which every first conversion needs)."""

from __future__ import annotations

from icecompat_writer.deltalog.actions import Metadata, Protocol
from icecompat_writer.errors import CompatViolation, TableReadError
from icecompat_writer.storage import FileIO, Location

from . import _delta
from .checks import default_format_version, table_violations
from .locations import owned
from .metadata import METADATA_DIR, VERSION_HINT
from .table import refusal_context
from .verification import Verified, verify_full

__all__ = ["current_metadata", "existing_metadata", "first_version"]


def existing_metadata(meta_dir: Location, *, io: FileIO) -> tuple[int, Location] | None:
    """The highest ``v<N>.metadata.json`` in ``metadata/`` (the hint file may lag behind): one listing."""
    try:
        listed = [e.location for e in io.list_files(meta_dir)]
    except (FileNotFoundError, NotADirectoryError):
        return None
    best: tuple[int, Location] | None = None
    for p in listed:
        name = p.name
        if name.startswith("v") and name.endswith(".metadata.json") and name[1:-14].isdigit():
            n = int(name[1:-14])
            if best is None or n > best[0]:
                best = (n, p)
    return best


def first_version(
    root: Location, latest: int, fv_request: int | None, io: FileIO
) -> tuple[int, _delta.DeltaState, int, Verified]:
    """Where a first conversion starts: the oldest version from which every later one is convertible.

    A table that became compliant at some version (column mapping and IcebergCompat enabled later) is
    converted from there on; earlier versions have no field ids and cannot be expressed in Iceberg.
    History the log no longer has (commits cleaned up behind a checkpoint) starts at the oldest version
    the log can still reconstruct. Returns (start version, state at start, format version, what the
    full verification of ``latest`` established).
    """
    versions = _delta.commit_versions(root, io=io)
    first = versions[0]
    if versions != list(range(first, latest + 1)):
        missing = sorted(set(range(first, latest + 1)) - set(versions))
        raise TableReadError(f"the Delta log of {root} misses commits {missing[:10]}")
    base: _delta.DeltaState | None = None
    for version in versions:
        try:
            base = _delta.state_at(root, version, io=io)
            break
        except TableReadError:
            continue  # this version cannot be reconstructed (no checkpoint before it): try the next
    if base is None:
        raise TableReadError(f"no version of the Delta log of {root} can be reconstructed")
    base_version = base.version
    changes: list[tuple[int, Protocol, Metadata]] = [(base.version, base.protocol, base.metadata)]
    protocol, metadata = base.protocol, base.metadata
    # The live files of ``base`` are dropped before the full verification reads those of ``latest``
    # (one snapshot's columns held at a time) and read again below: a second replay costs far less
    # than holding two snapshots of a table of millions of files.
    del base
    for commit in _delta.iter_commits(root, base_version + 1, latest, io=io):
        if not commit.changes_table:
            continue
        for kind, obj in commit.actions:
            if kind == "protocol":
                protocol = Protocol.from_json(obj)
            elif kind == "metaData":
                metadata = Metadata.from_json(obj)
        changes.append((commit.version, protocol, metadata))
    fv = fv_request if fv_request is not None else default_format_version(changes[-1][2])
    verified = verify_full(root, latest, fv, io=io)
    start = changes[0][0]
    for i in range(len(changes) - 1, -1, -1):
        _, protocol, metadata = changes[i]
        _, problems = table_violations(protocol, metadata, fv)
        if problems:
            if i == len(changes) - 1:  # cannot happen after the gate; kept so no path skips the check
                raise CompatViolation(problems, refusal_context(latest, metadata))
            start = changes[i + 1][0]
            break
    return start, _delta.state_at(root, start, io=io), fv, verified


def current_metadata(root: Location, io: FileIO) -> tuple[int, Location] | None:
    """The current metadata file, refused when ``metadata/`` or it lies outside the table's own tree."""
    meta_dir = root / METADATA_DIR
    owned(root, meta_dir / VERSION_HINT, "the version hint", io=io)  # a ``metadata`` link leading elsewhere
    previous = existing_metadata(meta_dir, io=io)
    if previous is not None:
        owned(root, previous[1], "the metadata file", io=io)
    return previous
