"""Column write defaults under IcebergCompatV3: a literal of the column's type, in delta-spark's forms.

The Spark oracle (tests/oracles/test_delta_spark.py) pins the same verdicts against delta-spark 4.4
itself; these cases run without Spark and add what no CREATE TABLE can send (non-text defaults).
"""

from __future__ import annotations

import pytest

from icecompat_writer.rules.literals import EXAMPLES, default_problem


@pytest.mark.parametrize(
    ("type_", "sql"),
    [
        ("integer", "42"), ("integer", "-7"), ("integer", "  +3  "), ("byte", "127"), ("short", "-32768"),
        ("long", "42L"), ("long", "-9223372036854775808"), ("double", "1e10"), ("double", ".5"),
        ("double", "3.0D"), ("float", "1.5F"), ("decimal(10,2)", "12.34"), ("decimal", "9999999999"),
        ("string", "'text'"), ("string", "''"), ("string", '"double"'), ("string", "'it''s'"),
        ("binary", "X'0AFF'"), ("binary", "'raw'"), ("boolean", "TRUE"), ("date", "'2024-02-29'"),
        ("timestamp", "'2024-01-01 10:00:00'"), ("timestamp", "'2024-01-01T10:00:00.5-05:30'"),
        ("timestamp_ntz", "\"2024-01-01T10:00\""),
    ],
)  # fmt: skip
def test_accepted(type_: str, sql: str) -> None:
    assert default_problem(sql, type_) is None


@pytest.mark.parametrize(
    ("type_", "sql"),
    [
        ("integer", "current_timestamp()"), ("integer", "1 + 1"), ("integer", "NULL"), ("integer", "'5'"),
        ("integer", "2147483648"), ("byte", "128"), ("short", "7S"), ("long", "5LL"), ("double", "NaN"),
        ("double", "'4.95'"), ("decimal(10,2)", "12.345"), ("decimal(10,2)", "12.34BD"),
        ("decimal", "12345678901"), ("string", "col_a"), ("string", "'a' || 'b'"), ("string", "'open"),
        ("binary", "X'ABC'"), ("boolean", "'true'"), ("date", "DATE '2024-01-01'"), ("date", "'2023-02-29'"),
        ("date", "' 2024-01-01'"), ("timestamp", "TIMESTAMP '2024-01-01 10:00:00'"),
        ("timestamp", "'2024-01-01'"), ("timestamp", "'2024-01-01T25:00:00Z'"),
        ("timestamp_ntz", "'2024-01-01T10:00:00Z'"), ("timestamp_ntz", "'2024-01-01 10:00:00.5'"),
    ],
)  # fmt: skip
def test_refused_with_the_form_the_type_needs(type_: str, sql: str) -> None:
    assert default_problem(sql, type_) == EXAMPLES[type_.split("(")[0]]


@pytest.mark.parametrize("value", [None, 5, True, ["'x'"]])
def test_a_default_that_is_not_text_is_refused(value: object) -> None:
    assert default_problem(value, "integer") == EXAMPLES["integer"]


ARRAY = {"type": "array", "elementType": "integer", "containsNull": True}


@pytest.mark.parametrize("type_", [ARRAY, "variant"])
def test_types_that_take_no_default(type_: object) -> None:
    problem = default_problem("NULL", type_)
    assert problem is not None and problem.startswith("nothing: delta-spark 4.4 accepts no default")
