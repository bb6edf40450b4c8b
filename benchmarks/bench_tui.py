"""TUI costs, measured on the real `gputop` process in a terminal; prints figures.

* time to first frame: from process start until the GPUs are on screen (tmux, polled every
  5 ms with ``capture-pane``; and on a bare pseudo-terminal, timed to the first output byte
  holding the GPU names);
* CPU seconds per minute of monitoring at 1 s, RSS, and bytes written to the terminal per
  second, for 8 GPUs x 7 MIG instances with 200 processes on the fake NVML (values moving
  every tick), after a warm-up; the same for a replay of a bundled capture;
* the same bytes/s for a curses tool (``htop -d 10``) on the same terminal, if installed,
  as a yardstick.

Usage: ``python benchmarks/bench_tui.py [--seconds 60] [--warmup 5]``. Without tmux (the GPU
machine may have none) first frames are timed on the bare pseudo-terminal instead.

``--live-table`` measures only the live 8x7 box, with its processes mapped onto real ``sleep``
processes so that gputop's ``/proc`` look-ups (user, command, CPU, start time: a TIME cell
that changes every second) happen as on a real box, for each ``--processes`` count and each
``--code`` checkout (another version's ``tui`` folder, e.g. main's), alternated over
``--rounds`` rounds; it prints each run and the medians.

``--side-by-side`` runs gputop and the peers installed in ``benchmarks/_data/peers`` (nvitop,
gpustat: see benchmarks/README.md) and nvtop (Debian's package, on a C library built here
that forwards to the same fake: ``fake_nvml_c``, ``nvml_c_adapter``) on the issue-17 boxes
(1 GPU with 2 processes, 4 RTX 4090s with 3, 8 H100s x 7 MIG with 200, and 1,000 for gputop
alone), with live processes that have run ``--age`` seconds; rotated order, ``--rounds``
rounds, medians of CPU, bytes/s and RSS; then first frames in tmux beside a bare Textual app.
``--floor`` adds gputop's own live path under a bare Textual app (``floor_app``): the floor.

``--priced`` runs every tool on the fake charging what each NVML call costs on a real H200
(``snapshots/nvml-prices-h200.tsv``, or ``--priced FILE``): ``GPUTOP_FAKE_NVML_COSTS``, spent in
C (``fake_nvml_c/price.c``, built here) with the GIL let go, as a real driver call does. Each
run then prints its CPU a second split into NVML's price, the fake's own Python and the rest
(the tool). Peers run at their default intervals (nvitop's panels every 0.5 s; its
``--interval 1`` takes process snapshots every 0.33 s) unless ``--peer-interval`` says.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import fcntl
import json
import os
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from statistics import median
from typing import Any

import bare_app
from gputop_start import begin_gputop_start, end_gputop_start

REPO = Path(__file__).resolve().parents[1]
CAPTURE = REPO / "snapshots" / "rtx3090x4-procs-v12.xml"
COLUMNS, ROWS = 120, 40
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
CURSOR_QUERY = b"\x1b[6n"


def child(argv: Sequence[str]) -> int:
    """Run gputop (or a peer, ``GPUTOP_BENCH_TOOL``) on a fake NVML with moving values: by
    default 8 H100s x 7 MIG instances, 200 processes; ``GPUTOP_BENCH_BOX`` names another of
    :data:`BOXES`.

    ``GPUTOP_BENCH_TICKS`` ticks of moving values (then the last one repeats): enough for the
    run, and no more, since the fake's own snapshots count in the process's RSS.
    """
    tool = os.environ.get("GPUTOP_BENCH_TOOL", "gputop")
    if tool in ("gputop", "floor"):
        # Before gputop's model is imported (here by the fake, there by gputop's own
        # modules) and before the floor imports Textual.
        begin_gputop_start()
    sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "fakes")]
    from fakes.nvml_install import install

    if tool == "floor":
        # gputop's live path under the least a Textual app draws (floor_app).
        import floor_app

        floor_app.install()
        tool = "gputop"
    name_os_threads()
    fake = bench_fake()
    count_fake_cpu(fake)
    install(fake)
    if tool != "gputop":
        return run_peer(tool)
    from gputop.cli.main import main

    try:
        return main(list(argv))
    finally:
        end_gputop_start()


def bench_box() -> Any:
    """The snapshot of the run's box (``GPUTOP_BENCH_BOX``, ``GPUTOP_BENCH_PROCESSES``), its
    processes on the live PIDs of ``GPUTOP_BENCH_PIDS`` when given."""
    processes = int(os.environ.get("GPUTOP_BENCH_PROCESSES", "200"))
    box = BOXES[os.environ.get("GPUTOP_BENCH_BOX", "8x7")](processes)
    live = os.environ.get("GPUTOP_BENCH_PIDS")
    return on_pids(box, [int(pid) for pid in live.split(",")]) if live else box


def bench_fake() -> Any:
    """The ``FakeNvml`` of a run, from the environment ``child`` is given (also what the C
    library that nvtop loads forwards to, see ``nvml_c_adapter``)."""
    if str(REPO / "tests") not in sys.path:
        sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "fakes")]
    from fakes.nvml_fake import FakeNvml
    from fakes.nvml_scenarios import varying

    ticks = int(os.environ.get("GPUTOP_BENCH_TICKS", "120"))
    fake = FakeNvml(varying(bench_box(), ticks=ticks))
    # What each call costs on a real GPU (GPUTOP_FAKE_NVML_COSTS), spent in C.
    from fakes.nvml_install import price

    price(fake, os.environ)
    # A driver that is slow to start, as where the GPUs are not kept initialised.
    init_seconds = float(os.environ.get("GPUTOP_BENCH_NVML_INIT_S", "0"))
    if init_seconds:
        fake.faults.latency_by_name["nvmlInitWithFlags"] = init_seconds
    # The fake logs every call for its tests; a bounded log keeps the fake's own memory
    # out of gputop's RSS.
    fake.calls = deque(maxlen=16)  # type: ignore[assignment]
    return fake


def run_peer(tool: str) -> int:
    """Run a peer's own command-line entry point, at a 1 s interval, in this process (whose
    pynvml the fake is under). Peers are installed in a venv of their own (see README)."""
    interval = os.environ.get("GPUTOP_BENCH_PEER_INTERVAL")
    if tool == "nvitop-i1":
        tool, interval = "nvitop", "1"
    if tool == "nvitop":
        from nvitop.cli import main as nvitop_main  # type: ignore[import-not-found]

        # Its default unless told: panels every 0.5 s (``--interval 1``: processes 0.33 s).
        sys.argv = ["nvitop", *(["--interval", interval] if interval else [])]
        return int(nvitop_main() or 0)
    if tool == "nvitop-exporter":
        from nvitop_exporter.cli import main as exporter_main  # type: ignore[import-not-found]

        sys.argv = ["nvitop-exporter", *sys.argv[2:]]
        return int(exporter_main() or 0)
    if tool == "gpustat":
        from gpustat.cli import main as gpustat_main  # type: ignore[import-not-found]

        sys.argv = ["gpustat", "--interval", interval or "1"]
        gpustat_main()
        return 0
    if tool == "bare":
        # The yardstick inside the same harness (the fake, its counting): its RSS floor.
        bare_app.run()
        return 0
    if tool in ("bare-rows", "bare-live-rows"):
        bare_app.run(BARE_COLUMNS, bare_rows(), live=tool == "bare-live-rows")
        return 0
    raise SystemExit(f"unknown tool {tool!r}")


BARE_COLUMNS = ("GPU", "PID", "USER", "TYPE", "GPU MEM", "SM", "CPU", "HOST MEM", "TIME", "COMMAND")
"""The columns gputop's process table shows at 120 columns, for the bare app's rows."""


def bare_rows() -> list[tuple[str, ...]]:
    """A row of ``BARE_COLUMNS`` for each process of the run's box, as gputop shows them (the
    live processes are ``sleep 3600``, run by this user, in their first minute): the rows the
    bare app's table holds for ``--bare-rows``."""
    import getpass

    user = getpass.getuser()
    rows: list[tuple[str, ...]] = []
    for gpu in bench_box().gpus:
        for process in gpu.processes:
            memory = "n/a" if process.memory_used is None else f"{process.memory_used >> 20}MiB"
            rows.append(
                (
                    str(gpu.index),
                    str(process.pid),
                    user,
                    process.type or "C",
                    memory,
                    "n/a",
                    "0.0%",
                    "1MiB",
                    "0:30",
                    "sleep 3600",
                )
            )
    return rows


def _one_gpu(processes: int) -> Any:
    from fakes.nvml_scenarios import gpu_sample, snapshot

    gpu = gpu_sample(0)
    return snapshot(replace(gpu, processes=gpu.processes[:processes]))


def _rtx4090s(processes: int) -> Any:
    from fakes.nvml_scenarios import GIB, gpu_sample, snapshot

    cards = []
    for index in range(4):
        card = gpu_sample(
            index,
            name="NVIDIA GeForce RTX 4090",
            memory=replace(gpu_sample().memory, total=24 * GIB, used=18 * GIB, free=5 * GIB),
        )
        # The processes go to the first cards, one each (round robin).
        mine = [
            replace(card.processes[0], pid=5000 + n) for n in range(processes) if n % 4 == index
        ]
        cards.append(replace(card, processes=tuple(mine)))
    return snapshot(*cards)


def _eight_gpus(processes: int) -> Any:
    from fakes.nvml_scenarios import gpu_sample, snapshot

    cards = []
    for index in range(8):
        card = gpu_sample(index, name="NVIDIA H100 80GB HBM3")
        mine = [
            replace(card.processes[0], pid=5000 + n) for n in range(processes) if n % 8 == index
        ]
        cards.append(replace(card, processes=tuple(mine)))
    return snapshot(*cards)


def _h100_mig(processes: int) -> Any:
    from fakes.nvml_scenarios import h100_mig_box

    return h100_mig_box(8, 7, processes)


BOXES: dict[str, Callable[[int], Any]] = {
    "1gpu": _one_gpu,
    "4x4090": _rtx4090s,
    "8x7": _h100_mig,
    "8gpu": _eight_gpus,
}
"""Machines of the side-by-side runs, by name: a function of the process count."""

MARKERS = {"1gpu": ("A6000", 1), "4x4090": ("4090", 4), "8x7": ("H100", 8), "8gpu": ("H100", 8)}
"""Text of a box's first frame, and how many times it shows (once per GPU)."""


def _marker(tool: str, box: str) -> tuple[str, int]:
    """What shows that ``tool``'s first frame is out: nvitop's GPU rows name no model (and
    on the 8x7 box its process list is below the screen), but it draws its frame in one
    piece, so its title will do."""
    tool = tool.partition("@")[0]
    if tool == "floor":
        return MARKERS[box]
    if tool.startswith("bare"):
        return bare_app.MARKER, 1
    return ("NVITOP", 1) if tool.startswith("nvitop") else MARKERS[box]


def on_pids(snapshot: Any, pids: list[int]) -> Any:
    """``snapshot`` with its processes' PIDs replaced, in order, by ``pids`` (processes that
    exist, so that gputop finds them in ``/proc``)."""
    mapping: dict[int, int] = {}

    def mapped(processes: Any) -> tuple[Any, ...]:
        out = []
        for process in processes:
            pid = mapping.setdefault(process.pid, pids[len(mapping) % len(pids)])
            out.append(replace(process, pid=pid))
        return tuple(out)

    gpus = []
    for gpu in snapshot.gpus:
        devices = tuple(replace(d, processes=mapped(d.processes)) for d in gpu.mig_devices)
        gpus.append(replace(gpu, processes=mapped(gpu.processes), mig_devices=devices))
    return replace(snapshot, gpus=tuple(gpus))


@contextlib.contextmanager
def sleepers(count: int) -> Any:
    """``count`` real processes (``sleep``) to stand for the GPU processes; their PIDs."""
    processes = [subprocess.Popen(["sleep", "3600"]) for _ in range(count)]
    try:
        yield [process.pid for process in processes]
    finally:
        for process in processes:
            process.kill()
        for process in processes:
            process.wait()


def name_os_threads() -> None:
    """Give each Python thread its name at the OS level, so CPU can be split per thread."""
    import threading

    run = threading.Thread.run

    def named_run(self: threading.Thread) -> None:
        with contextlib.suppress(OSError):
            Path(f"/proc/self/task/{threading.get_native_id()}/comm").write_text(self.name[:15])
        run(self)

    threading.Thread.run = named_run  # type: ignore[method-assign]


def count_fake_cpu(fake: Any) -> None:
    """Count the CPU time the fake library itself burns (its Python stands in for the C
    driver), and append ``<fake ns> <counting ns> <price ns>`` to ``GPUTOP_BENCH_FAKE_LOG`` on
    each SIGUSR1 (what the counting itself cost is reported apart, see ``fake_cpu``; the price
    is the part of the fake's time spent charging what the calls cost on a real GPU)."""
    from fake_cpu import FakeCpu, counting_cost_ns

    counter = FakeCpu()
    counter.install(fake)
    spent = _price_counter()
    log = os.environ.get("GPUTOP_BENCH_FAKE_LOG")
    if log:
        # Measured at the first report, not at start: it takes tens of milliseconds that a
        # first frame would wait for (the measuring side reads the process's CPU only once
        # the report is written).
        per_call: list[float] = []

        def report(_signal: int, _frame: object) -> None:
            if not per_call:
                per_call.append(counting_cost_ns())
            with open(log, "a") as out:
                out.write(f"{counter.total_ns} {counter.calls * per_call[0]:.0f} {spent()}\n")
            calls = os.environ.get("GPUTOP_BENCH_PRICED_CALLS")
            if calls:
                # Which priced calls the tool made so far (what its NVML price is made of).
                Path(calls).write_text(json.dumps(dict(fake.priced_calls)))

        signal.signal(signal.SIGUSR1, report)


def _price_counter() -> Callable[[], int]:
    """Nanoseconds of prices spent so far in this process (0 when the fake is unpriced)."""
    import ctypes

    library = os.environ.get("GPUTOP_FAKE_NVML_PRICE_LIB")
    if not library or not os.environ.get("GPUTOP_FAKE_NVML_COSTS"):
        return lambda: 0
    spent = ctypes.CDLL(library).gputop_fake_nvml_spent_ns
    spent.restype = ctypes.c_uint64
    return lambda: int(spent())


PRICES = REPO / "snapshots" / "nvml-prices-h200.tsv"
"""What each NVML call costs on a real H200 (recorded for gputop): ``--priced``'s default."""
PRICE_C = Path(__file__).resolve().parent / "fake_nvml_c" / "price.c"


def build_price_library(folder: Path) -> Path:
    """Compile ``fake_nvml_c/price.c`` alone (no Python in it) into ``folder``: the library
    the Python tools' fake spends its prices in; its path."""
    library = folder / "libgputop_price.so"
    if library.exists() and library.stat().st_mtime >= PRICE_C.stat().st_mtime:
        return library
    folder.mkdir(parents=True, exist_ok=True)
    command = ["gcc", "-shared", "-fPIC", "-O2", "-fvisibility=hidden", str(PRICE_C)]
    try:
        built = subprocess.run([*command, "-o", str(library)], capture_output=True, text=True)
    except FileNotFoundError as error:
        raise RuntimeError(f"cannot build the price library: {error}") from None
    if built.returncode != 0:
        raise RuntimeError(f"cannot build the price library:\n{built.stderr}")
    return library


def priced_env(costs: Path | None, library: Path) -> dict[str, str]:
    """What makes a tool's fake charge ``costs`` in ``library`` (nothing when unpriced)."""
    if costs is None:
        return {}
    return {"GPUTOP_FAKE_NVML_COSTS": str(costs), "GPUTOP_FAKE_NVML_PRICE_LIB": str(library)}


_TICKS = {"GPUTOP_BENCH_TICKS": "120"}
SLOW_NVML_INIT_S = 0.3
"""How long the fake's ``nvmlInit`` takes in the slow-start first frame. Where the GPUs are
not kept initialised (no persistence daemon), the driver sets them up for each new client:
"on the order of seconds", says NVIDIA (docs.nvidia.com/deploy/driver-persistence); 0.3 s is
a mild case."""


def write_stream(path: Path, seconds: int) -> Path:
    """The same 8x7 MIG, 200-process box as an `nvidia-smi -q -x -l 1` recording."""
    sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "fakes")]
    from fakes.nvml_scenarios import h100_mig_box, varying
    from gputop.sinks.smi_xml import snapshot_to_xml
    from support.apps import START

    snapshots = varying(h100_mig_box(8, 7, 200), ticks=seconds)
    with path.open("wb") as out:
        for number, snapshot in enumerate(snapshots):
            stamped = replace(snapshot, timestamp=START + timedelta(seconds=number))
            out.write(snapshot_to_xml(stamped))
    return path


BARE_TEXTUAL = [sys.executable, str(Path(__file__).resolve().parent / "bare_app.py")]
"""The floor: Textual's own start-up to a first frame with the widget kinds gputop uses."""


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    # PYTHONDONTWRITEBYTECODE goes too: an installed gputop runs from bytecode that pip
    # compiled, and compiling every module on every start is not what a user waits for.
    unset = ("COLUMNS", "LINES", "NO_COLOR", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in unset}
    env.update(TERM="xterm-256color", COLORTERM="truecolor", PYTHONPATH=str(REPO / "tui"))
    env.update(_TICKS)
    env.update(extra or {})
    return env


def _gputop(args: Sequence[str]) -> list[str]:
    return [sys.executable, "-m", "gputop", *args]


def _fake_gputop(args: Sequence[str]) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "child", *args]


# -- first frame in tmux --------------------------------------------------------------


def first_frame_tmux(
    command: Sequence[str], marker: str, count: int = 1, extra_env: dict[str, str] | None = None
) -> float:
    """Seconds from starting ``command`` in a 120x40 tmux pane to ``marker`` on screen."""
    socket = f"gputop-bench-{uuid.uuid4().hex[:8]}"
    tmux = ["tmux", "-L", socket]
    quoted = " ".join(f"'{part}'" for part in command)
    wanted = ("TERM", "COLORTERM", *(extra_env or {}))
    env = " ".join(f"{k}='{v}'" for k, v in _env(extra_env).items() if k in wanted)
    unset = "-u COLUMNS -u LINES -u PYTHONDONTWRITEBYTECODE"
    script = f"cd '{REPO}' && env {unset} {env} {quoted}; sleep 30"
    # The server and an empty session exist first, so only gputop's start is timed.
    subprocess.run([*tmux, "new-session", "-d", "-s", "idle", "-x", "10", "-y", "5"], check=True)
    try:
        started = time.perf_counter()
        subprocess.run(
            [*tmux, "new-session", "-d", "-s", "t", "-x", str(COLUMNS), "-y", str(ROWS), script],
            check=True,
        )
        screen = ""
        while time.perf_counter() - started < 30:
            screen = subprocess.run(
                [*tmux, "capture-pane", "-p", "-t", "t"], capture_output=True, text=True
            ).stdout
            if screen.count(marker) >= count:
                return time.perf_counter() - started
            time.sleep(0.005)
        raise RuntimeError(f"{marker!r} x{count} never appeared; the screen was:\n{screen}")
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)


# -- a bare pseudo-terminal ------------------------------------------------------------


def start_on_pty(
    command: Sequence[str], env: dict[str, str]
) -> tuple[int, subprocess.Popen[bytes], float]:
    """Start ``command`` on a new 120x40 pseudo-terminal, in a session of its own.

    Returns the terminal's master side (the caller reads it, or the command blocks once
    the terminal's buffer is full, and closes it), the process, and when it was started.
    """
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    started = time.perf_counter()
    process = subprocess.Popen(
        command,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=REPO,
        env=env,
        start_new_session=True,
    )
    os.close(slave)
    return master, process, started


def first_frame_pty(
    command: Sequence[str], marker: bytes, extra_env: dict[str, str] | None = None
) -> float:
    """Seconds from starting ``command`` on a 120x40 pty to output that carries ``marker``
    (Textual writes a frame in one piece, so one sighting of the marker is the frame)."""
    master, process, started = start_on_pty(command, _env(extra_env))
    seen = bytearray()
    try:
        while time.perf_counter() - started < 30:
            if not select.select([master], [], [], 0.05)[0]:
                continue
            try:
                seen += os.read(master, 1 << 16)
            except OSError:
                break
            if marker in seen:
                return time.perf_counter() - started
        raise RuntimeError(f"{marker!r} never appeared; the output ended:\n{seen[-2000:]!r}")
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        os.close(master)


@dataclass
class Run:
    """What one process did on the pseudo-terminal."""

    first_output_s: float
    first_frame_s: float
    cpu_s: float
    seconds: float
    bytes_out: int
    rss_kib: int
    peak_rss_kib: int
    threads_s: dict[str, float]
    """CPU seconds per thread name over the measured window."""
    fake_s: float | None
    """CPU seconds spent inside the fake NVML library (None when not on the fake)."""
    counter_s: float | None
    """CPU seconds the benchmark's own counting of the fake's time cost."""
    price_s: float | None = None
    """CPU seconds of the fake's time spent charging real NVML prices (priced runs)."""


def _stat_cpu_seconds(stat: Path) -> float:
    """User + system CPU seconds from a ``/proc/.../stat`` file (a process's or a thread's)."""
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def _cpu_seconds(pid: int) -> float:
    return _stat_cpu_seconds(Path(f"/proc/{pid}/stat"))


def _thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds so far per thread, summed by thread name."""
    names: dict[str, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            seconds = _stat_cpu_seconds(task / "stat")
        except OSError:
            continue
        names[name] = names.get(name, 0.0) + seconds
    return names


def _fake_log_mark(pid: int, log: Path | None) -> tuple[float, float, float] | None:
    """Ask the fake for its CPU, its counter's and its prices' so far; seconds, or None when
    not on the fake."""
    if log is None:
        return None
    before = log.read_text().count("\n") if log.exists() else 0
    os.kill(pid, signal.SIGUSR1)
    deadline = time.perf_counter() + 2
    while time.perf_counter() < deadline:
        lines = log.read_text().splitlines() if log.exists() else []
        if len(lines) > before:
            fake_ns, counter_ns, *price_ns = lines[-1].split()
            price = int(price_ns[0]) if price_ns else 0
            return int(fake_ns) / 1e9, int(counter_ns) / 1e9, price / 1e9
        time.sleep(0.01)
    return None


def _rss_kib(pid: int) -> tuple[int, int]:
    status = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return int(status["VmRSS"].split()[0]), int(status["VmHWM"].split()[0])


def run_on_pty(
    command: Sequence[str],
    marker: bytes,
    seconds: float,
    warmup: float,
    quit_key: bytes = b"q",
    fake_log: Path | None = None,
    extra_env: dict[str, str] | None = None,
    keys: bytes = b"",
) -> Run:
    """Run ``command`` on a 120x40 pty; measure CPU, RSS and output after ``warmup`` s;
    ``keys`` are typed once the first frame is seen (the warm-up counts from then too)."""
    env = _env(extra_env)
    if fake_log is not None:
        env["GPUTOP_BENCH_FAKE_LOG"] = str(fake_log)
    master, process, started = start_on_pty(command, env)
    threads_start: dict[str, float] = {}
    fake_start: tuple[float, float, float] | None = None
    seen = bytearray()
    first_output = first_frame = -1.0
    counted = 0
    measuring = False
    cpu_start = 0.0
    measure_start = 0.0
    deadline = started + warmup + seconds + 20
    try:
        while time.perf_counter() < deadline:
            now = time.perf_counter()
            if not measuring and first_frame >= 0 and now - started >= warmup + first_frame:
                measuring = True
                fake_start = _fake_log_mark(process.pid, fake_log)
                threads_start = _thread_cpu(process.pid)
                cpu_start = _cpu_seconds(process.pid)
                measure_start = now
                counted = 0
            if measuring and now - measure_start >= seconds:
                break
            ready, _, _ = select.select([master], [], [], 0.05)
            if not ready:
                continue
            try:
                data = os.read(master, 1 << 16)
            except OSError:
                break
            if first_output < 0:
                first_output = time.perf_counter() - started
            # Answer cursor-position queries as a terminal does: gpustat's terminal library
            # waits seconds for the answer at start.
            for _ in range(data.count(CURSOR_QUERY)):
                os.write(master, b"\x1b[1;1R")
            if first_frame < 0:
                seen += data
                if marker in seen:
                    first_frame = time.perf_counter() - started
                    if keys:
                        os.write(master, keys)
            if measuring:
                counted += len(data)
        elapsed = time.perf_counter() - measure_start
        cpu = _cpu_seconds(process.pid) - cpu_start
        threads_end = _thread_cpu(process.pid)
        threads = {
            name: spent - threads_start.get(name, 0.0) for name, spent in threads_end.items()
        }
        fake_end = _fake_log_mark(process.pid, fake_log)
        fake = counter = price = None
        if fake_start is not None and fake_end is not None:
            fake, counter = fake_end[0] - fake_start[0], fake_end[1] - fake_start[1]
            price = fake_end[2] - fake_start[2]
        rss, peak = _rss_kib(process.pid)
        os.write(master, quit_key)
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    finally:
        os.close(master)
    return Run(
        first_output, first_frame, cpu, elapsed, counted, rss, peak, threads, fake, counter, price
    )


def report(name: str, run: Run) -> None:
    """Print one run's figures."""
    per_minute = run.cpu_s / run.seconds * 60
    print(f"{name}:")
    print(f"  first output byte      {run.first_output_s * 1000:7.0f} ms")
    print(f"  first frame with GPUs  {run.first_frame_s * 1000:7.0f} ms")
    print(
        f"  CPU                    {per_minute:7.2f} s per minute "
        f"({per_minute / 60 * 100:.2f}% of one core) over {run.seconds:.0f} s"
    )

    def share(seconds: float) -> str:
        return f"{seconds / run.seconds * 100:.2f}%"

    by_thread = sorted(run.threads_s.items(), key=lambda item: -item[1])
    names = {"python": "UI (main thread)", "gputop-poller": "poller"}
    print(
        "    by thread: "
        + ", ".join(f"{names.get(name, name)} {share(spent)}" for name, spent in by_thread)
    )
    if run.fake_s is not None and run.counter_s is not None:
        print(
            f"    inside the fake NVML library: {share(run.fake_s)}; gputop without it: "
            f"{share(run.cpu_s - run.fake_s)} of one core"
        )
        print(
            f"    the benchmark's counting of the fake's time: {share(run.counter_s)}; "
            f"gputop without either: {share(run.cpu_s - run.fake_s - run.counter_s)}"
        )
    peak = run.peak_rss_kib / 1024
    print(f"  RSS                    {run.rss_kib / 1024:7.1f} MiB (peak {peak:.1f})")
    print(f"  terminal output        {run.bytes_out / run.seconds:7.0f} bytes/s")


def main() -> int:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--repeat", type=int, default=5, help="first-frame samples")
    parser.add_argument("--live-table", action="store_true", help="only the live-process runs")
    parser.add_argument("--processes", type=int, nargs="+", default=[200, 1000])
    parser.add_argument(
        "--code",
        type=Path,
        action="append",
        help="a checkout to measure (default: this one); with --side-by-side, each beside it",
    )
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--patches-off",
        nargs="+",
        metavar="STOCK",
        help="--live-table: each checkout once per GPUTOP_STOCK_TEXTUAL value (1: stock Textual, "
        "or patch names, comma-separated; -: every patch), alternated: each patch's gain",
    )
    parser.add_argument(
        "--box",
        choices=["1gpu", "4x4090", "8x7"],
        help="--live-table: this box instead of the 8x7 one",
    )
    parser.add_argument(
        "--side-by-side",
        action="store_true",
        help="gputop and the installed peers on the same boxes with live processes",
    )
    parser.add_argument(
        "--age",
        type=float,
        default=60.0,
        help="seconds the live processes have run before the first measurement",
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="--side-by-side: also gputop's sampling under a bare Textual app (floor_app)",
    )
    parser.add_argument(
        "--bare-rows",
        action="store_true",
        help="--side-by-side: also the bare Textual app with the box's processes as rows in "
        "its table, filled before its first frame: still, and live (the TIME cells on screen "
        "moving every second)",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        metavar="PEER",
        help="--side-by-side: these peers only (nvitop, gpustat, nvtop; nvitop-i1: nvitop "
        "--interval 1) beside gputop",
    )
    parser.add_argument(
        "--boxes",
        nargs="+",
        choices=sorted({case[0] for case in CASES}),
        help="--side-by-side: these boxes only (default: every box)",
    )
    parser.add_argument(
        "--skip-first-frames",
        action="store_true",
        help="--side-by-side: CPU, bytes and RSS only, no first frames in tmux",
    )
    parser.add_argument(
        "--priced",
        nargs="?",
        type=Path,
        const=PRICES,
        metavar="FILE",
        help="charge each NVML call what it costs on a real GPU (default file: %(const)s)",
    )
    parser.add_argument(
        "--peer-interval",
        metavar="SEC",
        help="--side-by-side: run nvitop (and gpustat) at this interval instead of their "
        "defaults (nvitop's: panels every 0.5 s)",
    )
    parser.add_argument(
        "--peers-python",
        type=Path,
        default=PEERS_PYTHON,
        help="the Python of a venv with nvitop and gpustat (default: %(default)s)",
    )
    options = parser.parse_args()
    if options.live_table:
        return live_table(options)
    if options.side_by_side:
        return side_by_side(options)
    # The device machine may have no tmux: first frames are then timed on a bare
    # pseudo-terminal, to the output that carries the GPU names.
    on_tmux = shutil.which("tmux") is not None
    where = "in tmux" if on_tmux else "on a bare pseudo-terminal (no tmux here)"
    print(f"terminal {COLUMNS}x{ROWS}, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    # What `pip install` does at install time, so the first start below is not a compile.
    compileall.compile_dir(REPO / "tui" / "gputop", quiet=1)
    _TICKS["GPUTOP_BENCH_TICKS"] = str(int(options.seconds + options.warmup + 30))

    def first_frames(
        command: Sequence[str], marker: str, count: int, env: dict[str, str] | None = None
    ) -> str:
        if on_tmux:
            samples = [first_frame_tmux(command, marker, count, env) for _ in range(options.repeat)]
        else:
            samples = [
                first_frame_pty(command, marker.encode(), env) for _ in range(options.repeat)
            ]
        samples.sort()
        return (
            f"median {samples[len(samples) // 2] * 1000:.0f} ms (min {samples[0] * 1000:.0f}, "
            f"max {samples[-1] * 1000:.0f}; {len(samples)} runs)"
        )

    replay = _gputop(["--replay", str(CAPTURE)])
    figures = first_frames(replay, "NVIDIA GeForce RTX 3090", 4)
    print(f"first frame {where}, replay of {CAPTURE.name}: {figures}")
    figures = first_frames(BARE_TEXTUAL, bare_app.MARKER, 1)
    print(
        f"yardstick: first frame {where} of a bare Textual app (a Static, a DataTable, a "
        f"Footer): {figures}"
    )
    live = _fake_gputop([])
    figures = first_frames(live, "H100", 8)
    print(f"first frame {where}, live 8x H100 x 7 MIG, 200 processes (fake NVML): {figures}")
    slow_start = {"GPUTOP_BENCH_NVML_INIT_S": str(SLOW_NVML_INIT_S)}
    figures = first_frames(live, "H100", 8, slow_start)
    print(
        f"first frame {where}, the same box with a driver {SLOW_NVML_INIT_S * 1000:.0f} ms slow "
        f"to start (nvmlInit): {figures}"
    )

    with tempfile.TemporaryDirectory() as folder:
        report(
            "live, 8x H100 x 7 MIG, 200 processes, 1 s interval (fake NVML, values moving)",
            run_on_pty(
                live,
                b"H100",
                options.seconds,
                options.warmup,
                fake_log=Path(folder) / "fake-cpu.log",
            ),
        )
    with tempfile.TemporaryDirectory() as folder:
        stream = write_stream(Path(folder) / "h100-mig-8x7.xml", int(options.seconds) + 60)
        report(
            "replay at 1x of the same box recorded as nvidia-smi XML (no NVML: UI + parsing)",
            run_on_pty(
                _gputop(["--replay", str(stream)]), b"H100", options.seconds, options.warmup
            ),
        )
    report(
        f"replay of {CAPTURE.name} (a still: nothing changes)",
        run_on_pty(replay, b"RTX 3090", min(options.seconds, 20.0), options.warmup),
    )
    if shutil.which("htop"):
        report(
            "yardstick: htop -d 10 (curses, 1 s refresh)",
            run_on_pty(["htop", "-d", "10"], b"Load", options.seconds, options.warmup, b"q"),
        )
    else:
        print("htop not installed: no curses yardstick")
    return 0


def live_table(options: argparse.Namespace) -> int:
    """The 8x7 box with live processes, per process count and checkout, alternated."""
    codes: list[Path] = options.code or [REPO]
    # Each checkout with each GPUTOP_STOCK_TEXTUAL value ("-": every patch applies).
    stocks: list[str] = options.patches_off or ["-"]
    variants = [(code, stock) for code in codes for stock in stocks]
    _TICKS["GPUTOP_BENCH_TICKS"] = str(int(options.seconds + options.warmup + 30))
    print(f"terminal {COLUMNS}x{ROWS}, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    results: dict[tuple[int, Path, str], list[Run]] = {}
    box = {"GPUTOP_BENCH_BOX": options.box} if options.box else {}
    marker = MARKERS[options.box or "8x7"][0].encode()
    for count in options.processes:
        with sleepers(count) as pids:
            # Past their first minute, as GPU jobs mostly are (see side_by_side).
            time.sleep(max(0.0, options.age - options.warmup))
            extra = {
                **box,
                "GPUTOP_BENCH_PROCESSES": str(count),
                "GPUTOP_BENCH_PIDS": ",".join(map(str, pids)),
            }
            for round_number in range(options.rounds):
                # Alternate which checkout goes first, so that drift in the machine's load
                # falls on both.
                order = variants if round_number % 2 == 0 else variants[::-1]
                for code, stock in order:
                    env = {**extra, "PYTHONPATH": str(code.resolve() / "tui")}
                    if stock != "-":
                        env["GPUTOP_STOCK_TEXTUAL"] = stock
                    run = run_on_pty(
                        _fake_gputop([]), marker, options.seconds, options.warmup, extra_env=env
                    )
                    results.setdefault((count, code, stock), []).append(run)
                    where = f"{code}" + (f" GPUTOP_STOCK_TEXTUAL={stock}" if stock != "-" else "")
                    report(f"{where} · {count} live processes · round {round_number + 1}", run)
    print("medians:")
    for (count, code, stock), runs in results.items():
        cpu = median(run.cpu_s / run.seconds * 100 for run in runs)
        out = median(run.bytes_out / run.seconds for run in runs)
        rss = median(run.rss_kib / 1024 for run in runs)
        ui = median(run.threads_s.get("python", 0.0) / run.seconds * 100 for run in runs)
        first = median(run.first_frame_s for run in runs)
        print(
            f"  {count:5d} processes  {code!s:30s} stock={stock:16s} CPU {cpu:6.2f}% of one core "
            f"(UI thread {ui:.2f}%, {cpu * 10:.0f} ms per 1 s tick), "
            f"{out:7.0f} bytes/s, RSS {rss:5.1f} MiB, first output {first * 1000:.0f} ms"
        )
    return 0


FAKE_NVML_C = Path(__file__).resolve().parent / "fake_nvml_c" / "fake_nvml.c"
"""The C library nvtop loads as ``libnvidia-ml.so.1``, forwarding to the Python fake."""


def build_fake_nvml_c(folder: Path) -> Path:
    """Compile ``fake_nvml_c`` against this Python (it embeds it) into ``folder``, as
    ``libnvidia-ml.so.1`` (the name nvtop ``dlopen``s); the folder, for LD_LIBRARY_PATH.

    Raises RuntimeError, with gcc's message, when it cannot be built (no gcc, or a Python
    without a shared libpython)."""
    import sysconfig

    library = folder / "libnvidia-ml.so.1"
    newest = max(FAKE_NVML_C.stat().st_mtime, PRICE_C.stat().st_mtime)
    if library.exists() and library.stat().st_mtime >= newest:
        return folder
    libdir = sysconfig.get_config_var("LIBDIR")
    version = sysconfig.get_config_var("LDVERSION")
    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        raise RuntimeError(f"{sys.executable} has no shared libpython to embed")
    folder.mkdir(parents=True, exist_ok=True)
    command = [
        "gcc",
        "-shared",
        "-fPIC",
        "-O2",
        "-fvisibility=hidden",
        f"-I{sysconfig.get_path('include')}",
        str(FAKE_NVML_C),
        "-o",
        str(library),
        f"-L{libdir}",
        f"-Wl,-rpath,{libdir}",
        f"-lpython{version}",
        "-lpthread",
        "-ldl",
    ]
    try:
        built = subprocess.run(command, capture_output=True, text=True)
    except FileNotFoundError as error:
        raise RuntimeError(f"cannot build the fake NVML for nvtop: {error}") from None
    if built.returncode != 0:
        raise RuntimeError(f"cannot build the fake NVML for nvtop:\n{built.stderr}")
    return folder


def fake_nvml_c_env(folder: Path) -> dict[str, str]:
    """What a C program needs to load the fake NVML from ``folder``: the library, and the
    Python it embeds finding this venv's packages, gputop's model, the fakes and the adapter."""
    import site

    paths = [
        str(Path(__file__).resolve().parent),
        str(REPO / "tests"),
        str(REPO / "tests" / "fakes"),
        str(REPO / "tui"),
        *site.getsitepackages(),
    ]
    return {"LD_LIBRARY_PATH": str(folder), "PYTHONPATH": os.pathsep.join(paths)}


PEERS_PYTHON = REPO / "benchmarks" / "_data" / "peers" / "bin" / "python"
"""Where the README's instructions put the peers' venv."""

CASES: tuple[tuple[str, int, bool], ...] = (
    ("1gpu", 2, True),
    ("4x4090", 3, True),
    ("8x7", 200, True),
    ("8x7", 1000, False),
)
"""(box, live processes, peers too): the issue's table; 1,000 processes for gputop only."""


NVTOP_LIBRARY = REPO / "benchmarks" / "_data" / "fake_nvml_c"
"""Where the fake ``libnvidia-ml.so.1`` for nvtop is built (not committed)."""


def _peers(options: argparse.Namespace) -> list[str]:
    """The peers installed: nvitop and gpustat in the peers' venv, nvtop (Debian's package)
    on PATH, if the fake NVML library it loads can be built here."""
    found = []
    python = options.peers_python
    for peer in ("nvitop", "gpustat"):
        if python.exists():
            probe = subprocess.run([python, "-c", f"import {peer}"], capture_output=True)
            if probe.returncode == 0:
                found.append(peer)
                if peer == "nvitop" and "nvitop-i1" in (options.only or ()):
                    # nvitop --interval 1, as this benchmark ran it before: beside its default.
                    found.append("nvitop-i1")
    if shutil.which("nvtop"):
        try:
            build_fake_nvml_c(NVTOP_LIBRARY)
            found.append("nvtop")
        except RuntimeError as error:
            print(f"nvtop left out: {error}")
    return found


def _gputops(options: argparse.Namespace) -> list[str]:
    """``gputop``, and ``gputop@<path>`` for each other checkout given with ``--code``."""
    codes = getattr(options, "code", None) or [REPO]
    return ["gputop" if code.resolve() == REPO else f"gputop@{code.resolve()}" for code in codes]


def _tool_command(tool: str, options: argparse.Namespace) -> tuple[list[str], dict[str, str]]:
    """How to start ``tool`` on the fake NVML: the command and the environment it adds.
    ``gputop@PATH`` is the gputop of the checkout at PATH (``--code``)."""
    name, _, code = tool.partition("@")
    # The fake imports gputop's model, so a peer's venv needs gputop's path too.
    env = {"GPUTOP_BENCH_TOOL": name, "PYTHONPATH": str(Path(code or REPO).resolve() / "tui")}
    costs: Path | None = getattr(options, "priced", None)
    if getattr(options, "peer_interval", None):
        env["GPUTOP_BENCH_PEER_INTERVAL"] = str(options.peer_interval)
    if name in ("gputop", "bare", "bare-rows", "bare-live-rows", "floor"):
        env.update(priced_env(costs, build_price_library(NVTOP_LIBRARY)))
        return _fake_gputop([]), env
    if tool == "nvtop":
        # 1 s refresh (tenths of a second); a config file that does not exist: the defaults,
        # whatever the user running the benchmark has saved. Its prices are spent in the
        # library it loads (price.c is built into it), so that one count holds them.
        config = NVTOP_LIBRARY / "nvtop-defaults.ini"
        priced = priced_env(costs, NVTOP_LIBRARY / "libnvidia-ml.so.1")
        return ["nvtop", "-d", "10", "-c", str(config)], {
            **env,
            **fake_nvml_c_env(NVTOP_LIBRARY),
            **priced,
        }
    env.update(priced_env(costs, build_price_library(NVTOP_LIBRARY)))
    return [str(options.peers_python), str(Path(__file__).resolve()), "child"], env


def fake_nvml_c_rss_mib(extra_env: dict[str, str]) -> float:
    """RSS of a Python that has built the fake NVML as nvtop's library does (the adapter
    imported): how much of nvtop's RSS in the benchmark is the embedded fake, not nvtop."""
    probe = (
        "import pathlib, nvml_c_adapter; print([line.split()[1] for line in "
        "pathlib.Path('/proc/self/status').read_text().splitlines() "
        "if line.startswith('VmRSS')][0])"
    )
    env = _env({**extra_env, **fake_nvml_c_env(NVTOP_LIBRARY)})
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    )
    return int(done.stdout.strip()) / 1024


_QUIT = {
    "gputop": b"q",
    "nvitop": b"q",
    "nvitop-i1": b"q",
    "gpustat": b"\x03",
    "nvtop": b"q",
    "bare": b"q",
    "bare-rows": b"q",
    "bare-live-rows": b"q",
    "floor": b"q",
}


def side_by_side(options: argparse.Namespace) -> int:
    """gputop and each installed peer on the issue's boxes, with live processes: per box,
    ``--rounds`` rounds in rotated order; then the medians, and first frames in tmux."""
    _TICKS["GPUTOP_BENCH_TICKS"] = str(int(options.seconds + options.warmup + 30))
    compileall.compile_dir(REPO / "tui" / "gputop", quiet=1)
    peers = [peer for peer in _peers(options) if not options.only or peer in options.only]
    print(f"terminal {COLUMNS}x{ROWS}, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    print(f"peers installed: {', '.join(peers) or 'none'}; {time.strftime('%Y-%m-%d %H:%M %Z')}")
    print(
        f"NVML priced as {options.priced}"
        if options.priced
        else "NVML unpriced (fake answers in us)"
    )
    print("load average at the start: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    results: dict[tuple[str, int, str], list[Run]] = {}
    cases = [
        case
        for case in CASES
        if (case[0] != "8x7" or case[1] in options.processes)
        and (not options.boxes or case[0] in options.boxes)
    ]
    with contextlib.ExitStack() as stack:
        started = {case: stack.enter_context(sleepers(case[1])) for case in cases}
        # GPU jobs run for minutes to days; a process in its first minute shows seconds in
        # gputop's TIME column, past it minutes (nvitop shows seconds always).
        time.sleep(max(0.0, options.age - options.warmup))
        for case, pids in started.items():
            side_by_side_case(options, case, peers, pids, results)
    bare_runs = [
        run_on_pty(BARE_TEXTUAL, bare_app.MARKER.encode(), options.seconds, options.warmup)
        for _ in range(options.rounds)
    ]
    print("medians (CPU in % of one core; in brackets without the fake library's own Python):")
    for (box, count, tool), runs in results.items():
        print(
            f"  {box:7s} {count:5d} processes  {tool:8s}"
            f" CPU {median(map(_cpu, runs)):5.2f}% ({median(map(_own_cpu, runs)):5.2f}%,"
            f" {median(map(_own_cpu, runs)) * 10:4.0f} ms a tick)"
            f"  {median(run.bytes_out / run.seconds for run in runs):6.0f} bytes/s"
            f"  RSS {median(run.rss_kib / 1024 for run in runs):5.1f} MiB"
        )
    if options.priced:
        print("CPU per second (one gputop tick), medians, in ms: NVML's price | the fake's")
        print("own Python | the tool (everything else) | all")
        for (box, count, tool), runs in results.items():
            price, fake, rest, whole = (
                median(part) for part in zip(*map(_split_ms, runs), strict=True)
            )
            print(
                f"  {box:7s} {count:5d} processes  {tool:8s}"
                f" {price:6.1f} | {fake:5.1f} | {rest:5.1f} | {whole:6.1f}"
            )
    print(
        f"  bare Textual app (idle)          CPU {median(map(_cpu, bare_runs)):5.2f}%"
        f"  RSS {median(run.rss_kib / 1024 for run in bare_runs):5.1f} MiB"
    )
    if "nvtop" in peers:
        # nvtop's process holds the embedded Python and the fake's snapshots (as gputop's
        # and the Python peers' hold theirs): that part of its RSS, apart.
        for box, count, with_peers in cases:
            if with_peers:
                extra = {"GPUTOP_BENCH_BOX": box, "GPUTOP_BENCH_PROCESSES": str(count)}
                print(
                    f"  {box:7s} {count:5d} processes: the fake NVML alone (embedded Python,"
                    f" adapter, snapshots) RSS {fake_nvml_c_rss_mib(extra):5.1f} MiB"
                )
    print("load average at the end: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    if shutil.which("tmux") and not options.skip_first_frames:
        side_by_side_first_frames(options, peers)
    return 0


def side_by_side_case(
    options: argparse.Namespace,
    case: tuple[str, int, bool],
    peers: list[str],
    pids: list[int],
    results: dict[tuple[str, int, str], list[Run]],
) -> None:
    """One box: ``--rounds`` rounds of gputop and the peers, each round in another order."""
    box, count, with_peers = case
    # "bare": the bare Textual app in the same harness, for the RSS floor of a Textual app;
    # "bare-rows": the same app holding the box's processes as rows, still and live.
    floor = ["floor"] if options.floor else []
    rows = ["bare-rows", "bare-live-rows"] if options.bare_rows else []
    tools = [*_gputops(options), *(["bare", *rows, *floor, *peers] if with_peers else [])]
    extra = {
        "GPUTOP_BENCH_BOX": box,
        "GPUTOP_BENCH_PROCESSES": str(count),
        "GPUTOP_BENCH_PIDS": ",".join(map(str, pids)),
    }
    for round_number in range(options.rounds):
        # Each round starts with another tool, so drift in the machine's load falls
        # on every one.
        turn = round_number % len(tools)
        for tool in tools[turn:] + tools[:turn]:
            command, env = _tool_command(tool, options)
            with tempfile.TemporaryDirectory() as folder:
                run = run_on_pty(
                    command,
                    _marker(tool, box)[0].encode(),
                    options.seconds,
                    options.warmup,
                    quit_key=_QUIT[tool.partition("@")[0]],
                    fake_log=Path(folder) / "fake.log",
                    extra_env={**extra, **env},
                )
            results.setdefault((box, count, tool), []).append(run)
            price, fake, rest, _ = _split_ms(run)
            print(
                f"  {box} {count:4d} processes, round {round_number + 1}, {tool:8s}"
                f" {_cpu(run):5.2f}% CPU ({_own_cpu(run):5.2f}% without the fake),"
                f" {run.bytes_out / run.seconds:6.0f} bytes/s,"
                f" RSS {run.rss_kib / 1024:5.1f} MiB"
                + (
                    f"; ms/s: NVML price {price:.1f}, fake {fake:.1f}, tool {rest:.1f}"
                    if options.priced
                    else ""
                ),
                flush=True,
            )
            busiest = sorted(run.threads_s.items(), key=lambda item: -item[1])[:4]
            print(
                "      by thread, ms/s: "
                + ", ".join(f"{name} {spent / run.seconds * 1000:.1f}" for name, spent in busiest)
            )


def _cpu(run: Run) -> float:
    return run.cpu_s / run.seconds * 100


def _split_ms(run: Run) -> tuple[float, float, float, float]:
    """CPU milliseconds a second: NVML's price, the fake's own Python (and the counting),
    the tool itself, and all of it."""
    per_second = 1000 / run.seconds
    price = (run.price_s or 0.0) * per_second
    fake = ((run.fake_s or 0.0) + (run.counter_s or 0.0)) * per_second - price
    whole = run.cpu_s * per_second
    return price, fake, whole - price - fake, whole


def _own_cpu(run: Run) -> float:
    """CPU % without the fake library's Python and its counting (the whole, for a tool
    the fake's time cannot be counted in)."""
    if run.fake_s is None or run.counter_s is None:
        return _cpu(run)
    return (run.cpu_s - run.fake_s - run.counter_s) / run.seconds * 100


def side_by_side_first_frames(options: argparse.Namespace, peers: list[str]) -> None:
    """First frames in tmux on the 4-GPU box: gputop, the Python peer nvitop and the bare
    Textual app taken in turn, so that each sample of one is beside a sample of the other."""
    box, count = "4x4090", 3
    # "harnessed": the bare app started as gputop and nvitop are here (the fake NVML and
    # the benchmark's modules loaded first), beside the bare app on its own.
    tools = [
        *_gputops(options),
        "bare",
        "harnessed",
        *(peer for peer in peers if peer == "nvitop"),
    ]
    samples: dict[str, list[float]] = {tool: [] for tool in tools}
    with sleepers(count) as pids:
        extra = {
            "GPUTOP_BENCH_BOX": box,
            "GPUTOP_BENCH_PROCESSES": str(count),
            "GPUTOP_BENCH_PIDS": ",".join(map(str, pids)),
        }
        for sample in range(options.repeat):
            turn = sample % len(tools)
            for tool in tools[turn:] + tools[:turn]:
                if tool == "bare":
                    seconds = first_frame_tmux(BARE_TEXTUAL, bare_app.MARKER, 1)
                elif tool == "harnessed":
                    command, env = _tool_command("bare", options)
                    seconds = first_frame_tmux(command, bare_app.MARKER, 1, {**extra, **env})
                else:
                    command, env = _tool_command(tool, options)
                    marker, times = _marker(tool, box)
                    seconds = first_frame_tmux(command, marker, times, {**extra, **env})
                samples[tool].append(seconds)
    bare = median(samples["bare"])
    harnessed = median(samples["harnessed"])
    print(f"first frame in tmux, {box} box, median of {options.repeat}:")
    for tool, taken in samples.items():
        print(
            f"  {tool:8s} {median(taken) * 1000:5.0f} ms (min {min(taken) * 1000:.0f}),"
            f" {median(taken) / bare:.2f}x the bare Textual app,"
            f" {median(taken) / harnessed:.2f}x it in the same harness"
        )


if __name__ == "__main__":
    if sys.argv[1:2] == ["child"]:
        sys.exit(child(sys.argv[2:]))
    sys.exit(main())
