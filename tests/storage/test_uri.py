"""Locations: which URIs map to which store, how keys are normalised, what Iceberg metadata records."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest

from icecompat_writer.errors import TableReadError
from icecompat_writer.storage import (
    ObjectPath,
    UnsupportedSchemeError,
    iceberg_uri,
    is_under,
    location_of_iceberg_uri,
    location_uri,
    parse_location,
)


@pytest.mark.parametrize(
    ("uri", "family", "bucket", "key"),
    [
        ("s3://b/t", "s3", "b", "t"),
        ("s3a://b/a/t/", "s3", "b", "a/t"),
        ("S3N://b/t", "s3", "b", "t"),
        ("gs://bucket-1/x/y", "gcs", "bucket-1", "x/y"),
        ("abfss://c@acct.dfs.core.windows.net/t", "azure", "c", "t"),
        ("abfs://c@acct.dfs.core.windows.net/t", "azure", "c", "t"),
        ("wasbs://c@acct.blob.core.windows.net/a/./b/../t", "azure", "c", "a/t"),
        ("s3a://b", "s3", "b", ""),
        ("s3a://b/my%20table", "s3", "b", "my table"),
    ],
)
def test_object_store_uris_map_to_their_store(uri: str, family: str, bucket: str, key: str) -> None:
    loc = parse_location(uri)
    assert isinstance(loc, ObjectPath)
    assert (loc.family, loc.bucket, loc.key) == (family, bucket, key)


def test_local_paths_and_file_uris_are_absolute_paths(tmp_path: Path) -> None:
    assert parse_location(str(tmp_path)) == tmp_path
    assert parse_location(f"file://{tmp_path}") == tmp_path
    assert parse_location(f"file:{tmp_path}/a/../b") == tmp_path / "b"
    with pytest.raises(TableReadError, match="remote host"):
        parse_location("file://server/share/t")


@pytest.mark.parametrize("uri", ["hdfs://nn/t", "http://host/t", "ftp://h/t"])
def test_other_schemes_are_refused_naming_the_supported_ones(uri: str) -> None:
    with pytest.raises(UnsupportedSchemeError, match=r"supported: file:, s3://, s3a://"):
        parse_location(uri)


@pytest.mark.parametrize(
    ("uri", "message"),
    [("s3a:///t", "names no bucket"), ("abfss://container/t", "storage account"), ("s3://b/t?x=1", "query")],
)
def test_malformed_object_store_uris_are_refused(uri: str, message: str) -> None:
    with pytest.raises(TableReadError, match=message):
        parse_location(uri)


def test_object_path_behaves_like_a_pure_path_for_the_log_reader() -> None:
    root = parse_location("s3a://b/warehouse/t")
    assert isinstance(root, ObjectPath)
    log = root / "_delta_log"
    commit = log / "00000000000000000000.json"
    assert commit.uri == "s3a://b/warehouse/t/_delta_log/00000000000000000000.json"
    assert commit.name == "00000000000000000000.json"
    assert commit.parent == log
    assert commit.relative_to(root) == PurePosixPath("_delta_log/00000000000000000000.json")
    assert commit.fs_path == "b/warehouse/t/_delta_log/00000000000000000000.json"
    assert (root / "../other").uri == "s3a://b/warehouse/other"
    with pytest.raises(ValueError, match="not under"):
        (root / "../other").relative_to(root)
    assert commit.is_under(parse_location("s3://b/warehouse/t"))  # same bucket, another S3 scheme
    assert not commit.is_under(parse_location("s3a://other/warehouse/t"))


def test_azure_paths_know_their_account_and_container() -> None:
    loc = parse_location("abfss://data@acct.dfs.core.windows.net/t/x")
    assert isinstance(loc, ObjectPath)
    assert (loc.account, loc.bucket, loc.host, loc.fs_path) == (
        "acct",
        "data",
        "acct.dfs.core.windows.net",
        "data/t/x",
    )


def test_iceberg_uris_use_s3_for_hadoop_schemes_and_keep_the_others(tmp_path: Path) -> None:
    assert iceberg_uri(parse_location("s3a://b/t/x.parquet")) == "s3://b/t/x.parquet"
    assert iceberg_uri(parse_location("s3n://b/t")) == "s3://b/t"
    assert iceberg_uri(parse_location("s3://b/t")) == "s3://b/t"
    assert (
        iceberg_uri(parse_location("abfss://c@a.dfs.core.windows.net/t"))
        == "abfss://c@a.dfs.core.windows.net/t"
    )
    assert iceberg_uri(parse_location("gs://b/t")) == "gs://b/t"
    assert iceberg_uri(tmp_path) == f"file://{tmp_path}"
    assert location_uri(parse_location("s3a://b/t")) == "s3a://b/t"


def test_is_under_means_strictly_below_on_the_same_store(tmp_path: Path) -> None:
    root = parse_location("s3a://b/t")
    assert is_under(parse_location("s3://b/t/metadata/x"), root)  # any Hadoop S3 scheme names the bucket
    assert not is_under(root, root)
    assert not is_under(parse_location("s3a://b/tx/y"), root)
    assert not is_under(parse_location("s3a://other/t/y"), root)
    assert not is_under(tmp_path / "t" / "y", root) and not is_under(root / "y", tmp_path)
    assert is_under(tmp_path / "t" / "y", tmp_path / "t") and not is_under(tmp_path, tmp_path / "t")


def test_iceberg_uris_are_read_back_through_the_tables_own_store(tmp_path: Path) -> None:
    root = parse_location("s3a://b/t")
    for written in ("s3://b/t/metadata/m.avro", "s3a://b/t/metadata/m.avro"):
        assert location_of_iceberg_uri(written, root) == ObjectPath("s3a", "b", "t/metadata/m.avro")
    assert location_of_iceberg_uri("s3://b/t/a%20b", root) == ObjectPath("s3a", "b", "t/a%20b")  # as written
    assert location_of_iceberg_uri(f"file://{tmp_path}/m.avro", tmp_path) == tmp_path / "m.avro"
    assert location_of_iceberg_uri(f"file:{tmp_path}/m.avro", tmp_path) == tmp_path / "m.avro"
    assert location_of_iceberg_uri(f"{tmp_path}/m.avro", tmp_path) == tmp_path / "m.avro"
    foreign_uris = (("s3://other/t/m.avro", root), ("gs://b/t/m.avro", root), ("s3://b/t/m", tmp_path))
    for foreign, table in foreign_uris:
        with pytest.raises(TableReadError, match="cannot read"):
            location_of_iceberg_uri(foreign, table)
