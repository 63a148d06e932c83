"""What a table's live data files show, read without Spark: their Parquet footers and the facts the
file rules are judged on, with what could not be seen as findings.

The checker, the Iceberg emitter's verification and the upgrade all read a snapshot's files this way
(:func:`.live_files.snapshot_facts`), so this floor sits just above the Delta log reader and below
everything that judges or converts a table.
"""
