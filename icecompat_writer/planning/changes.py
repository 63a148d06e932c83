"""What a plan changed, kept as text until someone reads it.

A plan of a new 10,000-leaf table records about 12,000 changes (an id and a physical name per field, a
nested id per element, key and value). Most writes only count them; the upgrade report, the notebook
and the rule service's answer read them. So a fixer records each change as two strings in two
parallel lists (:class:`Changed`, no object per change), the plan's :class:`ChangeLog` keeps each
batch's texts packed into one string, and a :class:`Change` is made only when one is asked for.
Besides the time to build them, that keeps ~12,000 objects out of the cyclic collector's young
generation, which walks every object that survives a plan, and a kept plan holds a few large strings
instead of ~24,000 small ones scattered over the heap.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from typing import overload

__all__ = ["Change", "ChangeLog", "Changed"]


@dataclass(frozen=True, slots=True)
class Change:
    """One thing the planner changed: ``what`` (at column ``path``, ``""`` for the table), the ``rule``
    that required it, and ``why`` (the rule's automatic-fix description)."""

    rule: str
    path: str
    what: str
    why: str

    def render(self) -> str:
        where = f"column `{self.path}`" if self.path else "table"
        return f"{self.rule} at {where}: {self.what}"


class Changed(Sequence[tuple[str, str]]):
    """A fixer's changes as ``(column path, description)`` pairs, stored as two parallel lists.

    Reads as a sequence of pairs (equal to a list or tuple of the same pairs); ``add`` records one.
    """

    __slots__ = ("paths", "whats")

    def __init__(self, pairs: Iterable[tuple[str, str]] = ()) -> None:
        self.paths: list[str] = []
        self.whats: list[str] = []
        for path, what in pairs:
            self.add(path, what)

    def add(self, path: str, what: str) -> None:
        self.paths.append(path)
        self.whats.append(what)

    def __len__(self) -> int:
        return len(self.paths)

    @overload
    def __getitem__(self, i: int) -> tuple[str, str]: ...

    @overload
    def __getitem__(self, i: slice) -> list[tuple[str, str]]: ...

    def __getitem__(self, i: int | slice) -> tuple[str, str] | list[tuple[str, str]]:
        if isinstance(i, slice):
            return list(zip(self.paths[i], self.whats[i], strict=True))
        return self.paths[i], self.whats[i]

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return zip(self.paths, self.whats, strict=True)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Changed):
            return self.paths == other.paths and self.whats == other.whats
        if isinstance(other, (list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like a list

    def __repr__(self) -> str:
        return f"Changed({list(self)!r})"


class ChangeLog(Sequence[Change]):
    """A plan's changes in the order they were made: an immutable sequence of :class:`Change`.

    Each batch is one rule's changes (rule id, reason, paths, descriptions), its texts packed into one
    string each (:class:`_Packed`); a :class:`Change` is made each time an item is read. A plan is often
    kept (a write's result holds it), and ~20,000 small strings kept from it would stay scattered
    among the pages its schema had used, so that every later schema's objects land in the gaps between
    them: measured, that alone made the next plans of 10,000 leaves 1.3 to 1.7 times slower.
    Equal to any sequence of equal changes in the same order (a tuple included), and hashed as that
    tuple, so a plan compares and hashes as it would with a tuple.
    """

    __slots__ = ("_batches", "_len", "_starts")

    def __init__(self, batches: Iterable[tuple[str, str, Sequence[str], Sequence[str]]] = ()) -> None:
        self._batches: list[tuple[str, str, _Packed, _Packed]] = []
        self._starts: list[int] = []
        n = 0
        for rule, why, paths, whats in batches:
            if len(paths) != len(whats):
                raise ValueError("a batch of changes needs as many descriptions as paths")
            if paths:
                self._batches.append((rule, why, _Packed(paths), _Packed(whats)))
                self._starts.append(n)
                n += len(paths)
        self._len = n

    @classmethod
    def of(cls, changes: Iterable[Change]) -> ChangeLog:
        """A log of existing :class:`Change` objects, one batch each."""
        return cls((c.rule, c.why, (c.path,), (c.what,)) for c in changes)

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, i: int) -> Change: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[Change, ...]: ...

    def __getitem__(self, i: int | slice) -> Change | tuple[Change, ...]:
        if isinstance(i, slice):
            return tuple(self)[i]
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError("change index out of range")
        b = bisect_right(self._starts, i) - 1
        rule, why, paths, whats = self._batches[b]
        j = i - self._starts[b]
        return Change(rule, paths[j], whats[j], why)

    def __iter__(self) -> Iterator[Change]:
        return chain.from_iterable(
            map(Change, repeat(rule, len(paths)), paths.items(), whats.items(), repeat(why, len(paths)))
            for rule, why, paths, whats in self._batches
        )

    def __bool__(self) -> bool:
        return self._len > 0

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (ChangeLog, tuple, list)):
            return len(self) == len(other) and tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"ChangeLog({tuple(self)!r})"


_SEP = "\x00"


class _Packed:
    """Strings kept as one: joined by NUL, split again when read. Strings that hold a NUL themselves
    (a column name may) are kept as they are. ``[i]`` finds the item's bounds on first use."""

    __slots__ = ("_ends", "_joined", "_kept", "_n")

    def __init__(self, items: Sequence[str]) -> None:
        self._n = len(items)
        joined = _SEP.join(items)
        self._ends: array[int] | None = None
        if joined.count(_SEP) == self._n - 1:
            self._joined: str | None = joined
            self._kept: tuple[str, ...] = ()
        else:
            self._joined = None
            self._kept = tuple(items)

    def __len__(self) -> int:
        return self._n

    def items(self) -> Sequence[str]:
        return self._kept if self._joined is None else self._joined.split(_SEP)

    def __getitem__(self, i: int) -> str:
        joined = self._joined
        if joined is None:
            return self._kept[i]
        ends = self._ends
        if ends is None:
            ends, find, at = array("q"), joined.find, -1
            for _ in range(self._n - 1):
                at = find(_SEP, at + 1)
                ends.append(at)
            ends.append(len(joined))
            self._ends = ends
        return joined[(ends[i - 1] + 1 if i else 0) : ends[i]]
