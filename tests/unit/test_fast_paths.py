"""Speed hacks earn their place (issue 12, item 6): each fast path against its plain reference.

Figures for each are in benchmarks/README.md.
"""

from __future__ import annotations

import ast
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import gputop
from gputop.model import Reason
from gputop.sources.smi import values

PACKAGE = Path(gputop.__file__).resolve().parent
SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"


def test_only_the_command_line_touches_the_garbage_collector() -> None:
    touching = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import) and any(a.name == "gc" for a in node.names):
                touching.append(path.relative_to(PACKAGE).as_posix())
    assert touching, "the command line tunes the collector (cli/startup.py)"
    assert [path for path in touching if not path.startswith("cli/")] == []


def _texts() -> list[str | None]:
    """Every element text of every bundled capture, and the odd ones a memo must not spoil."""
    found: set[str] = set()
    for capture in sorted(SNAPSHOTS.glob("*.xml")):
        for element in ET.parse(capture).iter():
            if element.text is not None:
                found.add(element.text)
    return [None, "", " ", "x" * 65, "1e400 W", "-0 %", *sorted(found)]


MEMOS: dict[str, tuple[dict[str | None, Any], Callable[[str | None], object]]] = {
    "text_of": (values.text_of, values._text_of),
    "flag_of": (values.flag_of, values._flag_of),
    "watts_of": (values.watts_of, values.WATTS),
}


@pytest.mark.parametrize("name", sorted(MEMOS))
def test_a_memo_answers_as_its_plain_conversion(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    memo, plain = MEMOS[name]
    texts = _texts()
    # A small memo, so that it fills and is emptied several times over the captures' texts.
    monkeypatch.setattr(values, "_MEMO_ENTRIES", 50)
    memo.clear()
    for _ in range(2):  # the first pass converts, the second answers from the memo
        for text in texts:
            assert memo[text] == plain(text), text


def test_every_reader_answers_as_the_plain_conversion_of_its_text() -> None:
    readers: dict[values.Reader[Any], Callable[[str | None], object]] = {
        values.percent: values.PERCENT,
        values.fan_percent: values.FAN_PERCENT,
        values.celsius: values.CELSIUS,
        values.watts: values.WATTS,
        values.megahertz: values.MEGAHERTZ,
        values.size: values.BYTES,
        values.whole_count: values.COUNT,
        values.text: values._text_of,
        values.pstate: values._pstate_of,
        values.flag: values._flag_of,
    }
    for _ in range(2):
        for text in _texts():
            node = ET.Element("v")
            node.text = text
            for read, plain in readers.items():
                missing: values.Missing = []
                expected = plain(text)
                got = read(node, "p", missing)
                if isinstance(expected, Reason):
                    assert got is None and missing == [("p", expected)], (text, plain)
                else:
                    assert got == expected and type(got) is type(expected), (text, plain)


@pytest.mark.parametrize(
    "name",
    ["rtx3090x4-procs-v12.xml", "csv-h100-mig-590.csv", "h100-mig-590-q.txt", "l40s-595-dmon.txt"],
)
def test_recordings_keep_no_snapshot_cache(name: str) -> None:
    # An 8-document cache saved 15 of 522 parses in a replay session driven as the TUI
    # drives it (benchmarks/bench_replay_keys.py): it went, and every read parses afresh.
    from gputop.sources.recordings.formats import open_recording

    with open_recording(SNAPSHOTS / name) as recording:
        first = recording.snapshot(0)
        for index in range(1, len(recording)):
            recording.snapshot(index)
        again = recording.snapshot(0)
    assert again == first
    assert again is not first
