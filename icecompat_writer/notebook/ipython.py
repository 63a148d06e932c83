"""The IPython side: ``%load_ext icecompat_writer``, the ``%icecompat`` magics and the HTML views.

Loading the extension enables the helper (:func:`~icecompat_writer.notebook.core.enable`), registers

* ``%icecompat`` -- show the state; ``%icecompat PROFILE`` switches the profile (``v3``,
  ``writer-v1``, ``writer-v3``); ``%icecompat off`` / ``%icecompat on`` disable and re-enable;
* ``%icecompat_check PATH [--profile P] [--files all|none|sample:N]`` -- the Spark-free checker's
  :class:`~icecompat_writer.checking.check.Report` of a table (shown as HTML);

HTML formatters for ``WriteResult``, ``CompatViolation`` and ``Violation`` (``Report`` and the status
render themselves; IPython's plain text of a result is its one-line summary), and a hook that shows
the violations of a refused write as a table below its traceback. Unloading undoes all of it,
including the ``df.write`` routing.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any

from icecompat_writer.errors import CompatViolation, Violation
from icecompat_writer.notebook import core, display

__all__ = ["load", "unload"]

_MAGICS = ("icecompat", "icecompat_check")
# what this module put into IPython, to take exactly that out again
_REGISTERED: dict[str, Any] = {}


def _usage_error(message: str) -> Exception:
    from IPython.core.error import UsageError

    return UsageError(message)


def icecompat_magic(line: str) -> core.NotebookStatus:
    """``%icecompat [PROFILE | on [PROFILE] | off | status]``: the notebook helper's state."""
    words = shlex.split(line)
    if not words or words == ["status"]:
        return core.status()
    head, rest = words[0].lower(), words[1:]
    if head in {"off", "disable"} and not rest:
        return core.disable()
    if head in {"on", "enable"} and len(rest) <= 1:
        return core.enable(profile=rest[0] if rest else None)
    if len(words) == 1:
        return core.enable(profile=words[0])
    raise _usage_error("usage: %icecompat [PROFILE | on [PROFILE] | off | status]")


def icecompat_check_magic(line: str) -> Any:
    """``%icecompat_check PATH [--profile P] [--files all|none|sample:N]``: a table's Report."""
    from icecompat_writer.checking.check import check_table

    words = shlex.split(line)
    path: str | None = None
    options: dict[str, str] = {}
    i = 0
    while i < len(words):
        word = words[i]
        key, _, value = word.partition("=")
        if key in {"--profile", "--files"}:
            if not value:
                if i + 1 >= len(words):
                    raise _usage_error(f"{key} needs a value")
                i += 1
                value = words[i]
            options[key[2:]] = value
        elif path is None and not word.startswith("--"):
            path = word
        else:
            raise _usage_error(f"unexpected argument {word!r}")
        i += 1
    if path is None:
        raise _usage_error("usage: %icecompat_check PATH [--profile P] [--files all|none|sample:N]")
    return check_table(path, options.get("profile"), files=options.get("files", "all"))


def _after_cell(result: Any) -> None:
    """Below the traceback of a refused write: its violations as a table."""
    err = getattr(result, "error_in_exec", None)
    if isinstance(err, CompatViolation):
        from IPython.display import display as show

        show(
            {
                "text/html": display.compat_violation_html(err),
                "text/plain": f"refused by rule(s) {', '.join(err.rules)}",
            },
            raw=True,
        )


def _pretty_str(obj: Any, printer: Any, cycle: bool) -> None:
    """IPython's plain-text view: the object's own summary (``str``) instead of the dataclass repr."""
    printer.text(str(obj))


def _formatters() -> list[tuple[str, type, Callable[..., Any]]]:
    from icecompat_writer.checking.check import Report
    from icecompat_writer.writing.api import WriteResult

    return [
        ("text/plain", Report, _pretty_str),
        ("text/html", WriteResult, display.write_result_html),
        ("text/plain", WriteResult, _pretty_str),
        ("text/html", CompatViolation, display.compat_violation_html),
        ("text/plain", CompatViolation, _pretty_str),
        ("text/html", Violation, display.violation_html),
    ]


def load(ipython: Any) -> None:
    """What ``%load_ext icecompat_writer`` does (enabling first: if that fails, nothing is registered)."""
    from IPython.display import display as show

    status = core.enable()
    for name, func in (("icecompat", icecompat_magic), ("icecompat_check", icecompat_check_magic)):
        ipython.register_magic_function(func, magic_kind="line", magic_name=name)
    formatters = ipython.display_formatter.formatters
    _REGISTERED["formatters"] = [
        (mime, typ, formatters[mime].for_type(typ, func)) for mime, typ, func in _formatters()
    ]
    ipython.events.register("post_run_cell", _after_cell)
    _REGISTERED["hook"] = _after_cell
    show(status)


def unload(ipython: Any) -> None:
    """What ``%unload_ext icecompat_writer`` does: routing, magics, formatters and hook go away."""
    core.disable()
    line_magics = ipython.magics_manager.magics["line"]
    for name in _MAGICS:
        line_magics.pop(name, None)
    formatters = ipython.display_formatter.formatters
    for mime, typ, previous in _REGISTERED.pop("formatters", []):
        if previous is None:
            formatters[mime].pop(typ, None)
        else:
            formatters[mime].for_type(typ, previous)
    hook = _REGISTERED.pop("hook", None)
    if hook is not None:
        try:
            ipython.events.unregister("post_run_cell", hook)
        except ValueError:
            pass
