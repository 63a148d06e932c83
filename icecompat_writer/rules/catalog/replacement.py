"""Rules against the previous state: what a write may not change of the table it writes to (the partition
columns when it replaces the table, the struct of a map key)."""

from __future__ import annotations

from icecompat_writer.rules.catalog.shared import (
    P2_WRITER,
    R3_WRITER,
    V3S,
    W1,
    W_WRITER,
    WRITERS,
)
from icecompat_writer.rules.model import Rule


def replace_rules() -> list[Rule]:
    return [
        Rule(
            "ICV3-NO-PARTITION-RENAME",
            V3S,
            "partition_spec_unchanged",
            checks="A partitioned table is not replaced with differently named partition columns.",
            message="the table was partitioned by {expected}; replacing it with partitioning {observed} is "
            "blocked (a type-only change of the same columns is allowed)",
            fix="keep the partition columns {expected}, or drop the table and create a new one",
            clause=R3_WRITER,
        ),
        Rule(
            "ICV2-NO-PARTITION-RENAME",
            (W1,),
            "partition_spec_unchanged",
            checks="A partitioned table is not replaced with differently named partition columns.",
            message="the table was partitioned by {expected}; replacing it with partitioning {observed} is "
            "blocked (a type-only change of the same columns is allowed)",
            fix="keep the partition columns {expected}, or drop the table and create a new one",
            clause=P2_WRITER,
        ),
        Rule(
            "IWC1-MAP-KEY-IMMUTABLE",
            WRITERS,
            "map_key_struct_immutable",
            checks="The schema of a struct used as a map key does not change.",
            message="the struct used as this map key changed; Iceberg forbids any change to a map key",
            fix="keep the map key's struct exactly as it was (changes to the map value are allowed)",
            clause=W_WRITER,
        ),
    ]
