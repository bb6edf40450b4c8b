"""The live path of the CLI: NVML -> (record) -> --gpu selection -> headless output or the TUI.

Headless modes print to stdout and notes to stderr:

* ``--pick N``: the N least used GPUs as ``1,3`` for CUDA_VISIBLE_DEVICES;
* ``--once`` / ``--json``: one snapshot (with ``--count N``: N of them, one per interval;
  JSON then prints one document per line);
* ``--count N`` alone: N summaries.

``--record FILE`` appends every snapshot taken to FILE as nvidia-smi XML, headless or with the
TUI. The recording holds every GPU the driver reports, not only the ``--gpu`` selection:
nvidia-smi XML has no NVML index, replay numbers GPUs by their order in the document, so a
recording of a subset would renumber them; select again at replay (``--replay F --gpu 1``).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TextIO

from gputop.cli.driver_start import DriverStart, WaitingFeed
from gputop.cli.options import Options
from gputop.cli.pick import DEFAULT_SAMPLES, format_pick, order_note, pick_gpus
from gputop.cli.sinks import check_machine, open_sinks
from gputop.model import Snapshot
from gputop.sinks.fanout import SnapshotSinks
from gputop.sources.base import Source
from gputop.sources.gpu_select import GpuSelection, describe_visible_devices
from gputop.sources.host.procinfo import ProcessEnricher, find_host_proc_root, foreign_hint


class LiveFeed:
    """A Source over the live source that records each raw snapshot and applies ``--gpu``.

    The first snapshot (taken to check ``--gpu`` before anything starts) is handed out by the
    first ``poll``, so nothing is sampled twice. ``close`` closes the source once, whoever
    calls it first; the recorder is its creator's to close.
    """

    def __init__(
        self,
        source: Source,
        *,
        selection: GpuSelection | None = None,
        recorder: SnapshotSinks | None = None,
        first: Snapshot | None = None,
        on_sink_failure: Callable[[str], None] | None = None,
    ) -> None:
        self._source = source
        self._selection = selection
        self._recorder = recorder
        self._on_sink_failure = on_sink_failure
        self._pending = first
        self._closed = False

    @property
    def recorder(self) -> SnapshotSinks | None:
        """Where snapshots are being recorded, if anywhere (the TUI may show it)."""
        return self._recorder

    def poll(self) -> Snapshot:
        """The next snapshot, recorded whole, then narrowed to the selection.

        A sink that fails to write stops (the others go on); ``on_sink_failure`` hears its
        error once.
        """
        snapshot = self._pending if self._pending is not None else self._source.poll()
        self._pending = None
        if self._recorder is not None:
            for failure in self._recorder.write(snapshot):
                if self._on_sink_failure is not None:
                    self._on_sink_failure(failure)
        if self._selection is not None:
            # A GPU that falls off the bus mid-run just disappears from the view.
            snapshot = self._selection.apply(snapshot, strict=False)
        return snapshot

    def close(self) -> None:
        """Close the source; later calls do nothing."""
        if not self._closed:
            self._closed = True
            self._source.close()


def open_live_source() -> Source:
    """The NVML source with process enrichment.

    Raises:
        NoDriver, NoPermission: NVML cannot be used here (one line naming the case).
    """
    from gputop.sources.nvml.source import open_nvml_source

    enricher = ProcessEnricher(host_proc_root=find_host_proc_root())
    return open_nvml_source(enrich=enricher)


def run_live(
    options: Options,
    *,
    open_source: Callable[[], Source] | None = None,
    environ: Mapping[str, str] | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Run gputop on live NVML data; return the exit code.

    The keyword arguments exist for tests (a fake source instead of ``open_live_source``,
    captured output, no real sleeping).

    Raises:
        BadArguments: ``--gpu`` is malformed or matches nothing (exit 2).
        NoDriver, NoPermission: NVML cannot be used (exit 1).
        Fatal: either of those, found once the TUI was already up waiting for the driver.
    """
    env = os.environ if environ is None else environ
    out = sys.stdout if stdout is None else stdout
    err = sys.stderr if stderr is None else stderr
    # Syntax errors before NVML starts: no driver work for a typo.
    selection = GpuSelection.parse(options.gpu) if options.gpu is not None else None
    starting = DriverStart(open_source or open_live_source)
    if options.headless:
        source = starting.wait_saying_so(err)
    else:
        opened = _open_while_the_ui_loads(starting)
        if opened is None:
            return _run_tui_while_the_driver_starts(options, starting, selection, err)
        source = opened
    feed = LiveFeed(source)  # whichever feed is current closes the source, once
    recorder: SnapshotSinks | None = None
    try:
        first = source.poll()
        if selection is not None:
            selection.apply(first)  # strict: every item must name something now
        recorder = open_sinks(options, machine=first)
        if not options.headless:
            from gputop.cli.tui import run_tui

            # The TUI's pipeline applies --gpu and records (whole snapshots) itself, and
            # turns a failed write into a note instead of an exit.
            feed = LiveFeed(source, first=first)
            code = run_tui(options, source=feed, recorder=recorder)
            return _after_the_tui(code, recorder, err)

        def sink_failed(failure: str) -> None:
            print(f"gputop: {failure}", file=err)

        feed = LiveFeed(
            source, selection=selection, recorder=recorder, first=first, on_sink_failure=sink_failed
        )
        note = describe_visible_devices(env, len(first.gpus))
        if note is not None:
            print(f"gputop: note: {note}", file=err)
        if options.pick is not None:
            return _with_sinks(_pick(options, feed, env, out, err, sleep, clock), recorder)
        return _with_sinks(_headless(options, feed, out, err, sleep, clock), recorder)
    finally:
        try:
            if recorder is not None:
                recorder.close()
        finally:
            feed.close()


SINK_FAILED = 1
"""The exit code of a run whose --record or --log stopped on a failed write."""


def _with_sinks(code: int, recorder: SnapshotSinks | None) -> int:
    """``code``, or ``SINK_FAILED`` when a sink failed in an otherwise successful run."""
    if code == 0 and recorder is not None and recorder.failures:
        return SINK_FAILED
    return code


def _after_the_tui(code: int, recorder: SnapshotSinks | None, err: TextIO) -> int:
    """The exit code once the TUI has ended; a failed sink, shown in the header while the
    TUI ran, is said on stderr too (the alternate screen has gone with it)."""
    for failure in recorder.failures if recorder is not None else ():
        print(f"gputop: {failure}", file=err)
    return _with_sinks(code, recorder)


START_GRACE = 0.5
"""Seconds the driver may take beyond the UI's import before the TUI starts without it."""


def _open_while_the_ui_loads(starting: DriverStart) -> Source | None:
    """The source once open, importing the TUI meanwhile; None if it is still opening.

    Starting the driver is mostly waiting in C calls that let go of the GIL, and importing
    Textual is mostly Python. Side by side, the first frame waits for the longer of the two
    instead of both. The first snapshot is taken after, here: it is Python-heavy, and run
    beside the import it would only make both wait their turn for the GIL. Errors (no
    driver, no permission) are raised here as ever. A driver that takes longer than the
    import and ``START_GRACE`` is left to start while the TUI runs and says it waits.
    """
    try:
        import gputop.ui.app  # noqa: F401 -- only for its time: Textual loads meanwhile
    except Exception:
        # The UI cannot start: the source, once open, is closed. (On Ctrl-C nothing waits
        # for a driver that may take seconds: the thread is a daemon.)
        starting.abandon()
        raise
    if not starting.wait(START_GRACE):
        return None
    return starting.result()


def _run_tui_while_the_driver_starts(
    options: Options, starting: DriverStart, selection: GpuSelection | None, err: TextIO
) -> int:
    """The TUI at once, over a driver that is still starting (``WaitingFeed``).

    Raises:
        Fatal: the driver failed to start, ``--gpu`` names none of its GPUs, or ``--record``
            holds another machine's recording.
    """
    from gputop.cli.tui import run_tui

    def check(first: Snapshot) -> None:
        if selection is not None:
            selection.apply(first)  # strict: every item must name something
        check_machine(options, first)  # nothing is recorded before the first snapshot

    feed = WaitingFeed(starting, check)
    recorder: SnapshotSinks | None = None
    try:
        # Opened now (an unwritable path is refused before the TUI starts); whether
        # --record continues a recording of this machine waits for the driver (``check``).
        recorder = open_sinks(options)
        code = run_tui(options, source=feed, recorder=recorder)
        return _after_the_tui(code, recorder, err)
    finally:
        try:
            if recorder is not None:
                recorder.close()
        finally:
            feed.close()


def _pick(
    options: Options,
    feed: LiveFeed,
    env: Mapping[str, str],
    out: TextIO,
    err: TextIO,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
) -> int:
    assert options.pick is not None
    # Several samples, so that a job between two bursts (data loading) still shows as busy.
    samples = _schedule(options.count or DEFAULT_SAMPLES, options.interval, feed, sleep, clock)
    picked = pick_gpus(list(samples), options.pick)
    print(format_pick(picked), file=out)
    note = order_note(env)
    if note is not None:
        print(f"gputop: note: {note}", file=err)
    return 0


def _headless(
    options: Options,
    feed: LiveFeed,
    out: TextIO,
    err: TextIO,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
) -> int:
    from gputop.sinks.json import snapshot_json
    from gputop.sinks.summary import format_summary

    count = options.count or 1
    hinted = False
    start = clock()
    for tick in range(count):
        if tick:
            # Ticks on a fixed schedule: a slow poll does not push every later tick back.
            delay = start + tick * options.interval - clock()
            if delay > 0:
                sleep(delay)
        snapshot = feed.poll()
        if options.json:
            print(snapshot_json(snapshot, indent=None if count > 1 else 2), file=out)
        else:
            print(format_summary(snapshot), file=out)
        out.flush()
        hint = None if hinted else foreign_hint(snapshot)
        if hint is not None:
            print(f"gputop: note: {hint}", file=err)
            hinted = True
    return 0


def _schedule(
    count: int,
    interval: float,
    feed: LiveFeed,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
) -> Iterator[Snapshot]:
    """``count`` snapshots, ``interval`` seconds apart (as ``_headless`` takes them)."""
    start = clock()
    for tick in range(count):
        if tick:
            # Ticks on a fixed schedule: a slow poll does not push every later tick back.
            delay = start + tick * interval - clock()
            if delay > 0:
                sleep(delay)
        yield feed.poll()
