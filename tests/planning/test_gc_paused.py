"""``gc_paused``: the collector paused inside the block, what the block made moved to the oldest
generation on the way out (no young collection to walk it), and nothing the process set up undone."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from icecompat_writer.perf import gc_paused


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


@pytest.fixture
def collector() -> Iterator[None]:
    """Leave the collector as it was found, frozen objects included."""
    was_enabled = gc.isenabled()
    gc.enable()
    yield
    gc.unfreeze()
    if not was_enabled:
        gc.disable()


def test_what_the_block_made_is_in_the_oldest_generation_with_no_collection_pending(collector: None) -> None:
    gc.collect()
    with gc_paused():
        assert not gc.isenabled()
        made = [{"n": [i]} for i in range(5000)]
    assert gc.isenabled()
    assert gc.get_count()[0] < 100  # not ~10,000 allocations waiting for a young collection
    assert gc.get_freeze_count() == 0
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert id(made) in oldest and all(id(d) in oldest for d in made[::500])


def test_a_cycle_made_inside_is_still_collected(collector: None) -> None:
    with gc_paused():
        a, b = _Node(), _Node()
        a.other, b.other = b, a
        gone = weakref.ref(a)
        del a, b
    assert gone() is not None  # the cycle outlived the block ...
    gc.collect()
    assert gone() is None  # ... and the next full collection frees it


def test_nested_blocks_resume_only_at_the_outermost(collector: None) -> None:
    with gc_paused():
        with gc_paused():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


def test_objects_the_process_froze_stay_frozen(collector: None) -> None:
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    assert frozen > 0
    with gc_paused():
        [{"n": [i]} for i in range(1000)]
    assert gc.get_freeze_count() == frozen
    assert gc.isenabled()


def test_a_collector_the_caller_disabled_stays_disabled(collector: None) -> None:
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()
