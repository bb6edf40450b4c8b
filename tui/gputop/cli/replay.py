"""`--replay FILE` without the TUI: `--once`, `--json`, `--count N` (and `--log`)."""

from __future__ import annotations

import contextlib
import sys
from datetime import datetime, timedelta

from gputop.cli.options import Options
from gputop.cli.sinks import open_sinks
from gputop.errors import BadArguments, BadCapture
from gputop.model import Snapshot
from gputop.sinks.json import snapshot_json
from gputop.sinks.summary import format_summary
from gputop.sources.smi.recording import Recording

_TIME_FORMATS = ("%H:%M:%S", "%H:%M")


def resolve_at(recording: Recording, at: str | None) -> int:
    """Turn `--at INDEX|TIME` into a document index of ``recording``.

    Raises:
        BadArguments: not an index in range, nor a time this recording can place.
    """
    if at is None:
        return 0
    text = at.strip()
    try:
        index = int(text)
    except ValueError:
        return _index_at_time(recording, text)
    count = len(recording)
    if not -count <= index < count:
        raise BadArguments(f"--at {index}: the recording has {count} snapshot(s), 0 to {count - 1}")
    return index % count


def _index_at_time(recording: Recording, text: str) -> int:
    moment = _parse_moment(recording, text)
    found = recording.index_at(moment)
    stamp = recording.timestamp(found)
    if stamp is None:
        raise BadArguments(
            f"--at {text!r}: no snapshot of this recording is stamped at or before that time; "
            "use an index"
        )
    if stamp > moment:
        # index_at falls back to the first document; a time before the recording began
        # names no snapshot, and printing the first one would pass it off as that time.
        raise BadArguments(f"--at {text!r}: the recording starts later, at {stamp.isoformat()}")
    return found


def _parse_moment(recording: Recording, text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        pass
    else:
        if moment.tzinfo is not None:
            # nvidia-smi stamps are the recording machine's local time, zone unknown.
            raise BadArguments(
                f"--at {text!r}: give the time without a zone, as the recording's local time"
            )
        return moment
    first = recording.timestamp(0)
    for layout in _TIME_FORMATS:
        try:
            clock = datetime.strptime(text, layout).time()
        except ValueError:
            continue
        if first is None:
            raise BadArguments("--at TIME: this recording has no timestamps; use an index")
        moment = datetime.combine(first.date(), clock)
        last = recording.timestamp(-1)
        if moment < first and last is not None and last.date() > first.date():
            moment += timedelta(days=1)  # the recording runs past midnight
        return moment
    raise BadArguments(
        f"--at {text!r}: expected an index, an ISO time (2024-09-18T21:34:12) or HH:MM:SS"
    )


def _select(snapshot: Snapshot, spec: str | None) -> Snapshot:
    if spec is None:
        return snapshot
    from gputop.sources.gpu_select import GpuSelection

    return GpuSelection.parse(spec).apply(snapshot)


def replay_headless(options: Options) -> int:
    """`--replay FILE` with `--once`, `--json` or `--count N`: print (and `--log`), then exit."""
    assert options.replay is not None
    # --record is refused with --replay, so the only sink here is the --log CSV.
    log = open_sinks(options)
    with contextlib.ExitStack() as cleanup:
        if log is not None:
            cleanup.callback(log.close)
        recording = cleanup.enter_context(Recording.open(options.replay))
        start = resolve_at(recording, options.at)
        count = options.count or 1
        for index in range(start, start + count):
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
            if options.json:
                print(snapshot_json(snapshot, indent=None if count > 1 else 2))
            else:
                print(format_summary(snapshot))
        # Scan to the end so that a cut-off tail is reported even when printing the first.
        len(recording)
        for warning in recording.warnings:
            print(f"gputop: warning: {warning}", file=sys.stderr)
    return 1 if log is not None and log.failures else 0
