"""Rules of data files: what each data file and its AddFile must hold, judged file by file."""

from __future__ import annotations

from icecompat_writer.rules.catalog.shared import (
    ALL,
    MPC,
    P2_WRITER,
    P_CHECKPOINTS,
    P_CM_WRITER,
    P_STATS,
    R3_WRITER,
    UPGRADE,
    V3S,
    W1,
)
from icecompat_writer.rules.model import Rule


def file_rules() -> list[Rule]:
    def per_spec(suffix: str, kind: str, checks: str, message: str, fix: str, v3_clauses: tuple[str, ...],
                 v2_clauses: tuple[str, ...]) -> list[Rule]:  # fmt: skip
        return [
            Rule(f"ICV3-{suffix}", V3S, kind, checks=checks, message=message, fix=fix,
                 clause=v3_clauses[0], also=v3_clauses[1:]),
            Rule(f"ICV2-{suffix}", (W1,), kind, checks=checks, message=message, fix=fix,
                 clause=v2_clauses[0], also=v2_clauses[1:]),
        ]  # fmt: skip

    return [
        *per_spec(
            "NUM-RECORDS",
            "num_records_present",
            "Every AddFile has the numRecords statistic in its stats.",
            "file {file} has no numRecords statistic",
            "write with statistics collection on (delta-spark does so by default)",
            (R3_WRITER, P_STATS),
            (P2_WRITER, P_STATS),
        ),
        Rule(
            "DELTA-CHECKPOINT-STATS",
            ALL,
            "checkpoint_keeps_stats",
            checks="Checkpoints keep the files' statistics: delta.checkpoint.writeStatsAsJson and "
            "delta.checkpoint.writeStatsAsStruct are not both false (delta-spark writes both when unset).",
            message="checkpoints of this table keep no statistics (`{key}` and "
            "delta.checkpoint.writeStatsAsStruct are false): once its commits are cleaned up, no "
            "file has numRecords in the log",
            fix="set `{key}` to true",
            clause=P_CHECKPOINTS,
            also=(P_STATS, R3_WRITER),
            params={
                "json_key": "delta.checkpoint.writeStatsAsJson",
                "struct_key": "delta.checkpoint.writeStatsAsStruct",
            },
            autofix="sets delta.checkpoint.writeStatsAsJson=true",
        ),
        *per_spec(
            "PARTITION-MATERIALIZED",
            "partition_columns_materialized",
            "Every data file contains its partition columns (partition values are materialized).",
            "partition column missing from data file {file}",
            "rewrite the file with the partition columns materialized (" + UPGRADE + ")",
            (R3_WRITER, MPC),
            (P2_WRITER, MPC),
        ),
        *per_spec(
            "TIMESTAMP-INT64",
            "timestamps_int64",
            "Timestamp columns in data files are stored as INT64, never INT96.",
            "timestamp stored as {observed} in file {file}",
            "write with spark.sql.parquet.outputTimestampType=TIMESTAMP_MICROS and rewrite the file ("
            + UPGRADE
            + ")",
            (R3_WRITER,),
            (P2_WRITER,),
        ),
        *per_spec(
            "PARQUET-FIELD-IDS",
            "parquet_field_ids",
            "Every column, nested field, element, key and value in a data file carries its field id.",
            "the Parquet field id in file {file} does not match the column mapping metadata",
            "rewrite the file with the table's field ids (" + UPGRADE + ")",
            (R3_WRITER, P2_WRITER, P_CM_WRITER),
            (P2_WRITER, P_CM_WRITER),
        ),
        Rule(
            "ICV2-NO-DELETION-VECTOR-FILES",
            (W1,),
            "no_deletion_vector_files",
            checks="No AddFile carries a deletion vector.",
            message="file {file} has a deletion vector, which Iceberg V2 readers ignore",
            fix="turn deletion vectors off (delta.enableDeletionVectors=false) and purge them with "
            "REORG TABLE ... APPLY (PURGE); `icecompat upgrade` does not remove deletion vectors under "
            "writer-v1",
            clause=P2_WRITER,
        ),
    ]
