"""The real `gputop` in a real terminal (tmux) on the fake NVML: an XID cued while it runs
turns the GPU's panel line red, the footer offers `a`, and `a` acknowledges it."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.terminal import Terminal

REPO = Path(__file__).resolve().parents[2]
FOUR = REPO / "snapshots" / "rtx3090x4-procs-v12.xml"

if shutil.which("tmux") is None:  # pragma: no cover - CI installs tmux (.ci/run)
    pytest.fail("tmux is required for the end-to-end tests", pytrace=False)

WAIT = 30.0
_COLOUR = re.compile(r"\x1b\[([0-9;]*)m")


@pytest.fixture
def terminal() -> Iterator[list[Terminal]]:
    opened: list[Terminal] = []
    yield opened
    for term in opened:
        term.close()


def _foreground_before(screen: str, text: str) -> tuple[int, int, int] | None:
    """The 24-bit foreground colour in force where ``text`` starts on the screen."""
    for line in screen.splitlines():
        at = line.find(text)
        if at < 0:
            continue
        colour = None
        for match in _COLOUR.finditer(line[:at]):
            codes = match.group(1).split(";")
            for i in range(len(codes) - 4):
                if codes[i : i + 2] == ["38", "2"]:
                    colour = (int(codes[i + 2]), int(codes[i + 3]), int(codes[i + 4]))
        return colour
    return None


def test_an_injected_xid_shows_red_on_its_panel_until_a_acknowledges_it(
    terminal: list[Terminal], tmp_path: Path
) -> None:
    cues = tmp_path / "cues"
    cues.write_text("", encoding="utf-8")
    env = {
        "PYTHONPATH": str(REPO / "tests" / "fakes"),
        "GPUTOP_FAKE_NVML": str(FOUR),
        "GPUTOP_FAKE_NVML_CUES": str(cues),
    }
    # Each wait may take WAIT s: the cue, the watcher, a poll and a frame, on a loaded box.
    term = Terminal(tmp_path, ["--interval", "0.5"], env, size=(160, 45), timeout=WAIT)
    terminal.append(term)
    term.wait_for("live", *(f" {index} · NVIDIA GeForce RTX 3090" for index in range(4)))
    assert "XID" not in term.screen()
    with cues.open("a", encoding="utf-8") as out:
        out.write("xid 2 79\n")
    screen = term.wait_for("⚠ XID 79: GPU has fallen off the bus", "Ack alarms")
    assert screen.count("XID 79") == 1, screen  # GPU 2's panel only
    # On GPU 2's panel: below its title and in its column (GPU 3's panel is beside it).
    lines = screen.splitlines()
    row = next(i for i, line in enumerate(lines) if "XID 79" in line)
    column = lines[row].index("XID 79")
    title2 = next(i for i, line in enumerate(lines) if " 2 · NVIDIA GeForce RTX 3090" in line)
    right = lines[title2].find(" 3 · NVIDIA GeForce RTX 3090")
    assert 0 < row - title2 <= 3, screen
    assert lines[title2].index(" 2 · NVIDIA") < column < (right if right > 0 else 10_000), screen
    colour = _foreground_before(term.screen_with_escapes(), "⚠ XID 79")
    assert colour is not None
    red, green, blue = colour
    assert red > 2 * green and red > blue, colour
    term.press("a")
    term.wait_until(
        lambda shown: "XID 79" not in shown and "Ack alarms" not in shown,
        "the alarm acknowledged, the key no longer offered",
    )
    # A new XID on the same GPU raises it again.
    with cues.open("a", encoding="utf-8") as out:
        out.write("xid 2 48\n")
    term.wait_for("⚠ XID 48: double-bit ECC error")
    term.press("q")
    assert term.exit_code() == 0
