"""The live path of the CLI: NVML -> the pipeline (record, --gpu) -> headless output or the TUI.

Headless or not, snapshots go through the one ``Pipeline`` over a ``LiveFeed``: the TUI's is
driven by a thread, a headless run's by hand (``gputop.cli.headless``).

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
from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, TextIO

from gputop.cli.driver_start import DriverStart, WaitingFeed
from gputop.cli.no_tls import import_asyncio_without_tls
from gputop.cli.options import Options
from gputop.cli.sinks import check_machine, open_sinks
from gputop.model import Snapshot
from gputop.model.safe_text import terminal_safe
from gputop.pipeline.core import Pipeline
from gputop.pipeline.feed import LiveFeed
from gputop.pipeline.in_view import InView
from gputop.sources.base import Source
from gputop.sources.host.attribution import AttributedSource
from gputop.sources.host.incontainer import read_container_view
from gputop.sources.host.owners import open_owner_lookup
from gputop.sources.host.procinfo import (
    ProcessEnricher,
    find_host_proc_root,
    foreign_hint,
    host_proc_candidates,
)
from gputop.sources.k8s.kubelet import kubelet_socket
from gputop.sources.nvml.prices import MIG_ACTIVITY, SM_UTILIZATION

if TYPE_CHECKING:
    from gputop.pipeline.gpu_select import GpuSelection
    from gputop.sinks.fanout import SnapshotSinks
    from gputop.sources.nvml.gpm import GpmCadence


TUI_UNSHOWN = frozenset({"clocks.graphics", "clocks.video", "power.energy"})
"""GPU fields the TUI neither shows (its panels show the SM and memory clocks, nothing shows
the energy counter) nor writes with ``--log``: read on the source's slow cadence when the TUI
is all a run has (``--record`` writes them, and the headless modes print them)."""

PRICED = frozenset({*TUI_UNSHOWN, SM_UTILIZATION, MIG_ACTIVITY})
"""The fields a run reads less, or not at all, while nothing of it shows or writes them
(``gputop.sources.nvml.prices``): the graphics and video clocks every few seconds,
per-process utilization (2 ms a GPU a tick on an H200) and MIG activity (1-2 ms an instance)
never, the energy counter (5 ms) once a minute instead of every 10 s: only ``gputop export``
writes it."""

_SHOWN_BY_THE_TUI = frozenset({SM_UTILIZATION, MIG_ACTIVITY})
"""The process table's SM% column (for the GPUs with a process on screen) and the panels'
MIG rows."""
_WRITTEN_BY_JSON = frozenset({"clocks.graphics", "clocks.video", SM_UTILIZATION})
"""``--json``: every field with a JSON name (MIG activity and the energy counter have none)."""
_WRITTEN_BY_RECORD = frozenset({"clocks.graphics", "clocks.video"})
"""``--record``: nvidia-smi XML has every clock, and no per-process or MIG activity."""


def unshown_fields(options: Options) -> frozenset[str]:
    """The fields of :data:`PRICED` that nothing of this run shows or writes: for the TUI
    alone :data:`TUI_UNSHOWN`; ``--record`` writes the clocks, ``--json`` the clocks and
    per-process utilization; a summary (``--once``, ``--count``), ``--log`` and ``--pick``
    none of them."""
    wanted: set[str] = set()
    if not options.headless:
        wanted |= _SHOWN_BY_THE_TUI
    if options.json:
        wanted |= _WRITTEN_BY_JSON
    if options.record is not None:
        wanted |= _WRITTEN_BY_RECORD
    return PRICED - wanted


def export_unshown(process_series: bool) -> frozenset[str]:
    """What ``gputop export`` does not write: per-process utilization without process series
    (``--export-processes none``); every other priced field is a series."""
    return frozenset() if process_series else frozenset({SM_UTILIZATION})


TUI_GPM_BUDGET = 0.003
"""The share of a core GPM's metrics may cost in the TUI, at the 1.4 ms a call a real H200
charged: every tick on 1-2 GPUs, every 2 s on 4, every 4 s on 8, every 10 s for 8 GPUs of 7
MIG instances (0.8 % of a core there, where every tick was 8 %; ``benchmarks/bench_gpm.py``).
Each value is then the mean since the last one, nothing between lost."""
EXPORT_GPM_EVERY = 15.0
"""Seconds between GPM computations for ``gputop export``: the common scrape interval (each
scrape sees the mean over the last 15 s, as dcgm-exporter's DCGM sees its own interval's)."""
UNWRITTEN_GPM_EVERY = 10.0
"""Seconds between GPM computations in a headless run that prints or writes none of it
(``--record``, the text summary, ``--pick``)."""


def gpm_cadence(options: Options) -> GpmCadence:
    """How often this run works GPM's metrics out: every tick for a run that prints or
    writes every tick's (``--json``, ``--log``), within a CPU budget for the TUI, seldom
    where nothing reads them."""
    # Deferred: NVML's modules (10 ms); export and serve of a recording use this module.
    from gputop.sources.nvml.gpm import GpmCadence

    if options.json or options.log is not None:
        return GpmCadence()
    if options.headless:
        return GpmCadence(every=UNWRITTEN_GPM_EVERY)
    return GpmCadence(budget=TUI_GPM_BUDGET)


def open_live_source(
    in_view: InView | None = None, gpm_cadence: GpmCadence | None = None
) -> Source:
    """The NVML source with process enrichment; ``in_view``: where a view says which
    processes it shows, so that only those have their ``/proc`` facts read every tick, and
    which GPU fields nothing shows, read every few seconds; ``gpm_cadence``: how often GPM's
    metrics are worked out (None: every tick).

    Raises:
        NoDriver, NoPermission: NVML cannot be used here (one line naming the case).
    """
    # Deferred: opened on the driver's thread, beside Textual's import (issue 17).
    from gputop.sources.nvml.source import open_nvml_source

    env = os.environ
    host_proc = find_host_proc_root(host_proc_candidates(env))
    enricher = ProcessEnricher(
        host_proc_root=host_proc,
        owners=open_owner_lookup(env, host_proc),
        in_view=None if in_view is None else in_view.pids,
    )
    nvml = open_nvml_source(
        enrich=enricher,
        seldom=frozenset() if in_view is None else in_view.unshown,
        shown=None if in_view is None else in_view.pids,
        mig_shown=None if in_view is None else in_view.mig_activity_shown,
        gpm_cadence=gpm_cadence,
    )
    watcher = None
    if kubelet_socket(env) is not None:
        # Deferred: the kubelet's client, only on a Kubernetes node (test_live_imports).
        from gputop.sources.k8s.podresources import open_watcher

        watcher = open_watcher(env)
    return AttributedSource(
        nvml,
        watcher=watcher,
        container=lambda snapshot: read_container_view(snapshot, env),
    )


def _notes(source: Source) -> Callable[[Snapshot], str | None]:
    """What a headless run says once on stderr: other PID namespaces' processes, and why the
    kubelet could not be asked."""

    def note(snapshot: Snapshot) -> str | None:
        said = [text for text in (foreign_hint(snapshot), getattr(source, "note", None)) if text]
        return "; ".join(said) if said else None

    return note


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
    selection = None
    if options.gpu is not None:
        # Deferred: --gpu's parser, only with --gpu (test_live_imports; issue 17).
        from gputop.pipeline.gpu_select import GpuSelection

        selection = GpuSelection.parse(options.gpu)
    # The process table says which processes are on screen; the rest are read less often,
    # as are the fields only a recording or a headless run writes, when the TUI is all.
    in_view = InView(unshown=unshown_fields(options))
    starting = DriverStart(open_source or partial(open_live_source, in_view, gpm_cadence(options)))
    if options.headless:
        source = starting.wait_saying_so(err)
    else:
        opened = _open_while_the_ui_loads(starting)
        if opened is None:
            return _run_tui_while_the_driver_starts(options, starting, selection, err, in_view)
        source = opened
    feed = LiveFeed(source)  # whichever feed is current closes the source, once
    recorder: SnapshotSinks | None = None
    try:
        first = source.poll()
        if selection is not None:
            selection.apply(first)  # strict: every item must name something now
        recorder = open_sinks(options, machine=first)
        if not options.headless:
            # Deferred: the TUI's modules (17 ms), which --once, --json and --pick do not use.
            from gputop.cli.tui import run_tui

            # The TUI builds its pipeline over this feed, with --gpu and the sinks.
            feed = LiveFeed(source, first=first)
            code = run_tui(options, source=feed, recorder=recorder, in_view=in_view)
            return _after_the_tui(code, recorder, err)
        # Deferred: the headless outputs and --pick, which the TUI does not use (test_live_imports).
        from gputop.cli.headless import collect, print_pick, print_snapshots, with_sinks
        from gputop.cli.pick import DEFAULT_SAMPLES
        from gputop.pipeline.gpu_select import describe_visible_devices

        # Headless, a failed poll ends the run (with the error's exit code).
        feed = LiveFeed(source, first=first, tolerant=False)
        pipeline = Pipeline(feed, interval=options.interval, selection=selection, recorder=recorder)
        note = describe_visible_devices(env, len(first.gpus), [gpu.uuid for gpu in first.gpus])
        if note is not None:
            print(f"gputop: note: {terminal_safe(note)}", file=err)
        if options.pick is not None:
            # Several samples, so that a job between two bursts (data loading) still shows
            # as busy.
            count = options.count or DEFAULT_SAMPLES
            samples = collect(pipeline, err, count=count, sleep=sleep, clock=clock)
            print_pick(samples, options.pick, env, out, err)
        else:
            print_snapshots(
                pipeline,
                options,
                out,
                err,
                count=options.count or 1,
                note=_notes(source),
                sleep=sleep,
                clock=clock,
            )
        return with_sinks(0, recorder)
    finally:
        try:
            if recorder is not None:
                recorder.close()
        finally:
            feed.close()


def _after_the_tui(code: int, recorder: SnapshotSinks | None, err: TextIO) -> int:
    """The exit code once the TUI has ended; a failed sink, shown in the header while the
    TUI ran, is said on stderr too (the alternate screen has gone with it)."""
    for failure in recorder.failures if recorder is not None else ():
        print(f"gputop: {terminal_safe(str(failure))}", file=err)
    # Deferred: the headless outputs, which the TUI does not use (test_live_imports).
    from gputop.cli.headless import with_sinks

    return with_sinks(code, recorder)


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
    import_asyncio_without_tls()
    try:
        # Deferred: after asyncio without OpenSSL (cli/no_tls.py), while the driver starts.
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
    options: Options,
    starting: DriverStart,
    selection: GpuSelection | None,
    err: TextIO,
    in_view: InView,
) -> int:
    """The TUI at once, over a driver that is still starting (``WaitingFeed``).

    Raises:
        Fatal: the driver failed to start, ``--gpu`` names none of its GPUs, or ``--record``
            holds another machine's recording.
    """
    # Deferred: the TUI's modules (17 ms), which --once, --json and --pick do not use.
    from gputop.cli.tui import run_tui

    def check(first: Snapshot) -> None:
        if selection is not None:
            selection.apply(first)  # strict: every item must name something
        check_machine(options, first)  # nothing is recorded before the first snapshot

    feed = LiveFeed(WaitingFeed(starting, check))
    recorder: SnapshotSinks | None = None
    try:
        # Opened now (an unwritable path is refused before the TUI starts); whether
        # --record continues a recording of this machine waits for the driver (``check``).
        recorder = open_sinks(options)
        code = run_tui(options, source=feed, recorder=recorder, in_view=in_view)
        return _after_the_tui(code, recorder, err)
    finally:
        try:
            if recorder is not None:
                recorder.close()
        finally:
            feed.close()
