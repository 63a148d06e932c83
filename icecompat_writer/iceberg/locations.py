"""Where the emitter's files are: URIs written into metadata, and the table-root confinement checks.

The emitter reads and writes nothing outside ``<root>/metadata`` and never lets metadata point at a data
file outside the table root (lexically, or through a symbolic link): an Iceberg reader would read it
as this table's data.
"""

from __future__ import annotations

from icecompat_writer import storage
from icecompat_writer.deltalog.paths import resolve_data_path
from icecompat_writer.errors import CompatViolation, Violation
from icecompat_writer.storage import FileIO, Location

from .metadata import METADATA_DIR
from .schema import violation

__all__ = ["data_path_outside", "inside", "local", "outside_violation", "owned", "uri"]


def uri(path: Location) -> str:
    """A fully qualified location (Iceberg v2/v3 need the scheme), not percent-encoded: ``file://``
    locally, ``s3://`` for an ``s3a``/``s3n`` table (what Iceberg readers expect), else the table's."""
    return storage.iceberg_uri(path)


def local(uri: str, root: Location) -> Location:
    """The location of a file named in metadata written by :func:`uri`, read through ``root``'s store
    (see :func:`~icecompat_writer.storage.location_of_iceberg_uri`)."""
    return storage.location_of_iceberg_uri(uri, root)


def inside(path: str, real_root: str) -> bool:
    return path.startswith(real_root.rstrip("/") + "/")


def data_path_outside(
    root: Location,
    real_root: str,
    delta_path: str,
    real_dirs: dict[str, str] | None = None,
    *,
    io: FileIO,
) -> str | None:
    """Why a data file's path leaves the table root (lexically, or through a symbolic link), else None.

    The emitter never opens such a file, and never lets Iceberg metadata point at it: an Iceberg reader
    would read it as this table's data. ``real_root`` is ``io.resolved(root)``; ``real_dirs``
    (directory -> its resolved path) lets one run resolve each directory once instead of every file's
    whole path (see :meth:`~icecompat_writer.storage.FileIO.resolved`). On an object store, which has no
    links, the lexical check is the whole check.
    """
    local = resolve_data_path(root, delta_path)
    if local is None:
        return "resolves outside the table root"
    real = io.resolved(local, real_dirs)
    if not inside(real, real_root):
        return f"is a symbolic link (or lies under one) leading outside the table root, to {real}"
    return None


def outside_violation(delta_path: str, reason: str) -> Violation:
    return violation(
        "ICEBERG-EMIT-OUTSIDE-ROOT",
        "",
        observed=delta_path,
        file=delta_path,
        reason=reason,
    )


def owned(root: Location, path: Location, what: str, *, io: FileIO) -> Location:
    """``path`` when it (symbolic links resolved) is inside ``root/metadata``; refused otherwise.

    The emitter reads and writes nothing but its own tree: a ``metadata`` directory that is a link to
    another place, or metadata naming files elsewhere, would make it read or write outside the table.
    """
    meta_dir = root / METADATA_DIR
    if io.remote:  # no links on an object store: the lexical check is the whole check
        if storage.is_under(path, meta_dir):
            return path
        raise CompatViolation(
            [
                violation(
                    "ICEBERG-EMIT-OUTSIDE-ROOT",
                    "",
                    variant="prefix",
                    observed=str(path),
                    what=what,
                    metadata_dir=METADATA_DIR,
                    metadata_root=meta_dir,
                )
            ]
        )
    meta_real = io.resolved(meta_dir)
    real = io.resolved(path)
    if not inside(meta_real, io.resolved(root)):
        variant = "root-link"
        real = meta_real
    elif not inside(real, meta_real):
        variant = "link"
    else:
        return path
    raise CompatViolation(
        [
            violation(
                "ICEBERG-EMIT-OUTSIDE-ROOT",
                "",
                variant=variant,
                observed=real,
                what=what,
                location=path,
                metadata_dir=METADATA_DIR,
                metadata_root=meta_dir,
            )
        ]
    )
