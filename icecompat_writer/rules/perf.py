"""Kept importable: :func:`gc_paused` lives at the bottom floor, in :mod:`icecompat_writer.perf`."""

from icecompat_writer.perf import gc_paused

__all__ = ["gc_paused"]
