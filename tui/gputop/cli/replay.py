"""`--replay FILE` without the TUI: `--once`, `--json`, `--count N` (and `--log`)."""

from __future__ import annotations

import contextlib
import os
import sys

from gputop.cli.headless import collect, print_pick, print_snapshots, with_sinks
from gputop.cli.options import Options
from gputop.cli.pick import DEFAULT_SAMPLES
from gputop.cli.recording_input import open_recording
from gputop.cli.sinks import open_sinks
from gputop.errors import BadArguments
from gputop.model.safe_text import terminal_safe
from gputop.pipeline.core import Pipeline
from gputop.pipeline.feed import DocumentFeed
from gputop.pipeline.gpu_select import GpuSelection
from gputop.sinks.fanout import SnapshotSinks
from gputop.sources.playback.replay import machines_warning
from gputop.sources.playback.seek import TargetError, resolve_target
from gputop.sources.recordings.formats import AnyRecording

_QUIET_S = 0.3
"""A followed recording that brings nothing new for this long has come as far as it goes
for now (`nvidia-smi -l 1` writes once a second)."""


def resolve_at(recording: AnyRecording, at: str | None) -> int:
    """Turn `--at INDEX|TIME` into a document index of ``recording`` (0 without one).

    Raises:
        BadArguments: not an index in range, nor a time within the recording.
    """
    if at is None:
        return 0
    try:
        return resolve_target(recording, at)
    except TargetError as error:
        raise BadArguments(f"--at {at.strip() or repr(at)}: {error}") from None


def _settle(recording: AnyRecording) -> None:
    """Read a followed recording as far as it comes without a pause, so that `--at -1` or
    a time is placed in all of `cat run.xml | gputop --replay -`, and in a live stream's
    documents so far."""
    while recording.following and recording.wait_for(len(recording), timeout=_QUIET_S):
        pass


def _say(message: str) -> None:
    print(f"gputop: {terminal_safe(message)}", file=sys.stderr, flush=True)


def _warn_of_machines(recording: AnyRecording, options: Options) -> None:
    """Captures of several machines are printed as they are, and this said with the
    recording's other warnings (as the TUI says it); only once the snapshots were read, so
    bad arguments or a damaged document asked for get their one line alone."""
    if recording.following:
        return
    several = machines_warning(recording, str(options.replay))
    if several is not None:
        print(f"gputop: warning: {terminal_safe(several)}", file=sys.stderr, flush=True)


def _pipeline(
    recording: AnyRecording,
    indices: range,
    options: Options,
    log: SnapshotSinks | None,
    damaged_is_error: int | None,
) -> Pipeline:
    """The pipeline of a headless replay: ``indices`` in order, each through ``--gpu`` (every
    document must have the GPUs it names) to the ``--log`` CSV and out."""
    selection = GpuSelection.parse(options.gpu) if options.gpu is not None else None
    name = str(options.replay)
    return Pipeline(
        DocumentFeed(recording, indices, name=name, damaged_is_error=damaged_is_error),
        interval=options.interval,
        selection=selection,
        strict=True,
        recorder=log,
        record_selected=True,
    )


def replay_headless(options: Options) -> int:
    """`--replay FILE` with `--once`, `--json` or `--count N`: print (and `--log`), then exit.

    A followed recording (`--follow`, a pipe) prints each snapshot as it arrives, waiting
    for the next until `--count` are printed or the writer closes the pipe.
    """
    assert options.replay is not None
    # --record is refused with --replay, so the only sink here is the --log CSV.
    log = open_sinks(options)
    with contextlib.ExitStack() as cleanup:
        if log is not None:
            cleanup.callback(log.close)
        recording = open_recording(options, _say)
        cleanup.callback(recording.close)
        if (options.at is not None or options.pick is not None) and recording.following:
            _settle(recording)
        if options.pick is not None:
            return _pick(recording, options, log)
        start = resolve_at(recording, options.at)
        count = options.count or 1
        # Several asked for: a damaged one is skipped, as a replay would, and said.
        damaged_is_error = start if count == 1 else None
        indices = range(start, start + count)
        pipeline = _pipeline(recording, indices, options, log, damaged_is_error)
        print_snapshots(pipeline, options, sys.stdout, sys.stderr, count=None)
        # Scan to the end so that a cut-off tail is reported even when printing the first
        # (followed: to where the writer is now; a partly written document is no error).
        total = len(recording)
        if options.count is not None and start + count > total:
            # Fewer printed than asked for: said, or a script takes it for all it asked.
            plural = "" if total == 1 else "s"
            after = f", {total - start} of them from --at {options.at} on" if start else ""
            _say(f"--count {count}: the recording holds only {total} document{plural}{after}")
        _warn_of_machines(recording, options)
        for warning in recording.warnings:
            print(f"gputop: warning: {terminal_safe(warning)}", file=sys.stderr)
    return with_sinks(0, log)


def _pick(recording: AnyRecording, options: Options, log: SnapshotSinks | None) -> int:
    """`--pick N` on a recording: free GPUs at ``--at`` (by default the last document), busy
    meaning busy in any of the ``--count`` documents up to it (2 by default), as live."""
    assert options.pick is not None
    end = resolve_at(recording, options.at) if options.at is not None else len(recording) - 1
    wanted = options.count or DEFAULT_SAMPLES
    indices = range(max(0, end - wanted + 1), end + 1)
    pipeline = _pipeline(recording, indices, options, log, end)
    samples = collect(pipeline, sys.stderr, count=None)
    _warn_of_machines(recording, options)
    for warning in recording.warnings:
        print(f"gputop: warning: {terminal_safe(warning)}", file=sys.stderr)
    print_pick(samples, options.pick, os.environ, sys.stdout, sys.stderr)
    return with_sinks(0, log)
