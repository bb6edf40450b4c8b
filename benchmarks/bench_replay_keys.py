"""Documents parsed and time taken by a replay session driven as the TUI drives it.

Builds the changing stream of ``bench_reader.py`` (``--mb``, default 60) from one machine's
capture (``--capture``, a file of ``snapshots/``: a recording is one machine's, and the
pipeline drops the window when the machine changes, which would make every step a rebuild),
opens it as
``gputop --replay`` does (``tui_pipeline(ReplayFeed(ReplayPlayer(...)))``) and runs a session
of keys through the pipeline: the start (the window rebuilt), a seek to the middle,
``--steps`` presses of left then as many of right, space twice (pause, resume), a seek by
time and a final seek back to the middle (each seek rebuilds the window: 160 documents).
Counts the documents parsed (``parse_document`` calls) and the session's time, best of
``--repeat``.

It measured the recordings' 8-document snapshot cache (issue 12, item 6), which went: nearly
every parse is a window rebuild, which an LRU of 8 read in order never holds; it served only
the first and last few steps (see benchmarks/README.md).

Usage: ``python benchmarks/bench_replay_keys.py [--mb 60] [--capture NAME] [--steps 20]
[--repeat 3]``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_reader
from gputop.cli.tui import tui_pipeline
from gputop.model import Snapshot
from gputop.pipeline.commands import Seek, SeekTime, Step, TogglePause
from gputop.pipeline.feed import ReplayFeed
from gputop.sources.playback.replay import ReplayPlayer
from gputop.sources.smi import recording as recording_module
from gputop.sources.smi.recording import Recording


def session(path: Path, steps: int) -> tuple[float, int]:
    """Seconds and documents parsed for one session of keys on a fresh recording."""
    parse: Callable[[bytes], Snapshot] = getattr(recording_module, "parse_document")  # noqa: B009
    parsed = 0

    def counting(data: bytes) -> Snapshot:
        nonlocal parsed
        parsed += 1
        return parse(data)

    setattr(recording_module, "parse_document", counting)  # noqa: B010
    try:
        began = time.perf_counter()
        recording = Recording.open(path)
        pipeline = tui_pipeline(ReplayFeed(ReplayPlayer(recording, paused=True)))
        pipeline.start()
        middle = len(recording) // 2
        pipeline.apply(Seek(middle))
        pipeline.tick()
        for delta in [-1] * steps + [1] * steps:
            pipeline.apply(Step(delta))
            pipeline.tick()
        for _ in range(2):
            pipeline.apply(TogglePause())
            pipeline.tick()
        moment = recording.timestamp(3 * len(recording) // 4)
        assert moment is not None
        pipeline.apply(SeekTime(moment))
        pipeline.tick()
        pipeline.apply(Seek(middle))
        pipeline.tick()
        pipeline.close()
        return time.perf_counter() - began, parsed
    finally:
        setattr(recording_module, "parse_document", parse)  # noqa: B010


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=60, help="stream size in MB (default 60)")
    parser.add_argument(
        "--capture", default="rtx3090x4-procs-v12.xml", help="the capture repeated (snapshots/)"
    )
    parser.add_argument("--steps", type=int, default=20, help="presses of left, then of right")
    parser.add_argument("--repeat", type=int, default=3, help="sessions (best kept)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        one = Path(scratch) / "capture"
        one.mkdir()
        shutil.copy(bench_reader.SNAPSHOTS / args.capture, one)
        bench_reader.SNAPSHOTS = one
        path = Path(scratch) / "stream.xml"
        documents = bench_reader.build_stream(path, args.mb)
        runs = [session(path, args.steps) for _ in range(args.repeat)]
    best = min(seconds for seconds, _parsed in runs)
    print(
        f"{documents} documents, session best {best * 1000:.0f} ms "
        f"(all: {', '.join(f'{s * 1000:.0f}' for s, _p in runs)}), "
        f"{runs[0][1]} documents parsed"
    )


if __name__ == "__main__":
    main()
