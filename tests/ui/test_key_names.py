"""Key names without ``unicodedata`` (issue 17, RSS): each lookup of a key's Unicode name reads
pages of ``unicodedata``'s name tables into memory (0.75 MiB at gputop's start), so the names
Textual looks up for gputop's keys are answered from ``ui/key_names.py``, with the same
answers."""

from __future__ import annotations

import importlib
import pkgutil
import string
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual import keys as textual_keys
from textual.binding import Binding, BindingsMap
from textual.dom import DOMNode

import gputop.ui
from gputop.cli.tui import tui_pipeline
from gputop.pipeline.feed import LiveFeed
from gputop.pipeline.loop import ManualLoop
from gputop.ui.app import GputopApp
from gputop.ui.key_names import NAMES, NOT_NAMES, KeyNames
from support.apps import FIXED_SETTINGS, CyclingSource, load

CAPTURE = Path(__file__).resolve().parents[2] / "snapshots" / "rtx3090x4-procs-v12.xml"


def _forget_key_names() -> None:
    """Textual keeps what it looked up (``lru_cache``): a test that counts lookups starts
    with nothing kept, whatever ran before it in this process."""
    textual_keys.format_key.cache_clear()
    textual_keys.key_to_character.cache_clear()


def test_each_name_in_the_table_is_unicodes() -> None:
    for name, character in NAMES.items():
        assert unicodedata.lookup(name) == character
        assert KeyNames().lookup(name.lower()) == unicodedata.lookup(name.lower())
    for name in NOT_NAMES:
        with pytest.raises(KeyError):
            unicodedata.lookup(name)
        with pytest.raises(KeyError):
            KeyNames().lookup(name.lower())
    # A one-character name is no character's name.
    for character in string.printable:
        with pytest.raises(KeyError):
            unicodedata.lookup(character)
        with pytest.raises(KeyError):
            KeyNames().lookup(character)
    # Anything else is unicodedata's to answer.
    assert KeyNames().lookup("greek small letter alpha") == "\N{GREEK SMALL LETTER ALPHA}"
    assert KeyNames().name("/") == "SOLIDUS"


def _gputop_bindings() -> Iterator[Binding]:
    """Every binding of every screen, widget and app of gputop's UI."""
    for module in pkgutil.walk_packages(gputop.ui.__path__, "gputop.ui."):
        for value in vars(importlib.import_module(module.name)).values():
            if (
                isinstance(value, type)
                and issubclass(value, DOMNode)
                and value.__module__ == module.name
            ):
                for bindings in BindingsMap(value.BINDINGS).key_to_bindings.values():
                    yield from bindings


def test_gputops_keys_are_named_as_textual_names_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """The footer's key (``format_key``) and the character a key types
    (``key_to_character``) are the same with the table as with ``unicodedata``."""
    keys = sorted({binding.key for binding in _gputop_bindings()})
    assert {"slash", "question_mark", "tab", "space", "escape", "left", "q", "K"} <= set(keys)

    def names(where: object) -> list[tuple[str, str | None]]:
        monkeypatch.setattr(textual_keys, "unicodedata", where)
        _forget_key_names()
        return [(textual_keys.format_key(k), textual_keys.key_to_character(k)) for k in keys]

    mine = names(KeyNames())
    textuals = names(unicodedata)
    _forget_key_names()
    assert mine == textuals
    assert ("/", None) in mine  # slash: shown as /, and Textual types no character for it


@pytest.mark.patch("key_names")
async def test_a_start_looks_no_key_name_up_in_unicodedata(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Up, footer drawn, focus moved through the areas (each move asks which character every
    bound key types): ``unicodedata`` is never asked for a name."""
    looked_up: list[str] = []
    lookup = unicodedata.lookup

    def spy(name: str) -> str:
        looked_up.append(name)
        return lookup(name)

    monkeypatch.setattr(unicodedata, "lookup", spy)
    _forget_key_names()
    snapshot = load(CAPTURE)
    pipeline = tui_pipeline(LiveFeed(CyclingSource([snapshot])))
    app = GputopApp(ManualLoop(pipeline), FIXED_SETTINGS, first_tick=pipeline.start())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        for _ in range(3):
            # Not ``pilot.press``: the pilot looks its keys up in unicodedata itself.
            app.screen.focus_next()
            await pilot.pause()
        footer = "".join(key.key_display for key in app.screen.query("FooterKey"))  # type: ignore[attr-defined]
        assert "q" in footer and "?" in footer
    assert looked_up == []
