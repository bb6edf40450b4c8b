"""The one switch of gputop's patches of Textual and textual-serve, and of its reach into
plotext (``patches.py``): ``GPUTOP_STOCK_TEXTUAL`` and the check of the installed release."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
import textual._compositor
import textual_serve
from textual._compositor import ChopsUpdate, Compositor
from textual.drivers.linux_driver import LinuxDriver

from gputop import patches, plotext_compat
from gputop.cli import code_cache
from gputop.patches import STOCK_VARIABLE, Patch, enabled, series, stock_names
from gputop.ui import compat
from gputop.web import serve_compat
from support.fleet import demo_source, fleet_app

SWITCHED = compat.PATCHES + serve_compat.PATCHES
"""The patches GPUTOP_STOCK_TEXTUAL switches."""
EVERY_PATCH = SWITCHED + plotext_compat.PATCHES


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(STOCK_VARIABLE, raising=False)
    monkeypatch.setattr(patches, "_said", set())
    # What a patch reaches for is looked up once a process; tests here take names away, so
    # nothing looked up while one was gone may outlive the test.
    patches.missing_name.cache_clear()
    yield
    patches.missing_name.cache_clear()


@pytest.mark.parametrize(
    ("value", "off"),
    [
        ("", frozenset()),
        ("0", frozenset()),
        ("1", None),
        ("all", None),
        ("cell_cache", frozenset({"cell_cache"})),
        (" cell_cache , quiet_driver ", frozenset({"cell_cache", "quiet_driver"})),
    ],
)
def test_the_variable_names_the_patches_it_turns_off(
    value: str, off: frozenset[str] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STOCK_VARIABLE, value)
    assert stock_names() == off


def test_every_patch_says_what_it_fixes_its_gain_and_its_release() -> None:
    names = [patch.name for patch in EVERY_PATCH]
    assert len(set(names)) == len(names)
    for patch in EVERY_PATCH:
        assert patch.fixes and patch.gain
        assert patch.package in ("textual", "textual-serve", "plotext")
        assert series(patches.installed_version(patch.package)) == patch.written_for


def test_every_patch_applies_by_default_and_none_but_the_security_fixes_when_stock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert all(enabled(patch) for patch in SWITCHED)
    monkeypatch.setenv(STOCK_VARIABLE, "1")
    kept = [patch.name for patch in SWITCHED if enabled(patch)]
    assert kept == ["viewer_end"]
    monkeypatch.setenv(STOCK_VARIABLE, "viewer_end,cell_cache")
    off = [patch.name for patch in SWITCHED if not enabled(patch)]
    assert off == ["cell_cache", "viewer_end"]


@pytest.mark.parametrize("value", ["1", "own_figure"])
def test_the_stock_switch_leaves_the_charts_their_figure(
    value: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """There is no stock plotext figure: charts asked for are drawn whatever the switch."""
    monkeypatch.setenv(STOCK_VARIABLE, value)
    assert plotext_compat.new_figure() is not None
    assert capsys.readouterr().err == ""


def test_a_name_the_variable_does_not_switch_is_said_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A misspelt name would have a benchmark measure a run against itself, silently."""
    monkeypatch.setenv(STOCK_VARIABLE, "cell_cache,key_names,dirty_line")
    assert stock_names() == frozenset({"cell_cache", "key_names", "dirty_line"})
    assert stock_names() == frozenset({"cell_cache", "key_names", "dirty_line"})
    assert enabled(compat.DIRTY_LINES)
    monkeypatch.setenv(STOCK_VARIABLE, "table_caches,dataclass_code,page_session")
    assert stock_names() == frozenset({"table_caches", "dataclass_code", "page_session"})
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(
        f"gputop: {STOCK_VARIABLE} names what it does not switch: dirty_line, key_names "
        "(it switches cell_cache, changed_spans, dataclass_code, "
    )


def test_a_name_the_variable_does_not_switch_is_said_safely(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The variable comes from outside: what it names is made safe for the terminal."""
    monkeypatch.setenv(STOCK_VARIABLE, "cell_cache,\x1b]0;owned\x07x")
    assert stock_names() == frozenset({"cell_cache", "\x1b]0;owned\x07x"})
    said = capsys.readouterr().err
    assert "\x1b" not in said and "\x07" not in said
    assert said.startswith(f"gputop: {STOCK_VARIABLE} names what it does not switch: ")


def test_a_name_said_for_the_variable_does_not_silence_that_patch(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``own_figure`` is a patch the variable does not switch: said once for the variable,
    it is still said when plotext's release turns the charts off."""
    monkeypatch.setenv(STOCK_VARIABLE, "own_figure")
    assert stock_names() == frozenset({"own_figure"})
    monkeypatch.setattr(patches, "installed_version", lambda package: "9.9.0")
    assert plotext_compat.new_figure() is None
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2
    assert lines[1] == (
        "gputop: plotext 9.9.0 is not 5.3, which gputop's own_figure patch was written for: "
        "charts left out"
    )


def test_the_names_the_variable_switches_are_the_patches_and_the_code_cache() -> None:
    assert {patch.name for patch in SWITCHED} | {code_cache.NAME} == patches.SWITCHED_NAMES


def test_another_release_turns_a_patch_off_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(patches, "installed_version", lambda package: "9.0.1")
    patch = Patch("probe", fixes="x", gain="y", package="textual", written_for="8.2")
    assert not enabled(patch)
    assert not enabled(patch)
    assert not enabled(compat.QUIET_DRIVER)
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "gputop: textual 9.0.1 is not 8.2, which gputop's probe patch was written for: "
        "running without it",
        "gputop: textual 9.0.1 is not 8.2, which gputop's quiet_driver patch was written for: "
        "running without it",
    ]
    assert compat.driver_class(LinuxDriver) is LinuxDriver


def test_a_release_without_a_private_name_turns_its_patch_off_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A release of the series a patch was written for may still move what it reaches for
    (``Patch.needs``): that patch is off, said once; the others apply."""
    installed = patches.installed_version("textual")
    monkeypatch.delattr(textual._compositor, "ChopsUpdate")
    probe = Patch(
        "probe",
        fixes="x",
        gain="y",
        package="textual",
        written_for=series(installed),
        needs=("textual.widgets:DataTable", "textual._no_such_module:Thing"),
    )
    assert not enabled(compat.CHANGED_SPANS)
    assert not enabled(compat.CHANGED_SPANS)
    assert not enabled(probe)
    assert not enabled(compat.DIRTY_LINES)
    assert enabled(compat.QUIET_DRIVER)
    assert capsys.readouterr().err.splitlines() == [
        f"gputop: textual {installed} has no textual._compositor:ChopsUpdate.render_segments, "
        "which gputop's changed_spans patch reaches for: running without it",
        f"gputop: textual {installed} has no textual._no_such_module:Thing, "
        "which gputop's probe patch reaches for: running without it",
        f"gputop: textual {installed} has no textual._compositor:ChopsUpdate, "
        "which gputop's dirty_lines patch reaches for: running without it",
    ]


def test_every_patch_of_textual_names_what_it_reaches_for_and_finds_it() -> None:
    # table_caches reaches only for attributes a DataTable sets on itself, which no class
    # holds to be checked (its own tests draw tables with it on).
    assert [patch.name for patch in compat.PATCHES if not patch.needs] == ["table_caches"]
    assert {patch.name: patches.missing_name(patch) for patch in EVERY_PATCH} == dict.fromkeys(
        patch.name for patch in EVERY_PATCH
    )


def test_compat_imports_no_private_module_before_a_patch_applies() -> None:
    """Its module-level imports (but those for type checking) are Textual's public ones, so
    that a release that moved a private module still imports it and runs without the
    patches that need it."""
    tree = ast.parse(Path(compat.__file__).read_text())
    imported = [node.module or "" for node in tree.body if isinstance(node, ast.ImportFrom)] + [
        alias.name for node in tree.body if isinstance(node, ast.Import) for alias in node.names
    ]
    private = [
        name
        for name in imported
        if name != "__future__" and any(part.startswith("_") for part in name.split("."))
    ]
    assert "textual.widgets" in imported
    assert private == []


def test_series_is_major_and_minor() -> None:
    assert series("8.2.8") == "8.2"
    assert series("10.0.0rc1") == "10.0"


def test_stock_textual_keeps_its_own_repaints_and_driver(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Textual's classes are patched process-wide: each is set to a stand-in first, so what
    ``apply_patches`` does (or not) shows whatever an earlier test left there."""

    def stand_in(self: object) -> None:
        return None

    monkeypatch.setattr(ChopsUpdate, "render_segments", stand_in)
    monkeypatch.setattr(Compositor, "render_partial_update", stand_in)
    monkeypatch.setenv(STOCK_VARIABLE, "1")
    compat.apply_patches()
    assert vars(ChopsUpdate)["render_segments"] is stand_in
    assert vars(Compositor)["render_partial_update"] is stand_in
    assert compat.driver_class(LinuxDriver) is LinuxDriver

    monkeypatch.setenv(STOCK_VARIABLE, "dirty_lines")
    compat.apply_patches()
    assert vars(ChopsUpdate)["render_segments"] is not stand_in
    assert vars(Compositor)["render_partial_update"] is stand_in
    assert compat.driver_class(LinuxDriver) is compat.QuietLinuxDriver


def test_the_fleet_view_repaints_as_the_single_box_view_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``gputop cluster`` gets the same repaint patches as ``gputop`` (it used to run
    Textual's own, so which ran in a test process depended on which app started first)."""

    def stand_in(self: object) -> None:
        return None

    monkeypatch.delenv(STOCK_VARIABLE, raising=False)
    monkeypatch.setattr(ChopsUpdate, "render_segments", stand_in)
    monkeypatch.setattr(Compositor, "render_partial_update", stand_in)
    app = fleet_app(demo_source())
    assert app.get_driver_class() is not None
    assert vars(ChopsUpdate)["render_segments"] is not stand_in
    assert vars(Compositor)["render_partial_update"] is not stand_in


def test_stock_textual_serve_serves_its_own_script(monkeypatch: pytest.MonkeyPatch) -> None:
    script = Path(textual_serve.__file__).parent / "static" / "js" / "textual.js"
    original = script.read_text(encoding="utf-8")
    assert "window.textualSession=t;" in (serve_compat.page_script(original) or "")
    monkeypatch.setenv(STOCK_VARIABLE, "1")
    assert serve_compat.page_script(original) is None
