"""The id()-keyed memos beyond the NVML source, each off against on in one run (issue 30 §2).

``bench_nvml.py --tricks`` measures the data path's tricks; these are the others that key a
memo by an object's ``id()``, each checked against the object itself:

* ``safe_view``: ``ui.safe_view.SafeView`` hands on last tick's safe copy of a snapshot it
  saw last tick. Every tick carries the window of the last 45 snapshots (the diagnosis reads
  them), so without it every tick walks all 45 again. Measured on the ticks of the live
  pipeline on the fake 8 H100 x 7 MIG box with 200 processes, its clock moved a second a
  tick; thread CPU per tick, beside the poller's own ``advance`` in the same run (the fake
  library's Python included there).
* ``label_text``: ``sinks.prometheus.render.exposition`` writes the label set of a device
  once and reuses it for every series of that device. One scrape of the same box.
* ``owner_memo``: ``ui.render.process_rows.group_rows`` used to look each row's holder up
  by its owner's ``id()`` before ``holder_of``'s own cache; the variant is kept here, as it
  was, to show why it went. 200 processes of 20 pods.

Run: ``.venv/bin/python benchmarks/bench_memos.py [--rounds 5]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "tests")]

import pynvml  # noqa: E402, TID251 -- the real pynvml over the fake library

from fakes.nvml_fake import FakeNvml  # noqa: E402
from fakes.nvml_install import installed  # noqa: E402
from fakes.nvml_scenarios import h100_mig_box, varying  # noqa: E402
from gputop.insight.diagnosis import gpu_state  # noqa: E402
from gputop.model import GpuSample, Owner, Snapshot  # noqa: E402
from gputop.pipeline.core import Pipeline  # noqa: E402
from gputop.pipeline.feed import LiveFeed  # noqa: E402
from gputop.pipeline.tick import Tick  # noqa: E402
from gputop.sinks.prometheus import latest as latest_module  # noqa: E402
from gputop.sinks.prometheus import render  # noqa: E402
from gputop.sinks.prometheus.latest import LatestSample  # noqa: E402
from gputop.sinks.prometheus.tracker import ExportTracker  # noqa: E402
from gputop.sources.host.procinfo import ProcessEnricher  # noqa: E402
from gputop.sources.nvml.source import NvmlSource  # noqa: E402
from gputop.ui.render.process_rows import COLUMN_INDEX, ProcessRow, build_rows, group_rows  # noqa: E402
from gputop.ui.safe_view import SafeView  # noqa: E402


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def live_ticks(count: int) -> tuple[list[Tick], float]:
    """``count`` ticks of the live pipeline on the 8x7 box with 200 processes, after 50 to
    fill the window, and the poller's thread CPU per tick (ms)."""
    fake = FakeNvml(varying(h100_mig_box(), ticks=count + 70))
    clock = _Clock()
    ticks = []
    with installed(fake):
        pynvml.nvmlInit()
        source = NvmlSource(pynvml, host="bench", enrich=ProcessEnricher(clock=clock), clock=clock)
        try:
            pipeline = Pipeline(LiveFeed(source))
            pipeline.start()
            for _ in range(50):
                clock.now += 1.0
                pipeline.advance()
            began = time.thread_time_ns()
            for _ in range(count):
                clock.now += 1.0
                ticks.append(pipeline.advance())
            spent = (time.thread_time_ns() - began) / count / 1e6
        finally:
            source.close()
            pynvml.nvmlShutdown()
    return ticks, spent


class _Forgetful(SafeView):
    """SafeView that remembers nothing from one call to the next."""

    def __call__(self, value: Any) -> Any:
        self._now.clear()
        self._changed.clear()
        return super().__call__(value)


def safe_view_ms(ticks: list[Tick], view: SafeView) -> float:
    """Thread CPU per tick (ms) of handing ``ticks`` through ``view`` in order, the first
    (which meets the whole window for the first time) left out."""
    view(ticks[0])
    began = time.thread_time_ns()
    for tick in ticks[1:]:
        view(tick)
    return (time.thread_time_ns() - began) / (len(ticks) - 1) / 1e6


def exposition_without_label_text(families: Iterable[Any]) -> bytes:
    """``render.exposition`` with each series' labels written out afresh."""
    out: list[str] = []
    for family in families:
        if not family.samples:
            continue
        name = family.name
        text = family.documentation.replace("\\", "\\\\").replace("\n", "\\n")
        out.append(f"# HELP {name} {text}\n# TYPE {name} {family.type}\n")
        for sample in family.samples:
            labels: Mapping[str, str] = sample.labels
            body = ",".join(f'{k}="{render._escape(v)}"' for k, v in labels.items())
            braces = f"{{{body}}}" if body else ""
            out.append(f"{sample.name}{braces} {render._go_float(sample.value)}\n")
    return "".join(out).encode("utf-8")


def _classify(gpu: GpuSample) -> str:
    return gpu_state(gpu).value


def render_ms(latest: LatestSample, runs: int) -> float:
    """Median wall time of a scrape's render (ms)."""
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        latest.render()
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1000


def pod_rows() -> list[ProcessRow]:
    """The 8x7 box's 200 processes in 20 pods, the processes of a pod sharing one owner."""
    owners = [
        Owner(pod=f"train-{i}", namespace="ml", pod_uid=f"uid-{i:04d}", container="trainer")
        for i in range(20)
    ]
    shot = h100_mig_box(8, 7, 200)
    count = 0
    gpus = []
    for gpu in shot.gpus:
        processes = []
        for process in gpu.processes:
            processes.append(dataclasses.replace(process, owner=owners[count % len(owners)]))
            count += 1
        gpus.append(dataclasses.replace(gpu, processes=tuple(processes)))
    grouped: Snapshot = dataclasses.replace(shot, gpus=tuple(gpus))
    return build_rows(grouped, time.time())


def holders_by_owner_id(rows: list[ProcessRow]) -> None:
    """The lookup ``group_rows`` used to make: by the owner's id() first."""
    seen: dict[int, object] = {}
    for row in rows:
        owner = row.process.owner
        if id(owner) not in seen:
            seen[id(owner)] = row.holder


def holders_as_shipped(rows: list[ProcessRow]) -> None:
    """The lookup ``group_rows`` makes now."""
    for row in rows:
        _ = row.holder


def micro_us(call: Callable[[], object], runs: int) -> float:
    """Median wall time of ``call`` (us)."""
    times = []
    for _ in range(runs):
        began = time.perf_counter_ns()
        call()
        times.append(time.perf_counter_ns() - began)
    return statistics.median(times) / 1e3


def _listed(figures: list[float]) -> str:
    return ", ".join(f"{x:.2f}" for x in figures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--ticks", type=int, default=40)
    args = parser.parse_args()

    ticks, advance_ms = live_ticks(args.ticks)
    print(
        f"safe_view: {args.ticks} ticks of the 8x7 box, 200 processes, a window of "
        f"{len(ticks[-1].window)} snapshots; the poller's advance {advance_ms:.2f} ms a tick"
    )
    on, off = [], []
    for _ in range(args.rounds):
        on.append(safe_view_ms(ticks, SafeView()))
        off.append(safe_view_ms(ticks, _Forgetful()))
    print(
        f"  memo on {statistics.median(on):.2f} ms a tick, off {statistics.median(off):.2f} "
        f"(rounds: on {_listed(on)}; off {_listed(off)})"
    )

    latest = LatestSample(ExportTracker(_classify))
    latest.take(h100_mig_box(8, 7, 200))
    shipped = render.exposition
    on, off = [], []
    for _ in range(args.rounds):
        on.append(render_ms(latest, 100))
        setattr(latest_module, "exposition", exposition_without_label_text)  # noqa: B010
        try:
            off.append(render_ms(latest, 100))
        finally:
            setattr(latest_module, "exposition", shipped)  # noqa: B010
    size = len(latest.render()[0])
    print(f"label_text: a scrape of the 8x7 box ({size} bytes)")
    print(
        f"  cache on {statistics.median(on):.2f} ms a render, off {statistics.median(off):.2f}"
        f" ({100 * (1 - statistics.median(on) / statistics.median(off)):.0f} % of the render)"
    )

    rows = pod_rows()
    memo, plain, whole = [], [], []
    for _ in range(args.rounds):
        memo.append(micro_us(lambda: holders_by_owner_id(rows), 500))
        plain.append(micro_us(lambda: holders_as_shipped(rows), 500))
        whole.append(micro_us(lambda: group_rows(rows, COLUMN_INDEX["gpu_memory"], True, ()), 100))
    saved = statistics.median(plain) - statistics.median(memo)
    print(f"owner_memo: {len(rows)} processes of 20 pods")
    print(
        f"  by id() {statistics.median(memo):.0f} us, as shipped {statistics.median(plain):.0f}"
        f" us: {saved:.0f} us a call, {100 * saved / statistics.median(whole):.1f} % of "
        f"group_rows ({statistics.median(whole):.0f} us)"
    )


if __name__ == "__main__":
    main()
