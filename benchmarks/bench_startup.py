"""Instructions to the first frame: a start-up figure that does not drift with the machine's load.

A first frame timed by the wall clock on the development VM moves by up to 1.5x within an
hour (``bench_tui.py`` gives it, with a bare Textual app timed in the same minute as the
yardstick). The number of instructions the process executes until it hands its first frame
to the terminal does not: with ``PYTHONHASHSEED`` fixed, repeated runs agree to within 0.1 %,
so a change of a few milliseconds can be seen, and seen to be real.

Counted with valgrind (callgrind, no cache simulation) on a 120x40 pseudo-terminal. Each
process ends as soon as its first frame has been written (the write that carries the GPU
names), so shutting down does not count. Rows:

* gputop replaying a bundled capture (``--replay``), as the ``gputop`` command starts;
* gputop on the fake NVML, 8 H100 x 7 MIG instances and 200 processes; the fake's Python
  stands in for the driver and counts, but building the fake's scenario (before gputop
  starts) does not: it is measured on its own and taken off;
* a bare Textual app with the widget kinds gputop uses (a Static, a DataTable, a Footer),
  the same yardstick as ``bench_tui.py``;
* Python doing nothing;
* as ``bench_tui.py --side-by-side`` times first frames (issue 17): gputop on its 4 RTX 4090
  box and the bare app, both started by ``bench_tui``'s harness (the fake NVML, its counting,
  the benchmark's modules), so that the ratio is the one its tmux first frames measure;
  and gputop's live path under the least a Textual app draws (``floor_app``, one line a GPU):
  what gputop's start costs before its own screen.

gputop runs with ``--interval 60``: its first tick is taken before the app starts whatever
the interval, and under valgrind (about 50 times slower) the default 1 s let the poller's
next ticks fall inside the counted start by chance (the live box counted 1,771-2,154 M in
three runs of the same code).

gputop's starts are counted as a second start on a machine: a start that is not counted runs
each first, to its first frame and the end of its start, writing the code cache that later
starts read (``cli/code_cache.py``: the methods of dataclasses, compiled once).

Each app is also counted to just before ``App.run``: imports, options, opening the source
and the first tick; the rest is Textual composing, styling and rendering the first frame.

With ``--stages``, only the harnessed starts are counted, to each stage of the start (the
harness, gputop's live path, the driver's start, the UI's import, the first poll, composing,
rendering): what each stage adds to gputop's first frame and to the bare app's.

Usage: ``python benchmarks/bench_startup.py [--code CHECKOUT] [--stages]`` (about three
minutes; with ``--code``, another checkout's ``tui`` is counted, e.g. main's). Needs valgrind.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import bare_app

# The counted process runs this file too: what only the parent needs is imported in the
# parent's functions, so that it does not count.

REPO = Path(__file__).resolve().parents[1]
CAPTURE = REPO / "snapshots" / "rtx3090x4-procs-v12.xml"
MARKERS = {
    "replay": "RTX 3090",
    "live": "H100",
    "bare": bare_app.MARKER,
    "harnessed-gputop": "4090",
    "harnessed-bare": bare_app.MARKER,
    "harnessed-floor": "4090",
}
"""Text the first frame of each kind holds; the write that carries it ends the count."""
TIME_LIMIT = 300.0
"""Seconds one counted start may take under valgrind (about 15-40 s here) before it is
taken for one that never draws its frame."""


# -- in the counted process ------------------------------------------------------------


def _stop_at_first_frame(marker: str, end_start: bool = False) -> None:
    """End the process once a write to the terminal carries ``marker``; with ``end_start``,
    first end gputop's start as it would a moment later (writing its code cache)."""
    from textual.drivers.linux_driver import LinuxDriver

    write = LinuxDriver.write

    def write_then_stop(self: LinuxDriver, data: str) -> None:
        write(self, data)
        if marker in data:
            self.flush()
            if end_start:
                from gputop_start import end_gputop_start

                end_gputop_start()
            os._exit(0)

    LinuxDriver.write = write_then_stop  # type: ignore[method-assign]


def _stop_before_run() -> None:
    """End the process when the app is about to run."""
    from textual.app import App

    def stop(_self: object, *_args: object, **_kwargs: object) -> None:
        os._exit(0)

    App.run = stop  # type: ignore[method-assign,assignment]


def _fake_box() -> Any:
    """The fake 8 H100 x 7 MIG, 200-process box, installed under pynvml."""
    sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "fakes")]
    from fakes.nvml_fake import FakeNvml
    from fakes.nvml_install import install
    from fakes.nvml_scenarios import h100_mig_box, varying

    fake = FakeNvml(varying(h100_mig_box(8, 7, 200), ticks=3))
    install(fake)
    return fake


def _stop_at_stage(stage: str) -> None:
    """End the process at ``stage`` of a harnessed start (``--stages``): once the harness
    has installed the fake NVML ("harness"); as gputop's live path is about to import the
    UI beside the driver's start ("modules"); once the driver alone has started, the UI
    not imported ("nvml"); once both are done ("opened"); as the first frame's rendering
    begins, everything composed, styled and laid out ("render")."""
    if stage == "harness":
        # bench_tui puts these on the path itself: they are taken off again, so that its
        # imports search the same path as in any other count.
        sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "fakes")]
        import fakes.nvml_install

        del sys.path[:2]
        install = fakes.nvml_install.install

        def install_then_stop(fake: Any) -> None:
            install(fake)
            os._exit(0)

        fakes.nvml_install.install = install_then_stop
    elif stage in ("modules", "nvml", "opened"):
        import gputop.cli.live

        opening = gputop.cli.live._open_while_the_ui_loads

        def open_then_stop(starting: Any) -> None:
            if stage == "nvml":
                starting.wait(TIME_LIMIT)
                starting.result()
            elif stage == "opened":
                opening(starting)
            os._exit(0)

        gputop.cli.live._open_while_the_ui_loads = open_then_stop
    elif stage == "render":
        from textual._compositor import Compositor

        def stop(_self: object, *_args: object, **_kwargs: object) -> None:
            os._exit(0)

        Compositor.render_full_update = stop  # type: ignore[method-assign,assignment]


STAGES = ("harness", "modules", "nvml", "opened", "run", "render", "frame")
"""Where ``--stages`` counts a harnessed start to, in order (see ``_stop_at_stage``)."""


HARNESS_BOX = {"GPUTOP_BENCH_BOX": "4x4090", "GPUTOP_BENCH_PROCESSES": "3"}
"""The box of ``bench_tui``'s first frames (its processes foreign PIDs here)."""

INTERVAL = ["--interval", "60"]


def _start_as_gputop() -> None:
    """What gputop's start does before it imports Textual, done before the stop hooks import
    it: its start begun (``cli/startup.py``: collection held, dataclasses' code served from
    its cache, as the console script does before anything of gputop's is imported) and
    asyncio imported without TLS (``cli/no_tls.py``). Without it every gputop row counted
    OpenSSL's load and Textual's import with the collector on, which gputop's own start
    does not."""
    from gputop_start import begin_gputop_start

    begin_gputop_start()
    from gputop.cli.no_tls import import_asyncio_without_tls

    import_asyncio_without_tls()


def child(kind: str, stop: str) -> int:
    """The counted process: start ``kind`` and end at ``stop`` ("setup", "run" or "frame";
    "warm": at the first frame, once gputop's start has ended and written its code cache)."""
    if kind.startswith("harnessed-"):
        import bench_tui

        os.environ.update(HARNESS_BOX, GPUTOP_BENCH_TOOL=kind.removeprefix("harnessed-"))
        if kind != "harnessed-bare":
            _start_as_gputop()
        if stop == "run":
            _stop_before_run()
        elif stop not in ("frame", "warm"):
            _stop_at_stage(stop)
        else:
            _stop_at_first_frame(MARKERS[kind], end_start=stop == "warm")
        return bench_tui.child(INTERVAL)
    if kind == "live":
        _fake_box()
    if stop == "setup":
        os._exit(0)
    if kind != "bare":
        _start_as_gputop()
    if stop == "run":
        _stop_before_run()
    else:
        _stop_at_first_frame(MARKERS[kind], end_start=stop == "warm")
    if kind == "bare":
        bare_app.run()
        return 1
    try:
        from gputop.cli.entry import run
    except ImportError:  # a checkout from before cli/entry.py (--code)
        from gputop.cli.main import run  # type: ignore[attr-defined,no-redef]

    sys.argv = ["gputop", *INTERVAL, *(["--replay", str(CAPTURE)] if kind == "replay" else [])]
    run()
    return 1  # run() exits; reaching here means no frame was drawn


# -- the parent ------------------------------------------------------------------------


def count_instructions(argv: Sequence[str], code: Path = REPO, counted: bool = True) -> int:
    """Instructions ``argv`` executes under callgrind, on a 120x40 pseudo-terminal, with
    the gputop of the checkout ``code`` (not ``counted``: run as it is, 0 returned)."""
    import re
    import select
    import tempfile
    import time

    from bench_tui import start_on_pty

    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    # As installed: pip leaves compiled bytecode, so no start compiles gputop's modules.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(
        TERM="xterm-256color",
        COLORTERM="truecolor",
        PYTHONPATH=str(code / "tui"),
        PYTHONHASHSEED="0",
    )
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "callgrind.log"
        valgrind = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
        command = [*valgrind, f"--log-file={log}", *argv] if counted else list(argv)
        master, process, _ = start_on_pty(command, env)
        tail = b""
        deadline = time.monotonic() + TIME_LIMIT
        try:
            # Read what it writes, or it blocks once the terminal's buffer is full.
            while time.monotonic() < deadline:
                if not select.select([master], [], [], 1.0)[0]:
                    continue
                try:
                    data = os.read(master, 1 << 16)
                except OSError:
                    break
                if not data:
                    break
                tail = (tail + data)[-2000:]
        finally:
            os.close(master)
            if process.poll() is None:
                process.kill()
            status = process.wait()
        if not counted:
            if status != 0:
                raise RuntimeError(f"{' '.join(argv)} ended with {status}: {tail!r}")
            return 0
        found = re.search(r"Collected : (\d+)", log.read_text())
        if status != 0 or found is None:
            # A frame that never came (the app waits for keys) or a start that failed.
            raise RuntimeError(
                f"{' '.join(argv)} ended with {status} and no count; its last output:\n"
                f"{tail.decode(errors='replace')}\n{log.read_text()}"
            )
        return int(found.group(1))


def main() -> int:
    """Count and print."""
    import argparse
    import compileall
    import shutil

    from bench_tui import COLUMNS, ROWS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--code", type=Path, default=REPO, help="the checkout to count")
    parser.add_argument(
        "--stages",
        action="store_true",
        help="only the harnessed starts, counted to each stage of the start (issue 17)",
    )
    options = parser.parse_args()
    code = options.code.resolve()
    if shutil.which("valgrind") is None:
        print("valgrind is required", file=sys.stderr)
        return 2
    for folder in (code / "tui" / "gputop", REPO / "tests" / "fakes", REPO / "benchmarks"):
        compileall.compile_dir(folder, quiet=1)
    me = [sys.executable, str(Path(__file__).resolve()), "child"]
    # As gputop's second start on a machine: its dataclasses' code read from the cache its
    # first start wrote (cli/code_cache.py), which a counted start, ended at its first
    # frame, never writes.
    for kind in ("replay", "live", "harnessed-gputop", "harnessed-floor"):
        count_instructions([*me, kind, "warm"], code, counted=False)
    if options.stages:
        return print_stages(me, code)
    counts: dict[tuple[str, str], int] = {}
    for kind, stop in [
        ("bare", "run"),
        ("bare", "frame"),
        ("replay", "run"),
        ("replay", "frame"),
        ("live", "setup"),
        ("live", "run"),
        ("live", "frame"),
        ("harnessed-bare", "run"),
        ("harnessed-bare", "frame"),
        ("harnessed-gputop", "run"),
        ("harnessed-gputop", "frame"),
        ("harnessed-floor", "run"),
        ("harnessed-floor", "frame"),
    ]:
        counts[kind, stop] = count_instructions([*me, kind, stop], code)
    nothing = count_instructions([sys.executable, "-c", "pass"])
    setup = counts["live", "setup"] - nothing

    def mega(value: float) -> str:
        return f"{value / 1e6:,.0f} M"

    bare_frame = counts["bare", "frame"]
    print(
        f"instructions to the first frame, {COLUMNS}x{ROWS} (callgrind, PYTHONHASHSEED=0), "
        f"gputop of {code}"
    )
    print(f"  python doing nothing: {mega(nothing)}")
    rows: list[tuple[str, Callable[[str], int]]] = [
        ("bare Textual app (yardstick)", lambda stop: counts["bare", stop]),
        (f"gputop --replay {CAPTURE.name}", lambda stop: counts["replay", stop]),
        (
            "gputop live, fake 8x H100 x 7 MIG, 200 processes (less the fake's setup)",
            lambda stop: counts["live", stop] - setup,
        ),
    ]
    for name, count in rows:
        frame, before_run = count("frame"), count("run")
        print(
            f"  {name}: {mega(frame)} ({frame / bare_frame:.2f}x the bare app); "
            f"before App.run {mega(before_run)}, App.run to the frame {mega(frame - before_run)}"
        )
    print(f"  (the fake's scenario, built before gputop starts and taken off: {mega(setup)})")
    harnessed = counts["harnessed-bare", "frame"]
    print("  started by bench_tui's harness, 4x RTX 4090 (as its tmux first frames):")
    for kind in ("harnessed-bare", "harnessed-gputop", "harnessed-floor"):
        frame, before_run = counts[kind, "frame"], counts[kind, "run"]
        print(
            f"    {kind.removeprefix('harnessed-')}: {mega(frame)} ({frame / harnessed:.2f}x "
            f"the bare app); before App.run {mega(before_run)}, "
            f"App.run to the frame {mega(frame - before_run)}"
        )
    return 0


def print_stages(me: list[str], code: Path) -> int:
    """Count the harnessed gputop and bare app to each stage; print what each stage adds."""
    gputop = {stage: count_instructions([*me, "harnessed-gputop", stage], code) for stage in STAGES}
    bare = {
        stage: count_instructions([*me, "harnessed-bare", stage], code)
        for stage in ("harness", "run", "render", "frame")
    }
    rows = [
        ("harness (fake NVML, pynvml, gputop's model, benchmark modules)", "harness", "harness"),
        ("gputop.cli.main, options, the live path's modules", "modules", None),
        ("the driver's start (the fake NVML's Python), on its thread", "nvml", None),
        ("Textual and the UI's modules (the bare app: Textual, its widgets)", "opened", "run"),
        ("first poll, pipeline, poll loop, app", "run", None),
        ("App.run: compose, style, lay out", "render", "render"),
        ("the first frame rendered and written", "frame", "frame"),
    ]
    print(f"instructions by stage, harnessed 4x RTX 4090 start, gputop of {code}")
    print("  stage: gputop / bare app")
    last_gputop, last_bare = 0, 0
    for name, stage, bare_stage in rows:
        # The UI's import follows the driver's start here, which ran beside it.
        added = gputop[stage] - (gputop["nvml"] if stage == "opened" else last_gputop)
        if stage == "nvml":
            added = gputop["nvml"] - gputop["modules"]
        text = f"  {name}: {added / 1e6:,.0f} M"
        if bare_stage is not None:
            text += f" / {(bare[bare_stage] - last_bare) / 1e6:,.0f} M"
            last_bare = bare[bare_stage]
        print(text)
        if stage != "nvml":
            last_gputop = gputop[stage]
    print(
        f"  total: {gputop['frame'] / 1e6:,.0f} M / {bare['frame'] / 1e6:,.0f} M "
        f"({gputop['frame'] / bare['frame']:.2f}x)"
    )
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["child"]:
        sys.exit(child(sys.argv[2], sys.argv[3]))
    sys.exit(main())
