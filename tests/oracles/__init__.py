"""Oracle tests: our verdicts against delta-spark's and Delta Kernel's own Iceberg-compat checks."""
