"""What one NVML tick costs: calls made, and time split between our code, pynvml and NVML.

Runs NvmlSource over the fake NVML (tests/fakes) for three machines: 1 GPU, 8 GPUs, and
8 H100s x 7 MIG instances with 200 processes, on a simulated 1 s interval (the source's clock
moves 1 s a tick, so values that change rarely are re-read every ``SLOW_REFRESH`` s, i.e. every
5th tick). For each, four rows:

* ``first``: the first tick, which also reads static values;
* ``steady``: the median of the ticks that read only what moves;
* ``refresh``: the median of the ticks that also re-read the slow values (modes, ECC counters,
  power limit, BAR1, the MIG layout);
* ``mean``: the mean over all ticks after the first: the cost per second at a 1 s interval.

Columns:

* ``calls``: C-level NVML calls per tick, counted in the fake;
* ``tick``: wall time of one ``poll()``;
* ``nvml``: time inside the fake's C functions (a real driver's share would go here);
* ``pynvml``: time in pynvml's wrappers around those calls (ctypes marshalling);
* ``ours``: the rest, gputop's own Python: tick - pynvml - nvml.

The target: ``ours`` under 2 ms per steady tick for 8 GPUs. ``--slow-refresh 0`` re-reads
everything every tick (how gputop polled before slow values). Run:
``.venv/bin/python benchmarks/bench_nvml.py [--ticks N] [--slow-refresh S]``.

``--cpu`` measures something else: the thread CPU per tick of the whole live pipeline (sampling
threads, less the fake library's own CPU, and the polling thread with its host enrichment,
history and diagnosis) on the 8x7 MIG box with values moving, as the TUI runs it.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import pynvml  # noqa: TID251 -- the real pynvml over the fake library

from fakes.nvml_fake import FakeNvml
from fakes.nvml_install import installed
from fakes.nvml_scenarios import gpu_sample, h100_mig_box, plain_box, snapshot, varying
from gputop.model import Snapshot
from gputop.sources.nvml.device import SLOW_REFRESH
from gputop.sources.nvml.source import NvmlSource

TARGET_OURS_MS_8_GPUS = 2.0
INTERVAL = 1.0
"""Simulated seconds between ticks."""


class TickClock:
    """The source's monotonic clock: moved by the benchmark, one interval a tick."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class TimedModule:
    """pynvml with every function call timed (classes and constants pass through)."""

    def __init__(self, module: Any) -> None:
        self._module = module
        self._wrapped: dict[str, Any] = {}
        self._lock = threading.Lock()
        self.ns = 0

    def __getattr__(self, name: str) -> Any:
        wrapped = self._wrapped.get(name)
        if wrapped is not None:
            return wrapped
        value = getattr(self._module, name)
        if name == "_nvmlGetFunctionPointer":
            # gputop calls some C functions directly (the process lists): time those too, so
            # their NVML time is not taken for ours.
            value = self._pointers(value)
        elif callable(value) and not isinstance(value, type):
            value = self._timed(value)
        self._wrapped[name] = value
        return value

    def _pointers(self, lookup: Callable[[str], Any]) -> Callable[[str], Any]:
        timed: dict[str, Any] = {}

        def pointer(name: str) -> Any:
            fn = timed.get(name)
            if fn is None:
                fn = timed[name] = self._timed(lookup(name))
            return fn

        return pointer

    def _timed(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter_ns()
            try:
                return fn(*args, **kwargs)
            finally:
                elapsed = time.perf_counter_ns() - started
                with self._lock:
                    self.ns += elapsed

        return call


@dataclass
class Tick:
    calls: int
    total_ns: int
    pynvml_ns: int
    nvml_ns: int

    @property
    def ours_ns(self) -> int:
        return self.total_ns - self.pynvml_ns

    @property
    def wrappers_ns(self) -> int:
        return self.pynvml_ns - self.nvml_ns


def measure(
    snap: Snapshot, ticks: int, deadline: float | None, slow_refresh: float
) -> tuple[Tick, list[Tick]]:
    """The first tick and the ``ticks`` after it, one simulated interval apart."""
    fake = FakeNvml(snap)
    timed = TimedModule(pynvml)
    clock = TickClock()
    results: list[Tick] = []
    with installed(fake):
        pynvml.nvmlInit()
        source = NvmlSource(
            timed, deadline=deadline, host="bench", slow_refresh=slow_refresh, clock=clock
        )
        try:
            for number in range(ticks + 1):
                clock.now = number * INTERVAL
                mark = fake.mark()
                timed.ns = 0
                fake.time_in_calls_ns = 0
                started = time.perf_counter_ns()
                source.poll()
                total = time.perf_counter_ns() - started
                results.append(
                    Tick(len(fake.calls_since(mark)), total, timed.ns, fake.time_in_calls_ns)
                )
        finally:
            source.close()
            pynvml.nvmlShutdown()
    return results[0], results[1:]


def _ms(ns: float) -> str:
    return f"{ns / 1e6:7.2f}"


def _median(ticks: list[Tick]) -> Tick:
    return Tick(
        calls=int(statistics.median(t.calls for t in ticks)),
        total_ns=int(statistics.median(t.total_ns for t in ticks)),
        pynvml_ns=int(statistics.median(t.pynvml_ns for t in ticks)),
        nvml_ns=int(statistics.median(t.nvml_ns for t in ticks)),
    )


def _mean(ticks: list[Tick]) -> Tick:
    return Tick(
        calls=round(statistics.mean(t.calls for t in ticks)),
        total_ns=int(statistics.mean(t.total_ns for t in ticks)),
        pynvml_ns=int(statistics.mean(t.pynvml_ns for t in ticks)),
        nvml_ns=int(statistics.mean(t.nvml_ns for t in ticks)),
    )


def split(later: list[Tick], slow_refresh: float) -> tuple[list[Tick], list[Tick]]:
    """(steady ticks, refresh ticks) of the ticks after the first; with a cadence no longer
    than the interval every tick reads everything, and all count as steady."""
    every = math.ceil(slow_refresh / INTERVAL - 1e-9)
    if every <= 1:
        return later, []
    steady = [t for n, t in enumerate(later, start=1) if n % every]
    refresh = [t for n, t in enumerate(later, start=1) if not n % every]
    return steady, refresh


@dataclass
class ThreadCpu:
    """CPU milliseconds per tick, by side."""

    sampling: float
    """The sampling threads, less the fake library's own CPU."""
    fake: float
    """The fake library's own CPU (it stands in for the driver)."""
    poller: float
    """The polling thread: hand-offs, host enrichment, history, diagnosis."""


def cpu_per_tick(ticks: int, gap: float) -> ThreadCpu:
    """Thread CPU of ``ticks`` ticks of the live pipeline on the 8x7/200 box, values moving.

    Threads and enrichment as the TUI runs them; the source's clock moves 1 s a tick (so slow
    values are re-read every 5th) while ticks are ``gap`` s apart in real time, long enough
    for the sampling threads to go back to sleep between ticks as they do at a 1 s interval.
    """
    from fake_cpu import FakeCpu
    from gputop.pipeline.core import Pipeline
    from gputop.pipeline.feed import LiveFeed
    from gputop.sources.host.procinfo import ProcessEnricher

    fake = FakeNvml(varying(h100_mig_box(), ticks=ticks + 20))
    fake.calls = deque(maxlen=16)  # type: ignore[assignment]  # the log would only grow
    counter = FakeCpu()
    counter.install(fake)
    fake_ns = counter.ns_by_thread
    clock = TickClock()
    with installed(fake):
        pynvml.nvmlInit()
        enricher = ProcessEnricher(clock=clock)
        source = NvmlSource(pynvml, host="bench", enrich=enricher, clock=clock)
        pipeline = Pipeline(LiveFeed(source))
        try:
            pipeline.start()
            for _ in range(10):
                clock.now += INTERVAL
                pipeline.advance()
            samplers = [t.ident for t in threading.enumerate() if t.name.startswith("gputop-nvml")]
            me = threading.get_ident()

            def cpu() -> tuple[int, int, int, int]:
                sampling = sum(
                    time.clock_gettime_ns(time.pthread_getcpuclockid(t)) for t in samplers if t
                )
                faked = sum(fake_ns.get(t, 0) for t in samplers if t)
                return sampling, faked, time.thread_time_ns(), fake_ns.get(me, 0)

            before = cpu()
            for _ in range(ticks):
                clock.now += INTERVAL
                time.sleep(gap)
                pipeline.advance()
            after = cpu()
        finally:
            source.close()
            pynvml.nvmlShutdown()
    spent = [(b - a) / ticks / 1e6 for a, b in zip(before, after, strict=True)]
    return ThreadCpu(spent[0] - spent[1], spent[1], spent[2] - spent[3])


def _naive_enrichment(self: Any, gpus: list[Any]) -> list[Any]:
    """``_Enrichment.__call__`` without last tick's merge: every row merged afresh."""
    from dataclasses import replace

    from gputop.sources.nvml import source as nvml_source

    pids = {p.pid: p for gpu in gpus for p in gpu.processes}
    if self._lookup is not None:
        facts = dict(self._lookup.host_fields(pids))
    else:
        facts = {host.pid: host for host in self._enrich(tuple(pids.values()))}

    def merge(process: Any) -> Any:
        host = facts.get(process.pid)
        if host is None:
            return process
        update, name = nvml_source._changes(host)
        if process.name is None and name is not None:
            return replace(process, name=name, **update)
        return replace(process, **update)

    out = []
    for gpu in gpus:
        if not gpu.processes:
            out.append(gpu)
            continue
        devices = tuple(
            replace(d, processes=tuple(merge(p) for p in d.processes)) if d.processes else d
            for d in gpu.mig_devices
        )
        out.append(
            replace(gpu, processes=tuple(merge(p) for p in gpu.processes), mig_devices=devices)
        )
    return out


def _switch_off(trick: str) -> Callable[[], None]:
    """Turn one speed trick of the data path off; returns what turns it back on."""
    from dataclasses import replace

    from gputop.sources.nvml import mig as nvml_mig
    from gputop.sources.nvml import processes as nvml_processes
    from gputop.sources.nvml import source as nvml_source

    saved: list[tuple[Any, str, Any]] = []

    def patch(owner: Any, name: str, value: Any) -> None:
        saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    if trick == "rebuilder":
        patch(nvml_source, "_with_rows", lambda obj, rows: replace(obj, processes=rows))
        patch(
            nvml_source,
            "_with_rows_and_devices",
            lambda obj, rows, devices: replace(obj, processes=rows, mig_devices=devices),
        )
    elif trick == "enrichment":
        patch(nvml_source._Enrichment, "__call__", _naive_enrichment)
    elif trick == "same_objects":
        for module in (nvml_source, nvml_processes, nvml_mig):
            patch(module, "same_objects", lambda new, old: False)
    elif trick != "none":
        raise ValueError(trick)

    def restore() -> None:
        for owner, name, value in reversed(saved):
            setattr(owner, name, value)

    return restore


TRICKS = {
    "none": "every trick on (as shipped)",
    "rebuilder": "_rebuilder (source.py): positional rebuild instead of dataclasses.replace",
    "enrichment": "_Enrichment's reuse of last tick's merge by id() (source.py)",
    "same_objects": "same_objects: last tick's tuple again when nothing changed (source, "
    "processes, mig)",
}


def tricks_table(ticks: int, gap: float, rounds: int) -> None:
    """Each trick off in turn against all on, in the same rounds: thread CPU per tick."""
    runs: dict[str, list[float]] = {name: [] for name in TRICKS}
    for _ in range(rounds):
        for name in TRICKS:
            restore = _switch_off(name)
            try:
                got = cpu_per_tick(ticks, gap)
            finally:
                restore()
            runs[name].append(got.sampling + got.poller)
    base = statistics.median(runs["none"])
    print(
        f"thread CPU per tick (sampling + poller, the fake's own left out), 8 GPUs x 7 MIG, "
        f"200 procs, median of {rounds} rounds of {ticks} ticks"
    )
    print("| trick | off: ms per tick | on: ms per tick | gain | gain, % of the tick |")
    print("| --- | --- | --- | --- | --- |")
    for name, label in TRICKS.items():
        if name == "none":
            continue
        off = statistics.median(runs[name])
        print(
            f"| {label} | {off:.2f} | {base:.2f} | {off - base:+.2f} ms | "
            f"{100 * (off - base) / off:+.1f} % |"
        )


TARGET_OWNERS_MS_200 = 3.0
"""Attribution (container, pod, job) of 200 processes, per tick after the first."""


@dataclass
class OwnerCost:
    """Milliseconds of attribution for ``processes`` PIDs."""

    processes: int
    first: float
    """The first tick: every cgroup, environ and the node's files read."""
    cached: float
    """Median tick after it, the start time handed in (as the enricher does)."""
    cached_reading_stat: float
    """Median tick with the lookup reading each start time itself."""
    enricher_without: float
    """Median tick of the host-procfs enricher (200 other containers' PIDs), no attribution."""
    enricher_with: float
    """The same with attribution."""


def owners_per_tick(processes: int = 200, ticks: int = 50) -> OwnerCost:
    """Attribution cost over a fake node of ``processes`` PIDs in pods, Docker and Slurm jobs
    (the real cgroup paths of the tests, ``support.fake_node``), all other containers' PIDs
    seen through a host procfs, as a pod without hostPID sees them."""
    import tempfile

    from gputop.sources.host.owners import OwnerLookup
    from gputop.sources.host.procinfo import ProcessEnricher
    from support.fake_node import REAL, FakeNode

    def median_ms(run: Callable[[], object], rounds: int) -> float:
        spent = []
        for _ in range(rounds):
            started = time.perf_counter_ns()
            run()
            spent.append(time.perf_counter_ns() - started)
        return statistics.median(spent) / 1e6

    kinds = sorted(REAL)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        node = FakeNode(root)
        me = node.proc / "self"
        me.mkdir()
        (me / "status").write_text("Name:\tgputop\nNSpid:\t5000\t7\n")
        pids = list(range(100_000, 100_000 + processes))
        for n, pid in enumerate(pids):
            real = REAL[kinds[n % len(kinds)]]
            node.process(pid, real.text, start=pid)
            (node.proc / str(pid) / "status").write_text(f"Name:\tpython3\nNSpid:\t{pid}\n")
            if real.pod_uid is not None:
                node.pod_logs("ml", f"job-{n % len(kinds)}", real.pod_uid, "trainer")
        lookup = OwnerLookup(proc_root=node.proc, root=root)
        started = time.perf_counter_ns()
        for pid in pids:
            lookup.owner(pid, pid)
        first = (time.perf_counter_ns() - started) / 1e6

        def cached() -> None:
            for pid in pids:
                lookup.owner(pid, pid)

        def reading_stat() -> None:
            for pid in pids:
                lookup.owner(pid)

        clock = TickClock()
        plain = ProcessEnricher(proc_root=root / "none", host_proc_root=node.proc, clock=clock)
        owned = ProcessEnricher(
            proc_root=root / "none",
            host_proc_root=node.proc,
            clock=clock,
            owners=OwnerLookup(proc_root=node.proc, root=root),
        )
        owned.host_fields(pids)
        return OwnerCost(
            processes,
            first,
            median_ms(cached, ticks),
            median_ms(reading_stat, ticks),
            median_ms(lambda: plain.host_fields(pids), ticks),
            median_ms(lambda: owned.host_fields(pids), ticks),
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=50, help="ticks after the first (50)")
    parser.add_argument(
        "--slow-refresh",
        type=float,
        default=SLOW_REFRESH,
        help=f"seconds between re-reads of slow values ({SLOW_REFRESH:g}); 0: every tick",
    )
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="instead: thread CPU per tick of the live pipeline on the 8x7 MIG box",
    )
    parser.add_argument(
        "--gap", type=float, default=0.05, help="with --cpu: real seconds between ticks (0.05)"
    )
    parser.add_argument(
        "--owners",
        action="store_true",
        help="instead: the cost of naming 200 processes' containers, pods and jobs",
    )
    parser.add_argument(
        "--tricks",
        action="store_true",
        help="instead: each speed trick of the data path off in turn (with --cpu's setup)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="with --tricks: rounds (3)")
    args = parser.parse_args(argv)
    if args.tricks:
        tricks_table(args.ticks, args.gap, args.rounds)
        return 0
    if args.owners:
        cost = owners_per_tick(ticks=args.ticks)
        extra = cost.enricher_with - cost.enricher_without
        print(
            f"attribution of {cost.processes} processes (ms): first tick {cost.first:.2f}; "
            f"then per tick {cost.cached:.3f} cached ({cost.cached_reading_stat:.2f} when each "
            f"start time is read to check for a reused PID); host-procfs enricher "
            f"{cost.enricher_without:.2f} without, {cost.enricher_with:.2f} with "
            f"(+{extra:.2f})"
        )
        worst = max(cost.cached_reading_stat, extra)
        ok = worst < TARGET_OWNERS_MS_200
        print(
            f"target < {TARGET_OWNERS_MS_200:g} ms per tick after the first: "
            f"{worst:.2f} ms, {'OK' if ok else 'OVER'}"
        )
        return 0
    if args.cpu:
        got = cpu_per_tick(args.ticks, args.gap)
        print(
            f"thread CPU per tick, 8 GPUs x 7 MIG, 200 procs, as the TUI polls ({args.ticks} "
            f"ticks, {args.gap:g} s apart): sampling threads {got.sampling:.2f} ms (the fake "
            f"library's own {got.fake:.2f} ms left out), poller {got.poller:.2f} ms"
        )
        return 0
    machines = {
        "1 GPU": snapshot(gpu_sample(0)),
        "8 GPUs": plain_box(8),
        "8 GPUs x 7 MIG, 200 procs": h100_mig_box(),
    }
    print(f"gputop NVML tick cost over the fake NVML (Python {sys.version.split()[0]})")
    print(
        f"times in ms; {args.ticks} ticks after the first, {INTERVAL:g} s apart; slow values "
        f"re-read every {args.slow_refresh:g} s; steady/refresh = medians, mean = per tick"
    )
    header = f"{'machine':28} {'mode':8} {'tick':>7} {'calls':>6} {'tick':>7} {'nvml':>7} "
    header += f"{'pynvml':>7} {'ours':>7}"
    print(header)
    verdicts: list[str] = []
    for name, snap in machines.items():
        for mode, deadline in (("inline", None), ("threads", 2.0)):
            first, later = measure(snap, args.ticks, deadline, args.slow_refresh)
            steady, refresh = split(later, args.slow_refresh)
            rows: list[tuple[str, Tick, float]] = [("first", first, first.ours_ns)]
            ours_median = statistics.median(t.ours_ns for t in steady)
            rows.append(("steady", _median(steady), ours_median))
            if refresh and steady:
                rows.append(
                    ("refresh", _median(refresh), statistics.median(t.ours_ns for t in refresh))
                )
            rows.append(("mean", _mean(later), statistics.mean(t.ours_ns for t in later)))
            for label, tick, ours in rows:
                print(
                    f"{name:28} {mode:8} {label:>7} {tick.calls:6d} {_ms(tick.total_ns)} "
                    f"{_ms(tick.nvml_ns)} {_ms(tick.wrappers_ns)} {_ms(ours)}"
                )
            if name == "8 GPUs":
                ok = ours_median / 1e6 < TARGET_OURS_MS_8_GPUS
                verdicts.append(
                    f"8 GPUs {mode}: ours {ours_median / 1e6:.2f} ms per steady tick "
                    f"(target < {TARGET_OURS_MS_8_GPUS} ms): {'OK' if ok else 'OVER'}"
                )
    print()
    print(
        "threads: nvml and pynvml times are summed over the sampling threads; a call the GIL\n"
        "preempts keeps its clock running while another thread works, so there 'ours' is\n"
        "approximate (even negative on a busy machine). The inline rows split exactly."
    )
    for verdict in verdicts:
        print(verdict)
    return 0


if __name__ == "__main__":
    sys.exit(main())
