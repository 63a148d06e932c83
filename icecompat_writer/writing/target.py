"""Where a write goes: a filesystem path/URI or a catalog table name.

A string with a path separator or a URI scheme is a location; anything else is a (possibly
qualified) table identifier that the session's catalog resolves.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from icecompat_writer.errors import IcecompatError

__all__ = ["Target", "TargetError", "parse_target"]

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_IDENT_PART = re.compile(r"`(?:[^`]|``)+`|[^.`]+")


class TargetError(IcecompatError, ValueError):
    """A write target that is neither a path nor a well-formed table identifier (nothing is run)."""


@dataclass(frozen=True)
class Target:
    """A write target. Exactly one of ``location`` (a path/URI) and ``table`` (identifier parts) is set."""

    location: str | None = None
    table: tuple[str, ...] | None = None

    @property
    def is_table(self) -> bool:
        return self.table is not None

    @property
    def display(self) -> str:
        if self.table is not None:
            return ".".join(quote_identifier(p) for p in self.table)
        return str(self.location)

    @property
    def sql_name(self) -> str:
        """The identifier quoted for SQL: every part in backticks, backticks doubled."""
        if self.table is None:
            return f"delta.{quote_identifier(str(self.location))}"
        return ".".join(quote_identifier(p) for p in self.table)


def quote_identifier(part: str) -> str:
    """Quote one identifier part for Spark SQL so that no name can inject SQL."""
    return "`" + part.replace("`", "``") + "`"


def _split_identifier(name: str) -> tuple[str, ...]:
    parts: list[str] = []
    pos = 0
    while pos < len(name):
        m = _IDENT_PART.match(name, pos)
        if m is None:
            raise TargetError(f"not a table identifier: {name!r}")
        token = m.group(0)
        parts.append(token[1:-1].replace("``", "`") if token.startswith("`") else token)
        pos = m.end()
        if pos < len(name):
            if name[pos] != ".":
                raise TargetError(f"not a table identifier: {name!r}")
            pos += 1
            if pos == len(name):
                raise TargetError(f"not a table identifier: {name!r}")
    if not parts or any(not p for p in parts):
        raise TargetError(f"not a table identifier: {name!r}")
    return tuple(parts)


def parse_target(target: str | Path) -> Target:
    """Classify ``target`` as a location (has ``/`` or a URI scheme, or is a Path) or a table name."""
    if isinstance(target, Path):  # user input: a Path the caller passed is a location, never a table name
        return Target(location=str(target.expanduser().resolve()))
    text = str(target).strip()
    if not text:
        raise TargetError("empty write target")
    if _SCHEME.match(text):
        return Target(location=text)
    if "/" in text and not text.startswith("`"):
        return Target(location=str(Path(text).expanduser().resolve()))
    return Target(table=_split_identifier(text))
