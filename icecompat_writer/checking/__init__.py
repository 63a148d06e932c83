"""Checking Delta tables for Iceberg compatibility without Spark: footers, facts, rules."""
