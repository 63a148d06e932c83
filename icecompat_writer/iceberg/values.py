"""Values: Delta partition strings and statistics -> Iceberg partition tuples and metric bounds.

Every value is first brought into one plain Python form per Iceberg type (the *raw* form): ``int`` for
int/long, days for date, microseconds for timestamp/timestamptz, ``float``, ``bool``, ``str``,
``bytes`` and ``Decimal``. From there it is serialised once, the way Iceberg spec Appendix D says.

Bounds must never exclude a row that is really in the file: a lower bound may only be lower than the
truth and an upper bound only higher. Delta's statistics are not always exact (timestamps are cut to
milliseconds, long strings to a prefix), so this module widens or drops them rather than trusting them.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, InvalidOperation
from typing import Any

from icecompat_writer.compat import datetime_fromisoformat
from icecompat_writer.schema import JsonDict, JsonObject, iceberg_decimal_params

from .schema import ConvertedSchema, Primitive

__all__ = [
    "DEFAULT_STRING_PREFIX_LENGTH",
    "FileMetrics",
    "PartitionValueError",
    "file_metrics",
    "parse_partition_value",
    "serialize",
    "to_raw",
]

# Delta's default for `delta.dataSkippingStringPrefixLength`: string stats longer than this are cut.
DEFAULT_STRING_PREFIX_LENGTH = 32

# Delta cuts timestamp statistics to whole milliseconds; widening by this much on both sides covers a
# writer that floors, truncates toward zero or rounds.
_TS_SLACK_MICROS = 999

_EPOCH_DATE = _dt.date(1970, 1, 1)
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_EPOCH_NAIVE = _dt.datetime(1970, 1, 1)


class PartitionValueError(ValueError):
    """A Delta partition value string that cannot be read as its column's type without guessing."""


def _micros(delta: _dt.timedelta) -> int:
    """Exact microseconds of a timedelta (no float rounding)."""
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _parse_timestamp(text: str, with_zone: bool) -> int:
    """Microseconds since the epoch of a Delta timestamp string (ISO or `yyyy-MM-dd HH:mm:ss[.ffffff]`)."""
    value = datetime_fromisoformat(text.strip())
    if with_zone:
        if value.tzinfo is None:
            raise PartitionValueError(
                f"timestamp {text!r} has no zone offset; Delta wrote it in the writer's session time zone, "
                "which the log does not record"
            )
        return _micros(value - _EPOCH)
    if value.tzinfo is not None:
        raise PartitionValueError(f"timestamp_ntz value {text!r} carries a zone offset")
    return _micros(value - _EPOCH_NAIVE)


def _binary_partition_value(text: str) -> bytes:
    """The bytes of a binary partition value from the string Delta wrote into the log.

    delta-spark turns the bytes into the log's string by Spark's binary-to-string cast, which reads
    them as UTF-8: the value's UTF-8 encoding is the bytes, exactly, whenever they were valid UTF-8.
    Bytes that are not (e.g. ``0xFF``) were replaced by U+FFFD in the log, so the original bytes are
    lost there (Delta's own readers return the replacement); converting them would publish different
    bytes than the data file holds, so such a value is refused.
    """
    if "\ufffd" in text:
        raise PartitionValueError(
            f"binary partition value {text!r} holds U+FFFD: Delta logged bytes that are not UTF-8 as "
            "replacement characters, so the original bytes are not in the log"
        )
    return text.encode("utf-8", "surrogatepass")


def parse_partition_value(text: str | None, iceberg_type: str) -> Any:  # noqa: ANN401  # pyarrow scalars' Python values, untyped
    """Delta's string partition value (PROTOCOL "Partition Value Serialization") -> raw value.

    An empty string or null is a null partition value for every type.
    """
    if text is None or text == "":
        return None
    try:
        if iceberg_type in ("int", "long"):
            return int(text)
        if iceberg_type in ("float", "double"):
            return float(text)
        if iceberg_type == "boolean":
            low = text.strip().lower()
            if low not in ("true", "false"):
                raise PartitionValueError(f"not a boolean: {text!r}")
            return low == "true"
        if iceberg_type == "date":
            return (_dt.date.fromisoformat(text.strip()) - _EPOCH_DATE).days
        if iceberg_type == "timestamptz":
            return _parse_timestamp(text, with_zone=True)
        if iceberg_type == "timestamp":
            return _parse_timestamp(text, with_zone=False)
        if iceberg_type == "string":
            return text
        if iceberg_type == "binary":
            return _binary_partition_value(text)
        if iceberg_decimal_params(iceberg_type) is not None:
            return Decimal(text)
    except (ValueError, UnicodeEncodeError, InvalidOperation) as err:
        if isinstance(err, PartitionValueError):
            raise
        raise PartitionValueError(f"cannot read {text!r} as {iceberg_type}: {err}") from err
    raise PartitionValueError(f"partition columns of type {iceberg_type} are not supported")


def _unscaled(value: Decimal, scale: int, rounding: str | None = None) -> int:
    """The unscaled integer of a decimal at ``scale``; ``rounding`` decides inexact cases."""
    scaled = value.scaleb(scale)
    if rounding is None:
        if scaled != scaled.to_integral_value():
            raise ValueError(f"{value} does not fit scale {scale}")
        return int(scaled)
    return int(scaled.to_integral_value(rounding=rounding))


def _min_bytes_signed(n: int) -> bytes:
    """Two's-complement big-endian with the fewest bytes that hold ``n``."""
    length = max(1, (n + (n < 0)).bit_length() // 8 + 1)
    return n.to_bytes(length, "big", signed=True)


def serialize(value: Any, iceberg_type: str) -> bytes:  # noqa: ANN401  # pyarrow scalars' Python values, untyped
    """Iceberg binary single-value serialisation (spec Appendix D) of a raw value."""
    if iceberg_type in ("int", "date"):
        return struct.pack("<i", value)
    if iceberg_type in ("long", "timestamp", "timestamptz"):
        return struct.pack("<q", value)
    if iceberg_type == "float":
        return struct.pack("<f", value)
    if iceberg_type == "double":
        return struct.pack("<d", value)
    if iceberg_type == "boolean":
        return b"\x01" if value else b"\x00"
    if iceberg_type == "string":
        return str(value).encode("utf-8")
    if iceberg_type == "binary":
        return bytes(value)
    params = iceberg_decimal_params(iceberg_type)
    if params is not None:
        return _min_bytes_signed(_unscaled(value, params[1]))
    raise ValueError(f"no single-value serialisation for {iceberg_type}")


def to_raw(value: Any, iceberg_type: str) -> Any:  # noqa: ANN401  # pyarrow scalars' Python values, untyped
    """Bring a value read back from Avro (fastavro converts logical types) to the raw form."""
    if value is None:
        return None
    if iceberg_type == "date" and isinstance(value, _dt.date):
        return (value - _EPOCH_DATE).days
    if iceberg_type in ("timestamp", "timestamptz") and isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            return _micros(value - _EPOCH_NAIVE)
        return _micros(value - _EPOCH)
    return value


# ---------------------------------------------------------------------------------------------------
# Statistics


@dataclass
class FileMetrics:
    """Iceberg column metrics of one data file, keyed by field id (bounds already serialised)."""

    value_counts: dict[int, int] = field(default_factory=dict)
    null_value_counts: dict[int, int] = field(default_factory=dict)
    lower_bounds: dict[int, bytes] = field(default_factory=dict)
    upper_bounds: dict[int, bytes] = field(default_factory=dict)


def _lookup(tree: Any, path: tuple[str, ...]) -> Any:  # noqa: ANN401  # pyarrow scalars' Python values, untyped
    node = tree
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _as_decimal(value: Any) -> Decimal | None:  # noqa: ANN401  # pyarrow scalars' Python values, untyped
    """A JSON stat as an exact Decimal (stats are parsed with Decimal floats), or None for NaN/inf."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, Decimal):
        return value if value.is_finite() else None
    if isinstance(value, float):
        return None if not math.isfinite(value) else Decimal(repr(value))
    if isinstance(value, str):
        try:
            d = Decimal(value)
        except InvalidOperation:
            return None
        return d if d.is_finite() else None
    return None


def _is_nan(value: Any) -> bool:  # noqa: ANN401  # pyarrow scalars' Python values, untyped
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, Decimal):
        return value.is_nan()
    if isinstance(value, str):
        return value.strip().lower() == "nan"
    return False


def _f32(x: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", x))[0])


def _f32_step(x: float, up: bool) -> float:
    """The neighbouring float32 of a float32 value ``x`` (towards +inf when ``up``)."""
    if x == 0.0:
        tiny = float(struct.unpack("<f", struct.pack("<I", 1))[0])
        return tiny if up else -tiny
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    # The magnitude grows with the bit pattern for either sign.
    bits = bits + 1 if (x > 0) == up else bits - 1
    return float(struct.unpack("<f", struct.pack("<I", bits))[0])


def _float_bound(value: Any, iceberg_type: str, upper: bool) -> float | None:  # noqa: ANN401  # pyarrow scalars' Python values, untyped
    """A float/double bound that is on the safe side of the exact statistic; -0.0/+0.0 spec rule."""
    exact = _as_decimal(value)
    if exact is None:
        return None
    candidate = float(exact)
    if iceberg_type == "float":
        candidate = _f32(candidate)
        if math.isinf(candidate):
            return None
        if upper and Decimal(candidate) < exact:
            candidate = _f32_step(candidate, up=True)
        if not upper and Decimal(candidate) > exact:
            candidate = _f32_step(candidate, up=False)
    else:
        if math.isinf(candidate):
            return None
        if upper and Decimal(candidate) < exact:
            candidate = math.nextafter(candidate, math.inf)
        if not upper and Decimal(candidate) > exact:
            candidate = math.nextafter(candidate, -math.inf)
    # Spark orders -0.0 and +0.0 equal, so a zero statistic may stand for either: the lower bound
    # must then be -0.0 and the upper +0.0 (spec note on metrics of float columns).
    if candidate == 0.0:
        candidate = 0.0 if upper else -0.0
    return candidate


def _bound(value: Any, prim: Primitive, upper: bool, string_prefix: int) -> bytes | None:  # noqa: ANN401  # pyarrow scalars' Python values, untyped
    """Serialised bound for one statistic, widened to be safe, or None when it cannot be trusted."""
    itype = prim.iceberg_type
    try:
        if itype in ("int", "long"):
            d = _as_decimal(value)
            if d is None:
                return None
            return serialize(
                int(d.to_integral_value(rounding=ROUND_CEILING if upper else ROUND_FLOOR)), itype
            )
        if itype in ("float", "double"):
            if _is_nan(value):
                return None
            f = _float_bound(value, itype, upper)
            return None if f is None else serialize(f, itype)
        if itype == "date":
            return serialize((_dt.date.fromisoformat(str(value).strip()[:10]) - _EPOCH_DATE).days, itype)
        if itype in ("timestamp", "timestamptz"):
            micros = _parse_timestamp(str(value), with_zone=itype == "timestamptz")
            micros = micros + _TS_SLACK_MICROS if upper else micros - _TS_SLACK_MICROS
            return serialize(micros, itype)
        if itype == "string":
            if not isinstance(value, str):
                return None
            # A max longer than the prefix length was cut and padded by Delta: not a provable bound.
            if upper and len(value) > string_prefix:
                return None
            return value.encode("utf-8")
        if itype == "boolean":
            if not isinstance(value, bool):
                return None
            return serialize(value, itype)
        params = iceberg_decimal_params(itype)
        if params is not None:
            d = _as_decimal(value)
            if d is None:
                return None
            unscaled = _unscaled(d, params[1], ROUND_CEILING if upper else ROUND_FLOOR)
            return _min_bytes_signed(unscaled)
    except (ValueError, UnicodeEncodeError, InvalidOperation, OverflowError, struct.error):
        return None
    return None  # binary and anything else: Delta keeps no usable statistic


def parse_stats(stats: str | None) -> JsonDict | None:
    """Parse an AddFile ``stats`` string; floats as Decimal so decimal statistics stay exact."""
    if not stats:
        return None
    try:
        parsed = json.loads(stats, parse_float=Decimal)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def file_metrics(
    stats: JsonObject | None,
    schema: ConvertedSchema,
    record_count: int,
    partition_raw: Mapping[int, Any],
    string_prefix: int = DEFAULT_STRING_PREFIX_LENGTH,
) -> FileMetrics:
    """Iceberg metrics of one file from its Delta stats (keyed by physical names) and partition values.

    Partition columns get exact bounds from the partition value itself (Delta keeps no stats for them,
    but their value is the same on every row of the file).
    """
    out = FileMetrics()
    stats = stats or {}
    mins = stats.get("minValues") or {}
    maxs = stats.get("maxValues") or {}
    nulls = stats.get("nullCount") or {}
    for fid, prim in schema.primitives.items():
        if prim.stats_path is None:
            continue
        out.value_counts[fid] = record_count
        if fid in partition_raw:
            value = partition_raw[fid]
            out.null_value_counts[fid] = record_count if value is None else 0
            if value is not None and not (isinstance(value, float) and math.isnan(value)):
                try:
                    encoded = serialize(value, prim.iceberg_type)
                except (ValueError, struct.error):
                    continue
                out.lower_bounds[fid] = encoded
                out.upper_bounds[fid] = encoded
            continue
        nc = _lookup(nulls, prim.stats_path)
        if isinstance(nc, int) and not isinstance(nc, bool) and 0 <= nc <= record_count:
            out.null_value_counts[fid] = nc
        lo = _lookup(mins, prim.stats_path)
        if lo is not None and not isinstance(lo, Mapping):
            b = _bound(lo, prim, upper=False, string_prefix=string_prefix)
            if b is not None:
                out.lower_bounds[fid] = b
        hi = _lookup(maxs, prim.stats_path)
        if hi is not None and not isinstance(hi, Mapping):
            b = _bound(hi, prim, upper=True, string_prefix=string_prefix)
            if b is not None:
                out.upper_bounds[fid] = b
    return out
