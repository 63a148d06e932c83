"""Local files with plain ``os`` calls: the fast path, and the guards only a local disk needs.

pyarrow's ``LocalFileSystem`` is not used for local tables: ``os.scandir`` and ``open`` are what the
checker's 100,000-file benchmark was tuned on, and a local table can hold what no object store can: a
named pipe, a socket or a device under a data file's name, which would block a reader forever or
never end. Every local file is therefore opened without blocking and checked to be a regular file
before a byte is read (:func:`open_regular_file`).
"""

from __future__ import annotations

import os
import stat
import uuid
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "NotRegularFileError",
    "check_regular_file",
    "create_if_absent",
    "file_kind",
    "open_regular_file",
    "read_bytes",
    "read_tail",
    "write_bytes",
]


class NotRegularFileError(OSError):
    """A file that is a named pipe, socket, device or directory: it is never read.

    Reading a named pipe blocks until something writes to it (forever, in a table nobody writes), and
    a device may never end. An ``OSError``, so every caller's handling of an unreadable file applies;
    ``kind`` says what the file is instead (see :func:`file_kind`).
    """

    def __init__(self, path: Path | str, mode: int) -> None:
        self.kind = file_kind(mode)
        super().__init__(f"{path} is {self.kind}, not a regular file; it was not opened")


def file_kind(mode: int) -> str:
    """What a file that is not a regular file is, for messages (``st_mode`` of its stat)."""
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a regular file"


def open_regular_file(path: Path | str) -> BinaryIO:
    """``path`` opened for binary reading, or :class:`NotRegularFileError` when it is not a regular file.

    The file is opened without blocking (opening a named pipe for reading otherwise waits for a
    writer) and the open descriptor is checked, so a file swapped after the directory was listed
    cannot slip through either.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFileError(path, mode)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def check_regular_file(path: Path | str) -> None:
    """:class:`NotRegularFileError` unless ``path`` (links followed) is a regular file.

    For files opened by pyarrow, which takes a path: checked just before, so the window in which the
    file could be replaced is the time between two system calls.
    """
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise NotRegularFileError(path, mode)


def read_bytes(path: Path | str) -> bytes:
    with open_regular_file(path) as fh:
        return fh.read()


def read_tail(path: Path | str, length: int) -> tuple[bytes, int]:
    """The last ``length`` bytes of a regular file (all of it when shorter) and the file's size."""
    with open_regular_file(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        fh.seek(max(0, size - length))
        return fh.read(), size


def write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path``, creating its directory; replaced whole (temporary file + rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def create_if_absent(path: Path, data: bytes) -> bool:
    """Create ``path`` holding ``data`` unless it exists; False when it does.

    The bytes go to a temporary file first and are published with ``link``, which fails when the name
    exists: a reader never sees a partial file, and of two writers exactly one wins.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "xb") as fh:
            fh.write(data)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        return True
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
