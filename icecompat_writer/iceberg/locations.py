"""Where the emitter's files are: URIs written into metadata, and the table-root confinement checks.

The emitter reads and writes nothing outside ``<root>/metadata`` and never lets metadata point at a data
file outside the table root (lexically, or through a symbolic link): an Iceberg reader would read it
as this table's data.
"""

from __future__ import annotations

import os
from pathlib import Path

from icecompat_writer import storage
from icecompat_writer.deltalog.paths import resolve_data_path
from icecompat_writer.errors import CompatViolation, TableReadError, Violation
from icecompat_writer.storage import Location, ObjectPath

from .metadata import METADATA_DIR
from .schema import violation

__all__ = ["data_path_outside", "inside", "local", "outside_violation", "owned", "uri"]


def uri(path: Location) -> str:
    """A fully qualified location (Iceberg v2/v3 need the scheme), not percent-encoded: ``file://``
    locally, ``s3://`` for an ``s3a``/``s3n`` table (what Iceberg readers expect), else the table's."""
    return storage.iceberg_uri(path)


def local(uri: str, root: Location) -> Location:
    """The location of a file named in metadata written by :func:`_uri` (no percent-decoding, as written).

    On an object store the URI must name the table's own bucket (container); ``s3://`` is read back
    through the table's own scheme (``s3a``), so the same credentials apply.
    """
    if isinstance(root, Path):
        if uri.startswith("file://"):
            return Path(uri[len("file://") :])
        if uri.startswith("file:"):
            return Path(uri[len("file:") :])
        if "://" in uri:
            raise TableReadError(f"cannot read {uri}: the table is local, the metadata names another store")
        return Path(uri)
    try:
        loc = storage.parse_location(uri.replace("%", "%25"))
    except TableReadError:
        loc = None
    if not isinstance(loc, ObjectPath) or (loc.family, loc.authority) != (root.family, root.authority):
        raise TableReadError(f"cannot read {uri}: it is not in the table's bucket ({root})")
    return ObjectPath(root.scheme, root.authority, loc.key)


def inside(path: str, real_root: str) -> bool:
    return path.startswith(real_root.rstrip("/") + "/")


def data_path_outside(
    root: Location, real_root: str, delta_path: str, real_dirs: dict[str, str] | None = None
) -> str | None:
    """Why a data file's path leaves the table root (lexically, or through a symbolic link), else None.

    The emitter never opens such a file, and never lets Iceberg metadata point at it: an Iceberg reader
    would read it as this table's data. ``real_dirs`` (directory -> its resolved path) lets one run
    resolve each directory once instead of every file's whole path; the file itself is still checked
    for being a link.
    """
    local = resolve_data_path(root, delta_path)
    if local is None:
        return "resolves outside the table root"
    if not isinstance(local, Path):
        return None  # an object store has no links: the lexical check is the whole check
    if real_dirs is None:
        real = os.path.realpath(local)
    else:
        parent = str(local.parent)
        real_dir = real_dirs.get(parent)
        if real_dir is None:
            real_dir = real_dirs[parent] = os.path.realpath(parent)
        real = os.path.join(real_dir, local.name)
        if os.path.islink(real):
            real = os.path.realpath(real)
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


def owned(root: Location, path: Location, what: str) -> Location:
    """``path`` when it (symbolic links resolved) is inside ``root/metadata``; refused otherwise.

    The emitter reads and writes nothing but its own tree: a ``metadata`` directory that is a link to
    another place, or metadata naming files elsewhere, would make it read or write outside the table.
    """
    meta_dir = root / METADATA_DIR
    if isinstance(path, ObjectPath) and isinstance(meta_dir, ObjectPath):
        if path.is_under(meta_dir):
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
    assert isinstance(path, Path) and isinstance(meta_dir, Path) and isinstance(root, Path)
    meta_real = os.path.realpath(meta_dir)
    real = os.path.realpath(path)
    if not inside(meta_real, os.path.realpath(root)):
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
