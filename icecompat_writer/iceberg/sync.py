"""Iceberg sync after a Delta commit: the last step of the write path (... -> commit -> sync).

A table asks for it as UniForm tables do: ``delta.universalFormat.enabledFormats`` lists ``iceberg``.
Every ``compat_write`` commit to such a table is then followed, before the call returns, by
:func:`write_iceberg_metadata` (which converts every Delta version after the last converted one, so a
sync that failed or never ran, e.g. a process killed between the two commits, is caught up by the next
one) and, when a catalog is named, by :func:`.catalogs.sync_catalog`.

The table property ``icecompat.iceberg.format-version`` (:data:`FORMAT_VERSION_PROPERTY`, ``2`` or
``3``) chooses the Iceberg format of every sync, whatever the table's profile: it is read from the Delta
log at the version converted to, so the sync honours it as ``icecompat iceberg`` does. A property that
disagrees with an existing Iceberg tree is refused (``ICEBERG-EMIT-FORMAT-VERSION``, naming the fix);
here that is a failed sync, caught up once the property or ``metadata/`` is fixed.

The Delta commit is the source of truth and is never undone: a failed sync emits
:class:`IcebergSyncWarning` and the result records the error and the lag.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass

from icecompat_writer.deltalog.paths import table_root_path
from icecompat_writer.errors import ConcurrentWriteError, IcebergSyncWarning, IcecompatError
from icecompat_writer.storage import FileIO, Location

from .catalogs import CatalogSync, sync_catalog
from .checks import FORMAT_VERSION_PROPERTY
from .emitter import METADATA_DIR, PROP_DELTA_VERSION, IcebergResult, write_iceberg_metadata
from .start import existing_metadata

__all__ = [
    "CATALOG_CONF",
    "CATALOG_PROPERTY",
    "ENABLED_FORMATS",
    "FORMAT_VERSION_PROPERTY",
    "IDENTIFIER_PROPERTY",
    "IcebergSync",
    "IcebergSyncWarning",
    "converted_version",
    "resolve_identifier",
    "sync_after_commit",
    "sync_requested",
]

ENABLED_FORMATS = "delta.universalFormat.enabledFormats"
CATALOG_CONF = "spark.icecompat.iceberg.catalog"
CATALOG_PROPERTY = "icecompat.iceberg.catalog"
IDENTIFIER_PROPERTY = "icecompat.iceberg.identifier"
_ATTEMPTS = 3


@dataclass(frozen=True)
class IcebergSync:
    """What the sync after a commit did.

    ``delta_version`` is the Delta version synced to; ``converted_version`` the last Delta version the
    Iceberg metadata holds after the sync; ``lag`` their difference (0 when current). ``error`` is set
    when the metadata or the catalog update failed (then a warning was emitted too).
    """

    delta_version: int
    converted_version: int
    metadata_location: str | None
    metadata_version: int | None
    snapshot_id: int | None
    catalog: CatalogSync | None
    error: str | None = None

    @property
    def lag(self) -> int:
        """Delta versions up to ``delta_version`` not in Iceberg (0 also when a later commit got there)."""
        return max(0, self.delta_version - self.converted_version)


def sync_requested(configuration: Mapping[str, str]) -> bool:
    """True when the table's properties ask for Iceberg metadata after every commit."""
    formats = str(configuration.get(ENABLED_FORMATS, ""))
    return "iceberg" in {f.strip().lower() for f in formats.split(",")}


def converted_version(table_root: str | os.PathLike[str], *, io: FileIO) -> int | None:
    """The last Delta version the table's Iceberg metadata holds (None: no Iceberg metadata)."""
    return _converted(table_root_path(os.fspath(table_root)), io)


def _converted(root: Location, io: FileIO) -> int | None:
    existing = existing_metadata(root / METADATA_DIR, io=io)
    if existing is None:
        return None
    props = json.loads(io.new_input(existing[1]).read().decode("utf-8")).get("properties") or {}
    raw = props.get(PROP_DELTA_VERSION)
    return int(raw) if raw is not None and str(raw).isdigit() else None


def resolve_identifier(
    configuration: Mapping[str, str], given: str | None = None, default: str | None = None
) -> str | None:
    """The Iceberg identifier of a table: ``given`` (``--identifier``: the command line is the most
    specific), else its ``icecompat.iceberg.identifier`` property (the user chose it; the sync after
    every commit uses it too), else ``default`` (its Spark catalog name ``db.tbl``); None when there is
    none of them."""
    prop = configuration.get(IDENTIFIER_PROPERTY) or None
    return given or (str(prop) if prop else None) or default


def _catalog_target(
    conf_catalog: str | None, configuration: Mapping[str, str], default_identifier: str | None = None
) -> tuple[str, str] | None:
    """(catalog, identifier) of a table's catalog sync, None when no catalog is named.

    The identifier is the table property when the user set one, else ``default_identifier``: the
    table's name in the Spark catalog (``db.tbl``) when it was written through that name.
    """
    name = configuration.get(CATALOG_PROPERTY) or conf_catalog
    if not name and not configuration.get(IDENTIFIER_PROPERTY):
        return None
    identifier = resolve_identifier(configuration, default=default_identifier)
    if not name or not identifier:
        raise IcecompatError(
            f"a catalog sync needs both a catalog ({CATALOG_PROPERTY} or {CATALOG_CONF}) and an "
            f"identifier (the table property {IDENTIFIER_PROPERTY}, or a write through the table's "
            f"catalog name); found catalog={name!r}, identifier={identifier!r}"
        )
    return name, identifier


def sync_after_commit(
    location: str,
    version: int,
    configuration: Mapping[str, str],
    conf_catalog: str | None = None,
    default_identifier: str | None = None,
    *,
    io: FileIO,
) -> IcebergSync:
    """Bring the Iceberg metadata (and the catalog, if one is named) up to at least Delta ``version``,
    reading what it checks through ``io``.

    ``default_identifier`` is the table's Spark catalog name (``db.tbl``) when known: the Iceberg
    identifier unless the table property ``icecompat.iceberg.identifier`` says otherwise.

    Never raises for the sync's own failures: they become an :class:`IcebergSyncWarning` and ``error``.
    """
    root = table_root_path(location)
    metadata_location: str | None = None
    metadata_version: int | None = None
    snapshot_id: int | None = None
    catalog: CatalogSync | None = None
    try:
        result = None
        for attempt in range(_ATTEMPTS):
            try:
                result = write_iceberg_metadata(location, io=io)
                break
            except ConcurrentWriteError:
                # another sync committed the same metadata version first: read it and continue after it
                if attempt + 1 == _ATTEMPTS:
                    raise
        assert result is not None
        metadata_location = str(result.metadata_path)
        metadata_version = result.metadata_version
        snapshot_id = result.snapshots[-1].snapshot_id if result.snapshots else _current_snapshot(result, io)
        target = _catalog_target(conf_catalog, configuration, default_identifier)
        if target is not None:
            catalog = sync_catalog(target[0], target[1], metadata_location, io=io)
    except Exception as err:  # a sync failure must never fail the committed write
        message = (
            f"Delta version {version} of {location} committed; its Iceberg sync failed "
            f"({type(err).__name__}: {err}); the next sync catches up"
        )
        warnings.warn(message, IcebergSyncWarning, stacklevel=3)
        done = _safe_converted(root, io)
        return IcebergSync(
            version,
            -1 if done is None else done,
            metadata_location,
            metadata_version,
            snapshot_id,
            catalog,
            error=message,
        )
    done = _safe_converted(root, io)
    return IcebergSync(
        version, -1 if done is None else done, metadata_location, metadata_version, snapshot_id, catalog
    )


def _current_snapshot(result: IcebergResult, io: FileIO) -> int | None:
    meta = json.loads(io.new_input(result.metadata_path).read().decode("utf-8"))
    sid = meta.get("current-snapshot-id")
    return None if sid is None or sid == -1 else int(sid)


def _safe_converted(root: Location, io: FileIO) -> int | None:
    try:
        return _converted(root, io)
    except Exception:  # reporting the lag must not turn a warning into a failure
        return None
