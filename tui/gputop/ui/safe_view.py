"""What the TUI is handed of the outside world: every string as ``terminal_safe`` writes it.

GPU and process names, command lines, users, pod, container and job names, host names,
labels, error texts and file names come from others; drawn raw, a control character in one
is an instruction to the terminal (and to the browser's terminal under ``serve``). The
model keeps the true strings (``--json`` and the logs write them exact). The TUI is handed,
at the doors every tick and fleet refresh come in by (``GputopApp``, ``FleetApp``), a copy
in which every string is made safe, so that every widget, those to come too, draws safe
text without each remembering to. Nothing to escape (nearly always): the same object is
handed on, so the screens' identity checks and caches hold; a changed value is remembered
by the object it came from, so a process that keeps its hostile name is one object too.

Markup is another matter: widgets give these strings to Textual as plain text (``Text``,
``Content``), never as markup, so a process named ``[bold red]`` shows as itself.
"""

from __future__ import annotations

import dataclasses
from functools import cache
from typing import Any, TypeVar

from gputop.model import Snapshot
from gputop.model.safe_text import terminal_safe

_Value = TypeVar("_Value")

_PLAIN = frozenset(
    {"int", "float", "bool", "datetime", "Reason", "Unavailable", "Metric", "InView"}
    | {f"{name}|None" for name in ("int", "float", "bool", "datetime", "Reason")}
)
"""Field types that hold no outside text (``Unavailable``: gputop's own field paths)."""

_KEYS = frozenset({("NodeView", "host")})
"""Strings the TUI hands back as keys (a node is opened by its host): kept true, and made
safe where they are drawn."""


_MOST_CHANGED = 4096
"""Changed values remembered (hostile ones only: a few processes, their owners)."""


@cache
def _text_fields(cls: type) -> tuple[str, ...]:
    """The fields of dataclass ``cls`` that may hold text, by their annotations (none for
    any other class)."""
    if not dataclasses.is_dataclass(cls):
        return ()
    return tuple(
        field.name
        for field in dataclasses.fields(cls)
        if str(field.type).replace(" ", "") not in _PLAIN
        and (cls.__name__, field.name) not in _KEYS
    )


class SafeView:
    """Makes values safe to draw, remembering what it changed (see the module)."""

    def __init__(self) -> None:
        """Nothing remembered yet."""
        self._now: dict[int, tuple[object, object]] = {}
        """id -> (snapshot, its safe copy), for every snapshot of this call (a tick's window
        holds the last minute's again and again: each is looked at once). Only this call's
        and the last call's are kept: no more snapshots than two ticks hold."""
        self._before: dict[int, tuple[object, object]] = {}
        self._changed: dict[int, tuple[object, object]] = {}
        """id -> (value, its safe copy), for the other values that changed (a process that
        keeps its hostile name keeps one copy)."""

    def __call__(self, value: _Value) -> _Value:
        """``value`` with every string in it made safe: the same object when none needed it."""
        self._before, self._now = self._now, {}
        made: _Value = self._safe(value)
        return made

    def _safe(self, value: Any) -> Any:
        kind = value.__class__
        if kind is str:
            # isprintable() is False for everything terminal_safe escapes (and a few more).
            return value if value.isprintable() else terminal_safe(value)
        if kind is tuple:
            items = tuple(map(self._safe, value))
            return value if all(map(_same, items, value)) else items
        names = _text_fields(kind)
        if not names:
            return value
        key = id(value)
        known = self._now.get(key) or self._before.get(key) or self._changed.get(key)
        if known is not None and known[0] is value:
            if kind is Snapshot:
                self._now[key] = known
            return known[1]
        changes = {}
        for name in names:
            item = getattr(value, name)
            made = self._safe(item)
            if made is not item:
                changes[name] = made
        safe = dataclasses.replace(value, **changes) if changes else value
        # Each value is kept with its copy: its id is not reused while remembered.
        if kind is Snapshot:
            self._now[key] = (value, safe)
        elif changes:
            if len(self._changed) >= _MOST_CHANGED:
                self._changed.clear()
            self._changed[key] = (value, safe)
        return safe


def _same(a: object, b: object) -> bool:
    return a is b
