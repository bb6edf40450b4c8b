"""The live TUI loads only what it draws with: every module it imports costs memory for as
long as it runs (issue 17: RSS at most 1.5x nvitop's) and time before the first frame.

The real ``gputop`` command starts on the fake NVML, on a pseudo-terminal (so the TUI is
chosen, not ``--once``), and stops where the app would start running: what is loaded then
is everything the live TUI brought in. Readers of recordings, the headless outputs and the
other subcommands are imported where they are used; this keeps them from creeping back.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from gputop.cli.main import build_parser
from gputop.sources.recordings.format_names import FORMAT_NAMES
from gputop.sources.recordings.formats import FORMATS
from support.command import gputop_command

ROOT = Path(__file__).resolve().parents[2]

# Runs `gputop` (its `main`) with the app's `run` replaced by a dump of sys.modules. The app
# is patched as gputop itself imports it (an import hook), not imported first here: what
# gputop does before it imports the UI (asyncio without OpenSSL) must happen as in a real start.
CHILD = """
import builtins
import sys

def dump(self, *args, **kwargs):
    import dataclasses
    names = set(sys.modules)
    # And every dataclass gputop has defined by now, as "class:<name>".
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("gputop."):
            for value in vars(module).values():
                if dataclasses.is_dataclass(value) and isinstance(value, type):
                    names.add("class:" + value.__name__)
    with open(sys.argv[1], "w") as out:
        out.write("\\n".join(sorted(names)))

_import = builtins.__import__

def _patching_import(*args, **kwargs):
    module = _import(*args, **kwargs)
    app = getattr(sys.modules.get("gputop.ui.app"), "GputopApp", None)
    if app is not None and app.run is not dump:
        app.run = dump
    return module

builtins.__import__ = _patching_import
from gputop.cli.main import main
sys.exit(main([]))
"""

NOT_FOR_THE_LIVE_TUI = (
    # The recording formats and their readers (--replay, report).
    "gputop.sources.recordings.formats",
    "gputop.sources.smi",
    "gputop.sources.csvlog",
    "gputop.sources.recordings.dmon",
    "gputop.sources.recordings.linelog",
    "gputop.sources.recordings.logs",
    "xml.etree",
    "gzip",
    # The other subcommands and headless outputs.
    "gputop.cli.report",
    "gputop.cli.export",
    "gputop.cli.serve",
    "gputop.cli.cluster",
    "gputop.cli.replay",
    "gputop.insight.report",
    "gputop.sinks.json",
    "gputop.sinks.smi_xml",
    "gputop.sinks.csv_log",
    "gputop.sinks.prometheus",
    "gputop.sources.prometheus",
    "prometheus_client",
    "grpc",
    "textual_serve",
    "aiohttp",
    # Only what other modes and boxes use: a replay's player and seeking, --gpu, the
    # headless outputs and --pick, and MIG sampling on a box without MIG (issue 17: each
    # costs the first frame its import and its dataclasses' generated methods).
    "gputop.sources.playback.replay",
    "gputop.sources.playback.seek",
    "gputop.pipeline.gpu_select",
    "gputop.cli.headless",
    "gputop.cli.pick",
    "gputop.insight.gpu_pick",
    "gputop.sources.nvml.mig",
    "gputop.model.mig_profiles",
    # The host's facts are read from /proc directly (46 M instructions to import psutil).
    "psutil",
    # The user's commands: made and handled from the first key press on.
    "gputop.pipeline.commands",
    # Read only for a process in a container (its runtime's config).
    "json",
    # Only --record and --log write snapshots.
    "gputop.sinks",
    # The kubelet's client, on a machine that is no Kubernetes node.
    "gputop.sources.k8s.podresources",
    # A GPU's history over a span of time: read by the history screen.
    "gputop.history.window",
    # OpenSSL, for asyncio's TLS, which no TUI over NVML uses (about 4 MiB of RSS).
    "ssl",
    "_ssl",
)


def _loaded_by_the_live_tui(tmp_path: Path) -> set[str]:
    _, env = gputop_command("busy-2")
    dump = tmp_path / "modules.txt"
    controller, terminal = os.openpty()
    try:
        result = subprocess.run(
            [sys.executable, "-c", CHILD, str(dump)],
            stdin=terminal,
            stdout=terminal,
            stderr=subprocess.PIPE,
            env={**env, "TERM": "xterm-256color"},
            cwd=ROOT,
            timeout=60,
        )
    finally:
        os.close(terminal)
        os.close(controller)
    assert result.returncode == 0, result.stderr.decode()
    return set(dump.read_text().split())


def test_the_live_tui_loads_no_reader_and_no_other_subcommand(tmp_path: Path) -> None:
    loaded = _loaded_by_the_live_tui(tmp_path)
    # It did get as far as the app, over NVML: the probe sees a real start.
    assert {"gputop.ui.app", "gputop.cli.live", "gputop.sources.nvml.source"} <= loaded
    unwanted = sorted(
        name
        for name in loaded
        if any(name == bad or name.startswith(f"{bad}.") for bad in NOT_FOR_THE_LIVE_TUI)
    )
    assert unwanted == []


NOT_DEFINED_AT_START = (
    # The user's commands (a key press makes the first).
    "TogglePause",
    "Step",
    "Seek",
    "SeekTime",
    "ChangeSpeed",
    "SetInterval",
    "StepInterval",
    "Refresh",
    # What --record and --log write, as the header shows it.
    "SinkState",
    # Who the kubelet gave each GPU, where there is no kubelet.
    "Assignments",
    "HistoryWindow",
    "Stats",
)
"""Dataclasses the live TUI does not define before its first frame: each frozen dataclass
costs the start 2.4-4.9 M instructions to define (issue 17)."""


def test_the_live_tui_defines_no_dataclass_it_does_not_draw_with(tmp_path: Path) -> None:
    loaded = _loaded_by_the_live_tui(tmp_path)
    defined = {name.removeprefix("class:") for name in loaded if name.startswith("class:")}
    # The probe sees dataclasses: the model's are there.
    assert {"Snapshot", "GpuSample", "ProcessSample", "Tick"} <= defined
    assert sorted(defined & set(NOT_DEFINED_AT_START)) == []


def test_the_option_parser_names_the_formats_without_loading_them() -> None:
    """``--format`` takes its names from ``format_names``, so they must be the formats'."""
    assert [known.name for known in FORMATS] == list(FORMAT_NAMES)
    (action,) = [a for a in build_parser()._actions if a.dest == "format"]
    assert list(action.choices or ()) == [known.name for known in FORMATS]
