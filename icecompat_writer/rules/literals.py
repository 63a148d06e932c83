"""Is a column default (the SQL text Delta stores in ``CURRENT_DEFAULT``) a literal value?

IcebergCompatV3 requires every write default to be a literal, because Iceberg stores a default as a
value, not as an expression to evaluate. Delta keeps the default as Spark SQL text, so deciding
"literal" means recognising Spark SQL literal syntax: NULL, booleans, numbers (with Spark's type
suffixes), quoted strings, typed literals such as ``DATE '2024-01-01'`` and hex binary ``X'0A'``.
Anything else -- a function call, arithmetic, a column reference -- is an expression.
"""

from __future__ import annotations

import re

__all__ = ["is_literal"]

_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?(BD|[LSYDF])?", re.IGNORECASE)
_KEYWORD = re.compile(r"NULL|TRUE|FALSE", re.IGNORECASE)
# A quoted string: '...' or "...", with backslash escapes or a doubled quote inside.
_QUOTED = r"""('([^'\\]|\\.|'')*'|"([^"\\]|\\.|"")*")"""
_STRING = re.compile(_QUOTED, re.DOTALL)
_TYPED = re.compile(
    r"(DATE|TIMESTAMP|TIMESTAMP_NTZ|TIMESTAMP_LTZ)\s*" + _QUOTED,
    re.IGNORECASE | re.DOTALL,
)
_HEX = re.compile(r"X'([0-9A-Fa-f]{2})*'", re.IGNORECASE)


def is_literal(sql: str) -> bool:
    """True when ``sql`` (surrounding whitespace ignored) is a single Spark SQL literal."""
    text = sql.strip()
    if not text:
        return False
    return any(p.fullmatch(text) for p in (_KEYWORD, _NUMBER, _STRING, _TYPED, _HEX))
