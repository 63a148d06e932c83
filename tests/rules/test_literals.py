"""Spark SQL literal recognition for IcebergCompatV3's "write defaults are literals"."""

from __future__ import annotations

import pytest

from icecompat_writer.rules.literals import is_literal


@pytest.mark.parametrize(
    "sql",
    [
        "42", "-7", "+3", "4.95", ".5", "1e10", "-2.5E-3", "42L", "7S", "1Y", "3.0D", "1.5F", "12.34BD",
        "NULL", "null", "true", "FALSE", "'text'", "''", "'it''s'", "'a\\'b'", '"double"', "  'padded'  ",
        "DATE '2024-01-01'", "TIMESTAMP '2024-01-01 10:00:00'", "timestamp_ntz'2024-01-01 00:00:00'",
        "X'0AFF'", "x''",
    ],
)  # fmt: skip
def test_literals(sql: str) -> None:
    assert is_literal(sql)


@pytest.mark.parametrize(
    "sql",
    [
        "", "   ", "current_timestamp()", "CURRENT_DATE", "1 + 1", "abs(-1)", "col_a", "'a' || 'b'",
        "'unterminated", "CAST(1 AS BIGINT)", "X'ABC'", "DATE 2024", "array(1, 2)", "--1", "1 2",
    ],
)  # fmt: skip
def test_expressions_are_not_literals(sql: str) -> None:
    assert not is_literal(sql)
