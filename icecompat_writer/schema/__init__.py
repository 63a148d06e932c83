"""The Delta schema as every layer sees it: parsed once, walked by visitors, named one way.

``model`` parses a ``schemaString`` into typed nodes (fields, array elements, map keys/values, each
with its column path and column-mapping id); ``visitor`` walks one schema, or one schema side by side
with a partner (the previous schema, a Parquet footer); ``keys`` holds the column-mapping metadata
keys and the usable id range; ``paths`` how a column path is quoted and joined; ``types`` type
categories and decimal parameters. No Spark, no I/O.
"""

from __future__ import annotations

from icecompat_writer.schema.jsontypes import JsonDict, JsonObject, JsonScalar
from icecompat_writer.schema.keys import (
    CM_ID,
    CM_MAX_COLUMN_ID,
    CM_MODE,
    CM_NESTED_IDS,
    CM_PHYSICAL_NAME,
    CM_PREFIX,
    ID_RANGE,
    MAX_FIELD_ID,
    MIN_FIELD_ID,
    id_in_range,
    is_id,
)
from icecompat_writer.schema.model import (
    ArrayType,
    DataType,
    Field,
    MapType,
    PrimitiveType,
    Schema,
    Slot,
    StructType,
    parse_schema,
    parse_schema_json,
)
from icecompat_writer.schema.paths import ELEMENT, KEY, VALUE, child_path, fold_name, join_path, quote_name
from icecompat_writer.schema.types import (
    contains_struct,
    decimal_params,
    iceberg_decimal_params,
    type_category,
    type_shape,
    type_text,
)
from icecompat_writer.schema.visitor import (
    PartnerAccessor,
    PartnerVisitor,
    SchemaVisitor,
    visit,
    visit_with_partner,
)

__all__ = [
    "CM_ID",
    "CM_MAX_COLUMN_ID",
    "CM_MODE",
    "CM_NESTED_IDS",
    "CM_PHYSICAL_NAME",
    "CM_PREFIX",
    "ELEMENT",
    "ID_RANGE",
    "KEY",
    "MAX_FIELD_ID",
    "MIN_FIELD_ID",
    "VALUE",
    "ArrayType",
    "DataType",
    "Field",
    "JsonDict",
    "JsonObject",
    "JsonScalar",
    "MapType",
    "PartnerAccessor",
    "PartnerVisitor",
    "PrimitiveType",
    "Schema",
    "SchemaVisitor",
    "Slot",
    "StructType",
    "child_path",
    "contains_struct",
    "decimal_params",
    "fold_name",
    "iceberg_decimal_params",
    "id_in_range",
    "is_id",
    "join_path",
    "parse_schema",
    "parse_schema_json",
    "quote_name",
    "type_category",
    "type_shape",
    "type_text",
    "visit",
    "visit_with_partner",
]
