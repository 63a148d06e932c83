"""Is a column default (the SQL text Delta stores in ``CURRENT_DEFAULT``) a literal value of its type?

IcebergCompatV3 requires every write default to be a literal, because Iceberg stores a default as a
value of the column's type, not as an expression to evaluate. Delta keeps the default as Spark SQL
text, so "a literal value" has to be decided on that text, for the column's type. delta-spark 4.4
decides it at commit with its own parsers, which accept less than Spark SQL's literal syntax:
``DATE '2024-01-01'``, ``NULL``, a quoted number or ``5S`` fail there although Spark parses them.
This module accepts exactly the forms delta-spark 4.4 was seen to accept, type by type (the table
in docs/profiles.md, pinned by tests/oracles/test_delta_spark.py), so that ``compat_write`` refuses
the others with the rule instead of failing inside delta-spark after the data files are written.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal, InvalidOperation

from icecompat_writer.rules.schema import decimal_params, type_category

__all__ = ["default_problem"]

_INTEGER = re.compile(r"[+-]?\d+")
_LONG = re.compile(r"[+-]?\d+[lL]?")
_FLOATING = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fFdD]?")
_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_QUOTED = re.compile(r"""'([^'\\]|\\.|'')*'|"([^"\\]|\\.|"")*\"""", re.DOTALL)
_HEX = re.compile(r"[xX]'([0-9A-Fa-f]{2})*'")
_BOOLEAN = re.compile(r"true|false", re.IGNORECASE)
_DATE = r"(\d{4})-(\d{2})-(\d{2})"
_ISO_TIME = r"(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?"
_OFFSET = r"(Z|[+-]\d{2}:\d{2}(?::\d{2})?)"
_DATE_TEXT = re.compile(_DATE)
# ISO date-time (seconds and fraction optional), or the SQL form with a space and whole seconds.
_TIMESTAMP_TEXT = re.compile(_DATE + r"T" + _ISO_TIME + _OFFSET + "?")
_NTZ_TEXT = re.compile(_DATE + r"T" + _ISO_TIME)
_SPACED_TEXT = re.compile(_DATE + r" (\d{2}):(\d{2}):(\d{2})")

_RANGES = {"byte": 8, "short": 16, "integer": 32, "long": 64}

# What each type's default must look like, as the fix shows it.
EXAMPLES = {
    "byte": "a plain integer such as 7",
    "short": "a plain integer such as 7",
    "integer": "a plain integer such as 42 (no quotes, no suffix)",
    "long": "an integer such as 42 or 42L",
    "float": "a number such as 1.5 or 1.5F (no quotes)",
    "double": "a number such as 4.95 or 1e3 (no quotes)",
    "decimal": "a number within the column's precision and scale, such as 1.23 (no quotes, no BD)",
    "string": "a quoted string such as 'text'",
    "binary": "a hex literal such as X'0A' or a quoted string",
    "boolean": "true or false",
    "date": "a quoted ISO date such as '2024-01-01'",
    "timestamp": "a quoted timestamp such as '2024-01-01T10:00:00Z' or '2024-01-01 10:00:00'",
    "timestamp_ntz": "a quoted timestamp without zone such as '2024-01-01T10:00:00'",
}


def default_problem(sql: object, column_type: object) -> str | None:
    """None when ``sql`` is a literal delta-spark accepts as a default of ``column_type``, else what
    such a default must look like (for the violation's *expected* and the fix)."""
    category = type_category(column_type)
    expected = EXAMPLES.get(category)
    if expected is None:
        return f"nothing: delta-spark 4.4 accepts no default on a {category} column under IcebergCompatV3"
    if not isinstance(sql, str):
        return expected
    text = sql.strip()
    return None if _fits(text, category, column_type) else expected


def _fits(text: str, category: str, column_type: object) -> bool:
    if category in _RANGES:
        pattern = _LONG if category == "long" else _INTEGER
        if not pattern.fullmatch(text):
            return False
        bits = _RANGES[category]
        return bool(-(2 ** (bits - 1)) <= int(text.rstrip("lL")) < 2 ** (bits - 1))
    if category in ("float", "double"):
        return bool(_FLOATING.fullmatch(text))
    if category == "decimal":
        return bool(_DECIMAL.fullmatch(text)) and _decimal_fits(text, column_type)
    if category == "string":
        return bool(_QUOTED.fullmatch(text))
    if category == "binary":
        return bool(_HEX.fullmatch(text) or _QUOTED.fullmatch(text))
    if category == "boolean":
        return bool(_BOOLEAN.fullmatch(text))
    inner = _unquoted(text)
    if inner is None:
        return False
    if category == "date":
        m = _DATE_TEXT.fullmatch(inner)
    else:
        m = (_TIMESTAMP_TEXT if category == "timestamp" else _NTZ_TEXT).fullmatch(inner)
        m = m or _SPACED_TEXT.fullmatch(inner)
    return m is not None and _valid(*m.groups()[:6])


def _unquoted(text: str) -> str | None:
    """The content of a single-quoted or double-quoted string with no escapes inside, else None."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"" and text[0] not in text[1:-1]:
        return text[1:-1]
    return None


def _valid(year: str, month: str, day: str, *clock: str | None) -> bool:
    """A real calendar date and, when given, a real time of day (hour 24 and February 30 are not)."""
    try:
        dt.date(int(year), int(month), int(day))
        hour, minute, second = ([int(p) for p in clock if p is not None] + [0, 0, 0])[:3]
        dt.time(hour, minute, second)
    except ValueError:
        return False
    return True


def _decimal_fits(text: str, column_type: object) -> bool:
    """The value has at most the column's scale and at most precision - scale integer digits."""
    precision, scale = decimal_params(column_type) or (10, 0)  # Spark's plain DECIMAL is (10, 0)
    try:
        value = Decimal(text).as_tuple()
    except InvalidOperation:
        return False
    if not isinstance(value.exponent, int):
        return False
    digits = len(value.digits)
    value_scale = -value.exponent
    return value_scale <= scale and digits - value_scale <= precision - scale
