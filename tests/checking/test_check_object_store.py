"""check_table on the object stores (the ``store`` fixture's ``s3a``, moto, and ``abfs``, Azurite, both
on 127.0.0.1): the same verdict and findings as on local disk; on S3 one LIST of the log, one of the
table, one ranged read per footer.

Tables are built locally (synthetic, tests/cli/synthetic.py), uploaded, and checked through the
standard environment variables (``AWS_*``, ``AZURE_STORAGE_CONNECTION_STRING``); an Azure table under
both URI forms Spark uses for a container (``abfss://`` on the DFS host name, ``wasbs://`` on the Blob
host name). Requests are counted from the S3 server's own access log.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icecompat_writer import storage
from icecompat_writer.checking.check import check_table
from icecompat_writer.deltalog import read_snapshot
from icecompat_writer.evidence import footers
from icecompat_writer.evidence.footers import TAIL_BYTES
from icecompat_writer.storage import io_for
from tests.checking.test_check import codes_of, rows_of
from tests.cli.synthetic import build_table, stats, write_data_file
from tests.deltalog import logbuilder as lb
from tests.objectstores import Store

# The local table is the reference each remote check is compared with: the object stores only.
OBJECT_STORES = pytest.mark.parametrize("store", ["s3a", "abfs"], indirect=True)


@OBJECT_STORES
def test_compliant_table_checks_the_same_as_on_disk(store: Store, tmp_path: Path) -> None:
    table = build_table(tmp_path / "t", "writer-v1", files=12)
    lb.LogBuilder(table.root).commit(1, [lb.commit_info("WRITE")])
    local = check_table(table.root, files="all")
    where = store("t")
    where.upload(table.root)
    before = where.digest()
    uris = [where.uri]
    if store.kind == "abfs":  # the same container under the Blob host name
        container = where.uri.split("://", 1)[1].split("@", 1)[0]
        uris.append(f"wasbs://{container}@devstoreaccount1.blob.core.windows.net/{where.key}")

    for uri in uris:
        mark = store.server.request_mark() if store.kind == "s3a" else 0
        remote = check_table(uri, files="all")

        assert remote.compliant and local.compliant
        assert (remote.profile, remote.version, remote.files_checked) == ("writer-v1", 1, 12)
        assert rows_of(remote) == rows_of(local) == []
        assert remote.table == uri
        if store.kind == "s3a":  # the S3 server logs every request it answers
            assert_one_listing_and_one_ranged_read_per_footer(store.server.requests_since(mark), where, table)
    assert where.digest() == before  # a check writes nothing


def assert_one_listing_and_one_ranged_read_per_footer(
    requests: list[tuple[str, str, int]], where: Any, table: Any
) -> None:
    bucket = where.uri.split("/")[2]
    lists = sorted(r[1] for r in requests if r[0] == "GET" and "list-type=2" in r[1])
    # one listing of the log (what exists), one of the table (every data file's size)
    assert len(lists) == 2
    assert "delimiter=/" in lists[0] and f"prefix={where.key}/_delta_log/" in lists[0]
    assert lists[1].endswith(f"prefix={where.key}/")
    for name in table.files:
        key = f"/{bucket}/{where.key}/{name}"
        touching = [r for r in requests if r[1] == key]
        assert touching == [("GET", key, 206)], name  # one ranged read of the tail, no HEAD
    assert not any(r[0] == "HEAD" and r[1].endswith(".parquet") for r in requests)
    for version in (0, 1):  # each commit file read with one GET, no HEAD for its size
        key = f"/{bucket}/{where.key}/_delta_log/{version:020d}.json"
        assert [r for r in requests if r[1] == key] == [("GET", key, 200)]
    assert not any(r[0] in {"PUT", "POST", "DELETE"} for r in requests)


@OBJECT_STORES
def test_a_table_that_misses_its_profile_gets_the_same_findings(store: Store, tmp_path: Path) -> None:
    table = build_table(tmp_path / "t", "v3", files=2)
    local = check_table(table.root, "writer-v1", files="all")
    where = store("t")
    where.upload(table.root)

    remote = check_table(where.uri, "writer-v1", files="all")

    assert not remote.compliant
    assert codes_of(remote) == codes_of(local)
    assert rows_of(remote) == rows_of(local) != []


@OBJECT_STORES
def test_damage_gives_the_same_findings_as_on_disk(store: Store, tmp_path: Path) -> None:
    root = tmp_path / "t"
    build_table(
        root,
        "v3",
        files=2,
        extra_adds=[
            lb.add("missing.parquet", stats=stats(3), size=10),
            lb.add("s3a://another-bucket/t/x.parquet", stats=stats(3), size=10),
            lb.add("../escape.parquet", stats=stats(3), size=10),
        ],
    )
    (root / "not-parquet.parquet").write_bytes(b"hello, not parquet at all")
    size = write_data_file(root / "short.parquet", build_table(tmp_path / "m", "v3").metadata, 0, 3)
    lb.LogBuilder(root).commit(
        1,
        [
            lb.add("not-parquet.parquet", stats=stats(3), size=25),
            lb.add("short.parquet", stats=stats(4), size=size + 1),
        ],
    )
    local = check_table(root, "v3")
    where = store("t")
    where.upload(root)
    remote = check_table(where.uri, "v3")
    assert not remote.compliant
    assert codes_of(remote) == codes_of(local)
    assert {c for c, _ in codes_of(remote)} >= {
        "missing_data_file",
        "path_outside_table",
        "unreadable_data_file",
        "size_mismatch",
    }
    assert rows_of(remote) == rows_of(local)


# S3 only: the reads are counted in the S3 server's access log (Azurite keeps none).
def test_a_footer_longer_than_the_tail_read_costs_exactly_one_more_ranged_read(
    s3_env: Any, tmp_path: Path
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from icecompat_writer.evidence.footers import read_object_footer

    wide = pa.table({f"c{i:04d}": [i] for i in range(1500)})
    pq.write_table(wide, tmp_path / "wide.parquet", store_schema=False)
    bucket = s3_env.new_bucket()
    s3_env.upload_dir(tmp_path, bucket, "w")
    meta_len = pq.read_metadata(tmp_path / "wide.parquet").serialized_size
    assert meta_len > TAIL_BYTES
    loc = storage.parse_location(f"s3://{bucket}/w/wide.parquet")
    assert isinstance(loc, storage.ObjectPath)
    mark = s3_env.request_mark()
    footer, size = read_object_footer(loc, io=io_for(loc))
    gets = [r for r in s3_env.requests_since(mark) if r[0] == "GET"]
    assert footer.num_rows == 1 and len(footer.fields) == 1500
    assert size == (tmp_path / "wide.parquet").stat().st_size
    assert [g[2] for g in gets] == [206, 206]


@pytest.mark.parametrize("store", ["s3a"], indirect=True)
def test_check_table_reads_through_the_fileio_it_is_given(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store settings travel with the FileIO handed down (what the rule service builds from the
    settings a driver sends): the environment points at no server, and no process-wide block is open."""
    root = tmp_path / "t"
    build_table(root, "v3")
    where = store("t")
    where.upload(root)
    uri = where.uri
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "nobody")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "nothing")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:1")
    storage.clear_cache()
    hadoop = {k.removeprefix("spark.hadoop."): v for k, v in store.server.spark_conf().items()}
    io = storage.io_for(uri, hadoop)
    report = check_table(uri, "v3", io=io)
    assert report.compliant and (report.files_total, report.files_checked) == (2, 2)
    assert read_snapshot(uri, io=io).io is io  # the snapshot keeps it for what reads the files next


@pytest.mark.parametrize("store", ["s3a"], indirect=True)
def test_a_defect_in_the_footer_decoder_is_raised_not_reported_as_a_bad_object(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "t"
    build_table(root, "v3", files=1)
    where = store("t")
    where.upload(root)
    uri = where.uri

    def defect(*args: object) -> None:
        raise AttributeError("simulated defect in the decoder")

    monkeypatch.setattr(footers, "_footer", defect)
    with pytest.raises(AttributeError, match="simulated defect"):
        check_table(uri, "v3")
