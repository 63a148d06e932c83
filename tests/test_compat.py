"""icecompat_writer.compat: on every supported Python, the same results as Python 3.11's own names.

On 3.11 and later the module hands out the standard library's objects (asserted here); on 3.10 its
own definitions, which these tests hold to what 3.11 does.
"""

from __future__ import annotations

import datetime as dt
import enum
import json
import sys

import orjson
import pyarrow as pa
import pytest

from icecompat_writer import compat
from icecompat_writer.checking.check import Severity
from icecompat_writer.deltalog.findings import FindingCode
from icecompat_writer.rules.model import Scope, Stage

UTC = dt.timezone.utc


def zone(**offset: int) -> dt.timezone:
    return dt.timezone(dt.timedelta(**offset))


class Color(compat.StrEnum):
    RED = "red"
    DARK_BLUE = enum.auto()


def test_the_standard_library_names_where_python_has_them() -> None:
    if sys.version_info >= (3, 11):
        assert compat.StrEnum is enum.StrEnum
        assert compat.datetime_fromisoformat == dt.datetime.fromisoformat
    else:
        assert compat.StrEnum is not getattr(enum, "StrEnum", None)


MEMBERS = [Color.RED, Severity.ERROR, FindingCode.CORRUPT_LINE, Scope.FILE, Stage.PLAN]


@pytest.mark.parametrize("member", MEMBERS)
def test_a_str_enum_member_reads_as_its_value(member: compat.StrEnum) -> None:
    value = member.value
    assert isinstance(member, str)
    assert member == value
    assert str(member) == value
    assert format(member) == value
    assert f"{member}" == value
    assert f"[{member:>20}]" == f"[{value:>20}]"
    assert "%s" % member == value  # noqa: UP031 (the %-form is what logging uses)
    assert json.dumps({member: [member]}) == json.dumps({value: [value]})
    assert orjson.loads(orjson.dumps(member)) == value
    assert type(member)(value) is member
    assert repr(member) == f"<{type(member).__name__}.{member.name}: {value!r}>"


def test_auto_gives_the_lower_cased_member_name() -> None:
    assert Color.DARK_BLUE.value == "dark_blue"
    assert str(Color.DARK_BLUE) == "dark_blue"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-03-01", dt.datetime(2024, 3, 1)),
        ("2024-03-01 12:34:56", dt.datetime(2024, 3, 1, 12, 34, 56)),
        ("2024-03-01 12:34:56.1", dt.datetime(2024, 3, 1, 12, 34, 56, 100_000)),
        ("1970-01-01 00:00:01.000004", dt.datetime(1970, 1, 1, 0, 0, 1, 4)),
        ("2024-03-01T12:34:56.1234567", dt.datetime(2024, 3, 1, 12, 34, 56, 123_456)),
        ("2024-03-01T12:34:56.789012Z", dt.datetime(2024, 3, 1, 12, 34, 56, 789_012, tzinfo=UTC)),
        ("2024-03-01T12:34Z", dt.datetime(2024, 3, 1, 12, 34, tzinfo=UTC)),
        (
            "2024-03-01T12:34:56.5+0530",
            dt.datetime(2024, 3, 1, 12, 34, 56, 500_000, tzinfo=zone(hours=5, minutes=30)),
        ),
        ("2024-03-01T12:34:56-05", dt.datetime(2024, 3, 1, 12, 34, 56, tzinfo=zone(hours=-5))),
        (
            "2024-03-01T12:34:56+05:30:15",
            dt.datetime(2024, 3, 1, 12, 34, 56, tzinfo=zone(hours=5, minutes=30, seconds=15)),
        ),
    ],
)
def test_datetime_fromisoformat_reads_the_extended_iso_forms(text: str, expected: dt.datetime) -> None:
    assert compat.datetime_fromisoformat(text) == expected
    assert compat.datetime_fromisoformat(text).utcoffset() == expected.utcoffset()


@pytest.mark.parametrize(
    "text", ["garbage", "2024-13-01 00:00:00", "2024-03-01T25:00:00", "2024-03-01 12:34:56z"]
)
def test_datetime_fromisoformat_refuses_what_python_311_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        compat.datetime_fromisoformat(text)


@pytest.mark.parametrize(
    ("mask", "expected"),
    [
        (pa.chunked_array([pa.array([], pa.bool_())]), []),
        (pa.chunked_array([], pa.bool_()), []),
        (pa.array([], pa.bool_()), []),
        (pa.chunked_array([pa.array([True]), pa.array([], pa.bool_()), pa.array([False, True])]), [0, 2]),
        (pa.array([False, True, True]), [1, 2]),
    ],
    ids=["one-empty-chunk", "no-chunk", "empty-array", "chunks", "array"],
)
def test_indices_nonzero_of_masks_with_and_without_rows(
    mask: pa.Array | pa.ChunkedArray, expected: list[int]
) -> None:
    """An empty chunked mask ends the process on pyarrow 25 and older (what Python 3.10 gets)."""
    found = compat.indices_nonzero(mask)
    assert found.type == pa.uint64()
    assert found.to_pylist() == expected
