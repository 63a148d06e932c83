"""Generated damage to a table's log and data files: the checker reports it, it never crashes or hangs.

A small compliant table (three commits, a classic checkpoint, ``_last_checkpoint``, real Parquet data
files with field ids) is copied for every case and damaged by a generated list of operations:
truncated and garbage-filled files, deleted files, lines of any JSON (wrong types in actions, absurd
numbers, NaN and infinities), actions with one field replaced, missing protocol or metadata,
duplicated adds, removes of unknown files, bad checkpoints, a ``_last_checkpoint`` pointing nowhere,
new commits with gaps, data files replaced by directories or symbolic links. Then:

- ``check_table`` returns a report or raises an :class:`~icecompat_writer.errors.IcecompatError`
  (the documented ``TableReadError`` when nothing can be decided), within a time limit;
- a report renders as text, JSON and HTML;
- damage to a live data file (when the log is intact) never leaves the table compliant;
- ``icecompat check`` exits 0, 1 or 2 and writes no traceback, and ``--json`` prints JSON.

The tests at the end pin single inputs that once crashed or hung the checker; each is now a finding.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icecompat_writer.checking.check import UNREADABLE_TABLE_ERRORS, Report, check_table
from icecompat_writer.cli.main import main
from icecompat_writer.errors import IcecompatError, TableReadError
from icecompat_writer.rules.schema import MalformedSchemaError
from tests.cli.synthetic import build_table, stats, write_data_file
from tests.deltalog import logbuilder as lb

LOG = "_delta_log"
TIME_LIMIT = 30  # seconds one check may take on these tiny tables before it counts as hung


# --- the template table ----------------------------------------------------------------------------


def build_template(root: Path) -> list[str]:
    """Three commits, a checkpoint at 1 and ``_last_checkpoint``; returns the live data files' paths."""
    table = build_table(root, "v3", files=3)
    b = lb.LogBuilder(root)
    size = write_data_file(root / "part-00003-later.c000.snappy.parquet", table.metadata, 9, 3)
    later = lb.add("part-00003-later.c000.snappy.parquet", stats=stats(3), size=size)
    later["add"]["baseRowId"] = 9
    later["add"]["defaultRowCommitVersion"] = 1
    b.commit(1, [lb.commit_info("WRITE"), lb.remove(table.files[0]), later])
    commit0 = support_actions(root, 0)
    live = [a for a in commit0 if "add" in a and a["add"]["path"] != table.files[0]] + [later]
    b.classic_checkpoint(1, [{"protocol": table.protocol}, {"metaData": table.metadata}, *live])
    b.last_checkpoint({"version": 1, "size": 2 + len(live)})
    b.commit(2, [lb.commit_info("SET TBLPROPERTIES"), lb.txn("app", 1)])
    return [a["add"]["path"] for a in live]


def support_actions(root: Path, version: int) -> list[dict[str, Any]]:
    text = (root / LOG / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    root = tmp_path_factory.mktemp("hostile-checker") / "template"
    live = build_template(root)
    report = check_table(root)
    assert report.compliant, report.render_text()
    return root, live


# --- damage ----------------------------------------------------------------------------------------

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=10),
)
FIELD_NAMES = [
    "path", "size", "partitionValues", "stats", "deletionVector", "baseRowId", "minReaderVersion",
    "minWriterVersion", "readerFeatures", "writerFeatures", "schemaString", "configuration",
    "partitionColumns", "id", "format", "numRecords", "version", "appId", "storageType", "pathOrInlineDv",
]  # fmt: skip
json_values = st.recursive(
    json_scalars,
    lambda c: st.one_of(
        st.lists(c, max_size=3),
        st.dictionaries(st.one_of(st.sampled_from(FIELD_NAMES), st.text(max_size=5)), c, max_size=4),
    ),
    max_leaves=10,
)
ACTIONS = [
    "add", "remove", "protocol", "metaData", "txn", "commitInfo", "domainMetadata", "cdc",
    "checkpointMetadata", "sidecar",
]  # fmt: skip


def _dumps(value: Any) -> bytes:
    return json.dumps(value).encode()


hostile_lines = st.one_of(
    st.dictionaries(st.sampled_from(ACTIONS), json_values, min_size=1, max_size=2).map(_dumps),
    json_values.map(_dumps),
    st.binary(max_size=40).map(lambda b: b.replace(b"\n", b" ")),
    st.just(b"[" * 5000 + b"]" * 5000),  # deeper than the JSON decoder's recursion limit
)
# Replace one field of an action that is in the log (the field may be new).
field_mutations = st.tuples(
    st.sampled_from(["add", "protocol", "metaData", "remove", "txn"]),
    st.sampled_from(FIELD_NAMES),
    st.one_of(
        json_values,
        st.integers(-(2**70), 2**70),
        st.text(max_size=30),  # schemaString that is not JSON, paths that are odd
        json_values.map(json.dumps),  # schemaString that is JSON of the wrong shape
    ),
)

# file choosers pick by index modulo the files present when the operation runs
pick = st.integers(0, 10_000)
ops = st.one_of(
    st.tuples(st.just("truncate"), st.sampled_from(["log", "data"]), pick, st.floats(0, 1)),
    st.tuples(
        st.just("insert"),
        st.sampled_from(["log", "data"]),
        pick,
        st.floats(0, 1),
        st.binary(min_size=1, max_size=16),
    ),
    st.tuples(st.just("overwrite"), st.sampled_from(["log", "data"]), pick, st.binary(max_size=64)),
    st.tuples(st.just("delete"), st.sampled_from(["log", "data"]), pick),
    st.tuples(st.just("append_line"), st.integers(0, 2), hostile_lines),
    st.tuples(st.just("mutate"), st.integers(0, 2), field_mutations),
    st.tuples(st.just("drop_kind"), st.integers(0, 2), st.sampled_from(["protocol", "metaData", "add"])),
    st.tuples(st.just("duplicate_add"), st.integers(0, 2)),
    st.tuples(st.just("remove_unknown"), st.integers(0, 2), st.text(min_size=1, max_size=12)),
    st.tuples(st.just("last_checkpoint"), json_values),
    st.tuples(
        st.just("checkpoint"),
        st.integers(0, 3),
        st.one_of(st.binary(max_size=64), st.just(b"PAR1" + b"\0" * 8 + b"PAR1")),
    ),
    st.tuples(st.just("truncate_checkpoint"), st.floats(0, 1)),
    st.tuples(st.just("new_commit"), st.integers(3, 40), st.lists(hostile_lines, max_size=3)),
    st.tuples(st.just("data_link"), pick, st.sampled_from(["outside", "loop", "dangling", "directory"])),
)


def _files(root: Path, kind: str) -> list[Path]:
    if kind == "log":
        return sorted(p for p in (root / LOG).rglob("*") if p.is_file() and not p.is_symlink())
    return sorted(p for p in root.glob("*.parquet") if p.is_file() and not p.is_symlink())


def _commit(root: Path, version: int) -> Path:
    return root / LOG / f"{version:020d}.json"


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True) if path.is_file() else []


def apply(root: Path, op: tuple[Any, ...], sentinel: Path) -> None:
    """Apply one damage operation (an operation whose target is gone does nothing)."""
    kind = op[0]
    if kind in ("truncate", "insert", "overwrite", "delete"):
        files = _files(root, op[1])
        if not files:
            return
        f = files[op[2] % len(files)]
        data = f.read_bytes()
        if kind == "truncate":
            f.write_bytes(data[: int(len(data) * op[3])])
        elif kind == "insert":
            at = int(len(data) * op[3])
            f.write_bytes(data[:at] + op[4] + data[at:])
        elif kind == "overwrite":
            f.write_bytes(op[3])
        else:
            f.unlink()
    elif kind == "append_line":
        with _commit(root, op[1]).open("ab") as fh:
            fh.write(op[2] + b"\n")
    elif kind == "mutate":
        path = _commit(root, op[1])
        action, key, value = op[2]
        out = []
        for line in _lines(path):
            try:
                obj = json.loads(line)
            except (ValueError, RecursionError):
                out.append(line)
                continue
            if isinstance(obj, dict) and isinstance(obj.get(action), dict):
                obj[action][key] = value
                line = json.dumps(obj).encode() + b"\n"
            out.append(line)
        path.write_bytes(b"".join(out))
    elif kind == "drop_kind":
        path = _commit(root, op[1])
        path.write_bytes(b"".join(line for line in _lines(path) if f'"{op[2]}"'.encode() not in line[:20]))
    elif kind == "duplicate_add":
        path = _commit(root, op[1])
        adds = [line for line in _lines(path) if line.startswith(b'{"add"')]
        if adds:
            with path.open("ab") as fh:
                fh.write(adds[0] if adds[0].endswith(b"\n") else adds[0] + b"\n")
    elif kind == "remove_unknown":
        with _commit(root, op[1]).open("ab") as fh:
            fh.write(_dumps(lb.remove(op[2])) + b"\n")
    elif kind == "last_checkpoint":
        (root / LOG / "_last_checkpoint").write_bytes(_dumps(op[1]))
    elif kind == "checkpoint":
        (root / LOG / f"{op[1]:020d}.checkpoint.parquet").write_bytes(op[2])
    elif kind == "truncate_checkpoint":
        cp = root / LOG / f"{1:020d}.checkpoint.parquet"
        if cp.is_file():
            data = cp.read_bytes()
            cp.write_bytes(data[: int(len(data) * op[1])])
    elif kind == "new_commit":
        _commit(root, op[1]).write_bytes(b"".join(line + b"\n" for line in op[2]))
    elif kind == "data_link":
        files = _files(root, "data")
        if not files:
            return
        f = files[op[1] % len(files)]
        f.unlink()
        if op[2] == "outside":
            f.symlink_to(sentinel)
        elif op[2] == "loop":
            f.symlink_to(f.name)
        elif op[2] == "dangling":
            f.symlink_to(root / "no-such-file.parquet")
        else:
            f.mkdir()
    else:  # pragma: no cover - the strategy has no other kinds
        raise AssertionError(op)


class Hung(BaseException):
    """Raised into a block that outlived its time limit (a BaseException: no ``except Exception`` in
    the code under test may swallow it and carry on)."""


@contextlib.contextmanager
def time_limit(seconds: int, what: str) -> Iterator[None]:
    """Fail (instead of hanging the test run) when the block takes longer than ``seconds``."""

    def expired(signum: int, frame: Any) -> None:
        raise Hung(f"{what} still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


# The only errors check_table may raise on a damaged table, by exact type: a log that cannot be
# replayed (TableReadError, caused by nothing or by a file read or parse error) and a metaData whose
# schemaString is not a schema. Any other exception, a crash of the reader included, fails the case.
CHECK_ERRORS: tuple[type[IcecompatError], ...] = (TableReadError, MalformedSchemaError)


def check_outcome(root: Path, **kwargs: Any) -> Report | IcecompatError:
    """check_table's outcome: a report (which must render) or one of :data:`CHECK_ERRORS`."""
    try:
        with time_limit(TIME_LIMIT, "check_table"):
            report = check_table(root, **kwargs)
    except IcecompatError as err:
        assert type(err) in CHECK_ERRORS, f"unexpected {type(err).__name__}: {err}"
        cause = err.__cause__
        assert cause is None or isinstance(cause, (IcecompatError, *UNREADABLE_TABLE_ERRORS)), repr(cause)
        assert str(err).strip()
        assert "Traceback" not in str(err)
        return err
    report.render_text()
    report._repr_html_()
    json.dumps(report.to_json())
    return report


def assert_cli_is_clean(root: Path) -> None:
    for argv in (["check", str(root)], ["check", str(root), "--json"]):
        with time_limit(TIME_LIMIT, "icecompat check"):
            code, out, err = run_cli(argv)
        assert code in (0, 1, 2), f"exit {code}"
        assert "Traceback" not in err and "Traceback" not in out
        assert "internal error" not in err, err
        if "--json" in argv:
            parsed = json.loads(out)
            assert ("error" in parsed) == (code == 2)


TALLY: dict[str, int] = {}

_DATA_DAMAGE = {"truncate", "insert", "overwrite", "delete", "data_link"}


def run_damage(template: tuple[Path, list[str]], damage: list[tuple[Any, ...]], profile: str | None) -> None:
    src, live = template
    work = Path(tempfile.mkdtemp(prefix="hostile-check-"))
    try:
        sentinel = work / "outside-secret.parquet"
        shutil.copy(src / live[0], sentinel)
        root = work / "table"
        shutil.copytree(src, root, symlinks=True)
        for op in damage:
            apply(root, op, sentinel)
        outcome = check_outcome(root, profile=profile)
        if isinstance(outcome, Report):
            key = "compliant" if outcome.compliant else "not compliant"
            data_only = all(op[0] in _DATA_DAMAGE and (len(op) < 2 or op[1] != "log") for op in damage)
            if data_only and _live_file_changed(src, root, live):
                assert not outcome.compliant, f"damaged data file passed:\n{outcome.render_text()}"
        else:
            key = type(outcome).__name__
            if outcome.__cause__ is not None:
                key += f" ({type(outcome.__cause__).__name__})"
        TALLY[key] = TALLY.get(key, 0) + 1
        assert_cli_is_clean(root)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _live_file_changed(src: Path, root: Path, live: list[str]) -> bool:
    for name in live:
        a, b = src / name, root / name
        if b.is_symlink() or not b.is_file() or a.read_bytes() != b.read_bytes():
            return True
    return False


_SETTINGS = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    "database": None,
}
damages = st.lists(ops, min_size=1, max_size=4)
profiles = st.sampled_from([None, "v3", "writer-v1"])


@pytest.fixture(scope="module")
def tally() -> Iterator[dict[str, int]]:
    """Prints the outcomes of the generated cases (``-s`` shows them)."""
    yield TALLY
    print(f"\nhostile checker outcomes ({sum(TALLY.values())} cases): {json.dumps(TALLY, sort_keys=True)}")


@settings(max_examples=300, **_SETTINGS)
@given(damage=damages, profile=profiles)
def test_generated_damage_is_reported_never_a_crash(
    template: tuple[Path, list[str]],
    tally: dict[str, int],
    damage: list[tuple[Any, ...]],
    profile: str | None,
) -> None:
    run_damage(template, damage, profile)


@pytest.mark.soak
@settings(max_examples=5000, **_SETTINGS)
@given(damage=damages, profile=profiles)
def test_soak_generated_damage(
    template: tuple[Path, list[str]],
    tally: dict[str, int],
    damage: list[tuple[Any, ...]],
    profile: str | None,
) -> None:
    run_damage(template, damage, profile)


# --- single inputs that crashed or hung the checker ------------------------------------------------


@pytest.fixture
def table(template: tuple[Path, list[str]], tmp_path: Path) -> Path:
    root = tmp_path / "table"
    shutil.copytree(template[0], root, symlinks=True)
    return root


def append_commit(root: Path, version: int, *lines: bytes) -> None:
    _commit(root, version).write_bytes(b"".join(line + b"\n" for line in lines))


def _metadata(root: Path) -> dict[str, Any]:
    return next(a["metaData"] for a in support_actions(root, 0) if "metaData" in a)


@pytest.mark.parametrize(
    "schema_string",
    ["not json", "[]", '{"type":"struct","fields":5}', "[" * 5000 + "]" * 5000, []],
    ids=["not-json", "not-a-struct", "fields-not-a-list", "nested-too-deep", "a-list-not-a-string"],
)
def test_a_malformed_schema_is_a_table_read_error(table: Path, schema_string: Any) -> None:
    md = {**_metadata(table), "schemaString": schema_string}
    append_commit(table, 3, _dumps({"metaData": md}))
    with pytest.raises(MalformedSchemaError) as err:
        check_table(table)
    assert isinstance(err.value, TableReadError)
    assert "schema" in str(err.value)
    code, _, stderr = run_cli(["check", str(table)])
    assert code == 2 and "internal error" not in stderr and "schemaString" in stderr


def test_a_named_pipe_as_data_file_is_a_finding_and_never_opened(
    table: Path, template: tuple[Path, list[str]]
) -> None:
    victim = table / template[1][0]
    victim.unlink()
    os.mkfifo(victim)
    with time_limit(10, "check_table on a FIFO"):
        report = check_table(table)
    found = {f.file: f for f in report.findings}
    assert found[template[1][0]].code == "unreadable_data_file"
    assert "named pipe" in found[template[1][0]].message and not report.compliant


def _parquet_with_footer(footer: bytes) -> bytes:
    return b"PAR1" + footer + struct.pack("<I", len(footer)) + b"PAR1"


# FileMetaData{1: version=1, 2: schema=[SchemaElement{...}]} in Thrift's compact protocol.
_FOOTER_HEAD = b"\x15\x02\x19\x1c"


def test_a_footer_nested_beyond_the_decoder_is_a_finding(
    table: Path, template: tuple[Path, list[str]]
) -> None:
    deep = _FOOTER_HEAD + b"\x1c" * 5000 + b"\x00" * 5001  # structs in structs, 5000 deep
    (table / template[1][0]).write_bytes(_parquet_with_footer(deep))
    report = check_table(table)
    found = {f.file: f for f in report.findings}
    assert found[template[1][0]].code == "unreadable_data_file", report.render_text()
    assert not report.compliant


def test_a_footer_with_an_endless_map_is_a_finding(table: Path, template: tuple[Path, list[str]]) -> None:
    endless = _FOOTER_HEAD + b"\x1b" + b"\xff" * 8 + b"\x7f" + b"\x11" + b"\x00\x00"
    (table / template[1][0]).write_bytes(_parquet_with_footer(endless))
    with time_limit(3, "check_table on an endless footer map"):
        report = check_table(table)
    assert {f.code for f in report.findings} == {"unreadable_data_file"}


# Single bad lines that once broke the log reader (RecursionError, OverflowError, TypeError) and made
# the whole table a TableReadError: each is a finding about that line, and the table is audited.
_READER_CRASHES = {
    "deep-json-line": b"[" * 5000 + b"]" * 5000,
    "size-infinite": b'{"add":{"path":"x.parquet","partitionValues":{},"size":1e400,'
    b'"modificationTime":1,"dataChange":true}}',
    "feature-list-of-objects": b'{"protocol":{"minReaderVersion":3,"minWriterVersion":7,'
    b'"readerFeatures":[{}],"writerFeatures":[]}}',
    "reader-version-infinite": b'{"protocol":{"minReaderVersion":1e400,"minWriterVersion":7}}',
    "features-not-a-list": b'{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":true}}',
}


@pytest.mark.parametrize("line", list(_READER_CRASHES.values()), ids=list(_READER_CRASHES))
def test_a_line_that_breaks_the_log_reader_is_a_finding(table: Path, line: bytes) -> None:
    append_commit(table, 3, line)
    report = check_table(table)
    assert {f.code for f in report.findings} & {"corrupt_line", "invalid_action"}
    assert not report.compliant
    code, _, stderr = run_cli(["check", str(table)])
    assert code == 1 and "internal error" not in stderr


def test_a_deeply_nested_last_checkpoint_is_a_warning(table: Path) -> None:
    (table / LOG / "_last_checkpoint").write_bytes(b"[" * 5000 + b"]" * 5000)
    report = check_table(table)
    assert report.compliant
    assert {f.code for f in report.findings} == {"unreadable_last_checkpoint"}


def _fifo_last_checkpoint(root: Path) -> None:
    (root / LOG / "_last_checkpoint").unlink()
    os.mkfifo(root / LOG / "_last_checkpoint")


def _fifo_sidecar(root: Path) -> None:
    name = f"{1:020d}.checkpoint.12345678-1234-1234-1234-123456789012.json"
    lines = [{"checkpointMetadata": {"version": 1}}, {"sidecar": {"path": "s.parquet", "sizeInBytes": 1}}]
    lb.LogBuilder(root).raw(name, b"".join(_dumps(a) + b"\n" for a in lines))
    (root / LOG / "_sidecars").mkdir()
    os.mkfifo(root / LOG / "_sidecars" / "s.parquet")


def check_in_subprocess(root: Path, then: str = "", timeout: int = 15) -> subprocess.CompletedProcess[bytes]:
    """check_table in a child process (killed after ``timeout`` s: a read blocked in native code, such
    as pyarrow opening a named pipe, cannot be interrupted), its memory capped at 512 MiB more than
    it needs after the imports. ``then`` is more code run with ``report`` set; raises :class:`Hung`."""
    code = (
        "import resource, sys\n"
        "from icecompat_writer.checking.check import check_table\n"
        "with open('/proc/self/status') as status:\n"
        "    vm = next(int(l.split()[1]) * 1024 for l in status if l.startswith('VmSize'))\n"
        "resource.setrlimit(resource.RLIMIT_AS, (vm + (512 << 20), vm + (512 << 20)))\n"
        "report = check_table(sys.argv[1])\n" + then
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    try:
        return subprocess.run(
            [sys.executable, "-c", code, str(root)],
            env=env,
            capture_output=True,
            timeout=timeout,
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CPU, (timeout + 5, timeout + 5)),
        )
    except subprocess.TimeoutExpired:
        raise Hung(f"check_table still running after {timeout} s") from None


@pytest.mark.parametrize("damage", [_fifo_last_checkpoint, _fifo_sidecar], ids=["last-checkpoint", "sidecar"])
def test_a_named_pipe_in_the_log_does_not_hang_the_checker(
    table: Path, damage: Callable[[Path], None]
) -> None:
    damage(table)
    done = check_in_subprocess(table, timeout=5)
    assert done.returncode == 0, done.stderr.decode()[-500:]


def test_a_commit_with_an_absurd_version_is_a_finding(table: Path) -> None:
    append_commit(table, 999_999_999_999, _dumps(lb.commit_info()))
    done = check_in_subprocess(table, "assert 'missing_commit' in {f.code for f in report.findings}\n")
    assert done.returncode == 0, done.stderr.decode()[-500:]
