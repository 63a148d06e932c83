"""Rules of delta-spark: what delta-spark 4.4.0 refuses although the protocol and Iceberg allow it."""

from __future__ import annotations

from icecompat_writer.rules.catalog.shared import (
    ALL,
    P2_WRITER,
    P_CM_WRITER,
    R3_WRITER,
    SPARK,
    SPARK_ICV,
    SPARK_TXN,
    V3,
)
from icecompat_writer.rules.model import Rule


def delta_spark_rules() -> list[Rule]:
    """What delta-spark 4.4.0 refuses on tables the profiles otherwise allow: the user hears it from the
    planner, before any file is written, instead of as an engine error after the write."""
    return [
        Rule(
            "DELTA-SPARK-DECIMAL-PARTITION",
            ALL,
            "forbidden_partition_types",
            checks="No partition column is a decimal (delta-spark's IcebergCompat partition type check "
            "refuses every decimal).",
            message="partition column of type {type}: delta-spark 4.4 refuses decimal partition columns "
            "while IcebergCompat is enabled (UNSUPPORTED_PARTITION_DATA_TYPE), although the protocol and "
            "Iceberg allow them",
            fix="partition by another column (e.g. a string or long derived from the decimal), or keep "
            "this table without IcebergCompat",
            clause=SPARK,
            also=(R3_WRITER, P2_WRITER),
            reference=SPARK_ICV + " CheckPartitionDataTypeInV2AllowList",
            params={"types": ["decimal"]},
        ),
        Rule(
            "DELTA-SPARK-COLLATION",
            (V3,),
            "forbidden_column_metadata_key",
            checks="No column has a non-default collation (__COLLATIONS metadata).",
            message="the column has a collation (`{key}`): delta-spark 4.4 refuses every commit that "
            "changes the metadata of a table with a collated string (DELTA_UNSUPPORTED_DATA_TYPES) and "
            "IcebergCompat's type allow-list has only the default string",
            fix="use the default collation (cast the column with `COLLATE UTF8_BINARY` and overwrite the "
            "table with overwriteSchema=true), or keep this table without IcebergCompatV3",
            clause=SPARK,
            also=(R3_WRITER,),
            reference=SPARK_TXN + " findUnsupportedDataTypes; " + SPARK_ICV + " CheckTypeInV3AllowList",
            params={"keys": ["__COLLATIONS"]},
        ),
        Rule(
            "DELTA-SPARK-CDF-COLUMN-MAPPING",
            ALL,
            "cdf_column_mapping_change",
            checks="With change data feed enabled, a commit does not turn column mapping on or drop or "
            "rename a physical column (delta-spark refuses such a commit when it adds or removes files).",
            message="change data feed is enabled (`{key}`) and this commit changes column mapping "
            "({observed}); delta-spark 4.4 refuses it together with data files "
            "(DELTA_BLOCK_COLUMN_MAPPING_AND_CDC_OPERATION)",
            fix="turn column mapping on in a commit of its own first (ALTER TABLE ... SET TBLPROPERTIES "
            "('delta.columnMapping.mode'='name')), then write or upgrade; or set `{key}` to false for "
            "the rewrite and back to true after it",
            clause=SPARK,
            also=(P_CM_WRITER,),
            reference=SPARK_TXN + " blockColumnMappingAndCdcOperation",
            params={"key": "delta.enableChangeDataFeed"},
        ),
    ]
