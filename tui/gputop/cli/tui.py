"""Start the TUI: open the source, build the pipeline and the app, run it, return a status."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from gputop.cli import startup
from gputop.cli.no_tls import import_asyncio_without_tls
from gputop.cli.options import Options
from gputop.errors import BadArguments
from gputop.insight.diagnosis import diagnose
from gputop.model.safe_text import terminal_safe
from gputop.pipeline.core import Pipeline
from gputop.pipeline.feed import Feed, ReplayFeed
from gputop.pipeline.in_view import InView
from gputop.pipeline.loop import PollLoop
from gputop.ui.render.panel_lines import PANEL_VIEW
from gputop.ui.settings import UiSettings

if TYPE_CHECKING:
    from gputop.pipeline.gpu_select import GpuSelection
    from gputop.sinks.fanout import SnapshotSinks
    from gputop.sources.playback.replay import Timeline
    from gputop.sources.recordings.formats import AnyRecording


def tui_pipeline(
    feed: Feed,
    *,
    interval: float = 1.0,
    selection: GpuSelection | None = None,
    recorder: SnapshotSinks | None = None,
    in_view: InView | None = None,
) -> Pipeline:
    """The pipeline the TUI runs over ``feed``: the panels' series (``PANEL_VIEW``) and the
    diagnosis in every tick, and ``in_view`` for the process table to say what it shows."""
    return Pipeline(
        feed,
        interval=interval,
        selection=selection,
        recorder=recorder,
        view=PANEL_VIEW,
        diagnose=diagnose,
        in_view=in_view,
    )


def _open_recording(options: Options) -> AnyRecording | None:
    """`--replay`'s recording; what keeps gputop waiting (a pipe with nothing written to it
    yet, a followed file still empty) gets a waiting screen (None when the user quits it)
    instead of a blank one."""
    # Deferred: the recording readers, which a live start does not load (test_live_imports).
    from gputop.cli.opening import Opening, wait_for_opening
    from gputop.cli.recording_input import reads_stdin, recording_input

    source = recording_input(options)
    if not source.may_wait:
        return source.open()
    opening = Opening(source.open)
    if reads_stdin(options):
        # Standard input: what is awaited is said on stderr before any screen starts, as
        # the headless modes say it.
        return wait_for_opening(opening, _say, source.waiting_message())
    if not opening.wait(0.3):
        import_asyncio_without_tls()
        # Deferred: after asyncio without OpenSSL (cli/no_tls.py); only while gputop waits.
        from gputop.ui.waiting import WaitingApp

        theme = options.theme or "dark"
        if not WaitingApp(source.waiting_message(), opening.done, theme=theme).run():
            return None
    return opening.result()


def _say(message: str) -> None:
    print(f"gputop: {terminal_safe(message)}", file=sys.stderr, flush=True)


def run_tui(
    options: Options,
    source: Feed | None = None,
    recorder: SnapshotSinks | None = None,
    in_view: InView | None = None,
) -> int:
    """Run the TUI until the user quits; returns the process exit status.

    With ``options.replay`` the recording is opened here (and closed on exit); otherwise
    ``source`` (a live feed) is polled (its owner closes it) and each snapshot is also
    handed to ``recorder`` when one is given; ``in_view`` is where the process table says
    which processes it shows (to the live source's host lookup).

    Raises:
        BadCapture: the recording cannot be read.
        Fatal: the live source failed to start while the TUI waited for it.
        BadArguments: ``--gpu`` matches nothing, or there is neither a replay nor a source.
    """
    selection = None
    if options.gpu:
        # Deferred: --gpu's parser, only with --gpu (test_live_imports; issue 17).
        from gputop.pipeline.gpu_select import GpuSelection

        selection = GpuSelection.parse(options.gpu)
    if options.replay is not None:
        # Deferred: the replay's player and readers: not for a live start (test_live_imports).
        from gputop.cli.recording_input import reads_stdin
        from gputop.sources.playback.replay import ReplayPlayer, machines_warning

        recording = _open_recording(options)
        if recording is None:
            return 0  # the user quit while a pipe kept gputop waiting
        try:
            # With `--replay -` stdin is the recording: the terminal driver reads keys from
            # /dev/tty, as for any stdin that is not a terminal (ui/compat.py).
            if selection is not None:
                selection.apply(recording.snapshot(0), strict=True)
        except BaseException:
            recording.close()
            raise
        label = "stdin" if reads_stdin(options) else options.replay.name
        if not recording.following:
            # Several machines' captures play one after another: said in the recording's
            # warnings (a toast and the header's count), as --once and --json say it.
            several = machines_warning(recording, str(options.replay))
            if several is not None:
                recording.warnings.append(several)
        timeline: Timeline = recording
        if options.hide_commands:
            # Deferred: only a served view hides commands (5 ms, 4 modules).
            from gputop.pipeline.redact import WithoutCommands

            timeline = WithoutCommands(recording)
        player = ReplayPlayer(timeline, interval=options.interval)
        pipeline = tui_pipeline(ReplayFeed(player), interval=options.interval, selection=selection)
        owned = True
    elif source is not None:
        pipeline = tui_pipeline(
            source,
            interval=options.interval,
            selection=selection,
            recorder=recorder,
            in_view=in_view,
        )
        label = "live"
        owned = False
    else:
        raise BadArguments("nothing to show: give --replay FILE, or run where NVML works")
    settings = UiSettings(
        theme=options.theme or "dark",
        readonly=options.readonly or options.served or options.replay is not None,
        source_label=label,
        served=options.served,
    )
    import_asyncio_without_tls()
    # Deferred: after asyncio without OpenSSL (cli/no_tls.py: about 4 MiB of RSS).
    from gputop.ui.app import GputopApp

    # The first tick is taken here, before the app starts, so the first frame the
    # terminal sees already has every GPU on it (and no second layout pass is needed).
    first = pipeline.start()
    loop = PollLoop(pipeline, started=True)
    app = GputopApp(loop, settings, first_tick=first, after_first_frame=startup.end)
    try:
        app.run()
    finally:
        stopped = loop.stop(1.0)
        # A source stuck in a driver call cannot be closed under its feet; the process is
        # about to exit and the OS reclaims it.
        if owned and stopped:
            pipeline.close()
    if app.fatal is not None:
        raise app.fatal
    return app.return_code if app.return_code is not None else 0
