"""The headless modes, live or replayed, over one pipeline driven by hand (``CountedLoop``).

``--once`` / ``--json`` print one snapshot (``--count N``: N, JSON then one document a line);
``--pick N`` prints the free GPUs of the snapshots taken. Sinks (``--record``, ``--log``)
follow the pipeline's rule: a failed write stops that sink alone, said here once on stderr,
and the run ends with ``SINK_FAILED`` when it otherwise succeeded.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TextIO

from gputop.cli.options import Options
from gputop.cli.pick import format_pick, order_note, pick_gpus
from gputop.model import Snapshot
from gputop.model.safe_text import terminal_safe
from gputop.pipeline.core import Pipeline
from gputop.pipeline.loop import CountedLoop
from gputop.pipeline.tick import SinkStatus, Tick
from gputop.sinks.fanout import SnapshotSinks
from gputop.sinks.json import snapshot_json
from gputop.sinks.summary import format_summary

SINK_FAILED = 1
"""The exit code of a run whose --record or --log stopped on a failed write."""


def with_sinks(code: int, recorder: SnapshotSinks | None) -> int:
    """``code``, or ``SINK_FAILED`` when a sink failed in an otherwise successful run."""
    if code == 0 and recorder is not None and recorder.failures:
        return SINK_FAILED
    return code


class _SinkFailures:
    """Says on stderr, once, each sink that a tick shows stopped."""

    def __init__(self, err: TextIO) -> None:
        self._err = err
        self._before: tuple[SinkStatus, ...] = ()

    def say(self, tick: Tick) -> None:
        said = {(sink.option, sink.path) for sink in self._before if sink.error is not None}
        for sink in tick.sinks:
            if sink.error is not None and (sink.option, sink.path) not in said:
                print(f"gputop: {terminal_safe(sink.error)}", file=self._err, flush=True)
        self._before = tick.sinks


def print_snapshots(
    pipeline: Pipeline,
    options: Options,
    out: TextIO,
    err: TextIO,
    *,
    count: int | None,
    note: Callable[[Snapshot], str | None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Print each snapshot that arrives (``--json`` or a summary), flushed: a followed
    stream or a live run is read by a person or a pipe as it comes.

    Args:
        count: snapshots to print (None: until the feed ends).
        note: a note on a snapshot for stderr (said once, the first time there is one).
    """
    indent = None if (options.count or 1) > 1 else 2
    sinks = _SinkFailures(err)
    noted = note is None

    def show(tick: Tick) -> None:
        nonlocal noted
        sinks.say(tick)
        snapshot = tick.snapshot
        if options.json:
            print(snapshot_json(snapshot, indent=indent), file=out)
        else:
            print(format_summary(snapshot), file=out)
        out.flush()
        said = None if noted or note is None else note(snapshot)
        if said is not None:
            print(f"gputop: note: {terminal_safe(said)}", file=err)
            noted = True

    CountedLoop(pipeline, count=count, sleep=sleep, clock=clock).run(show)


def collect(
    pipeline: Pipeline,
    err: TextIO,
    *,
    count: int | None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> list[Snapshot]:
    """The snapshots that arrive (``count`` of them, or until the feed ends), for ``--pick``."""
    sinks = _SinkFailures(err)
    samples: list[Snapshot] = []

    def take(tick: Tick) -> None:
        sinks.say(tick)
        samples.append(tick.snapshot)

    CountedLoop(pipeline, count=count, sleep=sleep, clock=clock).run(take)
    return samples


def print_pick(
    samples: list[Snapshot], wanted: int, env: Mapping[str, str], out: TextIO, err: TextIO
) -> None:
    """``--pick``'s answer, and how CUDA will number the GPUs if that may surprise."""
    print(format_pick(pick_gpus(samples, wanted)), file=out)
    note = order_note(env)
    if note is not None:
        print(f"gputop: note: {terminal_safe(note)}", file=err)
