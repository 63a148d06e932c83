"""Reading a Delta table's log without Spark: actions, log replay, snapshots."""
