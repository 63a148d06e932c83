"""What the package takes from Pythons newer than the oldest one it supports (3.10), in one place.

Each name is the standard library's own where the running Python has it, and otherwise a definition
that behaves the same for everything the package does with it, so that the rest of the package is
written once, for 3.11 and later. At the bottom floor: any layer may import it.
"""

from __future__ import annotations

import datetime
import enum
import re
import sys
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["StrEnum", "datetime_fromisoformat", "indices_nonzero"]


def indices_nonzero(mask: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``pyarrow.compute.indices_nonzero``, also for a mask without rows: pyarrow 25 and older (the
    newest that Python 3.10 can install is 25.0.1) end the process with a segmentation fault on a
    chunked array whose chunks are all empty (e.g. the live files of a table without any); 26 gives
    an empty result, as this does for every version."""
    if len(mask) == 0:
        return pa.array([], pa.uint64())
    return pc.indices_nonzero(mask)


if sys.version_info >= (3, 11):
    from enum import StrEnum

    datetime_fromisoformat = datetime.datetime.fromisoformat
else:

    class StrEnum(str, enum.Enum):
        """Python 3.11's :class:`enum.StrEnum`: members are strings, and ``str()``, ``format()`` and
        f-strings give the value (a plain ``(str, Enum)`` gives ``Class.MEMBER`` for ``str()`` on
        3.10, which would change every report, message and file name built from a member).
        ``auto()`` gives the lower-cased member name, as on 3.11."""

        def __str__(self) -> str:
            return str.__str__(self)

        def __format__(self, format_spec: str) -> str:
            return str.__format__(self, format_spec)

        @staticmethod
        def _generate_next_value_(name: str, start: int, count: int, last_values: list[Any]) -> str:
            return name.lower()

    # The extended ISO-8601 forms 3.10's fromisoformat refuses and 3.11's reads: a ``Z`` zone, a fraction
    # of seconds of other than 3 or 6 digits (Spark writes ``12:00:00.1``), a zone offset without its
    # colon or without minutes. The basic forms (``20240301T120000``) stay refused: Delta writes none.
    _ISO_TAIL = re.compile(
        r"(?P<time>[T ]\d{2}:\d{2}(?::\d{2})?)(?:[.,](?P<fraction>\d+))?"
        r"(?:(?P<z>Z)|(?P<sign>[+-])(?P<hh>\d{2})(?::?(?P<mm>\d{2}))?(?::?(?P<ss>\d{2})(?:[.,](?P<sf>\d+))?)?)?$"
    )

    def datetime_fromisoformat(date_string: str) -> datetime.datetime:
        """Python 3.11's :meth:`datetime.datetime.fromisoformat` for the extended ISO-8601 forms: the
        text is rewritten into one that 3.10 reads (a fraction cut or padded to microseconds, as 3.11
        cuts it; ``Z`` as ``+00:00``), anything else is passed through and refused as before."""
        match = _ISO_TAIL.search(date_string)
        if match is None or len(date_string) < 10:
            return datetime.datetime.fromisoformat(date_string)
        tail = match["time"]
        if match["fraction"] is not None:
            tail += "." + match["fraction"][:6].ljust(6, "0")
        if match["z"] is not None:
            tail += "+00:00"
        elif match["sign"] is not None:
            tail += f"{match['sign']}{match['hh']}:{match['mm'] or '00'}"
            if match["ss"] is not None:
                tail += ":" + match["ss"]
                if match["sf"] is not None:
                    tail += "." + match["sf"][:6].ljust(6, "0")
        return datetime.datetime.fromisoformat(date_string[: match.start()] + tail)
