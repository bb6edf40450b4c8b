"""The real `gputop` in a real terminal (tmux): what it shows, that keys work, that q exits 0.

Each test runs on its own tmux server socket so nothing leaks into a user's tmux, and reads
the screen with ``capture-pane -p``. The live test uses the fake NVML from ``tests/fakes``.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gputop.sinks.smi_xml import snapshot_to_xml
from support.apps import load, varied_stream
from support.terminal import TIMEOUT
from support.terminal import Terminal as TmuxTerminal

REPO = Path(__file__).resolve().parents[2]
CAPTURES = REPO / "snapshots"

if shutil.which("tmux") is None:  # pragma: no cover - CI installs tmux (.ci/run)
    pytest.fail("tmux is required for the end-to-end tests", pytrace=False)


class Terminal(TmuxTerminal):
    """One gputop process in a detached 120x40 tmux session."""

    def wakeups(self) -> int:
        """Voluntary context switches of every thread of the gputop process so far."""
        shell = self.pane_pid()
        children = Path(f"/proc/{shell}/task/{shell}/children").read_text().split()
        total = 0
        for task in Path(f"/proc/{children[0]}/task").iterdir():
            for line in (task / "status").read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    total += int(line.split()[1])
        return total


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[list[Terminal]]:
    opened: list[Terminal] = []
    yield opened
    for term in opened:
        term.close()


def start(
    opened: list[Terminal], tmp: Path, args: list[str], redirect: str = "", **env: str
) -> Terminal:
    term = Terminal(tmp, args, env, redirect=redirect)
    opened.append(term)
    return term


def test_replay_of_a_capture_shows_the_gpus_and_q_exits_zero(
    terminal: list[Terminal], tmp_path: Path
) -> None:
    term = start(terminal, tmp_path, ["--replay", str(CAPTURES / "rtx3090x4-procs-v12.xml")])
    screen = term.wait_for("RTX 3090", "replay", "still")
    assert "driver 550.90.07" in screen and "CUDA 12.4" in screen
    assert screen.count("NVIDIA GeForce RTX 3090") == 4, screen
    assert "8 of 8 processes" in screen and "read-only" in screen
    term.press("q")
    assert term.exit_code() == 0


def test_replay_keys_move_through_a_stream(terminal: list[Terminal], tmp_path: Path) -> None:
    stream = varied_stream(load(CAPTURES / "rtx3090x4-procs-v12.xml"), 30)
    path = tmp_path / "stream.xml"
    path.write_bytes(b"".join(snapshot_to_xml(snapshot) for snapshot in stream))
    term = start(terminal, tmp_path, ["--replay", str(path)])
    term.wait_for("/30", "playing")
    term.press("Space", "Home")
    term.wait_for("1/30", "paused", "21:34:12")
    term.press("Right", "Right")
    term.wait_for("3/30", "21:34:14")
    term.press("]", "]")
    term.wait_for("speed 4x")
    term.press("g")
    term.wait_for("Go to")
    term.press("1", "5", "Enter")
    term.wait_for("16/30", "21:34:27")
    term.press("End")
    term.wait_for("30/30", "end")
    term.press("?")
    term.wait_for("gputop keys", "Step back")
    term.press("Escape", "q")
    assert term.exit_code() == 0


def test_live_on_the_fake_nvml(terminal: list[Terminal], tmp_path: Path) -> None:
    env = {
        "PYTHONPATH": str(REPO / "tests" / "fakes"),
        "GPUTOP_FAKE_NVML": str(CAPTURES / "rtx3090x4-procs-v12.xml"),
    }
    term = start(terminal, tmp_path, ["--interval", "0.5"], **env)
    # tmux may catch the first frame half painted: wait for every panel, not just one.
    screen = term.wait_for(
        "live", "every 0.5s", *(f" {index} · NVIDIA GeForce RTX 3090" for index in range(4))
    )
    assert screen.count("NVIDIA GeForce RTX 3090") == 4, screen
    term.press("Space")
    term.wait_for("paused")
    term.press("q")
    assert term.exit_code() == 0


def test_live_mig_box_on_the_fake_nvml_shows_the_mig_tree(
    terminal: list[Terminal], tmp_path: Path
) -> None:
    env = {"PYTHONPATH": str(REPO / "tests" / "fakes"), "GPUTOP_FAKE_NVML": "h100-mig-8x7"}
    term = start(terminal, tmp_path, [], **env)
    term.wait_for("live", "GPUs 8")
    term.press("m")
    term.wait_for("GI ", "CI ")
    term.press("q")
    assert term.exit_code() == 0


def colors(screen: str, kind: str) -> list[tuple[int, int, int]]:
    """Every truecolor foreground (38) or background (48) colour in escape sequences."""
    found = re.findall(rf"(?:^|;|\[){kind};2;(\d+);(\d+);(\d+)", screen)
    return [(int(r), int(g), int(b)) for r, g, b in found]


def test_no_color_shows_only_greys(terminal: list[Terminal], tmp_path: Path) -> None:
    args = ["--replay", str(CAPTURES / "rtx3090x4-procs-v12.xml")]
    term = start(terminal, tmp_path, args, NO_COLOR="1")
    term.wait_for("RTX 3090", "still")
    screen = term.screen_with_escapes()
    painted = colors(screen, "38") + colors(screen, "48")
    assert painted, "no colours at all: the capture lost its escapes"
    assert all(r == g == b for r, g, b in painted)
    term.press("q")
    assert term.exit_code() == 0


def test_light_theme_paints_a_light_background(terminal: list[Terminal], tmp_path: Path) -> None:
    args = ["--replay", str(CAPTURES / "tesla-t4-v11.xml"), "--theme", "light"]
    term = start(terminal, tmp_path, args)
    term.wait_for("Tesla T4", "fan n/a")
    backgrounds = colors(term.screen_with_escapes(), "48")
    assert backgrounds and sum(sum(c) > 600 for c in backgrounds) > len(backgrounds) / 2
    term.press("q")
    assert term.exit_code() == 0


def test_partial_repaints_leave_what_a_full_repaint_draws(
    terminal: list[Terminal], tmp_path: Path
) -> None:
    """Panels, bars and process rows resend only changed lines and cells; the terminal must
    still end up showing exactly what a full repaint (forced by a resize) shows."""
    stream = [
        dataclasses.replace(
            snapshot,
            gpus=tuple(
                dataclasses.replace(
                    gpu,
                    processes=tuple(
                        dataclasses.replace(p, memory_used=(p.memory_used or 0) + n % 5 * 2**20)
                        for p in gpu.processes
                    ),
                )
                for gpu in snapshot.gpus
            ),
        )
        for n, snapshot in enumerate(varied_stream(load(CAPTURES / "rtx3090x4-procs-v12.xml"), 60))
    ]
    path = tmp_path / "stream.xml"
    path.write_bytes(b"".join(snapshot_to_xml(snapshot) for snapshot in stream))
    term = start(terminal, tmp_path, ["--replay", str(path)])
    term.wait_for("/60", "playing")
    term.press("]", "]")  # 4x: several ticks of moving sparklines and numbers
    term.wait_for("speed 4x")
    time.sleep(2.0)
    term.press("Space")
    term.wait_for("paused")
    time.sleep(0.5)
    partial = term.screen_with_escapes()
    term.tmux("resize-window", "-t", "t", "-x", "121", "-y", "40")
    term.wait_for("paused")
    time.sleep(0.5)
    term.tmux("resize-window", "-t", "t", "-x", "120", "-y", "40")
    # The full repaint lands when it lands (a loaded CI box): wait for it, not a fixed time.
    # Were partial repaints to leave stale cells, the screens would never match.
    deadline = time.monotonic() + TIMEOUT
    full = term.screen_with_escapes()
    while full != partial and time.monotonic() < deadline:
        time.sleep(0.2)
        full = term.screen_with_escapes()
    assert "paused" in full and "NVIDIA GeForce RTX 3090" in full
    assert partial == full
    term.press("q")
    assert term.exit_code() == 0


def test_a_still_replay_sleeps_and_keys_still_arrive(
    terminal: list[Terminal], tmp_path: Path
) -> None:
    """Nothing to redraw means no thread wakes: Textual's input thread alone polled ten
    times a second. A key (and a lone Esc) must still get through once everything sleeps."""
    term = start(terminal, tmp_path, ["--replay", str(CAPTURES / "rtx3090x4-procs-v12.xml")])
    term.wait_for("RTX 3090", "still")
    time.sleep(2.0)  # past the input thread's polling after the last key
    before = term.wakeups()
    time.sleep(3.0)
    assert term.wakeups() - before <= 5
    term.press("?")
    term.wait_for("gputop keys")
    time.sleep(2.0)
    term.press("Escape")
    deadline = time.monotonic() + TIMEOUT
    while "gputop keys" in term.screen() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "gputop keys" not in term.screen()
    term.press("q")
    assert term.exit_code() == 0


def test_with_stdout_in_a_file_the_summary_is_written_and_gputop_exits(
    terminal: list[Terminal], tmp_path: Path
) -> None:
    """`gputop > f` wrote escape codes into f and waited for ever; now it prints --once.
    (`gputop | cat` also drew a TUI sized 80x24, from the pipe, into the 120-column terminal
    and never cleared what its first frame drew right of column 80.)"""
    out = tmp_path / "out.txt"
    args = ["--replay", str(CAPTURES / "rtx3090x4-procs-v12.xml")]
    term = start(terminal, tmp_path, args, f"> {out}")
    assert term.exit_code() == 0
    text = out.read_text()
    assert "\x1b" not in text
    assert text.splitlines()[1].startswith("GPU  Name") and text.count("RTX 3090") == 4


@pytest.mark.parametrize("redirect", ["< /dev/null", "2> stderr.txt"], ids=["stdin", "stderr"])
def test_with_stdin_or_stderr_redirected_the_tui_still_runs_on_the_terminal(
    terminal: list[Terminal], tmp_path: Path, redirect: str
) -> None:
    """Keys come from /dev/tty when stdin is not the terminal (at end of file the input
    thread spun and `q` never arrived); drawing goes to stdout when stderr is a file."""
    redirect = redirect.replace("stderr.txt", str(tmp_path / "stderr.txt"))
    args = ["--replay", str(CAPTURES / "rtx3090x4-procs-v12.xml")]
    term = start(terminal, tmp_path, args, redirect)
    term.wait_for("RTX 3090", "replay", "still")
    term.press("q")
    assert term.exit_code() == 0
    if "stderr" in redirect:
        assert "\x1b" not in (tmp_path / "stderr.txt").read_text()


def test_the_tui_takes_the_size_of_its_terminal_not_a_stale_columns(
    terminal: list[Terminal], tmp_path: Path
) -> None:
    args = ["--replay", str(CAPTURES / "rtx3090x4-procs-v12.xml")]
    term = start(terminal, tmp_path, args, COLUMNS="80", LINES="24")
    screen = term.wait_for("RTX 3090", "still")
    header = screen.splitlines()[0]
    assert header.rstrip().endswith("replay · rtx3090x4-procs-v12.xml")
    assert len(header.rstrip()) == 119, header  # the right half ends at the 120th column
    term.press("q")
    assert term.exit_code() == 0


def test_a_slow_driver_start_shows_the_frame_at_once_and_q_quits(
    terminal: list[Terminal], tmp_path: Path
) -> None:
    """nvmlInit taking 30 s left the terminal blank and `q` took 26 s to act."""
    env = {
        "PYTHONPATH": str(REPO / "tests" / "fakes"),
        "GPUTOP_FAKE_NVML": str(CAPTURES / "rtx3090x4-procs-v12.xml"),
        "GPUTOP_FAKE_NVML_LATENCY": "0,nvmlInitWithFlags=30",
    }
    term = start(terminal, tmp_path, [], **env)
    waited = r"waiting for the NVIDIA driver \((\d+) s\)"
    first = re.search(waited, term.wait_for("waiting for the NVIDIA driver (", "live · every 1s"))
    time.sleep(2.0)
    later = re.search(waited, term.screen())
    assert first is not None and later is not None
    assert int(later[1]) >= int(first[1]) + 1  # it counts
    pressed = time.monotonic()
    term.press("q")
    assert term.exit_code() == 0
    assert time.monotonic() - pressed < 1.0


def test_a_slow_driver_then_a_gpu_that_is_not_there_ends_with_one_line(
    terminal: list[Terminal], tmp_path: Path
) -> None:
    env = {
        "PYTHONPATH": str(REPO / "tests" / "fakes"),
        "GPUTOP_FAKE_NVML": str(CAPTURES / "rtx3090x4-procs-v12.xml"),
        "GPUTOP_FAKE_NVML_LATENCY": "0,nvmlInitWithFlags=3",
    }
    err = tmp_path / "err.txt"
    term = start(terminal, tmp_path, ["--gpu", "9"], f"2> {err}", **env)
    term.wait_for("waiting for the NVIDIA driver (")
    assert term.exit_code() == 2
    assert err.read_text().startswith("gputop: --gpu 9: nothing matches '9'")
    assert err.read_text().count("\n") == 1


def test_a_log_on_a_full_disk_stops_alone_stays_in_the_header_and_exits_1(
    terminal: list[Terminal], tmp_path: Path
) -> None:
    """With --record and --log together the CSV stopped after its header without a word
    on screen (a 5 s toast at most), and quitting exited 0."""
    env = {
        "PYTHONPATH": str(REPO / "tests" / "fakes"),
        "GPUTOP_FAKE_NVML": str(CAPTURES / "rtx3090x4-procs-v12.xml"),
    }
    record, err = tmp_path / "box.xml", tmp_path / "err.txt"
    args = ["--interval", "0.25", "--record", str(record), "--log", "/dev/full"]
    term = start(terminal, tmp_path, args, f"2> {err}", **env)
    term.wait_for("● rec box.xml", "⚠ log stopped", "⚠ log full: No space left on device")
    time.sleep(6.0)  # past any toast: the header still says it
    term.wait_for("● rec box.xml", "⚠ log stopped", "⚠ log full: No space left on device")
    term.press("q")
    assert term.exit_code() == 1
    assert err.read_text() == "gputop: --log /dev/full: write failed: No space left on device\n"
    assert record.read_text().count("<?xml") >= 10  # the recording went on


def test_a_slow_driver_then_a_record_file_of_another_machine_ends_with_one_line(
    terminal: list[Terminal], tmp_path: Path
) -> None:
    """Whether --record continues a recording of this machine is known only once the
    driver is up: then the TUI ends with the same line a fast start gives, nothing written."""
    env = {
        "PYTHONPATH": str(REPO / "tests" / "fakes"),
        "GPUTOP_FAKE_NVML": str(CAPTURES / "rtx3090x4-procs-v12.xml"),
        "GPUTOP_FAKE_NVML_LATENCY": "0,nvmlInitWithFlags=3",
    }
    other, err = tmp_path / "t4.xml", tmp_path / "err.txt"
    other.write_bytes((CAPTURES / "tesla-t4-v11.xml").read_bytes())
    term = start(terminal, tmp_path, ["--record", str(other)], f"2> {err}", **env)
    term.wait_for("waiting for the NVIDIA driver (", "● rec t4.xml")
    assert term.exit_code() == 2
    assert err.read_text().startswith(
        f"gputop: --record {other}: records other GPUs (GPU-D37E67A5…)"
    )
    assert err.read_text().count("\n") == 1
    assert other.read_bytes() == (CAPTURES / "tesla-t4-v11.xml").read_bytes()


def replay_position(screen: str) -> tuple[int, int]:
    """(shown, of) from the replay bar's ``shown/of``."""
    found = re.search(r"(?:following|paused|playing)\s+\S+ \S+\s+(\d+)/(\d+)", screen)
    assert found is not None, screen
    return int(found[1]), int(found[2])


def writer(*args: str) -> list[str]:
    """The slow stand-in for `nvidia-smi -q -x -l 1` (tests/support/slow_writer.py)."""
    return [sys.executable, "-m", "support.slow_writer", *args]


def test_follow_shows_documents_a_writer_appends_while_the_tui_runs(
    terminal: list[Terminal], tmp_path: Path
) -> None:
    path = tmp_path / "run.xml"
    first = load(CAPTURES / "rtx3090x4-procs-v12.xml")
    path.write_bytes(b"".join(snapshot_to_xml(s) for s in varied_stream(first, 2)))
    environment = {**os.environ, "PYTHONPATH": str(REPO / "tests")}
    appending = subprocess.Popen(
        writer("--out", str(path), "--start", "2", "--count", "60", "--every", "0.3"),
        env=environment,
    )
    try:
        term = start(terminal, tmp_path, ["--replay", str(path), "--follow"])
        term.wait_for("following", "NVIDIA GeForce RTX 3090")
        # Past the length the file had at open: new documents show as they are written.
        screen = term.wait_for("following", "21:34:18")
        assert "cut off" not in screen and "warning" not in screen
        term.press("Left")
        shown, length = replay_position(term.wait_for("paused"))
        # Paused on an older document, the count of documents goes on growing.
        deadline = time.monotonic() + TIMEOUT
        later = (shown, length)
        while later[1] < length + 3 and time.monotonic() < deadline:
            time.sleep(0.2)
            later = replay_position(term.screen())
        assert later[0] == shown and later[1] >= length + 3, term.screen()
        term.press("End")
        term.wait_for("following")
        term.press("q")
        assert term.exit_code() == 0
    finally:
        appending.kill()
        appending.wait()


def test_replay_of_stdin_is_a_live_view_of_a_pipe(terminal: list[Terminal], tmp_path: Path) -> None:
    """`ssh gpu-box nvidia-smi -q -x -l 1 | gputop --replay -`, with a local writer for ssh."""
    term = Terminal(
        tmp_path,
        ["--replay", "-"],
        {"PYTHONPATH": str(REPO / "tests")},
        stdin_from=writer("--count", "60", "--every", "0.3"),
    )
    terminal.append(term)
    term.wait_for("following", "replay · stdin", "NVIDIA GeForce RTX 3090")
    term.wait_for("following", "21:34:17")
    term.press("space")  # keys come from the terminal, not from the pipe
    term.wait_for("paused")


def _feed(fifo: Path, data: bytes) -> None:
    """Write ``data`` to ``fifo`` once its reader has it open (ENXIO until then); gives up
    after TIMEOUT so a reader that never opens cannot hang the suite."""
    give_up = time.monotonic() + TIMEOUT
    while True:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as error:
            if error.errno != errno.ENXIO or time.monotonic() > give_up:
                raise
            time.sleep(0.05)
            continue
        os.set_blocking(fd, True)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        return


def test_a_fifo_with_no_writer_shows_what_it_waits_for(
    terminal: list[Terminal], tmp_path: Path
) -> None:
    fifo = tmp_path / "feed"
    os.mkfifo(fifo)
    term = start(terminal, tmp_path, ["--replay", str(fifo)])
    term.wait_for("waiting for data on a pipe", str(fifo), "q quits")
    _feed(fifo, (CAPTURES / "rtx3090x4-procs-v12.xml").read_bytes())
    term.wait_for("RTX 3090", "replay")
    term.press("q")
    assert term.exit_code() == 0


def test_q_quits_while_a_fifo_has_no_writer(terminal: list[Terminal], tmp_path: Path) -> None:
    fifo = tmp_path / "feed"
    os.mkfifo(fifo)
    term = start(terminal, tmp_path, ["--replay", str(fifo)])
    term.wait_for("waiting for data on a pipe")
    term.press("q")
    assert term.exit_code() == 0
