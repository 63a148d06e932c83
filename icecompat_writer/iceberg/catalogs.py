"""Registering the emitted Iceberg table in an Iceberg catalog and keeping it current, forward only.

Catalogs are pyiceberg's: chosen by name and configured the way pyiceberg users already configure them
(``~/.pyiceberg.yaml`` or ``$PYICEBERG_HOME/.pyiceberg.yaml``, ``PYICEBERG_CATALOG__<NAME>__<KEY>``
environment variables), so the SQL catalog on a sqlite file, REST, Glue and Hive all work through
``pyiceberg.catalog.load_catalog(name)``.

A new identifier is registered on the metadata file the emitter just committed (``register_table``). In
pyiceberg's SQL catalog an existing one is moved forward by a compare-and-swap of its pointer to that
very file (one conditional ``UPDATE ... WHERE metadata_location = <the location read>``, the statement
the SQL catalog's own commits use). In Glue, by ``UpdateTable`` of the pointer to that file with the
table's ``VersionId`` as read (Glue refuses the update if the table changed since). In a Hive
Metastore, by ``alter_table`` of the pointer to that file under the metastore's exclusive table lock,
after comparing the pointer with the one read (the expected pointer also goes to the metastore, which
a Hive 4 metastore checks again in its own transaction). The REST catalog is moved forward with
the catalog's own optimistic commit: the snapshots, schemas and
partition specs the catalog does not have yet are added, ``main`` is set to the emitter's current
snapshot and the properties are copied, under the requirements "same table uuid" and "``main`` is still
the snapshot I read"; the catalog then writes its own metadata file with the same snapshots, manifest
lists and properties. A concurrent sync that committed in between makes the swap or the requirement
fail; the catalog is then read again, and a catalog already at or past the Delta version being synced is
left alone. So the pointer never moves back to an older Delta version, whatever the order in which
concurrent syncs finish.

The catalog's FileIO reaches an object store with the settings the table's own reads use
(:func:`fileio_properties`); the catalog's own ``s3.*``/``adls.*``/``gcs.*`` properties win.
"""

from __future__ import annotations

import json
import sys
import threading
from dataclasses import dataclass
from typing import Any

from icecompat_writer import storage
from icecompat_writer.errors import IcecompatError

from .emitter import PROP_DELTA_TABLE_ID, PROP_DELTA_VERSION

__all__ = [
    "CatalogError",
    "CatalogSync",
    "catalog_status",
    "fileio_properties",
    "load_catalog_for",
    "sync_catalog",
]

_MAX_ATTEMPTS = 10
# Loaded catalogs by name and effective configuration, shared by the threads of a process (a run over
# many tables syncs several at once); a changed configuration is another key, so it is loaded anew.
_CATALOGS: dict[tuple[str, str], Any] = {}
_CATALOGS_LOCK = threading.Lock()


class CatalogError(IcecompatError):
    """The catalog could not be loaded, or refused or failed the registration or the commit."""


@dataclass(frozen=True)
class CatalogSync:
    """What one catalog update did.

    ``action`` is ``registered`` (new identifier), ``committed`` (moved forward), or ``current`` (the
    catalog was already at ``catalog_delta_version`` >= the version offered: nothing written).
    """

    catalog: str
    identifier: str
    action: str
    delta_version: int
    catalog_delta_version: int
    metadata_location: str

    def summary(self) -> str:
        """One line for the command line."""
        if self.action == "current":
            return (
                f"catalog {self.catalog}: {self.identifier} already at Delta version "
                f"{self.catalog_delta_version} (offered {self.delta_version}); left as it is"
            )
        return (
            f"catalog {self.catalog}: {self.identifier} {self.action} at Delta version "
            f"{self.delta_version} ({self.metadata_location})"
        )


def _delta_version_of(properties: dict[str, str]) -> int:
    raw = properties.get(PROP_DELTA_VERSION)
    return int(raw) if raw is not None and str(raw).isdigit() else -1


def fileio_properties(metadata_location: str, *, io: storage.FileIO) -> dict[str, str]:
    """pyiceberg FileIO properties that reach the store holding ``metadata_location``, taken from
    ``io``'s resolved options (the Hadoop settings it was built with: the running session's
    ``fs.s3a.*``/``fs.azure.*``/``fs.gs.*`` keys or those a driver handed to the rule service; then
    the standard environment variables).

    A catalog loaded for that table reads and writes its metadata with the endpoint and credentials
    the session's own connectors use, so the user does not write them a second time as ``s3.*``
    catalog properties. Empty for a local location.
    """
    return io.iceberg_properties(storage.parse_location(metadata_location))


def load_catalog_for(name: str, metadata_location: str | None = None, *, io: storage.FileIO) -> Any:
    """The pyiceberg catalog ``name`` with FileIO properties for ``metadata_location``'s store.

    The catalog's own configuration wins key by key: an ``s3.*`` (``adls.*``, ``gcs.*``) property the
    user set for the catalog is kept, the session's value only fills what is missing.
    """
    return _load(name, metadata_location, io)


def _load(name: str, metadata_location: str | None, io: storage.FileIO) -> Any:
    """The catalog ``name``, its configuration read now (pyiceberg's own module-level copy is read once,
    at import, and would miss configuration set later in a long-running driver)."""
    from pyiceberg.catalog import load_catalog
    from pyiceberg.utils.config import Config

    hint = f"configure it in .pyiceberg.yaml or PYICEBERG_CATALOG__{name.upper()}__* environment variables"
    properties = Config().get_catalog_config(name)
    if not properties:
        raise CatalogError(f"no Iceberg catalog named {name!r} is configured; {hint}")
    derived = fileio_properties(metadata_location, io=io) if metadata_location else {}
    try:
        options: dict[str, Any] = {**derived, **{str(k): v for k, v in properties.items()}}
        key = (name, json.dumps(options, sort_keys=True, default=str))
        with _CATALOGS_LOCK:  # one load at a time: a SQL catalog creates its tables on first load
            if key not in _CATALOGS:
                _CATALOGS[key] = load_catalog(name, **options)
            return _CATALOGS[key]
    except Exception as err:  # pyiceberg raises ValueError, NotInstalledError, ... for a bad configuration
        raise CatalogError(
            f"Iceberg catalog {name!r} could not be loaded ({type(err).__name__}: {err}); {hint}"
        ) from err


def sync_catalog(
    catalog_name: str, identifier: str, metadata_location: str, *, io: storage.FileIO
) -> CatalogSync:
    """Register ``identifier`` on ``metadata_location`` or move it forward to that metadata's snapshots.

    ``metadata_location`` is a ``v<N>.metadata.json`` the emitter committed (a local path or a URI),
    read through ``io``, whose settings also reach the catalog's own FileIO.
    Raises :class:`CatalogError` when the catalog cannot be reached, holds a different table under
    ``identifier``, or keeps refusing the commit.
    """
    from pyiceberg.exceptions import (
        CommitFailedException,
        NamespaceAlreadyExistsError,
        NoSuchTableError,
        TableAlreadyExistsError,
    )
    from pyiceberg.table.metadata import TableMetadataUtil

    parsed = storage.parse_location(metadata_location)
    location = storage.iceberg_uri(parsed)  # s3:// for an s3a table, as Iceberg readers expect
    try:
        ours = TableMetadataUtil.parse_raw(io.new_input(parsed).read().decode("utf-8"))
    except (OSError, ValueError) as err:
        raise CatalogError(f"cannot read the Iceberg metadata {location}: {err}") from err
    our_version = _delta_version_of(ours.properties)
    catalog = _load(catalog_name, location, io)
    namespace = tuple(identifier.split(".")[:-1])
    if not namespace:
        raise CatalogError(f"identifier {identifier!r} needs a namespace: NAMESPACE.TABLE")
    try:
        for _attempt in range(_MAX_ATTEMPTS):
            try:
                table = catalog.load_table(identifier)
            except NoSuchTableError:
                try:
                    catalog.create_namespace(namespace)
                except NamespaceAlreadyExistsError:
                    pass
                except Exception:
                    # a concurrent create can surface as the backend's own error (sqlite: a UNIQUE
                    # constraint): what matters is that the namespace exists now
                    if not catalog.namespace_exists(namespace):
                        raise
                try:
                    catalog.register_table(identifier, location)
                except TableAlreadyExistsError:
                    continue  # a concurrent sync registered it first: compare with what it registered
                except Exception:
                    if not catalog.table_exists(identifier):
                        raise
                    continue  # the same race, reported by the backend: compare with what is there
                return CatalogSync(catalog_name, identifier, "registered", our_version, our_version, location)
            theirs = table.metadata
            their_version = _delta_version_of(theirs.properties)
            if str(theirs.table_uuid) != str(ours.table_uuid) or (
                theirs.properties.get(PROP_DELTA_TABLE_ID) != ours.properties.get(PROP_DELTA_TABLE_ID)
            ):
                raise CatalogError(
                    f"{identifier} in catalog {catalog_name!r} is another table (uuid {theirs.table_uuid}, "
                    f"ours {ours.table_uuid}); drop it from the catalog or choose another identifier"
                )
            if their_version >= our_version:
                return CatalogSync(
                    catalog_name, identifier, "current", our_version, their_version, table.metadata_location
                )
            if _is_sql(catalog):
                if not _swap_pointer(catalog, identifier, table.metadata_location, location):
                    continue  # another sync moved it since it was read: compare again
                moved_to = location
            elif _is_glue(catalog):
                if not _swap_glue_pointer(catalog, identifier, table.metadata_location, location, ours):
                    continue
                moved_to = location
            elif _is_hive(catalog):
                if not _swap_hive_pointer(catalog, identifier, table.metadata_location, location, ours):
                    continue
                moved_to = location
            else:
                requirements, updates = _forward(theirs, ours)
                try:
                    moved_to = catalog.commit_table(table, requirements, updates).metadata_location
                except CommitFailedException:
                    continue
            return CatalogSync(catalog_name, identifier, "committed", our_version, our_version, moved_to)
    except CatalogError:
        raise
    except Exception as err:  # the catalog's own errors (HTTP, SQL, validation) become ours, once
        raise CatalogError(
            f"Iceberg catalog {catalog_name!r} failed for {identifier}: {type(err).__name__}: {err}"
        ) from err
    raise CatalogError(f"Iceberg catalog {catalog_name!r}: {identifier} kept changing; gave up")


def _is_sql(catalog: Any) -> bool:
    from pyiceberg.catalog.sql import SqlCatalog

    return isinstance(catalog, SqlCatalog)


def _is_glue(catalog: Any) -> bool:
    from pyiceberg.catalog.glue import GlueCatalog

    return isinstance(catalog, GlueCatalog)


def _is_hive(catalog: Any) -> bool:
    # pyiceberg's Hive module needs the Thrift package; a Hive catalog object exists only if it loaded
    module = sys.modules.get("pyiceberg.catalog.hive")
    return module is not None and isinstance(catalog, module.HiveCatalog)


def _swap_hive_pointer(catalog: Any, identifier: str, expected: str, new: str, metadata: Any) -> bool:
    """Move a Hive Metastore table's ``metadata_location`` from ``expected`` to ``new``, conditionally.

    The guard is the metastore's exclusive table lock (the one pyiceberg's Hive ``commit_table``
    takes), under which the table is read and its pointer compared with ``expected``: every writer
    that takes the lock (pyiceberg, Iceberg's Hive catalog, this sync) sees the pointer it replaces.
    ``alter_table`` also carries ``expected_parameter_key``/``expected_parameter_value``, which Hive 4
    metastores check again in the transaction that changes the table (a refusal there surfaces as an
    error); Hive 3 metastores ignore them. The table's columns are rebuilt from the schema and the
    parameters from the metadata's properties, as pyiceberg's Hive catalog builds them, pointing at
    the emitter's file itself (pyiceberg cannot write format v3 metadata). False when the pointer is
    no longer ``expected`` or the lock could not be had: the caller reads again.
    """
    from hive_metastore.ttypes import EnvironmentContext, LockState, UnlockRequest
    from pyiceberg.catalog.hive import (
        DO_NOT_UPDATE_STATS,
        DO_NOT_UPDATE_STATS_DEFAULT,
        HIVE2_COMPATIBLE,
        HIVE2_COMPATIBLE_DEFAULT,
        PROP_METADATA_LOCATION,
        _construct_hive_storage_descriptor,
        _construct_parameters,
    )
    from pyiceberg.exceptions import CommitFailedException
    from pyiceberg.utils.properties import property_as_bool

    database, name = catalog.identifier_to_database_and_table(identifier)
    # pyiceberg's Hive catalog has no public client or lock API; its own commits use these members, so
    # the lock request, its wait and retry settings are exactly those of pyiceberg's commits
    with catalog._client as client:  # noqa: SLF001
        lock = client.lock(catalog._create_lock_request(database, name))  # noqa: SLF001
        try:
            if lock.state == LockState.WAITING:
                catalog._wait_for_lock(database, name, lock.lockid, client)  # noqa: SLF001
            elif lock.state != LockState.ACQUIRED:
                return False
            hive_table = client.get_table(dbname=database, tbl_name=name)
            parameters = dict(hive_table.parameters or {})
            if parameters.get(PROP_METADATA_LOCATION) != expected:
                return False
            parameters.update(_construct_parameters(new, expected, metadata.properties))
            hive_table.parameters = parameters
            hive2 = property_as_bool(catalog.properties, HIVE2_COMPATIBLE, HIVE2_COMPATIBLE_DEFAULT)
            hive_table.sd = _construct_hive_storage_descriptor(metadata.schema(), metadata.location, hive2)
            context = EnvironmentContext(
                properties={
                    DO_NOT_UPDATE_STATS: DO_NOT_UPDATE_STATS_DEFAULT,
                    "expected_parameter_key": PROP_METADATA_LOCATION,
                    "expected_parameter_value": expected,
                }
            )
            client.alter_table_with_environment_context(
                dbname=database, tbl_name=name, new_tbl=hive_table, environment_context=context
            )
            return True
        except CommitFailedException:
            return False  # the lock stayed with another writer: read again
        finally:
            client.unlock(UnlockRequest(lockid=lock.lockid))


def _swap_glue_pointer(catalog: Any, identifier: str, expected: str, new: str, metadata: Any) -> bool:
    """Move a Glue table's ``metadata_location`` from ``expected`` to ``new``, conditionally.

    Glue's optimistic concurrency: the table is read with its ``VersionId``, and ``UpdateTable`` with
    that ``VersionId`` fails (``ConcurrentModificationException``) when another writer updated the
    table since; pyiceberg's own Glue commits rely on the same check. The table input is the one
    pyiceberg's Glue catalog builds (columns from the schema, ``table_type=ICEBERG``,
    ``previous_metadata_location``), pointing at the emitter's file itself. False when the pointer is
    no longer ``expected`` or the conditional update lost: the caller reads again.
    """
    from pyiceberg.catalog.glue import _construct_table_input

    database, name = catalog.identifier_to_database_and_table(identifier)
    glue_table = catalog.glue.get_table(DatabaseName=database, Name=name)["Table"]
    if (glue_table.get("Parameters") or {}).get("metadata_location") != expected:
        return False
    table_input = _construct_table_input(name, new, {}, metadata, glue_table, expected)
    glue = catalog.glue
    try:
        glue.update_table(
            DatabaseName=database, TableInput=table_input, VersionId=str(glue_table["VersionId"])
        )
    except glue.exceptions.ConcurrentModificationException:
        return False  # another writer updated the table since it was read
    return True


def _swap_pointer(catalog: Any, identifier: str, expected: str, new: str) -> bool:
    """Compare-and-swap of a SQL catalog's pointer: ``expected`` -> ``new`` in one conditional UPDATE.

    The same statement pyiceberg's own ``SqlCatalog.commit_table`` runs, minus writing a metadata file of
    its own: the catalog points at the emitter's file itself (pyiceberg cannot write format v3
    metadata). False when the row no longer holds ``expected`` (a concurrent sync won).
    """
    from pyiceberg.catalog import Catalog
    from pyiceberg.catalog.sql import IcebergTables
    from sqlalchemy import update
    from sqlalchemy.orm import Session

    namespace = Catalog.namespace_to_string(Catalog.namespace_from(identifier))
    name = Catalog.table_name_from(identifier)
    with Session(catalog.engine) as session:
        done = session.execute(
            update(IcebergTables)
            .where(
                IcebergTables.catalog_name == catalog.name,
                IcebergTables.table_namespace == namespace,
                IcebergTables.table_name == name,
                IcebergTables.metadata_location == expected,
            )
            .values(metadata_location=new, previous_metadata_location=expected)
        )
        session.commit()
        return bool(getattr(done, "rowcount", 0) == 1)  # a CursorResult for an UPDATE


def _forward(theirs: Any, ours: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """Requirements and updates that bring the catalog's metadata ``theirs`` to the emitter's ``ours``."""
    from pyiceberg.table.refs import SnapshotRefType
    from pyiceberg.table.update import (
        AddPartitionSpecUpdate,
        AddSchemaUpdate,
        AddSnapshotUpdate,
        AssertRefSnapshotId,
        AssertTableUUID,
        RemoveSnapshotsUpdate,
        SetCurrentSchemaUpdate,
        SetDefaultSpecUpdate,
        SetPropertiesUpdate,
        SetSnapshotRefUpdate,
    )

    updates: list[Any] = []
    their_schemas = {s.schema_id for s in theirs.schemas}
    for schema in ours.schemas:
        if schema.schema_id not in their_schemas:
            updates.append(AddSchemaUpdate(schema=schema))
    if ours.current_schema_id != theirs.current_schema_id:
        updates.append(SetCurrentSchemaUpdate(schema_id=ours.current_schema_id))
    their_specs = {s.spec_id for s in theirs.partition_specs}
    for spec in ours.partition_specs:
        if spec.spec_id not in their_specs:
            updates.append(AddPartitionSpecUpdate(spec=spec))
    if ours.default_spec_id != theirs.default_spec_id:
        updates.append(SetDefaultSpecUpdate(spec_id=ours.default_spec_id))
    their_snapshots = {s.snapshot_id for s in theirs.snapshots}
    for snap in sorted(ours.snapshots, key=lambda s: s.sequence_number or 0):
        if snap.snapshot_id not in their_snapshots:
            updates.append(AddSnapshotUpdate(snapshot=snap))
    if ours.current_snapshot_id is not None:
        updates.append(
            SetSnapshotRefUpdate(
                ref_name="main", type=SnapshotRefType.BRANCH, snapshot_id=ours.current_snapshot_id
            )
        )
    # snapshots the sync expired (their manifest lists are deleted after our commit) leave the catalog's
    # metadata too
    ours_ids = {s.snapshot_id for s in ours.snapshots}
    expired = sorted(sid for sid in their_snapshots if sid not in ours_ids)
    if expired:
        updates.append(RemoveSnapshotsUpdate(snapshot_ids=expired))
    changed = {k: v for k, v in ours.properties.items() if theirs.properties.get(k) != v}
    if changed:
        updates.append(SetPropertiesUpdate(updates=changed))
    requirements = (
        AssertTableUUID(uuid=theirs.table_uuid),
        AssertRefSnapshotId(ref="main", snapshot_id=theirs.current_snapshot_id),
    )
    return requirements, tuple(updates)


def catalog_status(
    catalog_name: str, identifier: str, metadata_location: str | None = None, *, io: storage.FileIO
) -> dict[str, Any]:
    """Where ``identifier`` stands in the catalog, for reports: ``registered``, the Delta version its
    Iceberg table holds, its metadata location; ``error`` when the catalog could not answer.

    ``metadata_location`` (the table's own metadata, if any) and ``io`` (the table's) only choose the
    store settings of the catalog's FileIO. Never raises: a report lists the state of every table
    whatever one catalog says.
    """
    from pyiceberg.exceptions import NoSuchTableError

    out: dict[str, Any] = {"catalog": catalog_name, "identifier": identifier, "registered": False}
    try:
        table = _load(catalog_name, metadata_location, io).load_table(identifier)
    except NoSuchTableError:
        return out
    except Exception as err:  # a report states what the catalog said, it does not stop
        out["error"] = f"{type(err).__name__}: {err}"
        return out
    version = _delta_version_of(table.metadata.properties)
    out.update(
        registered=True,
        delta_version=None if version < 0 else version,
        metadata_location=table.metadata_location,
    )
    return out
