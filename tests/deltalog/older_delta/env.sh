#!/usr/bin/env bash
# Builds, once, the older Delta writer the corpus tests make tables with: pyspark 3.5 and delta-spark
# 3.3 (Scala 2.12) in their own virtual environment, and delta-spark's jars, under .cache/older-delta.
# A second run checks a stamp and returns. Prints the environment's python on stdout.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
CACHE="$ROOT/.cache/older-delta"
PYSPARK_VERSION=3.5.7
DELTA_VERSION=3.3.3
stamp="pyspark-$PYSPARK_VERSION delta-spark-$DELTA_VERSION $(sha256sum "$HERE/pom.xml" | cut -c1-16)"
if [ "$(cat "$CACHE/.stamp" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$CACHE"
  mkdir -p "$CACHE"
  PYTHON_BIN="${PYTHON:-python3.11}"
  command -v "$PYTHON_BIN" >/dev/null 2>&1 || PYTHON_BIN=python3
  "$PYTHON_BIN" -m venv "$CACHE/venv" >&2
  "$CACHE/venv/bin/python" -m pip install -q "pyspark==$PYSPARK_VERSION" "delta-spark==$DELTA_VERSION" >&2
  (cd "$HERE" && mvn -q -B package) >&2
  echo "$stamp" > "$CACHE/.stamp"
fi
echo "$CACHE/venv/bin/python"
