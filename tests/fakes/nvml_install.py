"""Put a :class:`FakeNvml` under the real pynvml, in a test or in a whole gputop process.

In-process: ``with installed(fake): ...`` swaps ``pynvml.nvmlLib`` and empties pynvml's cache
of function pointers, and puts both back afterwards.

In a subprocess: put ``tests/fakes`` on PYTHONPATH and set ``GPUTOP_FAKE_NVML`` to a capture
path or a scenario name (see :data:`fakes.nvml_scenarios.SCENARIOS`); its ``sitecustomize``
calls :func:`install_from_environment` before gputop starts. Optional faults:

* ``GPUTOP_FAKE_NVML_LOSE=1@3,2@5``: GPU 1 lost from its tick 3, GPU 2 from tick 5 (0-based).
* ``GPUTOP_FAKE_NVML_HANG=0:nvmlDeviceGetPowerUsage@2``: that call on GPU 0 hangs for good
  from tick 2.
* ``GPUTOP_FAKE_NVML_LATENCY=0.002``: every C call takes this many seconds;
  ``0.00005,nvmlInitWithFlags=0.2``: so does every call but the named ones, which take their own.
* ``GPUTOP_FAKE_NVML_INIT_LOG=FILE``: each process that starts NVML appends its PID to FILE
  (how a test counts the processes that sample: `gputop serve` must be the only one).
* ``GPUTOP_FAKE_NVML_CUES=FILE``: health on cue. The fake reads lines appended to FILE (every
  0.05 s) and acts on each once: ``xid GPU CODE [GI CI]`` delivers a critical XID event (to
  the first event set that registers for it, if none listens yet),
  ``event GPU TYPE [DATA]`` any NVML event type (its pynvml name or number), ``set GPU
  PATH=VALUE ...`` makes the GPU report new health counters (``remapped_rows.pending=1``,
  ``ecc_errors.volatile_uncorrected=2``, ``retired_pages.double_bit=1``), ``lose GPU`` takes
  it off the bus.
* ``GPUTOP_FAKE_NVML_COSTS=FILE``: each call listed in FILE (``snapshots/nvml-prices-h200.tsv``:
  the prices of a real H200) spends that CPU time busy on the calling thread, and sleeps what
  its wall time has beyond it. ``GPUTOP_FAKE_NVML_PRICE_LIB=LIB``: spend it in C instead,
  through LIB's ``gputop_fake_nvml_spend`` (``benchmarks/fake_nvml_c/price.c``), which lets go
  of the GIL as a real driver call does.
"""

from __future__ import annotations

import ctypes
import dataclasses
import os
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pynvml  # noqa: TID251 -- the fake sits under the real pynvml

from fakes.nvml_fake import FakeNvml, Faults, load_prices
from fakes.nvml_scenarios import scenario

ENV_SPEC = "GPUTOP_FAKE_NVML"
ENV_LOSE = "GPUTOP_FAKE_NVML_LOSE"
ENV_HANG = "GPUTOP_FAKE_NVML_HANG"
ENV_LATENCY = "GPUTOP_FAKE_NVML_LATENCY"
ENV_INIT_LOG = "GPUTOP_FAKE_NVML_INIT_LOG"
ENV_CUES = "GPUTOP_FAKE_NVML_CUES"
ENV_COSTS = "GPUTOP_FAKE_NVML_COSTS"
ENV_PRICE_LIB = "GPUTOP_FAKE_NVML_PRICE_LIB"

REPO_ROOT = Path(__file__).resolve().parents[2]


def install(fake: FakeNvml) -> None:
    """Make pynvml call ``fake`` from now on (for the rest of the process)."""
    with pynvml.libLoadLock:
        pynvml.nvmlLib = fake.library
        pynvml._nvmlGetFunctionPointer_cache.clear()


def uninstall() -> None:
    """Forget any library pynvml loaded (real or fake)."""
    with pynvml.libLoadLock:
        pynvml.nvmlLib = None
        pynvml._nvmlGetFunctionPointer_cache.clear()


@contextmanager
def restored() -> Iterator[None]:
    """Whatever library the block installs, pynvml has the one it had before afterwards."""
    saved = pynvml.nvmlLib
    try:
        yield
    finally:
        with pynvml.libLoadLock:
            pynvml.nvmlLib = saved
            pynvml._nvmlGetFunctionPointer_cache.clear()


LEFTOVER_WAIT_S = 5.0
"""How long the end of ``installed`` waits for the threads its block started."""


@contextmanager
def installed(fake: FakeNvml) -> Iterator[FakeNvml]:
    """Install ``fake`` for the duration of the block; release hung calls on the way out,
    and let the threads the block started end before pynvml is handed back.

    A source's sampling workers are not joined when it closes (one may be inside a hung
    driver call), and pynvml sends every call to the library installed *now*: a worker let
    out of a hung call finishes its sample, and without the wait its calls could land in
    the fake of the test that runs next (a clean-clone CI saw one more MIG mode read, at a
    tick where the next test counts none)."""
    started = set(threading.enumerate())
    with restored():
        install(fake)
        try:
            yield fake
        finally:
            fake.release_hangs()
            deadline = time.monotonic() + LEFTOVER_WAIT_S
            for thread in set(threading.enumerate()) - started:
                thread.join(max(0.0, deadline - time.monotonic()))


def fake_from_spec(spec: str) -> FakeNvml:
    """A fake for a scenario name or a capture path (relative to the cwd or the repo root)."""
    snapshots, faults = scenario(spec, search=(Path.cwd(), REPO_ROOT))
    return FakeNvml(snapshots, faults)


def _parse_lose(text: str, faults: Faults) -> None:
    for item in filter(None, (part.strip() for part in text.split(","))):
        gpu, _, tick = item.partition("@")
        faults.lose_at[int(gpu)] = int(tick or 0)


def _parse_hang(text: str, faults: Faults) -> None:
    for item in filter(None, (part.strip() for part in text.split(","))):
        target, _, tick = item.partition("@")
        gpu, _, function = target.partition(":")
        faults.hang[(int(gpu), function)] = (int(tick or 0), threading.Event())


def _parse_latency(spec: str, faults: Faults) -> None:
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, _, seconds = item.rpartition("=")
        if name:
            faults.latency_by_name[name] = float(seconds)
        else:
            faults.latency = float(seconds)


def install_from_environment() -> FakeNvml | None:
    """Install the fake the environment asks for, if any; returns it."""
    spec = os.environ.get(ENV_SPEC)
    if not spec:
        return None
    fake = fake_from_spec(spec)
    _parse_lose(os.environ.get(ENV_LOSE, ""), fake.faults)
    _parse_hang(os.environ.get(ENV_HANG, ""), fake.faults)
    _parse_latency(os.environ.get(ENV_LATENCY, ""), fake.faults)
    price(fake, os.environ)
    log = os.environ.get(ENV_INIT_LOG)
    if log:
        _log_inits(fake, Path(log))
    cues = os.environ.get(ENV_CUES)
    if cues:
        follow_cues(fake, Path(cues))
    install(fake)
    return fake


def apply_cue(fake: FakeNvml, line: str) -> None:
    """Act on one cue line (see the module's notes); raises ValueError for a bad one."""
    words = line.split()
    if not words:
        return
    verb, gpu = words[0], int(words[1])
    if verb == "xid":
        gi = int(words[3]) if len(words) > 3 else None
        ci = int(words[4]) if len(words) > 4 else None
        fake.inject_xid(gpu, int(words[2]), gi, ci)
    elif verb == "event":
        name = words[2]
        kind = int(name, 0) if name[:1].isdigit() else int(getattr(pynvml, name))
        fake.inject_event(gpu, kind, int(words[3]) if len(words) > 3 else 0)
    elif verb == "set":
        fake.set_gpu(gpu, **_changes(fake, gpu, words[2:]))
    elif verb == "lose":
        fake.lose(gpu)
    else:
        raise ValueError(f"unknown cue {verb!r}")


def _changes(fake: FakeNvml, gpu: int, assignments: list[str]) -> dict[str, object]:
    """``part.field=value`` assignments as whole new parts of the GPU's current sample."""
    sample = fake.snapshots[-1].gpus[gpu]
    parts: dict[str, object] = {}
    for assignment in assignments:
        path, _, text = assignment.partition("=")
        part, _, name = path.partition(".")
        current = parts.get(part, getattr(sample, part))
        old = getattr(current, name)
        value: object = bool(int(text)) if isinstance(old, bool) else int(text)
        parts[part] = dataclasses.replace(current, **{name: value})  # type: ignore[type-var]
    return parts


def follow_cues(fake: FakeNvml, path: Path, period: float = 0.05) -> threading.Thread:
    """Apply the lines appended to ``path`` as they come, on a daemon thread."""

    def run() -> None:
        done = 0
        while True:
            try:
                lines = path.read_text(encoding="utf-8").splitlines()
            except FileNotFoundError:
                lines = []
            complete = lines if path.exists() and _ends_in_newline(path) else lines[:-1]
            for line in complete[done:]:
                try:
                    apply_cue(fake, line)
                except (ValueError, IndexError, AttributeError, TypeError) as error:
                    sys.stderr.write(f"fake NVML: bad cue {line!r}: {error}\n")
            done = max(done, len(complete))
            time.sleep(period)

    thread = threading.Thread(target=run, name="fake-nvml-cues", daemon=True)
    thread.start()
    return thread


def _ends_in_newline(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) == b"\n"
    except OSError:
        return False


def price(fake: FakeNvml, environ: Mapping[str, str]) -> None:
    """Charge ``fake``'s calls as ``GPUTOP_FAKE_NVML_COSTS`` says, spent in Python or, with
    ``GPUTOP_FAKE_NVML_PRICE_LIB``, in C."""
    costs = environ.get(ENV_COSTS)
    if not costs:
        return
    fake.faults.prices = load_prices(Path(costs))
    library = environ.get(ENV_PRICE_LIB)
    if library:
        spend_in_c = ctypes.CDLL(library).gputop_fake_nvml_spend
        spend_in_c.argtypes = (ctypes.c_double, ctypes.c_double)
        spend_in_c.restype = None
        fake.spend = lambda _name, cpu, wall: spend_in_c(cpu, wall)


def _log_inits(fake: FakeNvml, log: Path) -> None:
    start = fake.nvmlInitWithFlags

    def logged(flags: object) -> int:
        with log.open("a", encoding="utf-8") as out:
            out.write(f"{os.getpid()}\n")
        return start(flags)

    # The library bound its C functions when it was made: the log goes in there.
    fake.library._functions["nvmlInitWithFlags"].impl = logged
