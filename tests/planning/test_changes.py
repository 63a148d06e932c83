"""A plan's change log: made from fixers' parallel lists, read as a tuple of Change would be."""

from __future__ import annotations

import pytest

from icecompat_writer.planning.changes import Change, Changed, ChangeLog


def _log() -> ChangeLog:
    ids = Changed([("a", "id=1"), ("b", "id=2")])
    return ChangeLog(
        [("R1", "why 1", ids.paths, ids.whats), ("R2", "why 2", [], []), ("R3", "why 3", [""], ["set x"])]
    )


EXPECTED = (
    Change("R1", "a", "id=1", "why 1"),
    Change("R1", "b", "id=2", "why 1"),
    Change("R3", "", "set x", "why 3"),
)


def test_reads_as_the_tuple_of_its_changes() -> None:
    log = _log()
    assert len(log) == 3 and bool(log) and list(log) == list(EXPECTED)
    assert log == EXPECTED and EXPECTED == log and log == list(EXPECTED)
    assert hash(log) == hash(EXPECTED) and log == ChangeLog.of(EXPECTED)
    assert [log[i] for i in range(3)] == list(EXPECTED) and log[-1] == EXPECTED[-1] and log[-3] == EXPECTED[0]
    assert log[1:] == EXPECTED[1:] and log[:0] == ()
    assert (*log,) == EXPECTED and [c.render() for c in log][2] == "R3 at table: set x"
    with pytest.raises(IndexError):
        log[3]
    with pytest.raises(IndexError):
        log[-4]


def test_differs_from_other_changes_and_empty_is_falsy() -> None:
    log = _log()
    assert log != EXPECTED[:2] and log != (*EXPECTED[:2], Change("R3", "", "set y", "why 3"))
    assert ChangeLog() == () and not ChangeLog() and len(ChangeLog([("R", "w", [], [])])) == 0
    assert log != "not changes"


def test_a_batch_needs_a_description_per_path() -> None:
    with pytest.raises(ValueError, match="as many descriptions as paths"):
        ChangeLog([("R", "w", ["a", "b"], ["one"])])


def test_changed_reads_as_pairs() -> None:
    c = Changed()
    c.add("a", "x")
    c.add("b", "y")
    assert c == [("a", "x"), ("b", "y")] and c == (("a", "x"), ("b", "y")) and c == Changed(c)
    assert c[1] == ("b", "y") and c[:1] == [("a", "x")] and len(c) == 2 and [p for p, _ in c] == ["a", "b"]
    assert c != [("a", "x")] and not Changed()


def test_texts_holding_the_packing_separator_and_reads_by_position() -> None:
    paths = [f"c{i}" for i in range(50)] + ["odd\x00name", ""]
    whats = [f"id={i}" for i in range(52)]
    log = ChangeLog([("R", "w", paths, whats), ("S", "v", ["x", "y"], ["a\x00b", ""])])
    expected = [Change("R", p, w, "w") for p, w in zip(paths, whats, strict=True)]
    expected += [Change("S", "x", "a\x00b", "v"), Change("S", "y", "", "v")]
    assert list(log) == expected and [log[i] for i in range(len(log))] == expected
    assert [log[i] for i in range(-1, -len(log) - 1, -1)] == expected[::-1]
