"""Log file names and AddFile path resolution."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from icecompat_writer.deltalog.paths import (
    LogFileKind,
    classic_checkpoint_name,
    commit_file_name,
    compaction_file_name,
    list_log_files,
    multipart_checkpoint_name,
    parse_log_file_name,
    resolve_data_path,
    table_root_path,
    uuid_checkpoint_name,
)
from icecompat_writer.errors import TableReadError
from icecompat_writer.storage import LocalFileIO

UUID = "80a083e8-7026-4e79-81be-64bd76c43a11"


@pytest.mark.parametrize(
    ("name", "kind", "version", "extra"),
    [
        ("00000000000000000007.json", LogFileKind.COMMIT, 7, {}),
        ("00000000000000000010.checkpoint.parquet", LogFileKind.CLASSIC_CHECKPOINT, 10, {}),
        (
            "00000000000000000010.checkpoint.0000000002.0000000003.parquet",
            LogFileKind.MULTIPART_CHECKPOINT,
            10,
            {"part": 2, "num_parts": 3},
        ),
        (
            f"00000000000000000010.checkpoint.{UUID}.json",
            LogFileKind.UUID_CHECKPOINT,
            10,
            {"uuid": UUID, "file_format": "json"},
        ),
        (
            f"00000000000000000010.checkpoint.{UUID}.parquet",
            LogFileKind.UUID_CHECKPOINT,
            10,
            {"uuid": UUID, "file_format": "parquet"},
        ),
        (
            "00000000000000000004.00000000000000000006.compacted.json",
            LogFileKind.COMPACTION,
            4,
            {"end_version": 6},
        ),
        ("00000000000000000003.crc", LogFileKind.CHECKSUM, 3, {}),
    ],
)
def test_parse_log_file_names(name: str, kind: LogFileKind, version: int, extra: dict) -> None:
    parsed = parse_log_file_name(Path("/t/_delta_log") / name)
    assert parsed is not None
    assert parsed.kind is kind
    assert parsed.version == version
    for key, value in extra.items():
        assert getattr(parsed, key) == value


@pytest.mark.parametrize(
    "name",
    [
        "_last_checkpoint",
        "7.json",  # not zero-padded
        "00000000000000000007.json.tmp",
        ".00000000000000000007.json.crc",
        "00000000000000000010.checkpoint.0000000000.0000000003.parquet",  # part 0
        "00000000000000000010.checkpoint.0000000004.0000000003.parquet",  # part beyond count
        "00000000000000000006.00000000000000000004.compacted.json",  # end before start
        "00000000000000000004.00000000000000000004.compacted.json",  # end == start
        "00000000000000000010.checkpoint.not-a-uuid.json",
        "00000000000000000010.checkpoint.json",
    ],
)
def test_parse_rejects_other_names(name: str) -> None:
    assert parse_log_file_name(Path(name)) is None


@given(st.integers(min_value=0, max_value=10**19), st.integers(min_value=1, max_value=50))
def test_name_builders_round_trip(version: int, num_parts: int) -> None:
    assert parse_log_file_name(Path(commit_file_name(version))).version == version  # type: ignore[union-attr]
    assert parse_log_file_name(Path(classic_checkpoint_name(version))).kind is LogFileKind.CLASSIC_CHECKPOINT  # type: ignore[union-attr]
    mp = parse_log_file_name(Path(multipart_checkpoint_name(version, num_parts, num_parts)))
    assert mp is not None and (mp.version, mp.part, mp.num_parts) == (version, num_parts, num_parts)
    uc = parse_log_file_name(Path(uuid_checkpoint_name(version, UUID, "parquet")))
    assert uc is not None and (uc.version, uc.uuid) == (version, UUID)
    cp = parse_log_file_name(Path(compaction_file_name(version, version + num_parts)))
    assert cp is not None and (cp.version, cp.end_version) == (version, version + num_parts)


def test_list_log_files_skips_hidden_and_directories(tmp_path: Path) -> None:
    log = tmp_path / "_delta_log"
    (log / "_sidecars").mkdir(parents=True)
    (log / "_staged_commits").mkdir()
    (log / "00000000000000000000.json").write_text("{}\n")
    (log / ".00000000000000000000.json.crc").write_text("x")
    (log / "_sidecars" / "00000000000000000001.checkpoint.0000000001.0000000001.x.parquet").write_text("x")
    (log / "00000000000000000000.json.tmp").write_text("x")
    names = sorted(f.name for f in list_log_files(log, io=LocalFileIO()))
    assert names == ["00000000000000000000.json"]


def test_list_log_files_missing_dir_is_table_read_error(tmp_path: Path) -> None:
    with pytest.raises(TableReadError, match="not a Delta table"):
        list_log_files(tmp_path / "nope" / "_delta_log", io=LocalFileIO())


ROOT = Path("/data/table")


@pytest.mark.parametrize(
    ("add_path", "expected"),
    [
        ("part-0.parquet", "/data/table/part-0.parquet"),
        ("p=a%20b/part-0.parquet", "/data/table/p=a b/part-0.parquet"),
        ("p=na%C3%AFve%20%C3%BC/part-0.parquet", "/data/table/p=naïve ü/part-0.parquet"),
        ("p=x%2525y/part-0.parquet", "/data/table/p=x%25y/part-0.parquet"),  # Hive-escaped, then URI-encoded
        ("p=a+b/part-0.parquet", "/data/table/p=a+b/part-0.parquet"),  # '+' is not a space in a URI path
        ("a/../b.parquet", "/data/table/b.parquet"),
        ("./c.parquet", "/data/table/c.parquet"),
        ("/data/table/x.parquet", "/data/table/x.parquet"),
        ("file:/data/table/x%20y.parquet", "/data/table/x y.parquet"),
        ("file:///data/table/x.parquet", "/data/table/x.parquet"),
        ("file://localhost/data/table/x.parquet", "/data/table/x.parquet"),
    ],
)
def test_resolve_inside(add_path: str, expected: str) -> None:
    assert resolve_data_path(ROOT, add_path) == Path(expected)


@pytest.mark.parametrize(
    "add_path",
    [
        "../x.parquet",
        "a/../../x.parquet",
        "%2E%2E/x.parquet",  # encoded ".."
        "/etc/passwd",
        "/data/table-other/x.parquet",  # shares the root's prefix, is not under it
        "/data/table",
        "file:///tmp/x.parquet",
        "file://otherhost/data/table/x.parquet",
        "s3://bucket/key.parquet",
        "hdfs://nn/data/table/x.parquet",
        "abfss://c@a.dfs.core.windows.net/x.parquet",
        "",
        ".",
        "x%00.parquet",
    ],
)
def test_resolve_outside_is_none(add_path: str) -> None:
    assert resolve_data_path(ROOT, add_path) is None


_SEGMENT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"), min_size=1, max_size=8
)


@given(st.lists(_SEGMENT, min_size=1, max_size=5))
def test_resolved_paths_never_leave_the_root(segments: list[str]) -> None:
    """Whatever the segments (``..``, ``%``, unicode), a result is always strictly under the root."""
    resolved = resolve_data_path(ROOT, "/".join(segments))
    if resolved is not None:
        assert os.fspath(resolved).startswith("/data/table/")
        assert ".." not in resolved.relative_to(ROOT).parts


@given(st.lists(st.text(alphabet="abcXYZ019 _-üß", min_size=1, max_size=6), min_size=1, max_size=4))
def test_plain_relative_paths_resolve_by_decoding(segments: list[str]) -> None:
    from urllib.parse import quote

    encoded = "/".join(quote(s) for s in segments)
    assert resolve_data_path(ROOT, encoded) == ROOT.joinpath(*segments)


def test_table_root_path_accepts_file_and_object_store_uris_and_refuses_other_schemes(tmp_path: Path) -> None:
    from icecompat_writer.storage import ObjectPath, UnsupportedSchemeError

    assert table_root_path(f"file://{tmp_path}") == tmp_path
    assert table_root_path(f"file:{tmp_path}") == tmp_path
    assert table_root_path(tmp_path) == tmp_path
    assert table_root_path("s3://bucket/table") == ObjectPath("s3", "bucket", "table")
    with pytest.raises(UnsupportedSchemeError, match="hdfs"):
        table_root_path("hdfs://namenode/table")
