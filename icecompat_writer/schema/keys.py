"""Column-mapping metadata keys and the range of usable column ids: the one place they are spelled.

Delta keeps a column's id and physical name in the field's metadata, and the ids of array elements and
map keys/values in the nearest ancestor struct field's ``delta.columnMapping.nested.ids`` (PROTOCOL.md
"Column Mapping", IcebergCompatV2). Iceberg reads columns by these ids and reserves the ids above
``MAX_FIELD_ID`` for its metadata columns (iceberg-spec.md "Reserved Field IDs").
"""

from __future__ import annotations

from typing import TypeGuard

__all__ = [
    "CM_ID",
    "CM_MAX_COLUMN_ID",
    "CM_MODE",
    "CM_NESTED_IDS",
    "CM_PHYSICAL_NAME",
    "CM_PREFIX",
    "ID_RANGE",
    "MAX_FIELD_ID",
    "MIN_FIELD_ID",
    "id_in_range",
    "is_id",
]

CM_PREFIX = "delta.columnMapping."
CM_ID = CM_PREFIX + "id"
CM_PHYSICAL_NAME = CM_PREFIX + "physicalName"
CM_NESTED_IDS = CM_PREFIX + "nested.ids"
CM_MODE = CM_PREFIX + "mode"  # a table property, not field metadata
CM_MAX_COLUMN_ID = CM_PREFIX + "maxColumnId"  # a table property, not field metadata

MIN_FIELD_ID = 1
MAX_FIELD_ID = 2147483447  # Iceberg reserves the ids above for metadata columns
ID_RANGE = (MIN_FIELD_ID, MAX_FIELD_ID)


def is_id(value: object) -> TypeGuard[int]:
    """Whether a metadata value can be an id at all: an integer (JSON ``true`` is not one)."""
    return isinstance(value, int) and not isinstance(value, bool)


def id_in_range(value: int) -> bool:
    """Whether an id is one Iceberg lets a user column carry (``MIN_FIELD_ID..MAX_FIELD_ID``)."""
    return MIN_FIELD_ID <= value <= MAX_FIELD_ID
