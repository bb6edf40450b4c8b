"""`--replay FILE` without the TUI: `--once`, `--json`, `--count N` (and `--log`)."""

from __future__ import annotations

import contextlib
import os
import sys

from gputop.cli.options import Options
from gputop.cli.pick import DEFAULT_SAMPLES, format_pick, order_note, pick_gpus
from gputop.cli.recording_input import open_recording
from gputop.cli.sinks import open_sinks
from gputop.errors import BadArguments, BadCapture
from gputop.model import Snapshot
from gputop.sinks.fanout import SnapshotSinks
from gputop.sinks.json import snapshot_json
from gputop.sinks.summary import format_summary
from gputop.sources.formats import AnyRecording
from gputop.sources.seek import TargetError, resolve_target

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


def _select(snapshot: Snapshot, spec: str | None) -> Snapshot:
    if spec is None:
        return snapshot
    from gputop.sources.gpu_select import GpuSelection

    return GpuSelection.parse(spec).apply(snapshot)


def _settle(recording: AnyRecording) -> None:
    """Read a followed recording as far as it comes without a pause, so that `--at -1` or
    a time is placed in all of `cat run.xml | gputop --replay -`, and in a live stream's
    documents so far."""
    while recording.following and recording.wait_for(len(recording), timeout=_QUIET_S):
        pass


def _say(message: str) -> None:
    print(f"gputop: {message}", file=sys.stderr, flush=True)


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
        recording = cleanup.enter_context(open_recording(options, _say))
        if (options.at is not None or options.pick is not None) and recording.following:
            _settle(recording)
        if options.pick is not None:
            return _pick(recording, options, log)
        start = resolve_at(recording, options.at)
        count = options.count or 1
        for index in range(start, start + count):
            if not recording.wait_for(index):
                break
            try:
                snapshot = recording.snapshot(index)
            except IndexError:
                break
            except BadCapture as error:
                if count == 1:
                    raise
                # Several asked for: skip a damaged one as a replay would, and say so.
                recording.warnings.append(f"{options.replay}: skipped {error}")
                continue
            snapshot = _select(snapshot, options.gpu)
            if log is not None:
                # A failed write stops the log (said once); printing goes on; exit 1.
                for failure in log.write(snapshot):
                    print(f"gputop: {failure}", file=sys.stderr)
            # Flushed: a followed stream is read by a person or a pipe as it comes.
            if options.json:
                print(snapshot_json(snapshot, indent=None if count > 1 else 2), flush=True)
            else:
                print(format_summary(snapshot), flush=True)
        # Scan to the end so that a cut-off tail is reported even when printing the first
        # (followed: to where the writer is now; a partly written document is no error).
        len(recording)
        for warning in recording.warnings:
            print(f"gputop: warning: {warning}", file=sys.stderr)
    return 1 if log is not None and log.failures else 0


def _pick(recording: AnyRecording, options: Options, log: SnapshotSinks | None) -> int:
    """`--pick N` on a recording: free GPUs at ``--at`` (by default the last document), busy
    meaning busy in any of the ``--count`` documents up to it (2 by default), as live."""
    assert options.pick is not None
    end = resolve_at(recording, options.at) if options.at is not None else len(recording) - 1
    wanted = options.count or DEFAULT_SAMPLES
    samples: list[Snapshot] = []
    for index in range(max(0, end - wanted + 1), end + 1):
        try:
            snapshot = _select(recording.snapshot(index), options.gpu)
        except BadCapture as error:
            if index == end:
                raise
            recording.warnings.append(f"{options.replay}: skipped {error}")
            continue
        if log is not None:
            for failure in log.write(snapshot):
                print(f"gputop: {failure}", file=sys.stderr)
        samples.append(snapshot)
    for warning in recording.warnings:
        print(f"gputop: warning: {warning}", file=sys.stderr)
    print(format_pick(pick_gpus(samples, options.pick)))
    note = order_note(os.environ)
    if note is not None:
        print(f"gputop: note: {note}", file=sys.stderr)
    return 1 if log is not None and log.failures else 0
