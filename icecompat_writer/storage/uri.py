"""Where a table's files live: local paths and object-store URIs, parsed once.

A location is either a :class:`pathlib.Path` (absolute, for ``file:`` URIs and plain paths) or an
:class:`ObjectPath` (``s3://``, ``s3a://``, ``s3n://``, ``gs://``, ``abfs://``, ``abfss://``,
``wasbs://``). ``ObjectPath`` offers the few ``PurePath`` operations the log reader uses (``/``,
``name``, ``parent``, ``relative_to``), so code that walks a table works on both without branching on
the scheme; only :mod:`icecompat_writer.storage` decides how the bytes are fetched.

The scheme a user wrote is kept (an ``s3a://`` table stays ``s3a://`` in messages and in what Spark is
given); :func:`iceberg_uri` gives the spelling Iceberg readers expect (``s3://`` for the Hadoop S3
schemes; the Azure and GCS schemes are the same in both worlds).
"""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

from icecompat_writer.errors import TableReadError

__all__ = [
    "FAMILIES",
    "Location",
    "ObjectPath",
    "UnsupportedSchemeError",
    "escape_decoded",
    "iceberg_uri",
    "is_local",
    "is_under",
    "location_in",
    "location_of_iceberg_uri",
    "location_uri",
    "parse_location",
    "relative_text",
]

# scheme -> store family: one filesystem implementation and one set of configuration keys per family
FAMILIES: dict[str, str] = {
    "s3": "s3",
    "s3a": "s3",
    "s3n": "s3",
    "gs": "gcs",
    "abfs": "azure",
    "abfss": "azure",
    "wasbs": "azure",
}
# Hadoop's S3 schemes are all ``s3://`` to Iceberg readers (pyiceberg, DuckDB, Trino, Spark's S3FileIO).
_ICEBERG_SCHEME = {"s3a": "s3", "s3n": "s3"}
_SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


class UnsupportedSchemeError(TableReadError):
    """A URI whose scheme no storage filesystem serves (``hdfs:``, ``http:``, ...)."""


@dataclass(frozen=True, slots=True)
class ObjectPath:
    """One object or prefix in an object store: ``scheme://authority/key``.

    ``authority`` is the bucket (S3, GCS) or ``container@account.host`` (Azure). ``key`` has no
    leading or trailing ``/`` and is ``""`` at the bucket root. Keys are normalised lexically (``.`` and
    ``..`` segments resolved, ``//`` collapsed), so a key can be compared with a root by prefix.
    """

    scheme: str
    authority: str
    key: str = ""

    # --- the PurePath subset the readers use ---------------------------------------------------
    def __truediv__(self, name: str) -> ObjectPath:
        joined = posixpath.normpath(posixpath.join("/" + self.key, name)).lstrip("/")
        return ObjectPath(self.scheme, self.authority, "" if joined == "." else joined)

    @property
    def name(self) -> str:
        return self.key.rsplit("/", 1)[-1]

    @property
    def parent(self) -> ObjectPath:
        return ObjectPath(self.scheme, self.authority, self.key.rsplit("/", 1)[0] if "/" in self.key else "")

    def relative_to(self, other: object) -> PurePosixPath:
        if not isinstance(other, ObjectPath) or (other.family, other.authority) != (
            self.family,
            self.authority,
        ):
            raise ValueError(f"{self} is not under {other}")
        if not other.key:
            return PurePosixPath(self.key)
        if self.key == other.key:
            return PurePosixPath(".")
        if not self.key.startswith(other.key + "/"):
            raise ValueError(f"{self} is not under {other}")
        return PurePosixPath(self.key[len(other.key) + 1 :])

    def as_posix(self) -> str:
        return self.uri

    def is_under(self, root: ObjectPath) -> bool:
        """Whether this object lies strictly below ``root`` in the same bucket/container (any S3 scheme)."""
        if (self.family, self.authority) != (root.family, root.authority):
            return False
        return not root.key or self.key.startswith(root.key + "/")

    # --- object-store specifics ------------------------------------------------------------------
    @property
    def family(self) -> str:
        return FAMILIES[self.scheme]

    @property
    def uri(self) -> str:
        return (
            f"{self.scheme}://{self.authority}/{self.key}"
            if self.key
            else f"{self.scheme}://{self.authority}"
        )

    @property
    def bucket(self) -> str:
        """The S3/GCS bucket, or the Azure container."""
        return self.authority.split("@", 1)[0]

    @property
    def account(self) -> str | None:
        """The Azure storage account (the first label of the host), None elsewhere."""
        if self.family != "azure" or "@" not in self.authority:
            return None
        return self.authority.split("@", 1)[1].split(".", 1)[0]

    @property
    def host(self) -> str | None:
        """The Azure endpoint host (``account.dfs.core.windows.net``), None elsewhere."""
        if self.family != "azure" or "@" not in self.authority:
            return None
        return self.authority.split("@", 1)[1]

    @property
    def fs_path(self) -> str:
        """The path pyarrow's filesystem for this store takes: ``bucket/key`` (``container/key``)."""
        return f"{self.bucket}/{self.key}" if self.key else self.bucket

    def with_fs_path(self, fs_path: str) -> ObjectPath:
        """The object at ``fs_path`` (as a listing returns it) in this path's store, scheme kept."""
        bucket, _, key = fs_path.partition("/")
        if bucket != self.bucket:
            raise ValueError(f"{fs_path!r} is not in the bucket of {self}")
        return ObjectPath(self.scheme, self.authority, key.strip("/"))

    def __str__(self) -> str:
        return self.uri


Location = Path | ObjectPath
"""A table file or directory: a local absolute path or an object-store path."""


def is_local(location: Location) -> bool:
    return isinstance(location, Path)


def parse_location(text: str | os.PathLike[str] | ObjectPath) -> Location:
    """The location ``text`` names: an absolute local ``Path`` or an :class:`ObjectPath`.

    ``file:`` URIs and plain paths become absolute paths (lexically normalised: no symlink
    resolution, so the root a caller names is the root compared against). Object-store URIs need a
    bucket (``s3a://bucket/...``) or, for Azure, ``container@account.host``. Any other scheme raises
    :class:`UnsupportedSchemeError` naming the schemes that work.
    """
    if isinstance(text, ObjectPath | Path):
        return text if isinstance(text, ObjectPath) else Path(os.path.abspath(text))
    text = os.fspath(text)
    if not _SCHEME_RE.match(text) or _is_windows_drive(text):
        return Path(os.path.abspath(text))
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise TableReadError(f"file URI with a remote host is not a local path: {text!r}")
        return Path(os.path.abspath(unquote(parts.path)))
    if scheme not in FAMILIES:
        raise UnsupportedSchemeError(
            f"{text!r} uses the {parts.scheme!r} scheme, which is not supported outside Spark; "
            f"supported: file:, {', '.join(s + '://' for s in FAMILIES)}"
        )
    if not parts.netloc:
        raise TableReadError(f"{text!r} names no bucket: write {scheme}://<bucket>/<path>")
    if FAMILIES[scheme] == "azure" and "@" not in parts.netloc:
        raise TableReadError(
            f"{text!r} names no storage account: write {scheme}://<container>@<account>.dfs.core.windows.net/<path>"
        )
    if parts.query or parts.fragment:
        raise TableReadError(f"{text!r} has a query or fragment, which no table location has")
    key = posixpath.normpath("/" + unquote(parts.path)).lstrip("/") if parts.path else ""
    return ObjectPath(scheme, parts.netloc, "" if key == "." else key)


def escape_decoded(text: str) -> str:
    """A decoded object-store path text as a URI :func:`parse_location` decodes back to the same key."""
    return text.replace("%", "%25").replace("?", "%3F").replace("#", "%23")


def location_in(root: Location, text: str) -> Location:
    """The location of ``text``, a decoded path under ``root`` in ``root``'s own spelling (a local path,
    or an object URI of ``root``'s store), as a location of ``root``'s kind."""
    if isinstance(root, Path):
        return Path(text)
    return parse_location(escape_decoded(text))


def relative_text(location: Location, root: Location) -> str | None:
    """``location`` relative to ``root`` as a POSIX path, or None when it is not under ``root``
    (or on another store)."""
    try:
        if isinstance(location, Path):
            return location.relative_to(root).as_posix() if isinstance(root, Path) else None
        return location.relative_to(root).as_posix()
    except ValueError:
        return None


def is_under(location: Location, directory: Location) -> bool:
    """Whether ``location`` lies strictly below ``directory``, lexically, on the same store (any of
    the Hadoop S3 schemes naming one bucket)."""
    return relative_text(location, directory) not in (None, ".")


def location_uri(location: Location) -> str:
    """The URI of a location: ``file://`` + path for local ones."""
    return "file://" + os.fspath(location) if isinstance(location, Path) else location.uri


def iceberg_uri(location: Location) -> str:
    """The URI Iceberg metadata records for ``location``: ``s3://`` for ``s3a``/``s3n``, else as is."""
    if isinstance(location, Path):
        return "file://" + os.fspath(location)
    scheme = _ICEBERG_SCHEME.get(location.scheme, location.scheme)
    return ObjectPath(scheme, location.authority, location.key).uri


def location_of_iceberg_uri(uri: str, root: Location) -> Location:
    """The location of a file Iceberg metadata names as :func:`iceberg_uri` wrote it (not
    percent-decoded), read through ``root``'s store.

    A local table's metadata names local files (``file:`` URIs or plain paths); an object-store
    table's names objects of its own bucket (container), and an ``s3://`` URI is read back through
    the table's own scheme (``s3a``), so the same credentials apply. Anything else is a
    :class:`TableReadError`.
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
        loc = parse_location(uri.replace("%", "%25"))
    except TableReadError:
        loc = None
    if not isinstance(loc, ObjectPath) or (loc.family, loc.authority) != (root.family, root.authority):
        raise TableReadError(f"cannot read {uri}: it is not in the table's bucket ({root})")
    return ObjectPath(root.scheme, root.authority, loc.key)


def _is_windows_drive(text: str) -> bool:
    return len(text) >= 2 and text[1] == ":" and text[0].isalpha() and os.name == "nt"
