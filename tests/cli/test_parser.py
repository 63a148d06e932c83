"""The ``icecompat`` parser against its documentation, and the flags that must be refused.

Every ``icecompat ...`` example in README.md and docs/*.md (and conf/README.md), in code blocks and
inline code, is parsed by the real parser (``build_parser``, nothing runs): a documented flag or form
the parser rejects fails here. The other way round, every flag of every subcommand is named in its
section of docs/cli.md. The refusals run ``main`` on flags that would do nothing: each exits 2 before
anything is read, naming the flag.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import re
import shlex
from pathlib import Path

import pytest

from icecompat_writer import driver_settings
from icecompat_writer.cli import settings
from icecompat_writer.cli.main import EXIT_ERROR, EXIT_OK, EXIT_VIOLATIONS, build_parser, main
from icecompat_writer.storage import parse_location
from icecompat_writer.storage.filesystems import options_for
from tests.cli.synthetic import build_table

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", REPO / "conf" / "README.md", *sorted((REPO / "docs").glob("*.md"))]
CLI_DOC = REPO / "docs" / "cli.md"

FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)
INLINE = re.compile(r"`([^`\n]+)`")
COMMAND = re.compile(r"(?<![\w%./-])icecompat\s+(\S.*)")


def _commands(text: str) -> list[str]:
    """The ``icecompat ...`` command lines of a markdown text: code blocks (continuation lines joined,
    comments, redirections and chained commands cut) and inline code."""
    found: list[str] = []
    for block in FENCE.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            found.extend(m.group(0) for m in COMMAND.finditer(line.split(" #")[0]))
    for code in INLINE.findall(FENCE.sub("", text)):
        found.extend(m.group(0) for m in COMMAND.finditer(code))
    return found


def _argv(command: str) -> list[str]:
    """A documented command as argv: optional parts (``[...]``) included, the first of alternatives
    (``v3|writer-v1``), placeholders kept as they are (``TABLE_PATH``, ``<name>``)."""
    for cut in (" && ", " | ", " > ", " ; "):
        command = command.split(cut)[0]
    command = command.replace("\\|", "|").replace("[", " ").replace("]", " ")
    tokens = shlex.split(command)[1:]  # without "icecompat"
    return [t.split("|")[0] for t in tokens if t not in ("...", "…") and t.split("|")[0]]


def _documented() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for path in DOCS:
        for command in _commands(path.read_text(encoding="utf-8")):
            out.append((str(path.relative_to(REPO)), command))
    return out


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no subcommands")


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    return {s for a in parser._actions for s in a.option_strings if s not in ("-h", "--help")}


def test_the_docs_have_examples_of_every_subcommand() -> None:
    seen = {_argv(c)[0] for _, c in _documented() if _argv(c) and not _argv(c)[0].startswith("-")}
    assert seen == set(_subparsers(build_parser())), seen


def _filled(argv: list[str]) -> list[str]:
    """A template's placeholder after a flag with fixed values (``--profile {target}`` in a rule's fix,
    ``docs/rules.md``) stands for any of them: the first."""
    subs = _subparsers(build_parser())
    sub = subs.get(argv[0]) if argv else None
    choices = {s: a.choices for a in (sub._actions if sub else []) for s in a.option_strings if a.choices}
    out = list(argv)
    for i in range(1, len(out)):
        if re.fullmatch(r"\{\w+\}|<[^>]+>", out[i]) and out[i - 1] in choices:
            out[i] = str(next(iter(choices[out[i - 1]])))
    return out


def test_every_documented_example_parses() -> None:
    """A bare ``icecompat upgrade`` names the command (prose); anything longer is an example."""
    rejected: list[str] = []
    names = set(_subparsers(build_parser()))
    for where, command in _documented():
        argv = _argv(command)
        if len(argv) == 1 and argv[0] in names:
            continue
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                build_parser().parse_args(_filled(argv))
            except SystemExit as exit_:
                if exit_.code != 0:
                    last = (err.getvalue().strip().splitlines() or [""])[-1]
                    rejected.append(f"{where}: {command!r}: {last}")
    assert not rejected, "\n".join(rejected)


def test_the_example_reader_reads_alternatives_options_and_continuations() -> None:
    text = (
        "```bash\nicecompat check T [--profile v3|writer-v1] \\\n  --json   # a comment\n```\n"
        "and `icecompat upgrade T --profile writer-v3 [--dry-run]`, `%icecompat_check PATH`.\n"
    )
    assert [_argv(c) for c in _commands(text)] == [
        ["check", "T", "--profile", "v3", "--json"],
        ["upgrade", "T", "--profile", "writer-v3", "--dry-run"],
    ]


def test_every_flag_of_every_subcommand_is_in_its_section_of_the_cli_reference() -> None:
    text = CLI_DOC.read_text(encoding="utf-8")
    sections = dict(re.findall(r"^## `icecompat (\w+)`\n(.*?)(?=^## |\Z)", text, re.M | re.S))
    parser = build_parser()
    missing = [f for f in sorted(_flags(parser)) if f"`{f}" not in text]
    for name, sub in _subparsers(parser).items():
        assert name in sections, f"docs/cli.md has no section for icecompat {name}"
        missing += [f"{name} {f}" for f in sorted(_flags(sub)) if f"`{f}" not in sections[name]]
    assert not missing, f"flags not in docs/cli.md: {missing}"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["check", "{t}", "--parallel", "2"], "--parallel"),
        (["upgrade", "{t}", "--profile", "v3", "--dry-run", "--parallel", "3"], "--parallel"),
        (["iceberg", "{t}", "--identifier", "db.t"], "--identifier"),
        (["iceberg", "{t}", "{t}", "--catalog", "c", "--identifier", "db.t"], "--identifier"),
        (["check", "{t}", "{t}", "--parallel", "0"], "--parallel"),
        (["doctor", "--no-spark", "--conf", "spark.x.y=1"], "--conf"),
        (["doctor", "--no-spark", "--properties-file", "{t}/f.conf"], "--properties-file"),
        (["upgrade", "{t}", "--profile", "v3", "--dry-run", "--conf", "novalue"], "--conf"),
        (["iceberg", "{t}", "--conf", "notdotted=1"], "--conf"),
        (["check", "{t}", "--properties-file", "{t}/missing.conf"], "--properties-file"),
        (["-v", "-q", "check", "{t}"], "-q"),
        (["iceberg", "{t}", "--format-version", "4"], "--format-version"),
    ],
)
def test_a_flag_that_would_do_nothing_is_a_usage_error_naming_it(
    argv: list[str], flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "f.conf").write_text("spark.x.y 1\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    code, out, err = run(capsys, *[a.format(t=tmp_path) for a in argv])
    assert code == EXIT_ERROR and out == ""
    assert flag in err and "usage: icecompat" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_json_alone_on_stdout_for_conf_and_doctor(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "conf", "--json")
    assert code == EXIT_OK
    doc = json.loads(out)
    assert doc["format"] == "icecompat-conf/1" and "spark.sql.extensions" in doc["settings"]
    code, out, _ = run(capsys, "conf", "--submit", "--json")
    assert code == EXIT_OK and "--conf" in json.loads(out)["spark_submit"]
    code, out, _ = run(capsys, "doctor", "--no-spark", "--json")
    doc = json.loads(out)
    assert doc["format"] == "icecompat-doctor/1" and {c["what"] for c in doc["checks"]} >= {"java"}
    assert code == (EXIT_OK if doc["ok"] else EXIT_VIOLATIONS)
    code, out, err = run(capsys, "conf", "--spark-version", "3.5.1", "--json")
    assert code == EXIT_ERROR and json.loads(out)["error"]["type"] == "UnsupportedSparkVersion"
    assert "3.5.1" in err


def test_verbosity_chooses_what_stderr_gets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build_table(tmp_path / "t")
    table = str(tmp_path / "t")
    logger = logging.getLogger("icecompat_writer")
    level = logger.level
    code, out, err = run(capsys, "-v", "check", table, "--conf", "spark.hadoop.fs.s3a.secret.key=hush")
    assert code == EXIT_OK and "COMPLIANT" in out
    assert "spark.hadoop.fs.s3a.secret.key" in err and "hush" not in err + out  # keys, never values
    assert "check: exit 0 after" in err
    code, out, err = run(capsys, "-q", "check", table, "--json")
    assert code == EXIT_OK and err == "" and json.loads(out)["compliant"] is True
    code, _, err = run(capsys, "check", table)
    assert code == EXIT_OK and err == ""
    assert logger.level == level and not [h for h in logger.handlers if h.stream is not None]


def test_the_package_log_follows_the_verbosity(capsys: pytest.CaptureFixture[str]) -> None:
    from icecompat_writer.cli import console

    for flags, level in (
        ([], logging.WARNING),
        (["-v"], logging.INFO),
        (["-vv"], logging.DEBUG),
        (["-q"], logging.ERROR),
    ):
        args = build_parser().parse_args([*flags, "conf"])
        state = console.configure_logging(args)
        try:
            assert logging.getLogger("icecompat_writer").getEffectiveLevel() == level
        finally:
            console.restore_logging(state)


def test_settings_from_a_file_and_conf_in_order(tmp_path: Path) -> None:
    props = tmp_path / "spark-defaults.conf"
    props.write_text(
        "# comment\nspark.hadoop.fs.s3a.endpoint http://file:9000\n"
        "spark.hadoop.fs.s3a.path.style.access=true\nspark.sql.shuffle.partitions 4\n"
    )
    args = build_parser().parse_args(
        [
            "upgrade",
            "s3a://b/t",
            "--profile",
            "v3",
            "--properties-file",
            str(props),
            "--conf",
            "spark.hadoop.fs.s3a.endpoint=http://conf:9000",
            "--conf",
            "spark.a.b=x=y",
        ]
    )
    got = settings.spark_settings(args)
    assert got == {
        "spark.hadoop.fs.s3a.endpoint": "http://conf:9000",
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.sql.shuffle.partitions": "4",
        "spark.a.b": "x=y",
    }
    assert settings.hadoop_settings(got) == {
        "fs.s3a.endpoint": "http://conf:9000",
        "fs.s3a.path.style.access": "true",
    }


def test_spark_hadoop_settings_reach_the_reads_made_without_spark() -> None:
    path = parse_location("s3a://bucket-of-the-cli/t")
    assert not isinstance(path, Path)
    before = driver_settings.install(None)
    driver_settings.install(before)
    with settings.installed({"spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9", "spark.sql.x": "1"}):
        assert options_for(path).get("endpoint") == "http://127.0.0.1:9"
    assert driver_settings.install(before) is before  # the package's own source is back
    with settings.installed({"spark.sql.x": "1"}):  # no Hadoop key: nothing installed
        assert driver_settings.install(before) is before
