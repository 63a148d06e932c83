"""Column paths: how every layer names a column, so that one column is never spelled two ways.

Paths use logical names joined by dots with ``element``/``key``/``value`` for the nested levels
(PROTOCOL.md "Field Path"); a name containing a dot or a backtick (or an empty name) is quoted with
backticks, backticks doubled, so that every path reads back unambiguously.
"""

from __future__ import annotations

__all__ = ["ELEMENT", "KEY", "VALUE", "child_path", "fold_name", "join_path", "quote_name"]

# The path steps of the nested levels that are not struct fields.
ELEMENT = "element"
KEY = "key"
VALUE = "value"


def fold_name(name: str) -> str:
    """The key under which Delta matches column names case-insensitively.

    Delta's schema merge compares ``name.toLowerCase(Locale.ROOT)``: Unicode's full lowercase
    mapping, which ``str.lower`` implements too. ``str.casefold`` folds further (``ß`` and ``SS``
    become one name) and would join columns that Delta keeps apart.
    """
    return name.lower()


def quote_name(name: str) -> str:
    """One path segment: the name itself, or backtick-quoted when it holds a dot/backtick or is empty."""
    if name and "." not in name and "`" not in name:
        return name
    return "`" + name.replace("`", "``") + "`"


def join_path(parent: str, segment: str) -> str:
    """``segment`` (already quoted, or a nested step) below ``parent`` (``""`` at the top)."""
    return segment if not parent else parent + "." + segment


def child_path(parent: str, name: object) -> str:
    """The path of struct field ``name`` (any JSON value; text is what counts) below ``parent``."""
    if not isinstance(name, str):
        name = str(name)
    return join_path(parent, quote_name(name))
